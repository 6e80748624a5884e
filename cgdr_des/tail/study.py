"""A tail study: sample batches from the scenario's workload, time each under every policy, check a few.

``run_study`` is the whole study as data (:class:`StudyResult`); ``write_study`` writes its files
(``docs/tail.md`` lists them with their columns); ``cgdr-des tail`` is a thin layer over both.
Batch i's lengths come from ``numpy.random.default_rng(SeedSequence(seed).spawn(N)[i])``, so a batch
is reproducible on its own and the study is identical for the same scenario and seed.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from cgdr_des.errors import InputError
from cgdr_des.hw import load_profile
from cgdr_des.kernel.policies import OPTIMAL_MAX_ITEMS, POLICIES
from cgdr_des.results.progress import Progress
from cgdr_des.scenario import Scenario
from cgdr_des.tail.calibration import ItemCosts, costs_for
from cgdr_des.tail.checks import CHECK_BOUND, check_rows, check_workers
from cgdr_des.tail.summary import summarise
from cgdr_des.tail.surrogate import Estimate, estimate, items_of
from cgdr_des.workload.lengths import sample_lengths


@dataclass
class StudyResult:
    """The frames of one study (cycles and µs; ``docs/tail.md`` lists every column) and its settings."""

    batches: pd.DataFrame
    core_finish: pd.DataFrame
    summary: pd.DataFrame
    checks: pd.DataFrame
    meta: dict = field(default_factory=dict)

    @property
    def worst_check_error(self) -> float:
        """The largest relative error (makespan or core finish) of the phase-fidelity checks; 0 without checks."""
        if self.checks.empty:
            return 0.0
        return float(self.checks[["makespan_rel_err", "finish_max_rel_err"]].abs().to_numpy().max())


def run_study(sc: Scenario, *, batches: int | None = None, policies: list[str] | None = None,
              seed: int | None = None, progress=None, workers: int = 1) -> StudyResult:
    """Sample ``batches`` batches of ``sc``'s workload and time each under every policy (see the module doc).

    None takes the value from the scenario: ``[study] batches``/``policies``, ``[workload] seed``.
    ``progress`` (a :class:`~cgdr_des.results.progress.Progress`) shows its five stages: calibrating,
    sampling, timing (one step per policy), checking (one per check batch), summarising.
    ``workers``: processes the phase-fidelity checks run on at once (1: one after another in this
    process; the frames are the same either way, see :mod:`cgdr_des.tail.checks`).
    """
    n = sc.study.batches if batches is None else _positive("--batches", batches)
    workers = _positive_workers(workers)  # before the costly calibration, as every argument
    seed = sc.workload.seed if seed is None else int(seed)
    dist = sc.workload.distribution
    if dist is None:
        raise InputError("workload.distribution", None, "a length distribution: a tail study samples its batches")
    requested = _known(policies if policies is not None else sc.study.policies)
    prof = load_profile(sc.hardware.profile, dict(sc.hardware.overrides) or None)
    s = sc.shape
    progress = progress if progress is not None else Progress.off()
    with progress.stage("calibrating item costs (phase-fidelity launches, or the calibration cache)", 1) as stage:
        costs = costs_for(prof, s.nk, s.nv, s.dk, s.dv, s.has_gamma, sc.kernel.buffer_num,
                          sc.kernel.tiling_options())
        stage.advance()
    names = _policies(requested, costs, sc.workload.batch)
    with progress.stage(f"sampling {n:,} batch{'es' if n != 1 else ''}", 1) as stage:
        lengths = sample_batches(dist, sc.workload.batch, n, seed)
        stage.advance()
    frames, estimates = [], {}
    timing = f"timing {n:,} batch{'es' if n != 1 else ''} x {len(names)} polic{'ies' if len(names) != 1 else 'y'}"
    with progress.stage(timing, len(names), "policies") as stage:
        items = items_of(costs, lengths)  # the same for every policy
        for name in names:
            estimates[name] = estimate(costs, lengths, name, items=items)
            frames.append(_frames(name, lengths, estimates[name], costs))
            stage.advance()
    batch_rows = pd.concat([f[0] for f in frames], ignore_index=True)
    core_rows = pd.concat([f[1] for f in frames], ignore_index=True)
    k = sc.study.check_batches
    checking = progress if k else Progress.off()  # no stage for a study without checks
    w = check_workers(workers, k)
    on = f" on {w} workers" if w > 1 else ""
    with checking.stage(f"checking {k} batch{'es' if k != 1 else ''} at phase fidelity{on}", k, "batches") as stage:
        checks = check_rows(sc, costs, lengths, estimates, k, seed, on_done=stage.advance, workers=w)
    with progress.stage(f"summarising ({sc.study.bootstrap} bootstrap resamples)", 1) as stage:
        summary = summarise(batch_rows, n_boot=sc.study.bootstrap, seed=seed)
        stage.advance()
    result = StudyResult(batch_rows, core_rows, summary, checks, _meta(sc, costs, n, seed, names))
    if result.worst_check_error > CHECK_BOUND:
        why = ("; this shape splits V-tiles across cores, where the surrogate is measured within 0.2 % on random "
               "batches (docs/tail.md), so this batch is an outlier worth reporting") if costs.split else ""
        warnings.warn(f"tail surrogate is {result.worst_check_error:.2%} off phase fidelity on a checked batch "
                      f"(bound {CHECK_BOUND:.1%}); treat this study's figures with that error{why}", stacklevel=2)
    return result


def _positive(name: str, value) -> int:
    """A batch count: bounded like ``[study] batches`` (cgdr_des/bounds.py)."""
    from cgdr_des.bounds import MAX_STUDY_BATCHES

    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 1 <= value <= MAX_STUDY_BATCHES:
        raise InputError(name, value, f"an integer in [1, {MAX_STUDY_BATCHES:,}] (as [study] batches)")
    return int(value)


def _positive_workers(value) -> int:
    """``workers``: bounded like a sweep's ``--workers`` (cgdr_des/bounds.py), at least 1."""
    from cgdr_des.bounds import MAX_WORKERS, check_count

    return check_count("workers", value, 1, MAX_WORKERS, "1 runs the checks in this process")


