"""Timing-only tail studies: thousands of sampled batches from chunk costs measured once.

A tail study asks how the makespan of a launch is distributed over skewed batches, which needs
thousands of launches; even ``phase`` fidelity spends ~1 s on one. This module trades the last bit
of fidelity for speed, explicitly:

1. **Calibrate** (once per profile, shape and buffer_num): one ``phase``-fidelity run, with every
   core busy, of sequences whose chunks cover each chunk signature: a first chunk, a middle chunk,
   a sole chunk of length L and a last chunk of length L for several L. Each chunk's duration is
   read from the run's spans (from its first phase's start to the next chunk's start on that core).
   Durations of sole and last chunks are fitted by a quadratic in L (the instruction counts of a
   chunk are quadratic in L: notes/kernel.md §5.x) and the largest relative residual is kept.
2. **Estimate** a batch: the policy's assignment (the kernel's own dispatch), then per core
   ``start + sum over its items of sum over their chunks of the chunk's duration``.

What is dropped against ``phase``: GM contention varies with the batch (the calibration's loaded-chip
durations are used for every chunk), and the per-core start is modelled (launch, Init and the length
scan), not simulated. ``tests/test_tail.py`` bounds the error against ``phase`` fidelity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from cgdr_des.hw import load_profile
from cgdr_des.kernel.dispatch import assign_items
from cgdr_des.kernel.functional import make_launch
from cgdr_des.kernel.launch import CHUNK_SIZE, Shape, ceil_div
from cgdr_des.results import metrics
from cgdr_des.simulation import run_launch
from cgdr_des.workload.lengths import sample_lengths
from cgdr_des.workload.tensors import draw_g

SAMPLE_LENGTHS = (1, 9, 17, 25, 33, 41, 49, 57, 64)


@dataclass(frozen=True)
class ChunkCosts:
    """Measured chunk durations (cycles) of one (profile, shape, buffer_num); see the module doc.

    ``first``/``middle``: a full (64-token) chunk that opens / continues a sequence, per V-tile key;
    ``sole``/``last``: quadratic coefficients in L per V-tile key; ``start``: cycles before a core's
    first item for a one-sequence launch, ``per_batch``: scan cycles per batch entry;
    ``fit_residual``: the largest relative residual of the quadratic fits.
    """

    first: dict
    middle: dict
    sole: dict
    last: dict
    start: int
    per_batch: float
    fit_residual: float
    nv: int
    dv: int
    v_step: int
    block_dim: int

    def chunk_cycles(self, vt: int, c: int, n_chunks: int, length: int) -> float:
        if n_chunks == 1:
            return float(np.polyval(self.sole[vt], length))
        if c == n_chunks - 1:
            return float(np.polyval(self.last[vt], length))
        return self.first[vt] if c == 0 else self.middle[vt]

    def item_cycles(self, seqlen: int, vt: int) -> float:
        n = ceil_div(seqlen, CHUNK_SIZE)
        tail = seqlen - CHUNK_SIZE * (n - 1)
        if n == 1:
            return self.chunk_cycles(vt, 0, 1, tail)
        return self.first[vt] + (n - 2) * self.middle[vt] + self.chunk_cycles(vt, n - 1, n, tail)


def _launch(lengths, nk, nv, dk, dv, has_gamma, prof, buffer_num, seed=0):
    lengths = np.asarray(lengths, dtype=np.int32)
    shape = Shape(int(lengths.size), int(lengths.sum()), nk, nv, dk, dv, 1.0 / np.sqrt(dk), has_gamma)
    g = draw_g(shape.t, nv, seed) if has_gamma else None
    return make_launch(shape, lengths, g, None, numerics="off", ub_size=prof.ub_usable_bytes, aiv_num=prof.aiv_num,
                       buffer_num=buffer_num)


def _chunk_table(result) -> pd.DataFrame:
    """One row per (core, batch, head, item vtile, chunk) with its start and its duration."""
    sp = result.ops[result.ops["chunk"] >= 0]
    split = (result.items["vtile"] >= 0).any()
    keys = ["core", "batch", "head", "vtile"] if split else ["core", "batch", "head"]
    ch = sp.groupby([*keys, "chunk"], as_index=False).agg(start=("start", "min"), end=("end", "max"))
    ch = ch.sort_values(["core", "start"])
    nxt = ch.groupby("core")["start"].shift(-1)
    same_item = (ch[keys].shift(-1) == ch[keys]).all(axis=1)
    ch["cycles"] = np.where(same_item, nxt - ch["start"], ch["end"] - ch["start"])
    if not split:
        ch["vtile"] = -1
    return ch


def calibrate(profile="atlas-300i-duo", *, nk: int, nv: int, dk: int, dv: int, has_gamma: bool = True,
              buffer_num: int = 1, overrides: dict | None = None) -> ChunkCosts:
    """Measure the chunk costs with one phase-fidelity run (see the module docstring)."""
    prof = load_profile(profile, overrides)
    lengths = [*SAMPLE_LENGTHS, *(2 * CHUNK_SIZE + L for L in SAMPLE_LENGTHS)]
    launch = _launch(lengths, nk, nv, dk, dv, has_gamma, prof, buffer_num)
    result = run_launch(launch, prof, policy="greedy", fidelity="phase")
    ch = _chunk_table(result)
    seqlen = dict(enumerate(lengths))
    ch["seqlen"] = ch["batch"].map(seqlen)
    ch["n_chunks"] = (ch["seqlen"] + CHUNK_SIZE - 1) // CHUNK_SIZE
    ch["L"] = np.where(ch["chunk"] == ch["n_chunks"] - 1, ch["seqlen"] - CHUNK_SIZE * (ch["n_chunks"] - 1), 64)
    first, middle, sole, last, resid = {}, {}, {}, {}, 0.0
    for vt, g in ch.groupby("vtile"):
        first[vt] = float(g[(g.chunk == 0) & (g.n_chunks > 1)]["cycles"].median())
        middle[vt] = float(g[(g.chunk > 0) & (g.chunk < g.n_chunks - 1)]["cycles"].median())
        for table, rows in ((sole, g[g.n_chunks == 1]), (last, g[(g.n_chunks > 1) & (g.chunk == g.n_chunks - 1)])):
            pts = rows.groupby("L")["cycles"].median()
            table[vt] = np.polyfit(pts.index.to_numpy(float), pts.to_numpy(float), 2)
            fit = np.polyval(table[vt], pts.index.to_numpy(float))
            resid = max(resid, float(np.max(np.abs(fit - pts.to_numpy()) / pts.to_numpy())))
    first_start = result.items.groupby("core")["start"].min().median()
    per_batch = 2 * (prof.scalar_ub_load_cycles + prof.scalar_alu_cycles) + prof.dcache_miss_cycles / 8
    t = launch.tiling
    return ChunkCosts(first, middle, sole, last, int(first_start - per_batch * len(lengths)), per_batch,
                      resid, nv, dv, t.v_step, t.block_dim)


def estimate_batch(costs: ChunkCosts, lengths, policy: str = "greedy") -> dict:
    """Per-core finish cycles and the summary metrics of one batch, from ``costs``."""
    per_core = assign_items(lengths, costs.nv, costs.dv, costs.v_step, costs.block_dim, policy)
    start = costs.start + costs.per_batch * len(lengths)
    finish = np.array([start + sum(costs.item_cycles(it.seqlen, it.vtile) for it in items) if items else 0.0
                       for items in per_core])
    busy = [f for f, items in zip(finish, per_core, strict=True) if items]
    pct = metrics.tail_percentiles(busy)
    return {"makespan_cycles": int(max(busy)), "imbalance": metrics.imbalance(busy),
            "cv": metrics.coefficient_of_variation(busy), "finish_p50_cycles": pct[50],
            "finish_p95_cycles": pct[95], "finish_p99_cycles": pct[99], "tokens": int(np.sum(lengths))}


def tail_study(costs: ChunkCosts, dist, *, batch: int, n_batches: int, seed: int = 0,
               policy: str = "greedy") -> pd.DataFrame:
    """``n_batches`` batches of ``batch`` lengths from ``dist`` (a workload distribution model)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_batches):
        lengths = sample_lengths(dist, batch, rng)
        if lengths.sum() == 0:
            continue
        rows.append({"batch_index": i, **estimate_batch(costs, lengths, policy)})
    return pd.DataFrame(rows)
