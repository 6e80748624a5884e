"""Write a profile as TOML (the layout :func:`cgdr_des.hw.load_profile` reads), with fitted values.

The standard library reads TOML but does not write it, and profiles use only strings, numbers,
booleans, lists and inline tables, so a small writer suffices (no extra dependency)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from cgdr_des.hw.profile import merge_tables, read_doc
from cgdr_des.hw.ranges import set_param


def toml_value(v) -> str:
    """One TOML value: inline tables for mappings."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):      # JSON escapes the controls below 0x20; TOML forbids DEL (0x7f) too
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def dump_profile(doc: Mapping) -> str:
    """The text of a profile document ``{"profile": {...}, "fields": {name: {...}}}``."""
    lines = ["[profile]"] + [f"{k} = {toml_value(v)}" for k, v in doc["profile"].items()]
    for name, entry in doc["fields"].items():
        lines += ["", f"[fields.{name}]"] + [f"{k} = {toml_value(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


def fitted_profile_doc(profile_ref: str, profile, fitted: Mapping, note: str) -> dict:
    """The base profile's document with each fitted parameter's value replaced, its source saying so
    (confidence M: fitted) and its range kept."""
    doc, _ = read_doc(profile_ref)
    meta = dict(doc.get("profile", {}))
    meta["name"] = f"{meta.get('name', 'profile')}-calibrated"
    meta["description"] = f"{meta.get('description', '')} Calibrated: {note}".strip()
    fields = {k: dict(v) for k, v in doc["fields"].items()}
    for name, x in fitted.items():
        for field, value in set_param(profile, name, x).items():
            e = fields[field]
            e["value"] = merge_tables(e["value"], value)
            e["source"] = f"calibrated ({name} = {x}): {note}; before: {e['source']}"
            e["confidence"] = "M"
    return {"profile": meta, "fields": fields}
