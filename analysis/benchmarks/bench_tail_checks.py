"""A tail study's 3 self-checks (worst, median, random batch at phase fidelity): in this process
(``workers=1``) against 2 pool workers (``workers=2``), side by side, on the same batches and estimates.

Two studies: ``tail_lognormal_12h`` as shipped (2 000 batches of 16 lognormal sequences, 12 heads; each
check a whole phase-fidelity launch of seconds) and a tiny one (batches of 3 short sequences, checks of
a fraction of a second), where the pool's start-up (the forkserver importing the simulator once per
process, then forking each pool's workers) is what
is left to see. Wall seconds of ``check_rows`` alone (the item costs come from the calibration
cache, warmed first), its CPU seconds (this process's and its ended workers'), the rows compared, and
the largest resident set of a pool worker against the estimate's bound per check
(``cgdr_des.estimate.check_memory_bytes``).
Usage: python analysis/benchmarks/bench_tail_checks.py [ROUNDS [tiny|12h|all]]   (default 1 all: serial, then pool)
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

import pandas as pd
from common import scenario, shipped

from cgdr_des.estimate import check_memory_bytes, format_bytes
from cgdr_des.pool import WorkerPeak, forkserver_pid, proc_stat
from cgdr_des.scenario import validate_tiling
from cgdr_des.tail import estimate, run_study, sample_batches
from cgdr_des.tail.calibration import calibrate
from cgdr_des.tail.checks import check_rows

TINY = dict(shape={"nk": 1, "nv": 2, "dk": 32, "dv": 32},
            workload={"batch": 3, "seed": 2, "distribution": {"kind": "lognormal", "median": 60, "sigma": 1.0,
                                                              "min": 1, "max": 300}},
            study={"batches": 200, "check_batches": 3, "bootstrap": 50})


def inputs(sc):
    """The study's item costs, batches and per-policy estimates, as run_study has them before its checks."""
    meta = run_study(sc.with_changes({"study": {"check_batches": 0, "bootstrap": 10}})).meta  # warms the cache
    s = sc.shape
    costs = calibrate(sc.hardware.profile, nk=s.nk, nv=s.nv, dk=s.dk, dv=s.dv, has_gamma=s.has_gamma,
                      buffer_num=sc.kernel.buffer_num, overrides=dict(sc.hardware.overrides))
    lengths = sample_batches(sc.workload.distribution, sc.workload.batch, sc.study.batches, sc.workload.seed)
    return costs, lengths, {p: estimate(costs, lengths, p) for p in meta["policies"]}


def compare(label: str, sc, rounds: int) -> None:
    costs, lengths, estimates = inputs(sc)
    free = cores_free()
    k, seed = sc.study.check_batches, sc.workload.seed
    walls: dict[int, list[float]] = {1: [], 2: []}
    cpus: dict[int, list[float]] = {1: [], 2: []}
    frames = {}
    each: list[float] = []  # CPU seconds of each check in this process (the serial run's on_done marks)
    peak = WorkerPeak()
    for _ in range(rounds):
        for workers in (1, 2):
            t0, c0, w0 = time.perf_counter(), time.process_time(), _children_cpu()
            marks = [c0]
            frames[workers] = check_rows(sc, costs, lengths, estimates, k, seed, workers=workers,
                                         on_done=lambda m=marks: m.append(time.process_time()))
            if workers == 1:
                each = [b - a for a, b in zip(marks, marks[1:], strict=False)]
            walls[workers].append(time.perf_counter() - t0)
            cpus[workers].append(time.process_time() - c0 + _children_cpu() - w0)
    same = frames[1].equals(frames[2])
    serial, pool = min(walls[1]), min(walls[2])
    worker_peak = max(peak.stop().values(), default=0)
    bound = check_memory_bytes(sc, validate_tiling(sc), sc.study.batches)
    phase_s = ", ".join(f"{r.kind} {r.policy} {r.makespan_phase_cycles:,}" for r in frames[1].itertuples())
    print(f"{label}: {k} checks ({phase_s} cycles)")
    print(f"  check_rows wall, best of {rounds}: workers=1 {serial:6.2f} s | workers=2 {pool:6.2f} s "
          f"-> speed-up {serial / pool:4.2f}x (rows identical: {same}); CPU s (this process and its "
          f"workers) {min(cpus[1]):6.2f} | {min(cpus[2]):6.2f}; cores two busy processes got, before | after: "
          f"{free:.2f} | {cores_free():.2f}")
    print(f"  CPU s of each check in this process: {', '.join(f'{c:.2f}' for c in each)}; on 2 free cores the "
          f"pool's checks would end after the longest worker's share: max({each[0]:.2f}, "
          f"{' + '.join(f'{c:.2f}' for c in each[1:])}) plus its start-up")
    if rounds > 1:
        print("  every round, workers=1 | workers=2 (wall s): " + "; ".join(
            f"{a:.2f} | {b:.2f}" for a, b in zip(walls[1], walls[2], strict=True)))
    print(f"  largest worker resident set so far {format_bytes(worker_peak)}; estimate's bound per check "
          f"{format_bytes(bound)}")


def cores_free(seconds: float = 2.0) -> float:
    """The cores two busy processes get now: their CPU seconds over ``seconds`` of wall, summed (2.0 on
    an idle 2-core machine; what a 2-worker pool can get at most)."""
    loop = ("import time\nw, c = time.perf_counter(), time.process_time()\n"
            f"while time.perf_counter() - w < {seconds}:\n    pass\nprint(time.process_time() - c)")
    procs = [subprocess.Popen([sys.executable, "-c", loop], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    return sum(float(p.communicate()[0]) for p in procs) / seconds


def _children_cpu() -> float:
    """CPU seconds of this process's ended children and of the pool's forkserver with its ended children
    (the workers, once the pool has shut down: they are the server's children, not this process's)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    server = proc_stat(forkserver_pid())
    return ru.ru_utime + ru.ru_stime + (sum(map(int, server[11:15])) / os.sysconf("SC_CLK_TCK") if server else 0)


def main(rounds: int, which: str) -> None:
    pd.set_option("display.width", 200)
    if which in ("all", "tiny"):
        compare("tiny (3 x <=300 tokens, Nv 2)", scenario(name="tiny_checks", **TINY), rounds)
    if which in ("all", "12h"):
        compare("tail_lognormal_12h (16 x lognormal, Nv 12)", shipped("tail_lognormal_12h"), rounds)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1, sys.argv[2] if len(sys.argv) > 2 else "all")
