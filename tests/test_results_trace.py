"""Chrome trace: loads as JSON, msprof names, no overlapping X events per track, flows, size limits."""

from __future__ import annotations

import json
from collections import defaultdict
from types import SimpleNamespace as NS

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cgdr_des.results.frames import build_result
from cgdr_des.results.trace import assign_lanes, build_trace, write_trace

CLOCK = 1000.0  # 1 cycle = 1 ns = 0.001 us
EPS = 1e-6  # us; far below one cycle (1e-3 us)


def op(core, pipe, name, start, end, phase="P4", chunk=0):
    return (core, pipe, name, phase, 0, core, -1, chunk, start, end, 64, 256)


def overlapping_ops():
    """A pipelined V stream (issue every 2 cycles, 20 cycles each: 10 alive at once), flags, DMAs."""
    ops = [op(0, "V", "Axpy", 2 * i, 2 * i + 20) for i in range(30)]
    ops += [op(0, "V", "SetFlag:V_S", 80, 81), op(0, "S", "WaitFlag:V_S", 60, 81),
            op(0, "V", "SetFlag:V_S", 90, 91), op(0, "S", "WaitFlag:V_S", 85, 91),
            op(0, "S", "ub_load", 0, 6), op(0, "S", "ub_load", 3, 9)]
    ops += [op(1, "MTE2", "DataCopy:GM2UB", 0, 500), op(1, "MTE2", "DataCopy:GM2UB", 100, 600),
            op(1, "V", "Cast", 600, 640), op(1, "MTE3", "DataCopy:UB2GM", 640, 900)]
    return ops


def result_of(ops, spans=None):
    spans = spans or [(c, "P4", 0, c, -1, 0, 0, 900, 1) for c in (0, 1)]
    cores = [{"core": c, "finish": 900, **{f"busy_{p}": 0 for p in ("S", "V", "MTE2", "MTE3")},
              **{f"stall_{p}": 0 for p in ("S", "V", "MTE2", "MTE3")}} for c in (0, 1)]
    run = NS(ops=ops, spans=spans, cores=cores, makespan=900)
    items = [[NS(batch=0, head=0, vtile=-1, seqlen=64, seq0=0)], [NS(batch=0, head=1, vtile=-1, seqlen=64,
                                                                     seq0=0)]]
    return build_result(run, items, meta={"scenario_name": "t"}, clock_mhz=CLOCK, outputs=None)


def x_events(trace):
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def names(trace, kind):
    return {(e["pid"], e.get("tid")): e["args"]["name"] for e in trace["traceEvents"]
            if e["ph"] == "M" and e["name"] == kind}


def max_alive(intervals):
    """Independent sweep: the largest number of [s, e) intervals alive at one instant."""
    points = sorted([(s, 1) for s, e in intervals if e > s] + [(e, -1) for s, e in intervals if e > s],
                    key=lambda p: (p[0], p[1]))
    alive = best = 0
    for _, delta in points:
        alive += delta
        best = max(best, alive)
    return best


def assert_no_overlap(events):
    tracks = defaultdict(list)
    for e in events:
        tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for spans in tracks.values():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert start >= end - EPS


def test_trace_loads_as_json_and_every_x_event_is_complete(tmp_path):
    res = result_of(overlapping_ops())
    path = write_trace(build_trace(res.ops, clock_mhz=CLOCK), tmp_path / "trace.json")
    trace = json.loads(path.read_text())
    events = x_events(trace)
    assert len(events) == len(res.ops)
    for e in events:
        assert {"pid", "tid", "ts", "dur", "name"} <= set(e) and e["dur"] >= 0
        assert e["ts"] == np.round(e["args"]["start_cycle"] / CLOCK, 6)
        assert abs(e["ts"] + e["dur"] - e["args"]["end_cycle"] / CLOCK) < EPS
    assert_no_overlap(events)


