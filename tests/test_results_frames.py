"""Frames and summary from hand-built MachineRun-like objects whose answers are known by construction.

``synth_run`` lays each core's work items end to end as labelled spans (per chunk: two per-chunk phases
with vtile -1, then two V-tile steps labelled with the item's vtile), so each item's window, each core's
finish and every total are known independently of the code under test.
"""

from __future__ import annotations

import math
import statistics
from types import SimpleNamespace as NS

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgdr_des.results import frames
from cgdr_des.results.frames import OP_COLUMNS, build_result

PIPES = ("S", "V", "MTE2", "MTE3")
# docs/architecture.md §4 "summary (one row)", written out from the design text.
DESIGN_SUMMARY_FIELDS = [
    "makespan_cycles", "makespan_us", "lower_bound_cycles", "imbalance", "cv", "finish_p50_cycles",
    "finish_p95_cycles", "finish_p99_cycles", "util_S", "util_V", "util_MTE2", "util_MTE3",
    "scenario_name", "scenario_hash", "hardware", "policy", "buffer_num", "fidelity", "numerics",
]
CLOCK = 1060.0


def item(b, h, vt, seqlen):
    return NS(batch=b, head=h, vtile=vt, seqlen=seqlen, seq0=0)


def synth_run(assignment, seed=0, keep_ops=True):
    """A run whose item windows (``expected``) and core finishes are known by construction."""
    rng = np.random.default_rng(seed)
    spans, ops, cores, expected = [], [], [], []
    for core, items in enumerate(assignment):
        t = int(rng.integers(0, 5))
        d = int(rng.integers(1, 9))
        spans.append((core, "Init", -1, -1, -1, -1, t, t + d, 2))  # no item: must not count
        t += d
        for it in items:
            first = t
            for c in range(max(1, math.ceil(it.seqlen / 64))):
                for phase, vt in (("P1", -1), ("P4", -1), ("S1", it.vtile), ("S7", it.vtile)):
                    d = int(rng.integers(1, 40))
                    spans.append((core, phase, it.batch, it.head, vt, c, t, t + d, 3))
                    ops.append((core, "V", "Axpy", phase, it.batch, it.head, vt, c, t, t + d, 128, 0))
                    t += d
            expected.append((core, it.batch, it.head, it.vtile, it.seqlen, first, t))
        busy = {f"busy_{p}": int(rng.integers(0, t + 1)) for p in PIPES}
        stall = {f"stall_{p}": int(rng.integers(0, t + 1)) for p in PIPES}
        cores.append({"core": core, "finish": t, **busy, **stall, "n_records": len(ops)})
    makespan = max(c["finish"] for c in cores)
    run = NS(ops=ops if keep_ops else [], spans=spans, cores=cores, makespan=makespan)
    return run, expected


META = {"scenario_name": "s", "scenario_hash": "abc123abc123", "hardware": "atlas-300i-duo",
        "policy": "greedy", "buffer_num": 1, "fidelity": "phase", "numerics": "off", "avgload": 128}

ASSIGN = [
    [item(0, 0, -1, 128), item(0, 1, -1, 64)],
    [item(0, 2, -1, 200)],
    [item(1, 0, -1, 8), item(1, 1, -1, 8), item(1, 2, -1, 8)],
]


def build(assignment=ASSIGN, seed=0, keep_ops=True, meta=META):
    run, expected = synth_run(assignment, seed, keep_ops)
    res = build_result(run, assignment, meta=meta, clock_mhz=CLOCK, outputs=None)
    return run, expected, res


