"""Building a launch from the op's inputs, and the functional run: the programs with no notion of time.

``run_functional`` consumes every core's records in core order and returns out, final_state and the
count of records per (phase, kind); a Scalar record counts ``count`` operations and DMAs also add
their bytes under ``bytes_MTE2`` / ``bytes_MTE3``. This is what the machine must reproduce.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from cgdr_des.errors import InputError
from cgdr_des.isa import Dma, Scalar, Tag, record_kind
from cgdr_des.kernel.dispatch import assign_items
from cgdr_des.kernel.gm import build_gm_map
from cgdr_des.kernel.launch import NUMERICS, Launch, Shape
from cgdr_des.kernel.program import core_program
from cgdr_des.kernel.tiling import compute_tiling


@dataclass
class FunctionalResult:
    out: np.ndarray | None
    final_state: np.ndarray | None
    counts: Counter
    launch: Launch


def build_launch(query, key, value, beta, initial_state, actual_seq_lengths, g=None, scale_value=1.0, *,
                 numerics="kernel", ub_size=262144, aiv_num=8, buffer_num=1, has_gamma=None) -> Launch:
    """Host side: tiling from the shapes (as TilingFunc reads them), the GM map, the shared launch."""
    if numerics not in NUMERICS:
        raise InputError("numerics", numerics, f"allowed: {', '.join(NUMERICS)}")
    t, nk, dk = query.shape
    _, nv, dv = value.shape
    batch = initial_state.shape[0]
    gamma = g is not None if has_gamma is None else has_gamma
    tiling = compute_tiling(t=t, hqk=nk, dk=dk, hv=nv, dv=dv, batch=batch, ub_size=ub_size,
                            aiv_num=aiv_num, has_gamma=gamma, buffer_num=buffer_num)
    shape = Shape(batch, t, nk, nv, dk, dv, float(scale_value), gamma)
    gm = build_gm_map(t=t, nk=nk, nv=nv, dk=dk, dv=dv, batch=batch, workspace_bytes=tiling.workspace_bytes)
    return Launch(shape, tiling, gm, numerics, query, key, value, beta, initial_state,
                  np.asarray(actual_seq_lengths), g, tiling.block_dim)


def core_assignments(launch: Launch, policy: str) -> list[set | None]:
    """Per core, the item keys a non-greedy policy gives it (None: the kernel's own greedy scan)."""
    if policy == "greedy":
        return [None] * launch.block_dim
    per_core = assign_items(launch.lengths, launch.shape.nv, launch.shape.dv, launch.tiling.v_step,
                            launch.block_dim, policy)
    return [{(it.batch, it.head, it.vtile) for it in items} for items in per_core]


def count_records(records: Iterable, counts: Counter) -> None:
    """Tally records per (phase, kind), with Scalar records weighted by their count."""
    phase = ""
    for rec in records:
        t = type(rec)
        if t is Tag:
            phase = rec.phase
            continue
        counts[(phase, record_kind(rec))] += rec.count if t is Scalar else 1
        if t is Dma:
            counts[(phase, "bytes_" + rec.pipe)] += rec.nbytes


def run_functional(launch: Launch, policy: str = "greedy", *, emit: bool = True) -> FunctionalResult:
    counts: Counter = Counter()
    for core, assigned in enumerate(core_assignments(launch, policy)):
        program = core_program(launch, core, emit=emit, assigned=assigned)
        count_records(program, counts)
    return FunctionalResult(launch.out, launch.final_state, counts, launch)


def default_scale(dk: int) -> float:
    return 1.0 / math.sqrt(dk)
