"""Changing scenario fields by dotted path: ``--set section.field=value`` and the sweep files' tables.

An override is a dotted path into the scenario document (``kernel.policy``, ``workload.distribution.sigma``,
``hardware.overrides.gm_bandwidth_gbps``) and a value. Values given as text are read as TOML (``2``,
``1.5``, ``true``, ``[64, 128]``, ``{kind = "uniform", low = 8, high = 64}``, ``"greedy"``); a bare word
that is not TOML (``round_robin``) is taken as a string.

The overridden document is validated exactly like a file (``Scenario.from_dict``), so a bad value is the
same one-line ``InputError`` naming the dotted path. Two rules make single-field changes do what one means:

- the three length sources are exclusive: setting ``workload.lengths``, ``workload.distribution`` or
  ``workload.lengths_csv`` drops the other two (and, for explicit ``lengths``, the old ``batch``);
- a table value is merged into the table it changes, except a ``workload.distribution`` whose ``kind``
  differs from the current one, which replaces it (the other law's fields would not be allowed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from cgdr_des.errors import InputError
from cgdr_des.scenario import Scenario
from cgdr_des.toml_read import parse_toml

_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$")
_SOURCES = ("lengths", "distribution", "lengths_csv")
_STRUCTURED = ("[", "{", '"', "'")


def parse_value(path: str, text: str) -> Any:
    """``text`` read as a TOML value; a bare word that is not TOML is the string itself."""
    try:
        return parse_toml(f"v = {text}", path, text, "a TOML value")["v"]
    except InputError:
        stripped = text.strip()
        if not stripped or stripped.startswith(_STRUCTURED) or "\n" in stripped or _looks_numeric(stripped):
            raise
        return stripped


def _looks_numeric(text: str) -> bool:
    """A number TOML refused (a 5 000-digit integer) is an error, not the string of its digits."""
    return text.lstrip("+-")[:1].isdigit()


def check_path(path: str, field: str = "--set") -> str:
    """``path`` if it is a dotted field path (``section.field``), else an InputError on ``field``."""
    if not isinstance(path, str) or not _PATH.match(path):
        raise InputError(field, path, "a dotted field path such as kernel.policy or workload.distribution.sigma")
    return path


def parse_set(text: str) -> tuple[str, Any]:
    """``"section.field=value"`` -> ``("section.field", value)`` (value read as TOML)."""
    path, eq, raw = text.partition("=")
    if not eq:
        raise InputError("--set", text, "section.field=value (for example kernel.policy=round_robin)")
    path = check_path(path.strip())
    return path, parse_value(path, raw.strip())


def apply_overrides(sc: Scenario, overrides: Iterable[tuple[str, Any]] | Mapping[str, Any]) -> Scenario:
    """A re-validated copy of ``sc`` with each ``(dotted path, value)`` applied in order.

    An error in the result names the field; when that field is not one that was set (``shape.nv``
    after setting ``shape.nk``), the message says which overrides led to it.
    """
    items = list(overrides.items() if isinstance(overrides, Mapping) else overrides)
    if not items:
        return sc
    data = sc.model_dump(mode="json", exclude_none=True)
    for path, value in items:
        _assign(data, check_path(path, "override"), value)
    _one_source(data.get("workload"), [p for p, _ in items])
    try:  # the same directory as the original, so a relative lengths_csv still resolves
        return Scenario.from_dict(data, base_dir=sc._base_dir)
    except InputError as exc:
        paths = [p for p, _ in items]
        if any(exc.field == p or exc.field.startswith(p + ".") or exc.field.startswith(p + "[") for p in paths):
            raise
        shown = ", ".join(f"{p}={v!r}" for p, v in items)
        raise InputError(exc.field, exc.value, f"{exc.allowed} (after setting {shown})") from None


def _assign(data: dict, path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    table = data
    for key in parents:
        if not isinstance(table.get(key), dict):
            table[key] = {}  # a value where a table is needed: the validator then names the field
        table = table[key]
    old = table.get(leaf)
    if isinstance(value, Mapping) and isinstance(old, dict) and not _switches_law(parents, leaf, old, value):
        table[leaf] = _merge(old, value)
    else:
        table[leaf] = _plain(value)


def _switches_law(parents: list[str], leaf: str, old: dict, new: Mapping) -> bool:
    return parents == ["workload"] and leaf == "distribution" and new.get("kind", old.get("kind")) != old.get("kind")


def _one_source(workload: dict | None, paths: list[str]) -> None:
    """Keep only the last length source that was set; explicit lengths carry their own batch."""
    chosen = [p.split(".")[1] for p in paths if p in {f"workload.{s}" for s in _SOURCES}]
    if not chosen or not isinstance(workload, dict):
        return
    for other in _SOURCES:
        if other != chosen[-1]:
            workload.pop(other, None)
    if chosen[-1] == "lengths" and "workload.batch" not in paths:
        workload.pop("batch", None)


def _merge(base: dict, changes: Mapping) -> dict:
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    """TOML values as plain containers (a tomllib dict stays a dict; tuples become lists)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