def test_processes_are_cores_and_threads_are_msprof_pipe_lanes():
    trace = build_trace(result_of(overlapping_ops()).ops, clock_mhz=CLOCK)
    assert set(names(trace, "process_name").values()) == {"core0", "core1"}
    threads = names(trace, "thread_name")
    core0 = {n for (pid, _), n in threads.items() if pid == 0}
    # 10 Axpy alive at once -> VECTOR .. VECTOR_9; the two overlapping ub_loads -> SCALAR, SCALAR_1
    assert {"VECTOR", *(f"VECTOR_{i}" for i in range(1, 10)), "SCALAR", "SCALAR_1"} == core0
    assert {n for (pid, _), n in threads.items() if pid == 1} == {"MTE2", "MTE2_1", "VECTOR", "MTE3"}
    tid_of = {n: tid for (pid, tid), n in threads.items() if pid == 0}
    assert all(e["tid"] in tid_of.values() for e in x_events(trace) if e["pid"] == 0)


def test_flag_flows_pair_kth_set_with_kth_wait():
    trace = build_trace(result_of(overlapping_ops()).ops, clock_mhz=CLOCK)
    starts = {e["id"]: e for e in trace["traceEvents"] if e["ph"] == "s"}
    ends = {e["id"]: e for e in trace["traceEvents"] if e["ph"] == "f"}
    assert set(starts) == set(ends) and len(starts) == 2
    by_start = sorted(starts.values(), key=lambda e: e["ts"])
    # first set at cycle 80 releases the wait that started at 60 (ends 81), second (90) the one at 85
    assert [round(e["ts"] * CLOCK) for e in by_start] == [80, 90]
    for s in by_start:
        f = ends[s["id"]]
        assert f["name"] == s["name"] == "V_S" and f["pid"] == s["pid"] == 0
        assert s["ts"] <= f["ts"] + EPS
    waits = {round(e["ts"] * CLOCK): e for e in x_events(trace) if e["name"] == "WaitFlag:V_S"}
    for s, wait_start in zip(by_start, (60, 85), strict=True):
        w = waits[wait_start]
        f = ends[s["id"]]
        assert f["tid"] == w["tid"] and w["ts"] - EPS <= f["ts"] <= w["ts"] + w["dur"] + EPS


def test_core_and_window_selection():
    ops = result_of(overlapping_ops()).ops
    only1 = build_trace(ops, clock_mhz=CLOCK, cores=[1])
    assert {e["pid"] for e in x_events(only1)} == {1}
    win = build_trace(ops, clock_mhz=CLOCK, window=[100, 200])
    kept = x_events(win)
    # [start, end) overlaps [100, 200), or a zero-length event inside it
    expected = sum(1 for o in overlapping_ops() if o[8] < 200 and (o[9] > 100 or o[8] >= 100))
    assert len(kept) == expected
    assert win["otherData"]["window_cycles"] == [100, 200]


def test_max_events_keeps_the_earliest_and_says_so():
    ops = result_of(overlapping_ops()).ops
    trace = build_trace(ops, clock_mhz=CLOCK, max_events=7)
    kept = x_events(trace)
    assert len(kept) == 7
    assert trace["otherData"]["truncated"] is True
    assert trace["otherData"]["dropped_events"] == len(ops) - 7
    cutoff = sorted(o[8] for o in overlapping_ops())[6]
    assert max(e["args"]["start_cycle"] for e in kept) <= cutoff
    full = build_trace(ops, clock_mhz=CLOCK)
    assert full["otherData"]["truncated"] is False


def test_aggregated_run_traces_its_spans():
    spans = [(0, "P1", 0, 0, -1, 0, 0, 50, 10), (0, "P4", 0, 0, -1, 0, 40, 90, 99),
             (1, "P1", 0, 1, -1, 0, 0, 70, 10)]
    res = result_of([], spans=spans)
    trace = build_trace(res.ops, clock_mhz=CLOCK)
    events = x_events(trace)
    assert len(events) == 3 and all(e["args"]["n_ops"] > 0 for e in events)
    assert set(names(trace, "thread_name").values()) == {"PHASE", "PHASE_1"}
    assert trace["otherData"]["aggregated"] is True
    assert_no_overlap(events)


