"""Fit chosen ranged profile fields to measured latencies.

Least squares on the log of simulated / measured latency (a relative error, the same weight for a
1 ms and a 100 ms shape), over the unit box of the fields' ranges, in two stages, both written in
numpy (no scipy):

1. *Levenberg-Marquardt* with a forward-difference Jacobian, each step clipped to the box. The
   makespan is close to piecewise linear in each cycle field (cycles on the critical path times a
   count), so a few linearised steps land near the optimum for a few simulations per field.
2. *Compass search* from there: try each field one step up and down, keep the first improvement,
   halve the step when none improves, stop at the fields' resolution (half an integer cycle). The
   makespan is a step function of the integer fields, so no gradient is trusted at the end; compass
   search needs none, keeps the bounds, and stops at a point no single-field step improves
   (Kolda, Lewis & Torczon, SIAM Review 45(3), 2003).

It finds a local minimum: fields that compensate each other (two latencies on one critical path) are
not identifiable from latencies alone, which the leave-one-out errors expose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cgdr_des.errors import InputError
from cgdr_des.timing.evaluate import Evaluator
from cgdr_des.timing.space import nominal, select, unit_of, value_at

STEP0 = 0.25
MIN_STEP = 1 / 128
MAX_EVALS = 400
LM_ITERS = 8
FD_STEP = 0.02       # forward-difference step (unit box) where the field's resolution is finer
POLISH_STEP = 0.0625


@dataclass
class Problem:
    """Evaluators of the measured scenarios, their latencies and the fitted parameters."""

    evaluators: list[Evaluator]
    measured: np.ndarray
    params: list

    def point(self, u) -> dict:
        """Parameter values at ``u``, a point of the unit box (one coordinate per parameter)."""
        return {p.name: value_at(p, x) for p, x in zip(self.params, u, strict=True)}

    def predict(self, u, which=None) -> np.ndarray:
        """Simulated makespans (cycles) at ``u`` of the measured scenarios ``which`` (default all)."""
        pt = self.point(u)
        idx = range(len(self.evaluators)) if which is None else which
        return np.array([self.evaluators[i].makespan(pt)[1] for i in idx])

    def loss(self, u, which=None) -> float:
        """Sum over scenarios ``which`` of log(simulated / measured)²: the fit's relative squared error."""
        idx = list(range(len(self.evaluators))) if which is None else list(which)
        return float(np.sum(np.log(self.predict(u, idx) / self.measured[idx]) ** 2))


def build_problem(measurements, fields, load) -> Problem:
    """``load(path)`` loads a scenario; every scenario must use the same hardware profile."""
    if not fields:
        raise InputError("--fields", fields, "at least one ranged field to fit")
    evs = [Evaluator(load(m.scenario)) for m in measurements]
    refs = {ev.scenario.profile_ref() for ev in evs}
    if len(refs) > 1:
        raise InputError("measurements", sorted(refs), "scenarios that all use one hardware profile")
    params = select(evs[0].profile, fields)
    if len(set(fields)) != len(fields):
        raise InputError("--fields", ",".join(fields), "each field once")
    return Problem(evs, np.array([m.latency_us for m in measurements]), params)


def resolution(params) -> float:
    """The smallest unit step that can still change a value: half an integer cycle of the widest
    integer range, half a cell of a choice, ``MIN_STEP`` for a real-valued field."""
    steps = [MIN_STEP if not (p.choices or p.integer) else
             0.5 / len(p.choices) if p.choices else 0.5 / max(p.high - p.low, 1) for p in params]
    return max(min(steps), MIN_STEP)


def compass(problem: Problem, u0, which=None, *, step=STEP0, min_step=None, max_evals=MAX_EVALS, on_step=None):
    """Compass search from ``u0`` on the unit box; returns ``(u, loss, evaluations)``. ``on_step()``
    is called each time the step is halved (:func:`step_sizes` times when the search runs to the end)."""
    min_step = resolution(problem.params) if min_step is None else min_step
    u = np.array(u0, dtype=float)
    f, evals = problem.loss(u, which), 1
    while step >= min_step and evals < max_evals:
        improved = False
        for i in range(len(u)):
            for sign in (1.0, -1.0):
                v = u.copy()
                v[i] = min(max(u[i] + sign * step, 0.0), 1.0)
                if v[i] == u[i]:
                    continue
                fv, evals = problem.loss(v, which), evals + 1
                if fv < f - 1e-12:
                    u, f, improved = v, fv, True
                    break
            if improved:
                break
        if not improved:
            step /= 2
            if on_step is not None:
                on_step()
    return u, f, evals


def step_sizes(step: float, min_step: float) -> int:
    """How many step sizes compass search tries from ``step`` down to ``min_step``."""
    count = 0
    while step >= min_step:
        step, count = step / 2, count + 1
    return count


def _residuals(problem: Problem, u, idx) -> np.ndarray:
    return np.log(problem.predict(u, idx) / problem.measured[idx])


