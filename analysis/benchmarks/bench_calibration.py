"""Calibration (the tail surrogate's item costs) per shipped profile, cold and from the on-disk cache.

For every profile in cgdr_des/hw/profiles/ the benchmark shape (Nk = Nv = 16, dk = dv = 128; on the
48-core A2 profiles its V-tiles are split across cores), and the split-V-tile shape (16, 32, 128,
128) on atlas-a2-910b2 (goal: <= 20 s CPU cold). ``cold``: an empty cache directory, nothing in the
process's own cache; ``cached``: the same calibration in a fresh process state (the in-process cache
cleared), read from the directory the cold run filled. CPU time (process_time: the machine is shared)
and wall time, side by side in one run.
Usage: python analysis/benchmarks/bench_calibration.py [PROFILE ...]   (default: every shipped profile)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from cgdr_des import cost_cache
from cgdr_des.hw import list_profiles, load_profile
from cgdr_des.item_costs import measure_item_costs
from cgdr_des.simulation import run_launch

BENCH = (16, 16, 128, 128)
SPLIT = (16, 32, 128, 128)
GOAL_CPU_SECONDS = 20.0


def overrides(name: str) -> dict | None:
    """The 910B profiles need the softsync-flag reading to run this kernel (docs/tail.md)."""
    return {"flag_double_set": "counter"} if name.startswith("atlas-a2") else None


def timed(prof, shape) -> tuple[float, float, object]:
    """(CPU s, wall s, costs) of one calibration with the in-process cache cleared."""
    measure_item_costs.cache_clear()
    c0, w0 = time.process_time(), time.perf_counter()
    costs = measure_item_costs(prof, *shape, True, 1, run_launch)
    return time.process_time() - c0, time.perf_counter() - w0, costs


def main(names: list[str]) -> None:
    cases = [(n, BENCH) for n in names]
    if "atlas-a2-910b2" in names:
        cases.append(("atlas-a2-910b2", SPLIT))
    print(f"{'profile':<16} {'(nk, nv, dk, dv)':<20} {'split':>5} {'cold cpu s':>10} {'cold wall s':>11} "
          f"{'cached cpu s':>12} {'cached wall s':>13} {'cold/cached cpu':>15}")
    with tempfile.TemporaryDirectory() as tmp, cost_cache.settings(tmp):
        for name, shape in cases:
            prof = load_profile(name, overrides(name))
            cold_cpu, cold_wall, costs = timed(prof, shape)
            hit_cpu, hit_wall, again = timed(prof, shape)
            assert (again.sole == costs.sole).all() and again.per_batch == costs.per_batch
            goal = f"  (goal <= {GOAL_CPU_SECONDS:.0f} s cpu: {'met' if cold_cpu <= GOAL_CPU_SECONDS else 'MISSED'})" \
                if costs.split or prof.aiv_num > 8 else ""
            ratio = cold_cpu / max(hit_cpu, 1e-6)
            print(f"{name:<16} {str(shape):<20} {'yes' if costs.split else 'no':>5} {cold_cpu:>10.1f} "
                  f"{cold_wall:>11.1f} {hit_cpu:>12.4f} {hit_wall:>13.4f} {ratio:>14.0f}x{goal}", flush=True)
    print(f"(cores {os.cpu_count()}, one process; cached = lru cleared, entry read from disk)")


if __name__ == "__main__":
    main(sys.argv[1:] or list_profiles())
