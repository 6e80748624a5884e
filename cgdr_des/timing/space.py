"""The parameter space: which ranged parameters are perturbed, and points in it.

A *point* maps parameter names (``field`` or ``field.op``, see :mod:`cgdr_des.hw.ranges`) to values.
Points are built from unit coordinates ``u`` in [0, 1] per parameter, so one-at-a-time ends, the
Latin-hypercube sample and calibration's search all share one mapping (:func:`value_at`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cgdr_des.errors import InputError
from cgdr_des.hw.profile import CUBE_ONLY_FIELDS, NOT_IN_MAKESPAN
from cgdr_des.hw.ranges import ParamRange, get_param


def select(profile, names: Sequence[str] | None = None, kernel_version: str = "vector") -> list[ParamRange]:
    """The ranged parameters of ``profile`` named in ``names`` (all of them when None), in profile
    order; an unknown or unranged name is an InputError listing the ranged ones. "All" leaves out
    what cannot move a makespan of ``kernel_version``: the host overhead, and for the vector kernel
    the Cube-only fields (running them would only repeat the nominal)."""
    ranges = profile.ranges
    if names is None:
        skip = set(NOT_IN_MAKESPAN) | (set(CUBE_ONLY_FIELDS) if kernel_version == "vector" else set())
        return [r for name, r in ranges.items() if name.split(".")[0] not in skip]
    out = []
    for n in names:
        if n not in ranges:
            raise InputError("--fields", n, f"a ranged parameter of profile {profile.name} "
                             f"({', '.join(ranges)})")
        out.append(ranges[n])
    return out


def value_at(p: ParamRange, u: float):
    """The value at unit coordinate ``u`` in [0, 1]: linear between the ends (rounded for integer
    fields), or the ``floor(u * k)``-th of ``k`` choices."""
    u = min(max(float(u), 0.0), 1.0)
    if p.choices:
        return p.choices[min(int(u * len(p.choices)), len(p.choices) - 1)]
    x = p.low + u * (p.high - p.low)
    return int(round(x)) if p.integer else float(x)


def unit_of(p: ParamRange, x) -> float:
    """The unit coordinate of value ``x`` (the inverse of :func:`value_at`, choices at their cell centre)."""
    if p.choices:
        return (p.choices.index(x) + 0.5) / len(p.choices)
    return 0.0 if p.high == p.low else (x - p.low) / (p.high - p.low)


def nominal(profile, params: Sequence[ParamRange]) -> dict:
    """The profile's own values of ``params``."""
    return {p.name: get_param(profile, p.name) for p in params}


def one_at_a_time(profile, params: Sequence[ParamRange]) -> list[tuple[str, str, object]]:
    """``(param, "low"|"high", value)`` for each end of each parameter that differs from nominal;
    a choice parameter gets one entry per other alternative (end ``"alt:<value>"``)."""
    out = []
    for p in params:
        nom = get_param(profile, p.name)
        if p.choices:
            out += [(p.name, f"alt:{c}", c) for c in p.choices if c != nom]
        else:
            out += [(p.name, end, x) for end, x in (("low", p.low), ("high", p.high)) if x != nom]
    return out


def latin_hypercube(params: Sequence[ParamRange], n: int, seed: int) -> list[dict]:
    """``n`` joint points: each parameter's range cut into ``n`` equal strata, one draw per stratum,
    strata paired at random across parameters (numpy's seeded generator: same seed, same points)."""
    if n < 0:
        raise InputError("--samples", n, "an integer >= 0")
    rng = np.random.default_rng(seed)
    cols = [(rng.permutation(n) + rng.random(n)) / n for _ in params]
    return [{p.name: value_at(p, col[i]) for p, col in zip(params, cols, strict=True)} for i in range(n)]
