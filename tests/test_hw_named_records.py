"""The machine's records are read by name, and its timing rules are written once.

Grep-style checks over the source (the AST, so comments and strings do not count):

- no module subscripts a span, a queue entry, a Macro tally, an event's info or a timer
  snapshot by position (the names these records go by in the code are listed below);
- no module unpacks one by position (``code, issued, ... = e``), but in the one documented place per
  hot loop that does so for speed (:data:`UNPACKED_IN`);
- those records are NamedTuples or ``__slots__`` classes;
- the rule table (``cgdr_des/hw/rules.py``) is used by both the SimPy machine and the phase
  compiler's one-pass timer, and neither writes a rule of its own under the rules' names.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import PACKAGE

from cgdr_des.hw import compute_run, compute_state, declared, flags, records, rules, scalar, tque

#: names under which the machine and the timer hold their records
RECORD_NAMES = {"seg", "span", "e_span", "e", "entry", "head", "block", "info", "snap", "before", "totals",
                "tally", "consts", "flag_op"}
#: methods returning a record (``st.scalars()``)
RECORD_CALLS = {"scalars", "totals", "apply"}
#: (module, function) -> how many positional unpackings of a record it may make: the pipes' loops
#: unpack each queue entry once (the V and MTE loops in their pumps' ``run_v`` / ``run_mte``, nested
#: in ``vector_pipe`` / ``mte_pipe``), the timer's loop its scalar state on entry and after each flag
UNPACKED_IN = {("hw/pipes.py", "vector_pipe"): 1, ("hw/pipes.py", "mte_pipe"): 1, ("hw/pipes.py", "fixed_pipe"): 1,
               ("hw/pipes.py", "run_v"): 1, ("hw/pipes.py", "run_mte"): 1,
               ("hw/compute_run.py", "_walk"): 2}


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


@pytest.mark.slow
def test_no_module_reads_a_record_by_position():
    found = [f"{path.relative_to(PACKAGE.parent)}:{line} {name}[...]"
             for path in _modules() for line, name in _subscripts_by_position(ast.parse(path.read_text()))]
    assert found == []


def _is_record(node: ast.AST) -> bool:
    """A record by name (``e``, ``self.consts``) or a call returning one (``st.scalars()``)."""
    if isinstance(node, ast.Name):
        return node.id in RECORD_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in RECORD_NAMES
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RECORD_CALLS


def _unpackings(tree: ast.AST):
    """``(function, line)`` of every ``a, b, ... = <record>`` (also in a for loop's target)."""
    for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)] + [tree]:
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Tuple) for t in node.targets) \
                    and _is_record(node.value):
                yield getattr(fn, "name", "<module>"), node.lineno


@pytest.mark.slow
def test_no_module_unpacks_a_record_by_position_but_the_documented_loops():
    counts: dict = {}
    for path in _modules():
        tree = ast.parse(path.read_text())
        inner = {(f, line) for f, line in _unpackings(tree) if f != "<module>"}
        for f, line in inner:
            key = (str(path.relative_to(PACKAGE)), f)
            counts.setdefault(key, []).append(line)
    extra = {k: v for k, v in counts.items() if len(v) > UNPACKED_IN.get(k, 0)}
    assert extra == {}
    assert {k for k in counts if k in UNPACKED_IN} == set(UNPACKED_IN)   # each allowance still used


def test_the_unpacking_checker_sees_names_attributes_and_calls():
    tree = ast.parse("def f(e, st, self):\n    a, b = e\n    c, d = st.scalars()\n    g, h = self.consts\n"
                     "    i, j = rows\n    k = e\n")
    assert [line for _, line in _unpackings(tree) if _ != "<module>"] == [2, 3, 4]


def test_the_checker_catches_positional_reads():
    tree = ast.parse("seg[5] = 1\nx = e[6]\ny = snap[9:12]\nz = span.start\nw = rows[0]\n")
    assert [name for _, name in _subscripts_by_position(tree)] == ["seg", "e", "snap"]


@pytest.mark.parametrize("cls", [records.Span, records.Entry, *records.ENTRY_TYPES, records.MacroTally,
                                 scalar.ScalarUnit, flags.EventInfo, flags.DoubleSet, compute_state.Totals,
                                 compute_state.ScanScalars, compute_run.RunTiming, compute_state.TimerConsts,
                                 tque.FlagCall])
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
    # the timer's loop, its flag rules, its declared costs
    timer = _imported_rules(compute_run) | _imported_rules(compute_state) | _imported_rules(declared)
    shared = {"vec_op", "barrier", "flag_set", "flag_wait", "scalar_flag_set", "set_while_set", "hand_over",
              "scalar_gm_l2", "scalar_exp", "arrival"}
    assert shared <= machine and shared <= timer
    table = {name for name in dir(rules) if callable(getattr(rules, name)) and not name.startswith("_")}
    for module in (scalar, pipes, compute_run, compute_state, declared):
        assert not (_defined_functions(module) & table), module.__name__


def test_each_entry_type_reads_its_fields_by_role():
    """The role names of each code's entry read the generic fields the pipes unpack."""
    fl, acc = object(), object()
    e = records.new_entry(records.ENTRY_TYPES[records.WAIT], (records.WAIT, 5, None, None, 3, fl, None))
    assert e.flag is fl and e.issue == 5 and e.idx == 3
    d = records.new_entry(records.ENTRY_TYPES[records.DMA], (records.DMA, 0, None, None, 0, 40, 2.5))
    assert (d.first_byte, d.rate_cap) == (40, 2.5)
    x = records.new_entry(records.ENTRY_TYPES[records.FIXED], (records.FIXED, 0, None, None, 0, (3, 9), acc))
    assert x.cycles == (3, 9) and x.access is acc
    ev = object()
    m = records.new_entry(records.ENTRY_TYPES[records.MAC], (records.MAC, 0, None, None, 0, ev, 11))
    assert m.started is ev and m.v_length == 11
    v = records.new_entry(records.ENTRY_TYPES[records.VEC], (records.VEC, 0, None, None, 0, "p", None))
    assert v.params == "p" and type(v).__name__ == "VecEntry"