def _known(requested) -> list[str] | None:
    """The requested policy names, de-duplicated, each checked (before the costly calibration)."""
    if requested is None:
        return None
    names = list(dict.fromkeys(requested))
    for name in names:
        if name not in POLICIES:
            raise InputError("policy", name, f"one of {', '.join(POLICIES)}")
    return names


def _policies(requested, costs: ItemCosts, batch: int) -> list[str]:
    """The requested policies in order (default: all; ``optimal`` only where batches are small enough)."""
    max_items = batch * costs.nv * (costs.v_tiles if costs.split else 1)
    if requested is None:
        return [p for p in POLICIES if p != "optimal" or max_items <= OPTIMAL_MAX_ITEMS]
    names = requested
    if "optimal" in names and max_items > OPTIMAL_MAX_ITEMS:
        raise InputError("policy", "optimal", f"batches of at most {OPTIMAL_MAX_ITEMS} work items (these have up "
                         f"to {max_items}: batch x nv x V-tiles); use cost_lpt or minmax_contiguous")
    return names


def sample_batches(dist, batch: int, n: int, seed: int) -> np.ndarray:
    """``(n, batch)`` int64 lengths; row i from its own child of ``SeedSequence(seed)``."""
    children = np.random.SeedSequence(seed).spawn(n)
    try:
        return np.vstack([sample_lengths(dist, batch, np.random.default_rng(c)) for c in children]).astype(np.int64)
    except InputError as exc:
        raise InputError(f"workload.distribution.{exc.field}", exc.value, exc.allowed) from None


def _frames(policy: str, lengths: np.ndarray, est: Estimate, costs: ItemCosts) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The batches rows and the core_finish rows of one policy."""
    n, m = est.finish.shape
    mk = est.makespan
    lb = est.lower_bound(m)
    finish = est.finish.astype(np.float64)
    mean = finish.mean(axis=1)
    batches = pd.DataFrame({
        "batch_index": np.arange(n), "policy": policy, "tokens": lengths.sum(axis=1),
        "max_seqlen": lengths.max(axis=1), "lengths": list(lengths.astype(np.int32)),
        "makespan_cycles": mk, "makespan_us": mk / costs.clock_mhz, "lower_bound_cycles": lb,
        "makespan_over_lb": mk / lb, "imbalance": mk / mean, "cv": finish.std(axis=1) / mean,
        "tail_idle_share": (mk[:, None] - finish).sum(axis=1) / (m * mk.astype(np.float64)),
    })
    cores = pd.DataFrame({
        "batch_index": np.repeat(np.arange(n), m), "policy": policy, "core": np.tile(np.arange(m), n),
        "items": est.items.ravel(), "tokens": est.tokens.ravel(), "busy_cycles": est.busy.ravel(),
        "finish_cycles": est.finish.ravel(),
    })
    return batches, cores


def _meta(sc: Scenario, costs: ItemCosts, n: int, seed: int, names: list[str]) -> dict:
    return {"scenario_name": sc.name, "hardware": costs.profile, "clock_mhz": costs.clock_mhz,
            "block_dim": costs.block_dim, "batch": sc.workload.batch, "batches": n, "seed": seed,
            "policies": names, "buffer_num": sc.kernel.buffer_num,
            "shape": {"nk": sc.shape.nk, "nv": sc.shape.nv, "dk": sc.shape.dk, "dv": sc.shape.dv},
            "check_bound": CHECK_BOUND}