def lin_percentile(values, q):
    """Independent linear-interpolation percentile (the definition numpy's default uses)."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def test_items_frame_matches_construction():
    _, expected, res = build()
    got = [tuple(int(v) for v in row) for row in
           res.items[["core", "batch", "head", "vtile", "seqlen", "start", "end"]].itertuples(index=False)]
    assert got == expected
    assert list(res.items.columns) == ["batch", "head", "vtile", "seqlen", "core", "start", "end"]


def test_split_vtiles_of_one_head_on_one_core_are_told_apart():
    # Two V-tiles of (b0, h0) on core 0: their per-chunk phases carry vtile -1 and must go to the tile
    # whose steps follow them.
    assignment = [[item(0, 0, 0, 130), item(0, 0, 1, 130)], [item(0, 0, 2, 130)]]
    _, expected, res = build(assignment)
    got = [tuple(int(v) for v in row) for row in
           res.items[["core", "batch", "head", "vtile", "seqlen", "start", "end"]].itertuples(index=False)]
    assert got == expected


def test_item_vtile_zero_with_unlabelled_phases():
    # Not split: WorkItem.vtile is 0 while the per-chunk phases are labelled -1.
    assignment = [[item(0, 0, 0, 64)], [item(0, 1, 0, 64)]]
    _, expected, res = build(assignment)
    assert res.items["start"].tolist() == [e[5] for e in expected]
    assert res.items["end"].tolist() == [e[6] for e in expected]


def test_cores_frame_counts_items_tokens_and_copies_machine_counters():
    run, _, res = build()
    cores = res.cores.set_index("core")
    for core, items in enumerate(ASSIGN):
        assert cores.loc[core, "items"] == len(items)
        assert cores.loc[core, "tokens"] == sum(it.seqlen for it in items)
        for key, value in run.cores[core].items():
            if key != "core":
                assert cores.loc[core, key] == value
    for p in PIPES:
        assert {f"busy_{p}", f"stall_{p}"} <= set(res.cores.columns)


def test_core_with_no_items_has_zero_load():
    assignment = [[item(0, 0, -1, 64)], []]
    _, _, res = build(assignment)
    row = res.cores.set_index("core").loc[1]
    assert (row["items"], row["tokens"]) == (0, 0)


def test_summary_has_every_design_field_and_correct_values():
    run, expected, res = build()
    assert len(res.summary) == 1
    s = res.summary.iloc[0]
    assert set(DESIGN_SUMMARY_FIELDS) <= set(res.summary.columns)
    finish = [c["finish"] for c in run.cores]
    mean = sum(finish) / len(finish)
    durations = [e[6] - e[5] for e in expected]
    assert s["makespan_cycles"] == max(finish) == run.makespan
    assert s["makespan_us"] == pytest.approx(run.makespan / CLOCK)
    assert s["lower_bound_cycles"] == max(math.ceil(sum(durations) / len(finish)), max(durations))
    assert s["imbalance"] == pytest.approx(max(finish) / mean)
    assert s["cv"] == pytest.approx(statistics.pstdev(finish) / mean)
    for q in (50, 95, 99):
        assert s[f"finish_p{q}_cycles"] == pytest.approx(lin_percentile(finish, q))
    for p in PIPES:
        assert s[f"util_{p}"] == pytest.approx(sum(c[f"busy_{p}"] / run.makespan for c in run.cores) / 3)
    for k in ("scenario_name", "scenario_hash", "hardware", "policy", "buffer_num", "fidelity", "numerics"):
        assert s[k] == META[k]
    assert res.meta["clock_mhz"] == CLOCK and res.meta["avgload"] == 128


def test_provenance_falls_back_to_the_scenario():
    from cgdr_des.scenario import Scenario

    sc = Scenario.from_dict({"name": "fallback", "shape": {"nk": 1, "nv": 1, "dk": 16, "dv": 16},
                             "workload": {"lengths": [64]}, "kernel": {"policy": "longest_first"}},
                            check_tiling=False)
    run, _ = synth_run([[item(0, 0, -1, 64)]])
    res = build_result(run, [[item(0, 0, -1, 64)]], meta={}, clock_mhz=CLOCK, outputs=None, scenario=sc)
    s = res.summary.iloc[0]
    assert (s["scenario_name"], s["scenario_hash"], s["policy"]) == ("fallback", sc.scenario_hash(),
                                                                     "longest_first")
    assert res.scenario is sc


def test_ops_frame_keeps_every_op():
    run, _, res = build()
    assert len(res.ops) == len(run.ops)
    assert list(res.ops.columns[: len(OP_COLUMNS)]) == list(OP_COLUMNS)
    assert not res.ops["aggregated"].any()
    first = res.ops.iloc[0]
    assert tuple(first[c] for c in OP_COLUMNS) == run.ops[0]


def test_ops_frame_from_spans_when_ops_were_not_kept():
    run, _, res = build(keep_ops=False)
    assert len(res.ops) == len(run.spans)
    assert res.ops["aggregated"].all() and set(res.ops["pipe"].astype(str)) == {"ALL"}
    assert res.ops["op"].astype(str).tolist() == [s[1] for s in run.spans]
    assert res.ops["n_ops"].tolist() == [s[8] for s in run.spans]
    # the item windows do not depend on whether ops were kept
    assert res.items.equals(build(keep_ops=True)[2].items)


def test_ops_frame_is_built_once_on_first_read_and_pickles_built():
    import pickle

    run, _, res = build()
    assert "_ops" in vars(res) and not isinstance(vars(res)["_ops"], pd.DataFrame)  # not built yet
    first = res.ops
    assert res.ops is first and len(first) == len(run.ops)  # built once, then kept
    _, _, fresh = build()
    back = pickle.loads(pickle.dumps(fresh))
    assert back.ops.equals(first) and back.items.equals(res.items)


def test_outputs_are_passed_through():
    run, _ = synth_run(ASSIGN)
    out = {"out": np.ones((3, 2, 4), np.float16), "final_state": np.zeros((1, 2, 4, 4), np.float16)}
    res = build_result(run, ASSIGN, meta=META, clock_mhz=CLOCK, outputs=out)
    assert res.out is out["out"] and res.final_state is out["final_state"]
    assert build_result(run, ASSIGN, meta=META, clock_mhz=CLOCK, outputs=None).out is None


@st.composite
def assignments(draw):
    n_cores = draw(st.integers(1, 6))
    keys = iter(range(10_000))
    out = []
    for _ in range(n_cores):
        out.append([item(0, next(keys), draw(st.sampled_from([-1, 0])), draw(st.integers(1, 300)))
                    for _ in range(draw(st.integers(0, 4)))])
    if not any(out):
        out[0].append(item(0, next(keys), -1, 5))
    return out


@settings(max_examples=40, deadline=None)
@given(assignments(), st.integers(0, 10_000))
def test_invariants_on_random_schedules(assignment, seed):
    run, expected, res = build(assignment, seed)
    items = res.items
    # every work item appears exactly once, on its core, with its window
    assert len(items) == sum(len(c) for c in assignment)
    assert not items.duplicated(["batch", "head", "vtile"]).any()
    assert items["end"].tolist() == [e[6] for e in expected]
    s = res.summary.iloc[0]
    assert s["lower_bound_cycles"] <= s["makespan_cycles"]
    assert (res.cores["finish"] <= s["makespan_cycles"]).all()
    for p in PIPES:
        assert (res.cores[f"busy_{p}"] <= s["makespan_cycles"]).all()
        assert 0.0 <= s[f"util_{p}"] <= 1.0
    assert s["finish_p50_cycles"] <= s["finish_p95_cycles"] <= s["finish_p99_cycles"] <= s["makespan_cycles"]
    assert s["imbalance"] >= 1.0 - 1e-12
    assert res.cores["tokens"].sum() == items["seqlen"].sum() == s["tokens"]
    assert isinstance(res.summary, pd.DataFrame)


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(assignments(), st.integers(0, 10_000))
def test_fast_paths_give_the_general_paths_frames(assignment, seed):
    # One item per (core, batch, head) takes the numpy paths; the merge-based ones must give the same
    # frames exactly, also with items left without spans, spans of no item's key, and cores reported out
    # of order with missing counters.
    run, _ = synth_run(assignment, seed)
    rng = np.random.default_rng(seed)
    kept = [s for s in run.spans if rng.random() > 0.2] + [(0, "X", 7, 10_001, -1, 0, 0, 10**6, 1)]
    spans = frames.spans_frame(kept)
    rows = [(it.batch, it.head, it.vtile, it.seqlen, core) for core, its in enumerate(assignment) for it in its]
    assert frames._one_item_per_key(rows)
    items = frames._sole_items_frame(np.array(rows, np.int64), spans)
    strict = {"check_exact": True, "check_index_type": True, "check_column_type": True}
    pd.testing.assert_frame_equal(items, frames._merged_items_frame(rows, spans), **strict)
    reported = [{**c, "first_V": None if c["core"] % 2 else 1, "busy_V": None if c["core"] == 0 else 5}
                for c in run.cores[::-1]]
    machine = pd.DataFrame(reported)
    assert frames._reports_every_item_core(machine, items)
    pd.testing.assert_frame_equal(frames._reported_cores_frame(machine, items),
                                  frames._merged_cores_frame(machine, items), **strict)
