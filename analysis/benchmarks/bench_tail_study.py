"""Tail study: 10 000 sampled batches x every policy on one core, calibration included (goal <= 30 s).

Batches of B = 16 lognormal lengths (sigma 1, median 1024 tokens), Nk = Nv = 16, dk = dv = 128, on
atlas-300i-duo (8 vector cores): ``cgdr_des.tail.run_study`` with no phase-fidelity checks (the
checks are timed apart: each re-simulates one whole batch). Side by side in the same process, the
per-batch loop the vectorised surrogate replaces (``assign_items`` and a sum per core, one batch at
a time) on a sample of the same batches, and one batch at phase fidelity against its estimate.
Usage: python analysis/benchmarks/bench_tail_study.py [N_BATCHES]   (default 10 000)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import scenario, timed

import cgdr_des
from cgdr_des.item_costs import measure_item_costs
from cgdr_des.kernel.dispatch import assign_items
from cgdr_des.simulation import run_launch
from cgdr_des.tail import estimate, run_study, sample_batches, write_study
from cgdr_des.tail.checks import check_rows

SHAPE = {"nk": 16, "nv": 16, "dk": 128, "dv": 128}
DIST = {"kind": "lognormal", "median": 1024, "sigma": 1.0, "min": 1}
GOAL_SECONDS, LOOP_SAMPLE = 30.0, 200


def per_batch_loop(costs, lengths, policy):
    """The unvectorised way: one batch at a time, items as objects, a Python sum per core."""
    makespans = []
    for row in lengths:
        cores = assign_items(row, costs.nv, costs.dv, costs.v_step, costs.block_dim, policy,
                             item_cost=costs.item_cycles)
        busy = [int(costs.item_cycles([it.seqlen for it in c], [it.vtile for it in c]).sum()) if c else 0
                for c in cores]
        makespans.append(max(busy))
    return makespans


def main(n: int) -> None:
    sc = scenario(shape=SHAPE, workload={"batch": 16, "seed": 1, "distribution": DIST},
                  study={"batches": n, "check_batches": 0}, sim={"numerics": "off"})
    s = sc.shape
    t_cal, costs = timed(measure_item_costs.__wrapped__, _profile(sc), s.nk, s.nv, s.dk, s.dv, s.has_gamma, 1,
                         run_launch)
    measure_item_costs.cache_clear()
    t0 = time.perf_counter()
    result = run_study(sc)  # calibrates again (cold cache): the figure below includes it
    t_study = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        t_write, _ = timed(write_study, result, Path(tmp), plots=False)
        t_plots, _ = timed(write_study, result, Path(tmp))
    policies = result.meta["policies"]
    print(f"{n:,} batches x {len(policies)} policies ({', '.join(policies)}), B = 16, 8 cores")
    print(f"run_study, calibration included:  {t_study:7.2f} s  (goal <= {GOAL_SECONDS:.0f} s on one core) "
          f"-> ratio {t_study / GOAL_SECONDS:.3f}")
    print(f"  of which calibration (one phase run per chunk length): {t_cal:6.2f} s")
    lengths = sample_batches(sc.workload.distribution, 16, LOOP_SAMPLE, 1)
    for policy in ("greedy", "cost_lpt", "minmax_contiguous"):
        t_vec, est = timed(estimate, costs, lengths, policy)
        t_loop, loop = timed(per_batch_loop, costs, lengths, policy)
        same = np.array_equal(est.busy.max(axis=1), np.array(loop))
        print(f"  {policy:18s} {LOOP_SAMPLE} batches: per-batch loop {t_loop:6.3f} s, vectorised {t_vec:6.3f} s "
              f"-> {t_loop / t_vec:6.1f}x (same busy maxima: {same})")
    print(f"write_study: frames {t_write:5.2f} s, frames + plots {t_plots:5.2f} s (not in the goal)")
    t_check, checks = timed(check_rows, sc, costs, result_lengths(result), _estimates(result, costs), 1, 1)
    row = checks.iloc[0]
    print(f"self-check, worst batch under {row['policy']} at phase fidelity: {t_check:6.2f} s, surrogate "
          f"{row['makespan_surrogate_cycles']:,} vs phase {row['makespan_phase_cycles']:,} cycles "
          f"({row['makespan_rel_err']:+.3%}; worst core finish {row['finish_max_rel_err']:.3%})")
    print(result.summary[["policy", "p50_us", "p99_us", "p99_9_us", "makespan_over_lb_mean"]]
          .to_string(index=False, float_format=lambda v: f"{v:,.3f}"))


def _profile(sc):
    from cgdr_des.hw import load_profile

    return load_profile(sc.hardware.profile)


def result_lengths(result):
    first = result.batches[result.batches["policy"] == result.meta["policies"][0]]
    return np.vstack(first["lengths"].to_numpy()).astype(np.int64)


def _estimates(result, costs):
    lengths = result_lengths(result)
    return {"greedy": estimate(costs, lengths, "greedy")}


if __name__ == "__main__":
    _ = cgdr_des
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
