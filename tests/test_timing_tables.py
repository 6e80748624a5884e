"""The timing tools' pure parts: the TOML writer (timing/profile_toml.py) against the standard library's
reader, a calibrated profile document, the sensitivity summary and the tornado table
(timing/sensitivity.py, timing/tornado.py) on made-up runs, each number recomputed here by a loop.
"""

from __future__ import annotations

import tomllib

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgdr_des.hw import load_profile
from cgdr_des.timing import profile_toml as pt
from cgdr_des.timing.sensitivity import Sensitivity, interval_line
from cgdr_des.timing.tornado import plot_tornado, tornado_table

keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
scalars = st.one_of(st.booleans(), st.integers(-2**62, 2**62), st.text(max_size=12),
                    st.floats(allow_nan=False, allow_infinity=False))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(keys, inner, max_size=4)), max_leaves=12)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, derandomize=True)
@given(v=values)
def test_every_value_reads_back_through_tomllib(v):
    assert tomllib.loads(f"x = {pt.toml_value(v)}")["x"] == v


def test_a_value_toml_cannot_hold_is_refused():
    with pytest.raises(TypeError, match="NoneType"):
        pt.toml_value(None)


def test_a_dumped_profile_document_reads_back_whole():
    doc = {"profile": {"name": "p", "description": 'quote " and ünïcode'},
           "fields": {"clock_mhz": {"value": 1000, "source": "s", "confidence": "H"},
                      "vec_delay_cycles": {"value": {"Axpy": {"fp32": 8, "fp16": 6}}, "source": "t",
                                           "confidence": "L", "range": {"Axpy": [4, 14]}, "range_reason": "r"}}}
    assert tomllib.loads(pt.dump_profile(doc)) == doc


def test_a_calibrated_profile_loads_with_the_fitted_values_and_says_so(tmp_path):
    base = load_profile("atlas-300i-duo")
    name = next(n for n in base.ranges if "." not in n and not base.ranges[n].choices)
    p = base.ranges[name]
    x = p.high if getattr(base, name) != p.high else p.low
    doc = pt.fitted_profile_doc("atlas-300i-duo", base, {name: x}, "fit of 3 shapes")
    path = tmp_path / "cal.toml"
    path.write_text(pt.dump_profile(doc), encoding="utf-8")
    cal = load_profile(str(path))
    assert getattr(cal, name) == x
    entry = doc["fields"][name]
    assert entry["confidence"] == "M" and entry["source"].startswith(f"calibrated ({name} = {x}): fit of 3 shapes")
    assert doc["profile"]["name"].endswith("-calibrated") and "fit of 3 shapes" in doc["profile"]["description"]
    others = [f for f in doc["fields"] if f != name]
    assert all(getattr(cal, f) == getattr(base, f) for f in others if hasattr(base, f))


def runs() -> Sensitivity:
    rows = [("nominal", None, None, 100.0), ("oat", "a", "low", 90.0), ("oat", "a", "high", 130.0),
            ("oat", "b", "low", 101.0), ("oat", "c", "alt:stall", 95.0), ("oat", "c", "alt:diagnostic", 112.0),
            ("oat", "d", "high", 104.0), ("lhs", None, None, 85.0), ("lhs", None, None, 140.0)]
    df = pd.DataFrame(rows, columns=["kind", "param", "end", "makespan_us"])
    df["value"] = None
    df["makespan_cycles"] = (df["makespan_us"] * 1000).astype(int)
    df["change_pct"] = 100.0 * (df["makespan_us"] / 100.0 - 1.0)
    return Sensitivity("s", df, ("a", "b", "c", "d"), 7)


def test_summary_counts_the_runs_and_spans_every_one():
    r = runs()
    s = r.summary()
    mk = r.runs["makespan_us"]
    assert (s["nominal_us"], s["low_us"], s["high_us"]) == (100.0, mk.min(), mk.max())
    assert (s["oat_runs"], s["lhs_samples"]) == ((r.runs["kind"] == "oat").sum(), (r.runs["kind"] == "lhs").sum())
    assert s["params"] == ["a", "b", "c", "d"] and s["seed"] == 7
    line = interval_line(r)
    assert f"{s['oat_runs']} one-at-a-time ends and {s['lhs_samples']} joint samples" in line


def test_tornado_table_by_loop():
    r = runs()
    want = {}
    for param, grp in r.oat().groupby("param"):
        low = [c for e, c in zip(grp["end"], grp["change_pct"], strict=True) if e == "low"]
        high = [c for e, c in zip(grp["end"], grp["change_pct"], strict=True) if e != "low"]
        lo = low[0] if low else 0.0
        hi = max(high, key=abs) if high else 0.0  # a choice: its largest move counts
        want[param] = (lo, hi, max(lo, hi, 0.0) - min(lo, hi, 0.0))
    t = tornado_table(r)
    got = {p: (row.low, row.high, row.span) for p, row in t.iterrows()}
    assert got.keys() == want.keys()
    for p in want:
        assert got[p] == pytest.approx(want[p]), p
    assert list(t["span"]) == sorted(t["span"], reverse=True)


def test_tornado_plot_is_a_png(tmp_path):
    path = plot_tornado(runs(), tmp_path / "t.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"



@pytest.mark.parametrize("v", ["\x7f", "a\x7fb", "\x00\x1f\x7f\"\\"])
def test_control_characters_toml_forbids_are_escaped(v):
    assert tomllib.loads(f"x = {pt.toml_value(v)}")["x"] == v
