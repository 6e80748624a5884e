"""Expanding a sweep into points, each with its parameters, its scenario and its fingerprint.

Order (and so the point ids 0, 1, ...): the grid's combinations with its first field slowest, each
crossed with the ``[sample]`` draws, each with its replications innermost. Replication ``r`` runs with
``workload.seed = SeedSequence(base seed).spawn(replications)[r].generate_state(1)[0]``, so the seeds
are independent streams and do not depend on how many other points there are.

A point whose overrides do not validate (a shape whose tiling cannot fit UB, nv not a multiple of nk)
is kept with its one-line error: it is recorded as failed and the other points still run.

The fingerprint is the sha256 of the point's resolved scenario (``Scenario.resolved_dict``: every
default filled in, lengths written out), what the point runs (kind, frames, tail or advise options) and the
package version; a stored point is reused only when its fingerprint matches.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cgdr_des.errors import CgdrError, InputError, one_line
from cgdr_des.overrides import apply_overrides
from cgdr_des.runtime import package_version
from cgdr_des.scenario.messages import Shown
from cgdr_des.sweep.spec import Sampler, SweepSpec

SEED_FIELD = "workload.seed"
REPLICATION = "replication"


@dataclass(frozen=True)
class Point:
    """One scenario of a sweep: ``params`` are its summary columns, ``scenario`` its resolved dict."""

    point: int
    params: dict[str, Any]
    fingerprint: str
    scenario: dict[str, Any] | None = None
    error: str | None = None
    overrides: list[tuple[str, Any]] = field(default_factory=list)


def replication_seeds(base: int, n: int) -> list[int]:
    """``n`` independent integer seeds spawned from ``SeedSequence(base)``."""
    return [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(base).spawn(n)]


def draw_samples(spec: SweepSpec) -> list[dict[str, Any]]:
    """The ``[sample]`` draws: ``n`` dicts of field -> value (one empty dict without a sample table)."""
    if not spec.sample:
        return [{}]
    rng = np.random.default_rng(spec.sample_seed)
    columns = {path: _draw(law, spec.sample_n, rng, path) for path, law in spec.sample.items()}
    return [{path: values[i] for path, values in columns.items()} for i in range(spec.sample_n)]


def _draw(law: Sampler, n: int, rng: np.random.Generator, path: str = "") -> list[Any]:
    if law.kind == "choice":
        return [law.values[i] for i in rng.integers(0, len(law.values), n)]
    with np.errstate(over="ignore", invalid="ignore"):  # a law too wide for floats: refused below
        if law.kind == "uniform":
            x = rng.uniform(law.low, law.high, n)
        elif law.kind == "loguniform":
            x = np.exp(rng.uniform(math.log(law.low), math.log(law.high), n))
        else:
            x = rng.normal(law.mean, law.std, n)
    if not np.isfinite(x).all():
        bad = float(x[~np.isfinite(x)][0])
        raise InputError(f"sweep.sample.{path}", bad, "a law whose draws are finite numbers (narrow low/high, "
                         "mean/std)")
    return [int(v) for v in np.rint(x)] if law.integer else [float(v) for v in x]


def expand(spec: SweepSpec, *, whole: bool = False) -> list[Point]:
    """Every point of the sweep, in order (see the module docstring).

    ``whole``: before a sweep runs, a file none of whose points validates is refused with the first
    point's error (nothing would run; the file is wrong, not one point).
    """
    swept = [*spec.set, *spec.grid, *spec.sample]
    if SEED_FIELD in swept:
        raise InputError(f"sweep: {SEED_FIELD}", "swept or set",
                         "not a sweep field: replications draw it from the sweep's seed (or --seed)")
    try:
        base = apply_overrides(spec.base_scenario, list(spec.set.items()))
    except InputError as exc:  # applies to every point: the sweep file is wrong, not one point
        raise InputError(f"sweep.set: {exc.field}", exc.value, exc.allowed) from None
    seeds = replication_seeds(spec.base_seed(), spec.replications)
    combos = [dict(zip(spec.grid, values, strict=True)) for values in itertools.product(*spec.grid.values())]
    changes = [{**g, **s, REPLICATION: r, SEED_FIELD: seeds[r]}
               for g in combos for s in draw_samples(spec) for r in range(spec.replications)]
    columns = _column_types(changes)
    run = {"kind": spec.kind, "frames": spec.frames, "tail": spec.tail.kwargs(), "version": package_version()}
    if spec.kind == "advise":  # a key of its own: the fingerprints of run and tail points stay what they were
        run["advise"] = spec.advise.kwargs()
    points = [_point(i, base, c, columns, run) for i, c in enumerate(changes)]
    if whole and all(p.error for p in points):
        raise InputError("sweep", Shown(f"{len(points)} points, none valid"),
                         f"at least one point that validates (point 0: {one_line(points[0].error, 200)})")
    return points


def _point(i: int, base, change: dict[str, Any], columns: dict[str, type], run: dict) -> Point:
    overrides = [(k, v) for k, v in change.items() if k != REPLICATION]
    params = {k: _cell(v, columns[k]) for k, v in change.items()}
    try:
        sc = apply_overrides(base, overrides)
    except CgdrError as exc:  # a bad field, or a diagnostic the tiling already reveals (validate's checks)
        what = {"base": base.resolved_dict(), "overrides": overrides, **run}
        return Point(i, params, fingerprint(what), error=f"{type(exc).__name__}: {exc}", overrides=overrides)
    if run["kind"] == "tail" and sc.workload.distribution is None:  # run_study would refuse it mid-sweep
        what = {"base": base.resolved_dict(), "overrides": overrides, **run}
        return Point(i, params, fingerprint(what), overrides=overrides,
                     error="InputError: workload.distribution: got None; a length distribution: a tail point "
                           "samples its batches")
    # a tail or advise point samples from the distribution: keep it (and [study]) rather than one batch's lengths
    resolved = sc.study_dict() if run["kind"] in ("tail", "advise") else sc.resolved_dict()
    return Point(i, params, fingerprint({"scenario": resolved, **run}), scenario=resolved, overrides=overrides)


def fingerprint(what: dict[str, Any]) -> str:
    """sha256 (hex) of the canonical JSON of ``what``."""
    text = json.dumps(what, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _column_types(changes: list[dict[str, Any]]) -> dict[str, type]:
    """One Parquet-friendly type per parameter: bool, int, float (ints and floats mixed), str, or JSON."""
    kinds: dict[str, type] = {}
    for key in changes[0]:
        values = [c[key] for c in changes]
        if all(isinstance(v, bool) for v in values):
            kinds[key] = bool
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            kinds[key] = int
        elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            kinds[key] = float
        elif all(isinstance(v, str) for v in values):
            kinds[key] = str
        else:
            kinds[key] = dict  # tables, lists, mixed: stored as their canonical JSON text
    return kinds


def _cell(value: Any, kind: type) -> Any:
    if kind is dict:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return kind(value)
