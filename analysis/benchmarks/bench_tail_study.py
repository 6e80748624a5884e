"""Timing-only tail study: sampled batches per second (goal: 10 000 batches within 10 minutes on 2 cores).

Batches of B = 16 lognormal lengths (sigma 1, median 1024 tokens), Nk = Nv = 16, dk = dv = 128, on
atlas-300i-duo (8 vector cores). The chunk costs are calibrated once with one phase-fidelity run
(cgdr_des.tail); the calibration time is reported and counted in the projection. For scale, one
batch is also simulated at phase fidelity, side by side, with the estimate's error.
Usage: python analysis/benchmarks/bench_tail_study.py [N_BATCHES]   (default 2000; projection to 10 000)
"""

from __future__ import annotations

import sys

import numpy as np
from common import scenario, timed

import cgdr_des
from cgdr_des.tail import calibrate, estimate_batch, tail_study
from cgdr_des.workload.lengths import Lognormal

SHAPE = {"nk": 16, "nv": 16, "dk": 128, "dv": 128}
GOAL_BATCHES, GOAL_SECONDS = 10_000, 600.0


def main(n_batches: int) -> None:
    dist = Lognormal(kind="lognormal", median=1024, sigma=1.0, min=1)
    t_cal, costs = timed(calibrate, **SHAPE)
    t_run, frame = timed(tail_study, costs, dist, batch=16, n_batches=n_batches, seed=1)
    per_batch = t_run / len(frame)
    projected = t_cal + per_batch * GOAL_BATCHES
    lengths = np.random.default_rng(99).lognormal(np.log(1024), 1.0, 16).round().clip(1).astype(int).tolist()
    t_phase, res = timed(cgdr_des.simulate, scenario(shape=SHAPE, workload={"lengths": lengths},
                                                     sim={"numerics": "off"}))
    est = estimate_batch(costs, lengths)["makespan_cycles"]
    sim = int(res.summary.makespan_cycles[0])
    print(f"calibration (one phase-fidelity run): {t_cal:7.2f} s   fit residual {costs.fit_residual:.2e}")
    print(f"{len(frame)} batches estimated in {t_run:7.2f} s = {len(frame) / t_run:,.0f} batches/s (one process)")
    print(f"one batch at phase fidelity:          {t_phase:7.2f} s   makespan {sim:,} vs estimate {est:,} "
          f"({100 * (est - sim) / sim:+.3f} %)")
    print(f"projected for {GOAL_BATCHES:,} batches: {projected:7.1f} s (one process; goal {GOAL_SECONDS:.0f} s on "
          f"2 cores) -> ratio {projected / GOAL_SECONDS:.3f}")
    q = frame["makespan_cycles"].quantile([0.5, 0.95, 0.99])
    print(f"makespan over the batches: p50 {q[0.5]:,.0f}  p95 {q[0.95]:,.0f}  p99 {q[0.99]:,.0f} cycles; "
          f"median imbalance {frame['imbalance'].median():.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
