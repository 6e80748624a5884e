"""The surrogate's self-check: a few of the study's batches re-simulated at ``phase`` fidelity.

Check j re-simulates one (batch, policy) pair: the policy is the j-th requested one (cycling), the
batch is, for j = 0, 1, 2, ..., the surrogate's worst under it, its median, then random ones (drawn
from the study's seed). Each row stores the relative error of the makespan and the largest relative
error of a core's finish (over the cores that ran items), against :data:`CHECK_BOUND`.

A picked batch of more than ``[study] check_max_token_heads`` tokens x value heads (a 64-sequence batch
at phase fidelity takes minutes) is checked as a **stand-in**: every length scaled by the same factor,
rounded, at least 1 token (empty sequences stay empty), so that the work fits the cap, and the
surrogate is evaluated on the stand-in itself. The row's error is then the surrogate's error on the
stand-in, a batch of the same number of sequences and the same proportions; ``tokens_checked`` and
``stand_in_scale`` (its tokens / the batch's; 1.0 for the batch itself) say which was checked.

The checks are picked in this process, in order (the random ones from one generator), and each is
then a self-contained :class:`Check`. With ``workers`` > 1 they run at once on the shared process
pool (:class:`cgdr_des.pool.WorkerPool`; in a pool worker, such as a sweep's tail point, they never
start one); the rows are put back in check order, so the frame is the one the serial run gives.
"""

from __future__ import annotations

