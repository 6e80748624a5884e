"""What the plots and notes are drawn from (results/plots.py, results/trace.py, results/export.py),
checked against selections and counts made here on random ops frames.

The Gantt's rows: exactly the core's ops that meet the window, earliest first, cut at ``max_ops``,
spread over lanes so that no two ops of one row overlap; the critical core; the console notes about
a cut or empty trace; the JSON forms of meta values.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgdr_des.results import export
from cgdr_des.results.plots import PIPE_ORDER, gantt_rows, last_core
from cgdr_des.results.trace import THREAD_NAMES, trace_notes

PIPES = ["S", "V", "MTE2", "MTE3"]


def ops_frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    start = rng.integers(0, 500, n)
    return pd.DataFrame({"core": rng.integers(0, 3, n), "pipe": pd.Categorical(rng.choice(PIPES, n)),
                         "op": "Add", "phase": "P1", "start": start, "end": start + rng.integers(0, 60, n)})


def meets(start: int, end: int, window) -> bool:
    """An op meets [w0, w1) when it starts before w1 and ends after w0 (or is an instant inside)."""
    return start < window[1] and (end > window[0] or start >= window[0])


@pytest.mark.slow
@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10**6), n=st.integers(0, 120), core=st.integers(0, 2),
       window=st.one_of(st.none(), st.tuples(st.integers(0, 400), st.integers(1, 200)).map(lambda t: (t[0],
                                                                                               t[0] + t[1]))),
       max_ops=st.integers(1, 80))
def test_gantt_rows_are_the_core_s_ops_in_the_window_earliest_first(seed, n, core, window, max_ops):
    ops = ops_frame(np.random.default_rng(seed), n)
    df, cut = gantt_rows(ops, core, window, max_ops=max_ops)
    picked = [i for i in range(n) if ops["core"][i] == core and (window is None or meets(ops["start"][i],
                                                                                        ops["end"][i], window))]
    picked.sort(key=lambda i: (ops["start"][i], i))
    assert cut == (len(picked) > max_ops)
    assert df.index.tolist() == picked[:max_ops]
    for _, rows in df.groupby("row"):
        spans = sorted(zip(rows["start"], rows["end"], strict=True))
        assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:], strict=False)), spans  # no overlap in a row
    for pipe, row, key in zip(df["pipe"].astype(str), df["row"], df["row_key"], strict=True):
        assert row.startswith(THREAD_NAMES[pipe]) and key[0] == PIPE_ORDER.index(pipe)
        assert (row == THREAD_NAMES[pipe]) == (key[1] == 0)


def test_gantt_lanes_are_as_few_as_the_most_overlapping_ops():
    ops = pd.DataFrame({"core": 0, "pipe": pd.Categorical(["V"] * 4), "start": [0, 5, 10, 30],
                        "end": [20, 25, 15, 40]})
    df, _ = gantt_rows(ops, 0, None)
    alive = max(sum(s <= t < e for s, e in zip(ops["start"], ops["end"], strict=True)) for t in range(40))
    assert df["row"].nunique() == alive


@pytest.mark.parametrize("finish", [[5, 9, 9, 2], [7], [3, 3, 3], [0, 1, 2, 3]])
def test_the_critical_core_is_the_last_to_finish_lowest_id_on_ties(finish):
    cores = pd.DataFrame({"core": range(len(finish)), "finish": finish}).sample(frac=1, random_state=1)
    want = min(c for c, f in enumerate(finish) if f == max(finish))
    assert last_core(cores) == want


def test_no_note_for_a_complete_trace():
    assert trace_notes({"truncated": False, "kept_until_cycle": 90}, 1000.0) == []


def test_a_cut_trace_says_how_many_events_were_dropped_and_where_it_stops():
    other = {"truncated": True, "max_trace_events": 1000, "dropped_events": 23456, "kept_until_cycle": 1500,
             "selected_until_cycle": 9000}
    (note,) = trace_notes(other, 1000.0)
    assert "1,000 events" in note and "23,456 later events dropped" in note
    assert f"{1500 / 1000.0:,.1f} us of {9000 / 1000.0:,.1f} us" in note


def test_an_empty_window_says_where_the_run_ends():
    other = {"window_cycles": [5000, 6000], "kept_until_cycle": None}
    (note,) = trace_notes(other, 1000.0, makespan=4321)
    assert "[5,000, 6,000)" in note and "4,321" in note
    assert "run ends" not in trace_notes(other, 1000.0)[0]


@dataclasses.dataclass
class Tiling:
    v_step: int
    block_dim: int


class Plain:
    def __init__(self):
        self.a, self.b = 1, "x"


def test_meta_values_become_json():
    data = {"i": np.int64(3), "f": np.float32(0.5), "b": np.bool_(True), "arr": np.arange(3),
            "path": Path("/tmp/x"), "tiling": Tiling(128, 8), "plain": Plain()}
    back = json.loads(json.dumps(data, default=export._json_default))
    assert back == {"i": 3, "f": 0.5, "b": True, "arr": [0, 1, 2], "path": str(Path("/tmp/x")),
                    "tiling": dataclasses.asdict(Tiling(128, 8)), "plain": vars(Plain())}


def test_gantt_options_come_from_the_scenario_output_table():
    assert export._gantt_options(None) == {"gantt_core": None, "gantt_window": None}
    assert export._gantt_options({"output": {"gantt_core": 3, "gantt_window": [1, 9]}}) == {
        "gantt_core": 3, "gantt_window": [1, 9]}
    assert export._gantt_options({"output": None}) == {"gantt_core": None, "gantt_window": None}
