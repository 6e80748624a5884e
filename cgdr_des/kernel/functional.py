"""Building a launch from the op's inputs, and the functional run: the programs with no notion of time.

``run_functional`` consumes every core's records in core order and returns out, final_state and the
count of records per (phase, kind); a Scalar record counts ``count`` operations and DMAs also add
their bytes under ``bytes_MTE2`` / ``bytes_MTE3``. This is what the machine must reproduce.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from cgdr_des.blas import numeric_work
from cgdr_des.errors import InputError
from cgdr_des.isa import Dma, Scalar, ScalarGm, Tag, VecOp, record_kind
from cgdr_des.kernel.dispatch import assign_items
from cgdr_des.kernel.gm import build_gm_map
from cgdr_des.kernel.launch import NUMERICS, Launch, Shape, op_shape
from cgdr_des.kernel.program import ReuseStage, core_program
from cgdr_des.kernel.tiling import compute_tiling


@dataclass
class FunctionalResult:
    """What ``run_functional`` returns: the outputs (None with numerics off), the record tally per
    (phase, kind) (``bytes_MTE2`` / ``bytes_MTE3`` rows count DMA bytes), and the launch that ran.
    """

    out: np.ndarray | None
    final_state: np.ndarray | None
    counts: Counter
    launch: Launch


def build_launch(query, key, value, beta, initial_state, actual_seq_lengths, g=None, scale_value=1.0, *,
                 numerics="kernel", ub_size=262144, aiv_num=8, buffer_num=1) -> Launch:
    """Host side for the op's tensors: the shapes as TilingFunc reads them (ParseShapeDims)."""
    shape, tensors = op_shape(query, key, value, beta, initial_state, g, scale_value)
    return make_launch(shape, actual_seq_lengths, g, tensors, numerics=numerics, ub_size=ub_size,
                       aiv_num=aiv_num, buffer_num=buffer_num)


def make_launch(shape: Shape, lengths, g, tensors: dict | None, *, numerics="kernel", ub_size=262144,
                aiv_num=8, buffer_num=1, host_queue_buffers=None, **variant) -> Launch:
    """Tiling, GM map and the shared launch state. ``tensors`` may be None only when numerics is
    ``off`` (a timing-only run needs the lengths, and g for the cost of ScalarExp, nothing else).
    ``host_queue_buffers``: see compute_tiling (1 with buffer_num 2 is the UB-overflowing variant);
    ``variant``: ``keep_tiling``, ``prefetch``, ``state_double_buffer`` (compute_tiling)."""
    if numerics not in NUMERICS:
        raise InputError("numerics", numerics, f"allowed: {', '.join(NUMERICS)}")
    if tensors is None and numerics != "off":
        raise InputError("numerics", numerics, "a run without tensors needs numerics 'off'")
    sh = shape
    tiling = compute_tiling(t=sh.t, hqk=sh.nk, dk=sh.dk, hv=sh.nv, dv=sh.dv, batch=sh.batch, ub_size=ub_size,
                            aiv_num=aiv_num, has_gamma=sh.has_gamma, buffer_num=buffer_num,
                            host_queue_buffers=host_queue_buffers, **variant)
    gm = build_gm_map(t=sh.t, nk=sh.nk, nv=sh.nv, dk=sh.dk, dv=sh.dv, batch=sh.batch,
                      workspace_bytes=tiling.workspace_bytes)
    tensors = tensors or dict.fromkeys(("query", "key", "value", "beta", "initial_state"))
    return Launch(sh, tiling, gm, numerics, lengths=np.asarray(lengths), g=g, block_dim=tiling.block_dim,
                  **tensors)


def core_assignments(launch: Launch, policy: str, assignment: list | None = None) -> list[set | None]:
    """Per core, the item keys a non-greedy policy gives it (None: the kernel's own greedy scan).

    ``assignment`` (per core, WorkItems from dispatch.assign_items) is computed when not given.
    """
    if policy == "greedy":
        return [None] * launch.block_dim
    if assignment is None:
        assignment = assign_items(launch.lengths, launch.shape.nv, launch.shape.dv, launch.tiling.v_step,
                                  launch.block_dim, policy)
    return [{(it.batch, it.head, it.vtile) for it in items} for items in assignment]


def count_records(records: Iterable, counts: Counter) -> None:
    """Tally records per (phase, kind), with Scalar records weighted by their count.

    A functional run's programs are mostly Scalar, ScalarGm and VecOp records (2.8 M for two heads at
    dk = 256, where the state is transposed by scalar reads), and a :func:`~cgdr_des.isa.record_kind`
    call and a Counter update per record were two thirds of the run: those three are tallied by the
    fields their kind depends on, and each such tally takes the kind of its first record at the end."""
    phase, tally, first = "", {}, {}
    get = tally.get
    for rec in records:
        t = type(rec)
        if t is Scalar:
            key, n = (phase, t, rec.kind), rec.count
        elif t is ScalarGm:
            key, n = (phase, t, rec.store), 1
        elif t is VecOp:
            key, n = (phase, t, None), 1
        elif t is Tag:
            phase = rec.phase
            continue
        else:           # tallied by kind at once
            key = (phase, record_kind(rec))
            tally[key] = get(key, 0) + 1
            if t is Dma:
                key = (phase, "bytes_" + rec.pipe)
                tally[key] = get(key, 0) + rec.nbytes
            continue
        if key not in tally:
            first[key] = rec
        tally[key] = get(key, 0) + n
    for key, n in tally.items():
        rep = first.get(key)
        counts[key if rep is None else (key[0], record_kind(rep))] += n


@numeric_work
def run_functional(launch: Launch, policy: str = "greedy", *, emit: bool = True) -> FunctionalResult:
    """Run every core's program without the machine: the outputs and the record counts per (phase, kind).

    No timing. ``emit`` False computes the numbers only (no records, so ``counts`` is empty).
    """
    counts: Counter = Counter()
    stage = ReuseStage(emit)        # one for every core: a UB-only phase is built once per launch
    for core, assigned in enumerate(core_assignments(launch, policy)):
        program = core_program(launch, core, emit=emit, assigned=assigned, stage=stage)
        count_records(program, counts)
    return FunctionalResult(launch.out, launch.final_state, counts, launch)
