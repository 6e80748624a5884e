"""docs/architecture.md against the code it describes: the layer table against the import-linter
contract in pyproject.toml, the policy list against the policies registry, the timing-rule list
against hw/rules.py's functions, the op API's parameters against its signature."""

from __future__ import annotations

import inspect
import re
import tomllib
from pathlib import Path

from cgdr_des import op
from cgdr_des.hw import rules
from cgdr_des.kernel.policies import POLICIES

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def section(start: str, end: str) -> str:
    """The doc's text from the line starting ``start`` up to the next line starting ``end``."""
    body = DOC.split("\n" + start, 1)[1]
    return body.split("\n" + end, 1)[0]


def contract_layers() -> list[set[str]]:
    """The ``layers`` contract's rows, top first, each the set of its module names."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    return [{m.strip().strip("()") for m in re.split(r"[|:]", row)} for row in contract["layers"]]


def doc_layers() -> list[set[str]]:
    """The §1 table's rows, top first, each the set of its modules as dotted names."""
    rows = []
    for line in section("## 1. Layers", "The kernel layer").splitlines():
        cells = line.split("|")
        if len(cells) < 4 or cells[1].strip() in ("layer", "---"):
            continue
        paths = re.findall(r"`([\w/.]+)`", cells[2])
        rows.append({p.removesuffix("/").removesuffix(".py").replace("/", ".") for p in paths})
    return rows


def test_the_layer_table_is_the_import_linter_contract_row_for_row():
    assert doc_layers() == contract_layers()


def test_every_package_module_sits_in_one_layer():
    """A new top-level module or package must be placed in the order (else the contract ignores it)."""
    placed = set().union(*contract_layers())
    tops = {f"cgdr_des.{p.stem}" for p in (ROOT / "cgdr_des").iterdir()
            if (p.suffix == ".py" and p.stem not in ("__init__", "__main__")) or (p / "__init__.py").exists()}
    assert tops <= placed, sorted(tops - placed)


def test_the_policy_list_is_the_registry():
    text = section("Kernel variants are data", "At `phase` fidelity")
    listed = text.split("work-distribution `policy`", 1)[1].split("(`kernel/policies.py`")[0]
    named = set(re.findall(r"`(\w+)`", listed))
    assert named == set(POLICIES)


def test_the_timing_rule_list_names_every_rule_and_only_rules():
    text = section("## Where each timing rule lives", "unbuilt").split("`tests/test_docs_architecture.py`")[0]
    named = set(re.findall(r"`([a-z_0-9]+)`", text))
    public = {n for n, f in vars(rules).items()
              if inspect.isfunction(f) and f.__module__ == rules.__name__ and not n.startswith("_")}
    not_rules = {"stall", "dma_outstanding"}   # the flag policy and the profile field a rule reads
    assert named - not_rules == public


def test_the_rules_module_table_names_every_rule():
    public = {n for n, f in vars(rules).items()
              if inspect.isfunction(f) and f.__module__ == rules.__name__ and not n.startswith("_")}
    assert set(re.findall(r":func:`(\w+)`", rules.__doc__)) == public


def test_the_public_contract_shows_every_op_parameter():
    block = section("## 5. Public contract", "Errors:")
    params = set(inspect.signature(op.chunk_gated_delta_rule).parameters)
    assert {p for p in params if not re.search(rf"\b{p}\b", block)} == set()


def test_the_flag_policies_named_in_2_3_are_the_machine_s():
    from cgdr_des.hw.flags import DOUBLE_SET

    text = section("### 2.3", "### 2.4").split("`flag_double_set` decides", 1)[1].split("- HardEvents")[0]
    named = set(re.findall(r"`(\w+)`", text)) & {"diagnostic", "counter", "stall", "lost", "report", "count", "lose"}
    assert named == set(DOUBLE_SET)
