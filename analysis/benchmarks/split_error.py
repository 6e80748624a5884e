"""The tail surrogate's error on shapes that split V-tiles across cores (docs/tail.md's table).

Random batches of 1-5 sequences of 1-299 tokens (seeded), shape (nk, nv, dk, dv) = (1, 1, 64, 256)
(one head, two V-tiles), every dispatch policy the surrogate estimates: each batch simulated at
``phase`` fidelity and estimated from the calibrated item costs. Printed per profile and policy:
the largest relative error of the makespan and of a core's finish (over the cores that ran items),
and how many batches exceed the study check's bound (0.5 %).
Usage: python analysis/benchmarks/split_error.py [--batches 25] [PROFILE ...]
(default atlas-a2-910b2 and atlas-300i-duo; about a second per batch and policy).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import cgdr_des
from cgdr_des.scenario import Scenario
from cgdr_des.tail import calibrate, estimate
from cgdr_des.tail.checks import CHECK_BOUND

SPLIT = {"nk": 1, "nv": 1, "dk": 64, "dv": 256}
POLICIES = ("greedy", "cost_greedy", "float_share", "minmax_contiguous", "round_robin", "longest_first",
            "cost_lpt", "optimal")


def overrides(profile: str) -> dict:
    return {"flag_double_set": "counter"} if profile.startswith("atlas-a2") else {}


def phase_finish(profile: str, lengths: list[int], policy: str) -> tuple[np.ndarray, np.ndarray]:
    sc = Scenario.from_dict({"name": "split_error", "hardware": {"profile": profile, "overrides": overrides(profile)},
                             "shape": SPLIT, "workload": {"lengths": lengths}, "kernel": {"policy": policy},
                             "sim": {"numerics": "off", "trace": False, "fidelity": "phase"}})
    cores = cgdr_des.simulate(sc).cores.sort_values("core")
    return cores["finish"].to_numpy(np.int64), cores["items"].to_numpy() > 0


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profiles", nargs="*", default=["atlas-a2-910b2", "atlas-300i-duo"])
    ap.add_argument("--batches", type=int, default=25)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(7)
    batches = [rng.integers(1, 300, int(rng.integers(1, 6))).tolist() for _ in range(args.batches)]
    print(f"{len(batches)} batches of 1-5 sequences of 1-299 tokens, shape {tuple(SPLIT.values())}")
    print(f"{'profile':<16} {'policy':<18} {'makespan max err':>16} {'core finish max err':>19} "
          f"{'batches > ' + format(CHECK_BOUND, '.1%'):>16}")
    for profile in args.profiles:
        costs = calibrate(profile, **SPLIT, overrides=overrides(profile) or None)
        for policy in POLICIES:
            worst_span = worst_core = 0.0
            over = 0
            for lengths in batches:
                finish, ran = phase_finish(profile, lengths, policy)
                est = estimate(costs, np.array([lengths]), policy)
                span = abs(est.makespan[0] - finish.max()) / finish.max()
                core = float((np.abs(est.finish[0][ran] - finish[ran]) / finish[ran]).max())
                worst_span, worst_core = max(worst_span, span), max(worst_core, core)
                over += max(span, core) > CHECK_BOUND
            print(f"{profile:<16} {policy:<18} {worst_span:>16.2%} {worst_core:>19.2%} {over:>13} of {len(batches)}",
                  flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