def lanes_of(pairs):
    start = np.array([s for s, _ in pairs], np.int64)
    end = start + np.array([d for _, d in pairs], np.int64)
    lanes = assign_lanes(start, end)
    for lane in set(lanes.tolist()):
        iv = sorted(zip(start[lanes == lane], end[lanes == lane], strict=True))
        assert all(b[0] >= a[1] for a, b in zip(iv, iv[1:], strict=False))
    return start, end, lanes


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 60)), min_size=1, max_size=80))
def test_assign_lanes_never_overlaps_within_a_lane(pairs):
    lanes_of(pairs)  # zero-length events included


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(1, 60)), min_size=1, max_size=80))
def test_assign_lanes_uses_the_fewest_lanes(pairs):
    start, end, lanes = lanes_of(pairs)
    assert lanes.max() + 1 == max_alive(list(zip(start.tolist(), end.tolist(), strict=True)))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=2, max_size=40), st.data())
def test_intervals_that_never_overlap_all_take_lane_0(lengths, data):
    """End to end, touching or apart, zero-length ones included, in any row order: one lane suffices,
    and lane 0 is the one used first."""
    gaps = data.draw(st.lists(st.integers(0, 5), min_size=len(lengths), max_size=len(lengths)))
    ends = np.cumsum(np.array(lengths) + gaps)
    start, end = ends - np.array(lengths), ends
    perm = np.array(data.draw(st.permutations(range(len(lengths)))))
    assert (assign_lanes(start[perm], end[perm]) == 0).all()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.sampled_from(["V_S", "MTE2_V", "S_V"]), st.booleans(),
                          st.integers(0, 50)), min_size=1, max_size=30))
def test_flows_pair_the_kth_set_with_the_kth_wait_of_each_core_and_event(flags):
    """Random SetFlag/WaitFlag rows on two cores and three events (ties in start included): every flow
    joins the k-th set with the k-th wait of one (core, event), each by start, ties in row order."""
    ops = [op(core, "S", f"{'SetFlag' if is_set else 'WaitFlag'}:{event}", t, t + 1)
           for core, event, is_set, t in flags]
    trace = build_trace(result_of(ops).ops, clock_mhz=CLOCK)
    expected = []
    for core in (0, 1):
        for event in ("V_S", "MTE2_V", "S_V"):
            rows = [(t, i) for i, (c, e, _, t) in enumerate(flags) if (c, e) == (core, event)]
            sets = sorted((t, i) for t, i in rows if flags[i][2])
            waits = sorted((t, i) for t, i in rows if not flags[i][2])
            expected += [(core, event, s[0], w[0]) for s, w in zip(sets, waits, strict=False)]
    starts = {e["id"]: e for e in trace["traceEvents"] if e["ph"] == "s"}
    ends = {e["id"]: e for e in trace["traceEvents"] if e["ph"] == "f"}
    got = sorted((s["pid"], s["name"], round(s["ts"] * CLOCK), round(ends[fid]["ts"] * CLOCK))
                 for fid, s in starts.items())
    assert len(starts) == len(ends) == len(expected)
    # a flow ends inside its wait slice, at the set's time when the wait ended after it
    assert got == sorted((c, e, s, min(max(w, s), w + 1)) for c, e, s, w in expected)


def test_a_frame_with_repeated_row_labels_traces_as_its_rows():
    """A frame put together from others repeats row labels; its flows are those of the same rows
    labelled 0..n-1."""
    ops = result_of(overlapping_ops()).ops
    glued = ops.set_axis([0] * len(ops))
    assert build_trace(glued, clock_mhz=CLOCK) == build_trace(ops.reset_index(drop=True), clock_mhz=CLOCK)
