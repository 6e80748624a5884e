"""Two programs on one scenario: what the Cube-era kernel moved off the vector unit and what it pays
for it in staging and barriers (``compare --kernel vector cube``; docs/kernel-cube.md §6).

:func:`compare_kernels` runs the scenario once per kernel version and returns four frames:

- ``summary``: per version, the scenario and hardware profile, makespan (cycles, µs), blockDim, vStep;
- ``phases``: per version, phase and pipe, ``busy_cycles_mean_per_core``: the busy cycles of that
  phase's operations summed over the launch's cores and divided by their number (flag waits,
  barriers and flag sets excluded: they are blocked time, not work);
- ``pipes``: the same summed over phases, per version and pipe;
- ``counts``: per version, the records core 0's program issues, by kind (vector calls, Mmads,
  LoadData, L0C drains, PIPE_ALL and PipeBarrier<V>, scalar GM reads, DMA bytes per direction),
  counted from the program itself, so they do not depend on the machine.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import numpy as np
import pandas as pd

from cgdr_des.isa import Dma, Mmad, PipeBarrier, Scalar, ScalarGm, Tag, VecOp

_SYNC_PREFIXES = ("WaitFlag", "SetFlag", "PipeBarrier")
#: the busy column: a mean over the launch's cores, not one core's busy time
BUSY = "busy_cycles_mean_per_core"


class KernelComparison(NamedTuple):
    summary: pd.DataFrame
    phases: pd.DataFrame
    pipes: pd.DataFrame
    counts: pd.DataFrame


def busy_by_phase(ops: pd.DataFrame, n_cores: int) -> pd.DataFrame:
    """``phase, pipe, busy_cycles_mean_per_core``: summed end - start of the work ops, divided by ``n_cores``."""
    work = ops[~ops["op"].astype(str).str.startswith(_SYNC_PREFIXES)]
    dur = (work["end"] - work["start"]).clip(lower=0)
    out = dur.groupby([work["phase"].astype(str), work["pipe"].astype(str)], observed=True).sum() / max(n_cores, 1)
    return out.rename(BUSY).reset_index()


def program_counts(records) -> Counter:
    """Counts of one program's records by the categories the comparison reports."""
    c: Counter = Counter()
    for rec in records:
        t = type(rec)
        if t is Tag:
            continue
        if t is VecOp:
            c["vector_calls"] += 1
        elif t is Mmad:
            c["mmads"] += 1
            c["mmad_macs"] += rec.m * rec.n * rec.k
        elif t is PipeBarrier:
            c["pipe_barrier_" + rec.pipe] += 1
        elif t is ScalarGm:
            c["scalar_gm_" + ("stores" if rec.store else "reads")] += 1
        elif t is Scalar:
            c["scalar_" + rec.kind] += rec.count
        elif t is Dma:
            c["dma_" + rec.direction] += 1
            c["bytes_" + rec.direction] += rec.nbytes
        else:
            c[t.__name__] += 1
    return c


def core0_records(scenario, version: str):
    """Core 0's records of ``scenario`` under kernel ``version`` (numbers off: records only)."""
    from cgdr_des.hw import load_profile
    from cgdr_des.kernel.launch import Shape
    from cgdr_des.workload.tensors import draw_g

    prof = load_profile(scenario.profile_ref(), dict(scenario.hardware.overrides) or None)
    lengths, s = scenario.lengths(), scenario.shape
    g = draw_g(int(lengths.sum()), s.nv, scenario.workload.seed) if s.has_gamma else None
    shape = Shape(int(lengths.size), int(lengths.sum()), s.nk, s.nv, s.dk, s.dv, s.resolved_scale(), s.has_gamma)
    if version == "vector":
        from cgdr_des.kernel.functional import make_launch
        from cgdr_des.kernel.program import core_program

        launch = make_launch(shape, lengths, g, None, numerics="off", ub_size=prof.ub_usable_bytes,
                             aiv_num=prof.aiv_num, buffer_num=scenario.kernel.buffer_num)
        return core_program(launch, 0, numbers=False)
    from cgdr_des.kernel.cube.launch import make_cube_launch
    from cgdr_des.kernel.cube.program import core_program as cube_program

    launch = make_cube_launch(shape, lengths, g, None, numerics="off", ub_size=prof.ub_usable_bytes,
                              aiv_num=prof.aiv_num, kernel_version=version)
    return cube_program(launch, 0)


def compare_kernels(scenario, versions=("vector", "cube"), simulate=None, progress=None) -> KernelComparison:
    """Run ``scenario`` once per kernel version (timing only: numerics off) and compare them;
    ``progress`` (a :class:`~cgdr_des.results.progress.Progress`) shows one stage per version."""
    from cgdr_des.results.progress import Progress

    if simulate is None:
        from cgdr_des.simulation import simulate
    progress = progress if progress is not None else Progress.off()
    summary, phases, counts = [], [], []
    for v in versions:
        sc = scenario.with_changes({"kernel": {"kernel_version": v}, "sim": {"numerics": "off", "trace": False}})
        with progress.stage(f"running kernel {v}", unit="work items") as stage:
            res = simulate(sc, progress=stage)
        s = res.summary.iloc[0]
        n_cores = int(res.meta.get("block_dim", len(res.cores)))
        summary.append({"kernel_version": v, "scenario": str(scenario.name), "hardware": scenario.hardware.profile,
                        "makespan_cycles": int(s["makespan_cycles"]),
                        "makespan_us": float(s["makespan_us"]), "block_dim": n_cores, "v_step": res.meta.get("v_step")})
        phases.append(busy_by_phase(res.ops, n_cores).assign(kernel_version=v))
        counts.append({"kernel_version": v, **program_counts(core0_records(sc, v))})
    ph = pd.concat(phases, ignore_index=True)[["kernel_version", "phase", "pipe", BUSY]]
    pipes = ph.groupby(["kernel_version", "pipe"], sort=False)[BUSY].sum().reset_index()
    cnt = pd.DataFrame(counts).fillna(0)
    cnt[cnt.columns[1:]] = cnt[cnt.columns[1:]].astype(np.int64)
    return KernelComparison(pd.DataFrame(summary), ph, pipes, cnt)
