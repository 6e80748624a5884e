"""Sweep executors: speed-up of 2 pool workers over 1 (goal >= 1.8x), and per-point overhead of the pool
and of Dask against a bare loop.

1. ``scenarios/sweeps/phase_fidelity_64.toml`` (64 phase-fidelity runs of the long_t1024 shape,
   kernel numerics) on a local pool of 1 worker, then of 2, each into a fresh directory; wall times
   include starting the workers, storing every point and assembling summary.parquet. The two
   summaries are also compared byte for byte.
2. Overhead: M tiny points (numerics off, ~tens of ms each) as a bare loop of ``simulate`` in this
   process, then through ``run_sweep`` in this process, on a pool of 1 worker and on a Dask
   LocalCluster of 1 worker. Each is timed on 1 point and on M points: the difference, minus the bare
   loop's, divided by M - 1 is the marginal cost per point; the 1-point time minus the bare loop's is
   the start-up (worker processes, cluster).

Usage: python analysis/benchmarks/bench_sweep.py [--points 64] [--overhead-points 64] [--no-dask]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from common import ROOT

from cgdr_des.scenario import Scenario
from cgdr_des.simulation import simulate
from cgdr_des.sweep import expand, load_sweep, run_sweep
from cgdr_des.sweep.executors import DaskExecutor, InProcess, LocalPool

GOAL_SPEEDUP = 1.8
TINY = """name = "tiny"
[shape]
nk = 1
nv = 2
dk = 16
dv = 16
[workload]
lengths = [8, 3]
[sim]
numerics = "off"
trace = false
[output]
plots = false
"""
TINY_SWEEP = 'name = "overhead"\nbase = "tiny.toml"\nreplications = {n}\n'


def sweep_wall(spec, executor, max_points: int) -> tuple[float, bytes]:
    """Wall seconds of one sweep into a fresh directory, and its summary.parquet bytes."""
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        report = run_sweep(spec, out, executor, max_points=max_points)
        wall = time.perf_counter() - t0
        assert not report.status.failed, report.status.errors
        return wall, Path(out, "summary.parquet").read_bytes()


def speedup(points: int) -> None:
    spec = load_sweep(ROOT / "scenarios" / "sweeps" / "phase_fidelity_64.toml")
    t1, b1 = sweep_wall(spec, LocalPool(1), points)
    t2, b2 = sweep_wall(spec, LocalPool(2), points)
    print(f"{points} phase-fidelity points: 1 worker {t1:7.2f} s, 2 workers {t2:7.2f} s -> speed-up "
          f"{t1 / t2:.2f}x (goal >= {GOAL_SPEEDUP}x); summaries identical: {b1 == b2}")


def bare_loop(points) -> float:
    t0 = time.perf_counter()
    for p in points:
        simulate(Scenario.from_dict(p.scenario))
    return time.perf_counter() - t0


def overhead(n: int, dask: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "tiny.toml").write_text(TINY, encoding="utf-8")
        Path(tmp, "sweep.toml").write_text(TINY_SWEEP.format(n=n), encoding="utf-8")
        spec = load_sweep(Path(tmp, "sweep.toml"))
        points = expand(spec)
        bare_loop(points[:1])  # warm this process's imports and caches
        bare = {k: bare_loop(points[:k]) for k in (1, n)}
        print(f"bare loop of simulate: {bare[n] / n * 1e3:7.2f} ms per tiny point ({n} points)")
        executors = [("run_sweep in process", InProcess()), ("local pool, 1 worker", LocalPool(1))]
        if dask:
            t0 = time.perf_counter()
            executors.append(("Dask LocalCluster, 1 worker", DaskExecutor("local-dask", 1)))
            print(f"Dask LocalCluster start: {time.perf_counter() - t0:7.2f} s (not counted below)")
        for label, ex in executors:
            with ex:
                wall = {k: sweep_wall(spec, ex, k)[0] for k in (1, n)}
            per_point = ((wall[n] - wall[1]) - (bare[n] - bare[1])) / (n - 1)
            print(f"{label:28s}: {per_point * 1e3:7.2f} ms per point over the bare loop "
                  f"(x{wall[n] / bare[n]:.2f} of its wall), start-up {wall[1] - bare[1]:6.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=64, help="phase-fidelity points for the speed-up (max 64)")
    ap.add_argument("--overhead-points", type=int, default=64, help="tiny points for the overhead")
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask LocalCluster")
    args = ap.parse_args()
    speedup(min(args.points, 64))
    overhead(max(args.overhead_points, 2), not args.no_dask)


if __name__ == "__main__":
    main()
