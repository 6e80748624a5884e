"""docs/scenario.md's field table, generated from the scenario models' descriptions (the same text
``cgdr-des schema`` prints), so that the doc and the schema cannot drift apart: a test compares them."""

from __future__ import annotations

from typing import Any

HEADER = """# Scenario fields

Every field of a scenario file, one row each: its TOML table and key, its type, its default, and
what it means (with units). The text is the schema's own (`cgdr-des schema` prints it as JSON
Schema); this page is generated from it by `cgdr_des.scenario.field_table.markdown()`, and a test
fails when the two differ. `[workload.distribution]` takes one of the distribution kinds below,
chosen by its `kind`.
"""


def rows(schema: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """``(field, type, default, description)`` per property, depth first; nested models by table."""
    defs = schema.get("$defs", {})
    out: list[tuple[str, str, str, str]] = []

    def walk(model: dict[str, Any], prefix: str) -> None:
        for name, prop in model.get("properties", {}).items():
            path = f"{prefix}{name}"
            required = name in model.get("required", [])
            out.append((path, _type(prop), "required" if required else _default(prop), prop.get("description", "")))
            refs = _refs(prop)
            if len(refs) == 1:
                walk(defs[refs[0]], f"{path}.")
            elif len(refs) > 1:  # a tagged union (the distributions): each kind's fields
                for ref in refs:
                    kind = defs[ref]["properties"]["kind"].get("const", ref.lower())
                    walk(defs[ref], f"{path}({kind}).")

    walk(schema, "")
    return out


def markdown() -> str:
    """The whole of docs/scenario.md."""
    from cgdr_des.scenario.model import scenario_json_schema

    lines = [HEADER, "| field | type | default | description |", "|---|---|---|---|"]
    for path, typ, default, text in rows(scenario_json_schema()):
        lines.append(f"| `{path}` | {typ} | {default} | {one_line(text)} |")
    return "\n".join(lines) + "\n"


def one_line(text: str) -> str:
    """A description as one table cell: its lines joined (a docstring may wrap)."""
    return " ".join(text.split())


def _refs(prop: dict[str, Any]) -> list[str]:
    """The model names ``prop`` refers to (itself, or the alternatives of a union)."""
    found = [prop["$ref"].rsplit("/", 1)[1]] if "$ref" in prop else []
    for key in ("anyOf", "oneOf"):
        for alt in prop.get(key, []):
            found += _refs(alt)
    return found


def _type(prop: dict[str, Any]) -> str:
    if "const" in prop:
        return f"`{prop['const']!r}`".replace("'", '"')
    if "enum" in prop:
        return " / ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in prop["enum"])
    if "$ref" in prop:
        return "table"
    if prop.get("type") == "array":
        return f"list of {_type(prop.get('items', {}))}"
    alts = prop.get("anyOf") or prop.get("oneOf")
    if alts:
        return " or ".join(dict.fromkeys(_type(a) for a in alts))
    return {"integer": "integer", "number": "float", "string": "string", "boolean": "boolean",
            "object": "table", "null": "none"}.get(prop.get("type", ""), "value")


def _default(prop: dict[str, Any]) -> str:
    if "default" not in prop:
        return "see below" if _refs(prop) else "{}"  # a default_factory: the table's own defaults
    value = prop["default"]
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict) and not value:
        return "{}"
    return str(value)