def levenberg_marquardt(problem: Problem, u0, which=None, *, iters: int = LM_ITERS, on_step=None):
    """Damped Gauss-Newton steps on the unit box; returns ``(u, loss, evaluations)``; ``on_step()``
    after each of at most ``iters`` iterations."""
    idx = list(range(len(problem.measured))) if which is None else list(which)
    u, lam, evals = np.array(u0, dtype=float), 1e-3, 1
    r = _residuals(problem, u, idx)
    h = np.array([max(4 * resolution([p]), FD_STEP) for p in problem.params])
    for _ in range(iters):
        jac = np.empty((len(idx), len(u)))
        for i in range(len(u)):
            v = u.copy()
            v[i] = u[i] + h[i] if u[i] + h[i] <= 1 else u[i] - h[i]
            jac[:, i] = (_residuals(problem, v, idx) - r) / (v[i] - u[i])
            evals += 1
        a = jac.T @ jac
        step = np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-12), -jac.T @ r)
        v = np.clip(u + step, 0.0, 1.0)
        rv = _residuals(problem, v, idx)
        evals += 1
        if rv @ rv < r @ r - 1e-15:
            u, r, lam = v, rv, lam / 10
        else:
            lam *= 10
        if on_step is not None:
            on_step()
        if r @ r < 1e-12 or np.max(np.abs(step)) < resolution(problem.params):
            break
    return u, float(r @ r), evals


def fit_box(problem: Problem, u0, which=None):
    """Levenberg-Marquardt then compass search from its result; ``(u, loss, evaluations)``."""
    u, _, e1 = levenberg_marquardt(problem, u0, which)
    u, f, e2 = compass(problem, u, which, step=POLISH_STEP)
    return u, f, e1 + e2


@dataclass(frozen=True)
class Fit:
    """A calibration: the fitted values, per-point residuals and leave-one-out errors."""

    nominal: dict
    fitted: dict
    loss: float
    evaluations: int
    points: pd.DataFrame

    @property
    def rms_residual_pct(self) -> float:
        """Root mean square of the fitted points' residuals, in percent."""
        return float(np.sqrt(np.mean(self.points["residual_pct"] ** 2)))

    @property
    def rms_loo_pct(self) -> float:
        """Root mean square of the leave-one-out prediction errors, in percent."""
        return float(np.sqrt(np.mean(self.points["loo_error_pct"] ** 2)))


def calibrate(problem: Problem, *, loo: bool = True, progress=None) -> Fit:
    """Fit from the nominal values, then refit without each point in turn (from the full fit) and
    predict it: the leave-one-out error says how far the fit can be trusted on a shape it did not see.
    ``progress`` (a :class:`~cgdr_des.results.progress.Progress`) shows the two stages of the fit
    (Levenberg-Marquardt iterations, compass step sizes) and the leave-one-out refits."""
    from cgdr_des.results.progress import Progress

    progress = progress if progress is not None else Progress.off()
    nom = nominal(problem.evaluators[0].profile, problem.params)
    u0 = [unit_of(p, nom[p.name]) for p in problem.params]
    n = len(problem.measured)
    what = f"fitting {len(problem.params)} field{'s' if len(problem.params) != 1 else ''} to {n} points"
    with progress.stage(f"{what}: Levenberg-Marquardt", LM_ITERS, "iterations") as stage:
        u, _, e1 = levenberg_marquardt(problem, u0, on_step=stage.advance)
    sizes = step_sizes(POLISH_STEP, resolution(problem.params))
    with progress.stage(f"{what}: compass search", sizes, "step sizes") as stage:
        u, f, e2 = compass(problem, u, step=POLISH_STEP, on_step=stage.advance)
    loo_us, e3 = _leave_one_out(problem, u, n if loo and n > 1 else 0, progress)
    nominal_us, fitted_us = problem.predict(u0), problem.predict(u)
    pts = pd.DataFrame({"scenario": [str(ev.scenario.name) for ev in problem.evaluators],
                        "measured_us": problem.measured, "nominal_us": nominal_us, "fitted_us": fitted_us})
    pts["residual_pct"] = 100 * (pts["fitted_us"] / pts["measured_us"] - 1)
    pts["loo_us"] = loo_us
    pts["loo_error_pct"] = 100 * (pts["loo_us"] / pts["measured_us"] - 1)
    return Fit(nom, problem.point(u), f, e1 + e2 + e3, pts)


def _leave_one_out(problem: Problem, u, count: int, progress) -> tuple[np.ndarray, int]:
    """Each of the first ``count`` points predicted by a refit (from ``u``) without it; NaN for the rest."""
    loo_us, evals = np.full(len(problem.measured), math.nan), 0
    if count == 0:
        return loo_us, evals
    with progress.stage(f"leave-one-out: {count} refits", count, "refits") as stage:
        for i in range(count):
            rest = [j for j in range(len(problem.measured)) if j != i]
            ui, _, e = fit_box(problem, u, rest)
            evals += e
            loo_us[i] = problem.predict(ui, [i])[0]
            stage.advance()
    return loo_us, evals
