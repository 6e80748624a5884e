"""The ``range`` of a profile field: the values it may plausibly take on the real chip, and why.

A field that is not a documented fact carries, next to its value and source::

    range = [low, high]                     # a number: both ends valid values, low <= value <= high
    range = ["counter", "stall"]            # a choice (text or true/false): the alternatives, value among them
    range = { Axpy = [4, 14], Exp = [6, 24] }   # a per-op table: a range per op
    range_reason = "why these ends"

A per-op table's range is over its ``fp32`` entry when the table has dtypes; the ``fp16`` entry moves
by the same amount (:func:`set_param`). Each range becomes one or more *parameters* named ``field``
or ``field.op`` (:class:`ParamRange`): what sensitivity perturbs and calibration fits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from cgdr_des.errors import InputError


class ParamRange(NamedTuple):
    """One perturbable parameter: ``name`` is ``field`` or ``field.op``; ``choices`` is set (and
    ``low``/``high`` are None) for a text or true/false field."""

    name: str
    low: float | None
    high: float | None
    reason: str
    choices: tuple = ()
    integer: bool = True

    @property
    def field(self) -> str:
        """The profile field the parameter belongs to (``name`` up to its first dot)."""
        return self.name.split(".", 1)[0]


def _pair(raw, nominal, check, where: str) -> tuple:
    if not isinstance(raw, list) or len(raw) != 2 or any(isinstance(x, bool) for x in raw):
        raise InputError(where, raw, "a list [low, high] of two numbers")
    try:
        lo, hi = check(raw[0]), check(raw[1])
    except ValueError as exc:
        raise InputError(where, raw, f"two valid values of the field ({exc})") from None
    if not lo <= nominal <= hi:
        raise InputError(where, raw, f"low <= value ({nominal}) <= high")
    return lo, hi


def parse_range(name: str, entry: Mapping, value, check, where: str) -> list[ParamRange]:
    """The parameters a field's ``range`` declares (``[]`` without one); ``check`` validates one
    scalar value of the field (raises ValueError)."""
    if "range" not in entry and "range_reason" not in entry:
        return []
    raw, reason = entry.get("range"), entry.get("range_reason")
    if raw is None or not isinstance(reason, str) or not reason.strip():
        raise InputError(f"{where}.range", raw, "range and a non-empty range_reason together")
    if isinstance(value, Mapping):
        return _table_ranges(name, raw, value, check, reason, f"{where}.range")
    if isinstance(value, bool | str):
        if not isinstance(raw, list) or value not in raw or len(raw) < 2:
            raise InputError(f"{where}.range", raw, f"a list of at least two alternatives including {value!r}")
        return [ParamRange(name, None, None, reason, tuple(check(c) for c in raw))]
    lo, hi = _pair(raw, value, check, f"{where}.range")
    return [ParamRange(name, lo, hi, reason, (), not isinstance(value, float))]


def _table_ranges(name, raw, value, check, reason, where) -> list[ParamRange]:
    if not isinstance(raw, Mapping) or not raw or not set(raw) <= set(value):
        raise InputError(where, raw, f"a table op -> [low, high] over ops of the field ({', '.join(value)})")
    out = []
    for op, pair in raw.items():
        nominal = table_nominal(value[op])
        lo, hi = _pair(pair, nominal, check, f"{where}.{op}")
        out.append(ParamRange(f"{name}.{op}", lo, hi, reason))
    return out


def table_nominal(entry):
    """The value a per-op range is over: the entry itself, or its ``fp32`` entry."""
    return entry["fp32"] if isinstance(entry, Mapping) else entry


def get_param(profile, name: str):
    """The profile's current value of parameter ``name``."""
    field, _, op = name.partition(".")
    value = getattr(profile, field)
    return table_nominal(value[op]) if op else value


def set_param(profile, name: str, x) -> dict:
    """The override (``{field: value}``) that sets parameter ``name`` to ``x`` on ``profile``."""
    field, _, op = name.partition(".")
    if not op:
        return {field: x}
    entry = getattr(profile, field)[op]
    if isinstance(entry, Mapping):
        delta = x - entry["fp32"]
        return {field: {op: {dt: max(0, v + delta) for dt, v in entry.items()}}}
    return {field: {op: x}}


def merge_overrides(parts) -> dict:
    """Overrides of several parameters as one dict (per-op tables merged)."""
    out: dict = {}
    for part in parts:
        for field, v in part.items():
            if isinstance(v, Mapping) and isinstance(out.get(field), Mapping):
                out[field] = {**out[field], **v}
            else:
                out[field] = v
    return out
