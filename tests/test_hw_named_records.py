"""The machine's records are read by name, and its timing rules are written once.

Grep-style checks over the source (the AST, so comments and strings do not count):

- no module subscripts a span, a queue entry, a Macro tally, an event's info or a timer
  snapshot by position (the names these records go by in the code are listed below);
- those records are NamedTuples or ``__slots__`` classes;
- the rule table (``cgdr_des/hw/rules.py``) is used by both the SimPy machine and the phase
  compiler's one-pass timer, and neither writes a rule of its own under the rules' names.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import PACKAGE

from cgdr_des.hw import compute_run, compute_state, flags, records, rules, scalar

#: names under which the machine and the timer hold their records
RECORD_NAMES = {"seg", "span", "e_span", "e", "entry", "head", "block", "info", "snap", "before", "totals",
                "tally"}


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def _subscripts_by_position(tree: ast.AST):
    """``(line, name)`` of every ``name[<int>]`` / ``name[<int>:<int>]`` with ``name`` a record name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and node.value.id in RECORD_NAMES:
            sl = node.slice
            parts = [sl.lower, sl.upper] if isinstance(sl, ast.Slice) else [sl]
            if any(isinstance(p, ast.Constant) and isinstance(p.value, int) for p in parts) \
                    or isinstance(sl, ast.UnaryOp):
                yield node.lineno, node.value.id


def test_no_module_reads_a_record_by_position():
    found = [f"{path.relative_to(PACKAGE.parent)}:{line} {name}[...]"
             for path in _modules() for line, name in _subscripts_by_position(ast.parse(path.read_text()))]
    assert found == []


def test_the_checker_catches_positional_reads():
    tree = ast.parse("seg[5] = 1\nx = e[6]\ny = snap[9:12]\nz = span.start\nw = rows[0]\n")
    assert [name for _, name in _subscripts_by_position(tree)] == ["seg", "e", "snap"]


@pytest.mark.parametrize("cls", [records.Span, records.Entry, records.MacroTally, scalar.ScalarUnit, flags.EventInfo,
                                 compute_state.Totals, compute_run.RunTiming])
def test_records_are_named(cls):
    is_named_tuple = issubclass(cls, tuple) and hasattr(cls, "_fields")
    assert is_named_tuple or "__slots__" in vars(cls)
    if not is_named_tuple:
        obj = object.__new__(cls)
        with pytest.raises(AttributeError):
            obj.not_a_field = 1


def _imported_rules(module) -> set[str]:
    tree = ast.parse(Path(module.__file__).read_text())
    return {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            and node.module == "cgdr_des.hw.rules" for alias in node.names}


def _defined_functions(module) -> set[str]:
    """The module-level functions of ``module`` (a method may share a rule's name: it applies it)."""
    tree = ast.parse(Path(module.__file__).read_text())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_machine_and_timer_share_the_rule_table():
    from cgdr_des.hw import pipes

    machine = _imported_rules(scalar) | _imported_rules(pipes)
    timer = _imported_rules(compute_run)
    shared = {"vec_op", "barrier", "flag_set", "flag_wait", "scalar_flag_set", "set_while_set", "hand_over",
              "scalar_gm_l2", "scalar_exp", "arrival"}
    assert shared <= machine and shared <= timer
    table = {name for name in dir(rules) if callable(getattr(rules, name)) and not name.startswith("_")}
    for module in (scalar, pipes, compute_run):
        assert not (_defined_functions(module) & table), module.__name__
