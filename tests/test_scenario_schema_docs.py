"""The scenario schema describes itself: every property (recursively) has a description, `$schema`
is set, and docs/scenario.md is exactly the table generated from those descriptions."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cgdr_des.cli import main
from cgdr_des.scenario.field_table import markdown, one_line, rows
from cgdr_des.scenario.model import SCHEMA_DIALECT, scenario_json_schema

DOC = Path(__file__).resolve().parents[1] / "docs" / "scenario.md"


def _properties(schema: dict) -> list[tuple[str, dict]]:
    """Every property of the schema and of each of its definitions, as (owner.name, property)."""
    found = [(f"Scenario.{n}", p) for n, p in schema["properties"].items()]
    for owner, model in schema.get("$defs", {}).items():
        found += [(f"{owner}.{n}", p) for n, p in model.get("properties", {}).items()]
    return found


def test_every_property_has_a_description():
    props = _properties(scenario_json_schema())
    assert len(props) >= 60  # the tables and the distribution kinds: a walk that found them all
    missing = [name for name, prop in props if not str(prop.get("description", "")).strip()]
    assert not missing, f"no description: {missing}"


def test_the_schema_names_its_dialect_and_the_cli_prints_it():
    res = CliRunner().invoke(main, ["schema"])
    assert res.exit_code == 0
    printed = json.loads(res.output)
    assert printed["$schema"] == SCHEMA_DIALECT
    assert printed == scenario_json_schema()


def test_docs_scenario_md_is_the_table_generated_from_the_schema():
    assert DOC.read_text(encoding="utf-8") == markdown(), "regenerate docs/scenario.md from field_table.markdown()"


def test_each_description_appears_in_the_doc():
    doc = DOC.read_text(encoding="utf-8")
    for _, prop in _properties(scenario_json_schema()):
        assert one_line(prop["description"]) in doc, prop["description"]


def test_the_table_has_one_row_per_property_path():
    paths = [r[0] for r in rows(scenario_json_schema())]
    assert len(paths) == len(set(paths))
    assert {"shape.dk", "workload.distribution(lognormal).sigma", "study.bootstrap"} <= set(paths)
