"""One colour table (results/palette.py): no plot module keeps its own, both Gantts agree, and the
console's time unit and the critical-path labels read right."""

from __future__ import annotations

import ast
import io
import re
from pathlib import Path

import pandas as pd

import cgdr_des.results as results_pkg
import cgdr_des.timing as timing_pkg
from cgdr_des.cli.common import time_unit
from cgdr_des.kernel.cube.program import PHASES as CUBE_PHASES
from cgdr_des.kernel.program import PHASES
from cgdr_des.results import compare_plots, plots
from cgdr_des.results.attribution import PARTS
from cgdr_des.results.compare_plots import drawn_widths, part_shares
from cgdr_des.results.palette import PHASE_COLOURS, phase_colour

ROOT = Path(__file__).resolve().parents[1]
LABELS = {p.label for p in PHASES} | {p.label for p in CUBE_PHASES}
COLOUR = re.compile(r"^(#[0-9a-fA-F]{3,8}|C\d|tab:\w+|tab20[bc]?)$")


def _literals(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node
        elif isinstance(node, ast.JoinedStr):  # f"C{i}": a colour cycle picked by index
            head = node.values[0] if node.values else None
            if isinstance(head, ast.Constant) and head.value == "C" and len(node.values) == 2:
                yield ast.Constant(value="C0")


#: every module that draws: the commands' plots, the tornado, the analysis report's figures
PLOT_MODULES = sorted([*Path(results_pkg.__file__).parent.glob("*.py"), *Path(timing_pkg.__file__).parent.glob("*.py"),
                       *(ROOT / "analysis" / "report").glob("*.py")])


def test_no_plot_module_keeps_colours_or_phase_tables_of_its_own():
    assert any(p.name == "tornado.py" for p in PLOT_MODULES) and any(p.name == "figures.py" for p in PLOT_MODULES)
    found = []
    for path in PLOT_MODULES:
        if path.name == "palette.py":
            continue
        where = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict | ast.List | ast.Tuple | ast.Set):
                keys = node.keys if isinstance(node, ast.Dict) else node.elts
                named = [k.value for k in keys if isinstance(k, ast.Constant) and k.value in LABELS]
                if named:
                    found.append(f"{where}:{node.lineno} phase names {named}")
        found += [f"{where}:{c.lineno} colour {c.value!r}" for c in _literals(tree)
                  if COLOUR.match(c.value)]
    assert not found, found


def test_both_gantts_give_a_phase_the_same_colour():
    labels = sorted(LABELS)
    run, chunk = plots.gantt_colours(labels), compare_plots.chunk_colours(labels)
    assert run == chunk == {p: phase_colour(p) for p in labels}
    vector = [p.label for p in PHASES]
    assert len({PHASE_COLOURS[p] for p in vector}) == len(vector)  # one kernel's phases never share one


def test_console_time_unit_falls_back_only_when_mu_cannot_be_written():
    assert time_unit(io.TextIOWrapper(io.BytesIO(), encoding="utf-8")) == "µs"
    assert time_unit(io.TextIOWrapper(io.BytesIO(), encoding="latin-1")) == "µs"
    assert time_unit(io.TextIOWrapper(io.BytesIO(), encoding="ascii")) == "us"


def test_critical_path_labels_sum_to_100_and_small_parts_stay_visible():
    row = pd.Series({"cp_launch": 600, "cp_S": 862_786, "cp_V": 169_742, "cp_MTE2": 1235, "cp_MTE3": 423,
                     "cp_flags": 8236})
    shares = part_shares(row)
    assert abs(sum(shares.values()) - 100) < 1e-9
    assert abs(sum(round(v, 1) for v in shares.values()) - 100) <= 0.1 * len(PARTS) / 2
    widths = drawn_widths(shares, minimum=2.5)
    assert abs(sum(widths.values()) - 100) < 1e-9
    assert all(w >= 2.5 for p, w in widths.items() if shares[p] > 0)
    assert widths["S"] > widths["V"] > widths["flags"]


def test_a_setting_that_does_not_fit_ub_says_by_how_many_bytes(tmp_path):
    from cgdr_des.results.compare_plots import overflow_bytes, plot_critical_path

    misfit = pd.Series({"status": "UB overflow", "ub_used_bytes": 270_336, "ub_bytes": 262_144})
    assert overflow_bytes(misfit) == 270_336 - 262_144
    assert overflow_bytes(pd.Series({"status": "x", "ub_used_bytes": 100, "ub_bytes": 262_144})) is None
    assert overflow_bytes(pd.Series({"status": "no vStep", "ub_used_bytes": pd.NA, "ub_bytes": pd.NA})) is None
    ran = {"setting": "baseline", "status": "ok", "makespan_cycles": 1000, "makespan_us": 1.0, "overlap_bound": 10,
           **{f"cp_{p}": 1000 // len(PARTS) + (1000 % len(PARTS) if p == "S" else 0) for p in PARTS}}
    table = pd.DataFrame([ran, {"setting": "all_same", **misfit.to_dict()}])
    assert plot_critical_path(table, tmp_path / "cp.png", "t on p").stat().st_size > 10_000