import warnings
from contextlib import closing
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: The agreement the calibration is built for (relative, makespan and every core's finish).
CHECK_BOUND = 0.005
COLUMNS = ["check", "kind", "batch_index", "policy", "tokens_checked", "stand_in_scale", "makespan_surrogate_cycles",
           "makespan_phase_cycles", "makespan_rel_err", "finish_max_rel_err", "within_bound"]


@dataclass(frozen=True)
class Check:
    """One check as a worker needs it (picklable): the one-batch scenario and the surrogate's figures."""

    j: int
    kind: str
    batch_index: int
    policy: str
    scenario: object
    makespan: int            # the surrogate's makespan of the batch (cycles)
    finish: np.ndarray       # the surrogate's finish of every core (cycles)
    tokens: int              # the tokens simulated (the stand-in's when scaled)
    scale: float             # tokens / the picked batch's tokens (1.0: the batch itself)


def stand_in(lengths: np.ndarray, nv: int, cap: int) -> np.ndarray:
    """``lengths`` scaled down so that tokens x ``nv`` is at most about ``cap`` (0: no cap): the same
    factor for every sequence, rounded, at least 1 for a non-empty one; ``lengths`` when they fit."""
    work = int(lengths.sum()) * int(nv)
    if cap <= 0 or work <= cap:
        return lengths
    scaled = np.rint(lengths * (cap / work)).astype(lengths.dtype)
    return np.where(lengths > 0, np.maximum(scaled, 1), 0).astype(lengths.dtype)


def pick(makespan: np.ndarray, j: int, rng: np.random.Generator) -> tuple[str, int]:
    """(kind, batch index) of check j among batches with these makespans."""
    if j == 0:
        return "worst", int(np.argmax(makespan))
    if j == 1:
        return "median", int(np.argsort(makespan, kind="stable")[makespan.size // 2])
    return "random", int(rng.integers(makespan.size))


def plan(sc, costs, lengths: np.ndarray, estimates: dict, k: int, seed: int) -> list[Check | None]:
    """The ``k`` checks in order; None for one whose batch is all empty (nothing to simulate). ``costs``
    (the item costs) time a stand-in."""
    from cgdr_des.tail.surrogate import estimate

    names, rng, checks = list(estimates), np.random.default_rng(seed), []
    cap = sc.study.check_max_token_heads
    for j in range(k):
        policy = names[j % len(names)]
        est = estimates[policy]
        kind, i = pick(est.makespan, j, rng)
        if lengths[i].sum() == 0:
            checks.append(None)
            continue
        batch, row = stand_in(lengths[i], sc.shape.nv, cap), i
        if batch is not lengths[i]:
            est, row = estimate(costs, batch[None, :], policy), 0
        one = sc.with_changes({"workload": {"lengths": batch.tolist(), "distribution": None},
                               "kernel": {"policy": policy},
                               "sim": {"fidelity": "phase", "numerics": "off", "trace": False, "ops": False}})
        tokens = int(batch.sum())
        checks.append(Check(j, kind, i, policy, one, int(est.makespan[row]), est.finish[row].copy(), tokens,
                            tokens / int(lengths[i].sum())))
    return checks


def check_workers(workers: int, checks: int) -> int:
    """The processes ``checks`` checks run on when ``workers`` are asked for: 1 (this process) for
    at most one check, and always inside a pool worker (pools do not nest)."""
    from cgdr_des.pool import in_worker

    return 1 if in_worker() else max(1, min(int(workers), int(checks)))


def check_rows(sc, costs, lengths: np.ndarray, estimates: dict, k: int, seed: int, *, on_done=None,
               workers: int = 1) -> pd.DataFrame:
    """``k`` check rows (see the module docstring); ``on_done()`` after each of the ``k`` checks
    finishes, in whatever order they do; ``workers``: processes to run them on (1: this one)."""
    checks = plan(sc, costs, lengths, estimates, k, seed)
    todo = [c for c in checks if c is not None]
    done = on_done if on_done is not None else (lambda: None)
    for _ in range(len(checks) - len(todo)):  # a skipped check counts too: the progress total is k
        done()
    n = check_workers(workers, len(todo))
    rows = {}
    for check, (row, caught) in _run(todo, n):
        for w in caught:  # a worker's warnings, raised here as the serial run raises them
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        rows[check.j] = row
        done()
    return pd.DataFrame([rows[j] for j in sorted(rows)], columns=COLUMNS)


def _run(todo: list[Check], workers: int):
    """``(check, run_check(check))`` as each finishes: in order here, or on a pool of ``workers``."""
    if workers <= 1:
        for check in todo:
            yield check, run_check(check, record=False)
        return
    from cgdr_des.pool import WorkerPool

    pool = WorkerPool(workers)
    with closing(pool.completed(todo, run_check)) as finished:  # the workers end however this ends
        for check, fut in finished:
            yield check, fut.result()


def run_check(check: Check, record: bool = True) -> tuple[dict, list]:
    """The row of one check and, with ``record`` (in a worker), the warnings it raised (to raise again
    in the parent; without, they are raised here as they happen)."""
    from cgdr_des.simulation import simulate  # lazy: the simulation stack is heavy

    if not record:
        return _row(check, simulate(check.scenario)), []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        row = _row(check, simulate(check.scenario))
    return row, [_Warned(str(w.message), w.category, w.filename, w.lineno) for w in caught]


@dataclass(frozen=True)
class _Warned:
    """A warning as it crosses processes (the message as text: any warning's arguments pickle)."""

    message: str
    category: type
    filename: str
    lineno: int


def _row(check: Check, result) -> dict:
    cores = result.cores.sort_values("core")
    ran = cores["items"].to_numpy() > 0
    sim_finish = cores["finish"].to_numpy(np.float64)[ran]
    est_finish = check.finish[cores["core"].to_numpy()][ran]
    sim_mk = float(result.summary["makespan_cycles"].iloc[0])
    mk_err = (float(check.makespan) - sim_mk) / sim_mk
    fin_err = float(np.max(np.abs(est_finish - sim_finish) / sim_finish))
    return {"check": check.j, "kind": check.kind, "batch_index": check.batch_index, "policy": check.policy,
            "tokens_checked": check.tokens, "stand_in_scale": check.scale,
            "makespan_surrogate_cycles": check.makespan, "makespan_phase_cycles": int(sim_mk),
            "makespan_rel_err": mk_err, "finish_max_rel_err": fin_err,
            "within_bound": bool(max(abs(mk_err), fin_err) <= CHECK_BOUND)}
