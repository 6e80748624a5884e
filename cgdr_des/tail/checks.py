"""The surrogate's self-check: a few of the study's batches re-simulated at ``phase`` fidelity.

Check j re-simulates one (batch, policy) pair: the policy is the j-th requested one (cycling), the
batch is, for j = 0, 1, 2, ..., the surrogate's worst under it, its median, then random ones (drawn
from the study's seed). Each row stores the relative error of the makespan and the largest relative
error of a core's finish (over the cores that ran items), against :data:`CHECK_BOUND`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: The agreement the calibration is built for (relative, makespan and every core's finish).
CHECK_BOUND = 0.005


def pick(makespan: np.ndarray, j: int, rng: np.random.Generator) -> tuple[str, int]:
    """(kind, batch index) of check j among batches with these makespans."""
    if j == 0:
        return "worst", int(np.argmax(makespan))
    if j == 1:
        return "median", int(np.argsort(makespan, kind="stable")[makespan.size // 2])
    return "random", int(rng.integers(makespan.size))


def check_rows(sc, costs, lengths: np.ndarray, estimates: dict, k: int, seed: int, *, on_done=None) -> pd.DataFrame:
    """``k`` check rows (see the module docstring); ``on_done()`` after each of the ``k`` checks."""
    from cgdr_des.simulation import simulate  # lazy: the simulation stack is heavy

    names, rng, rows = list(estimates), np.random.default_rng(seed), []
    for j in range(k):
        policy = names[j % len(names)]
        est = estimates[policy]
        kind, i = pick(est.makespan, j, rng)
        if lengths[i].sum() > 0:  # an all-empty batch has nothing to simulate
            one = sc.with_changes({"workload": {"lengths": lengths[i].tolist(), "distribution": None},
                                   "kernel": {"policy": policy},
                                   "sim": {"fidelity": "phase", "numerics": "off", "trace": False}})
            rows.append(_row(j, kind, i, policy, est, simulate(one)))
        if on_done is not None:  # a skipped check counts too: the progress total is k
            on_done()
    return pd.DataFrame(rows, columns=["check", "kind", "batch_index", "policy", "makespan_surrogate_cycles",
                                       "makespan_phase_cycles", "makespan_rel_err", "finish_max_rel_err",
                                       "within_bound"])


def _row(j: int, kind: str, i: int, policy: str, est, result) -> dict:
    cores = result.cores.sort_values("core")
    ran = cores["items"].to_numpy() > 0
    sim_finish = cores["finish"].to_numpy(np.float64)[ran]
    est_finish = est.finish[i][cores["core"].to_numpy()][ran]
    sim_mk = float(result.summary["makespan_cycles"].iloc[0])
    mk_err = (float(est.makespan[i]) - sim_mk) / sim_mk
    fin_err = float(np.max(np.abs(est_finish - sim_finish) / sim_finish))
    return {"check": j, "kind": kind, "batch_index": i, "policy": policy,
            "makespan_surrogate_cycles": int(est.makespan[i]), "makespan_phase_cycles": int(sim_mk),
            "makespan_rel_err": mk_err, "finish_max_rel_err": fin_err,
            "within_bound": bool(max(abs(mk_err), fin_err) <= CHECK_BOUND)}
