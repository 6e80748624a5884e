"""Two small reporting layers checked against numpy done here.

numerics/finite.py and kernel/output_check.py: which output element is reported as the first
non-finite one (C order, ``out`` before ``final_state``) and which sequence it belongs to, against
``np.argwhere`` and a loop over the sequence boundaries; the ``keep`` mode's meta line.
tail/summary.py: a study's per-policy row against ``np.percentile`` and counts made here, its bootstrap
intervals reproducible per seed.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.kernel import output_check
from cgdr_des.numerics import finite
from cgdr_des.tail.summary import QUANTILES, quantile_name, summarise


@settings(max_examples=80, deadline=None, derandomize=True)
@given(shape=st.tuples(st.integers(1, 6), st.integers(1, 5), st.integers(1, 4)),
       bad=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from([np.nan, np.inf, -np.inf])), max_size=4))
def test_first_nonfinite_is_the_first_in_c_order(shape, bad):
    arr = np.zeros(shape, np.float16)
    for pos, value in bad:
        arr.flat[pos % arr.size] = value
    got = finite.first_nonfinite(arr)
    where = np.argwhere(~np.isfinite(arr))
    assert got == (tuple(int(i) for i in where[0]) if len(where) else None)


def test_first_nonfinite_of_no_array_is_none():
    assert finite.first_nonfinite(None) is None


def sequence_of(token: int, lengths: list[int]) -> int:
    start = 0
    for b, n in enumerate(lengths):
        if start <= token < start + n:
            return b
        start += n
    raise AssertionError(token)


@pytest.mark.parametrize("lengths", [[5], [3, 0, 4], [0, 0, 2, 6], [1, 1, 1]])
def test_the_bad_token_is_placed_in_its_sequence(lengths):
    t = sum(lengths)
    for token in range(t):
        launch = SimpleNamespace(lengths=lengths, out=np.zeros((t, 2, 4)), final_state=np.zeros((len(lengths), 2)))
        launch.out[token, 1, 3] = np.nan
        assert output_check._first_bad(launch) == ("out", sequence_of(token, lengths), token, 1)


def test_final_state_is_reported_only_when_out_is_finite():
    launch = SimpleNamespace(lengths=[2, 2], out=np.zeros((4, 3, 2)), final_state=np.zeros((2, 3, 2, 2)))
    assert output_check._first_bad(launch) is None
    launch.final_state[1, 2, 0, 1] = np.inf
    assert output_check._first_bad(launch) == ("final_state", 1, -1, 2)
    launch.out[3, 0, 0] = np.nan
    assert output_check._first_bad(launch)[0] == "out"


def test_numerics_off_has_nothing_to_check():
    launch = SimpleNamespace(lengths=[4], out=None, final_state=None)
    assert output_check.check_outputs(launch) == {}


def test_keep_mode_reports_where_instead_of_raising():
    launch = SimpleNamespace(lengths=[2, 3], out=np.zeros((5, 2, 1)), final_state=np.zeros((2, 2)))
    launch.out[3, 1, 0] = np.inf
    keep = SimpleNamespace(sim=SimpleNamespace(nonfinite="keep"))
    meta = output_check.check_outputs(launch, keep)
    assert list(meta) == ["nonfinite"]
    assert "out[token 3, head 1]" in meta["nonfinite"] and f"(batch {sequence_of(3, [2, 3])})" in meta["nonfinite"]


def test_error_mode_raises_naming_the_element_and_the_phase(monkeypatch):
    launch = SimpleNamespace(lengths=[4], out=np.zeros((4, 1, 1)), final_state=np.zeros((1, 1)))
    launch.final_state[0, 0] = np.nan
    monkeypatch.setattr(output_check, "first_bad_phase", lambda launch, b, head: f"replayed b={b} head={head}")
    error = SimpleNamespace(sim=SimpleNamespace(nonfinite="error"))
    with pytest.raises(KernelDiagnostic) as info:
        output_check.check_outputs(launch, error)
    text = str(info.value)
    assert "final_state[batch 0, head 0]" in text and "replayed b=0 head=0" in text
    assert output_check.KEEP_GOING_HINT in text


def batches(rng) -> pd.DataFrame:
    rows = []
    for policy, scale in (("round_robin", 1.3), ("greedy", 1.0), ("cost_lpt", 0.9)):
        mk = rng.lognormal(3.0, 0.3, 57) * scale
        ratio = 1.0 + rng.exponential(0.03, 57)
        rows.append(pd.DataFrame({"policy": policy, "makespan_us": mk, "makespan_over_lb": ratio,
                                  "imbalance": 1 + rng.random(57)}))
    return pd.concat(rows, ignore_index=True)


def test_summary_rows_follow_the_batches():
    df = batches(np.random.default_rng(1))
    s = summarise(df, n_boot=50, seed=3)
    assert s["policy"].tolist() == ["round_robin", "greedy", "cost_lpt"]  # order of appearance
    for _, row in s.iterrows():
        grp = df[df["policy"] == row["policy"]]
        mk = grp["makespan_us"].to_numpy()
        assert row["batches"] == len(grp) and row["makespan_mean_us"] == pytest.approx(mk.mean())
        for q in QUANTILES:
            name = quantile_name(q)
            assert row[f"{name}_us"] == pytest.approx(np.percentile(mk, q))
            assert row[f"{name}_lo_us"] <= row[f"{name}_hi_us"]
            assert mk.min() <= row[f"{name}_lo_us"] and row[f"{name}_hi_us"] <= mk.max()
        ratio = grp["makespan_over_lb"].to_numpy()
        assert row["within_1pct_of_lb"] == pytest.approx(sum(r <= 1.01 for r in ratio) / len(ratio))
        assert row["makespan_over_lb_mean"] == pytest.approx(ratio.mean())
        assert row["imbalance_p99"] == pytest.approx(np.percentile(grp["imbalance"], 99))


def test_bootstrap_intervals_are_reproducible_per_seed():
    df = batches(np.random.default_rng(2))
    a, b, c = summarise(df, n_boot=40, seed=9), summarise(df, n_boot=40, seed=9), summarise(df, n_boot=40, seed=10)
    pd.testing.assert_frame_equal(a, b)
    assert not a["p90_lo_us"].equals(c["p90_lo_us"])
    point = [c for c in a.columns if c.endswith("_us") and not c.endswith(("_lo_us", "_hi_us"))]
    pd.testing.assert_frame_equal(a[point], c[point])  # the point estimates do not depend on the seed


def test_one_batch_has_degenerate_intervals():
    df = pd.DataFrame({"policy": ["greedy"], "makespan_us": [12.5], "makespan_over_lb": [1.0], "imbalance": [1.2]})
    row = summarise(df, n_boot=10).iloc[0]
    for q in QUANTILES:
        name = quantile_name(q)
        assert row[f"{name}_us"] == row[f"{name}_lo_us"] == row[f"{name}_hi_us"] == 12.5


@pytest.mark.parametrize("q", [50, 99.9, 0.5, 100])
def test_quantile_names_are_column_friendly_and_distinct(q):
    name = quantile_name(q)
    assert name.startswith("p") and "." not in name and float(name[1:].replace("_", ".")) == q
