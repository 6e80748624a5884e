"""The tail study's plot data (results/tail_plots.py) and its console line (cli/tail.py), against
quantities computed here directly from the frames."""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from cgdr_des.cli.tail import study_lines
from cgdr_des.results.tail_plots import binned_medians, ccdf_at, ccdf_points, coincident_groups, plot_study
from cgdr_des.tail.summary import summarise


def _batches(n: int = 400, seed: int = 3) -> pd.DataFrame:
    """Four policies over the same n batches: b equals a batch for batch, d equals a except one batch."""
    rng = np.random.default_rng(seed)
    seqlen = rng.integers(100, 5000, n)
    base = (seqlen * 1000 + rng.integers(0, 500_000, n)).astype(np.int64)
    mk = {"a": base, "c": base + rng.integers(1, 40_000, n), "b": base.copy(), "d": base.copy()}
    mk["d"][n // 2] += 1
    rows = [pd.DataFrame({"batch_index": np.arange(n), "policy": p, "max_seqlen": seqlen, "makespan_cycles": v,
                          "makespan_us": v / 1000.0, "makespan_over_lb": 1 + (v - base) / base,
                          "imbalance": 1 + (v - base) / base}) for p, v in mk.items()]
    return pd.concat(rows, ignore_index=True)


def test_coincident_policies_are_grouped_and_unequal_ones_not():
    b = _batches()
    assert coincident_groups(b) == [("a", "b"), ("c",), ("d",)]
    # the same values in another batch order still coincide batch for batch
    shuffled = b.sample(frac=1.0, random_state=0)
    assert {frozenset(g) for g in coincident_groups(shuffled)} == {frozenset("ab"), frozenset("c"), frozenset("d")}


def test_ccdf_height_at_p99_is_the_share_at_or_above_it():
    rng = np.random.default_rng(7)
    for n in (1000, 50_000):  # the second is thinned before drawing
        values = rng.lognormal(0.0, 0.5, n)
        x, y = ccdf_points(values)
        p99 = np.percentile(values, 99)
        direct = float((values >= p99).mean())  # the share of batches at or above p99, counted
        assert ccdf_at(x, y, p99) == direct
        assert abs(direct - 0.01) <= 1.0 / n
        assert y.min() > 0 and y[0] == 1.0  # fits a log axis; starts at every batch


def test_binned_medians_match_a_direct_groupby():
    b = _batches()
    table = binned_medians(b, bins=8)
    edges = np.unique(np.quantile(b["max_seqlen"], np.linspace(0, 1, 9)))
    cut = pd.cut(b["max_seqlen"], edges, right=False, include_lowest=True, labels=False)
    cut = cut.fillna(len(edges) - 2).astype(int)  # the largest value closes the last bin
    direct = b.assign(bin=cut).groupby(["policy", "bin"])["makespan_us"]
    for row in table.itertuples():
        vals = direct.get_group((row.policy, row.bin))
        assert row.n == len(vals)
        assert np.isclose(row.median, vals.median())
        assert np.isclose(row.p10, np.percentile(vals, 10)) and np.isclose(row.p90, np.percentile(vals, 90))
    assert table.groupby("policy")["n"].sum().eq(400).all()


def _study(b: pd.DataFrame):
    summary = summarise(b, n_boot=50, seed=1)
    cores = pd.concat([b[["batch_index", "policy"]].assign(core=c, busy_cycles=b["makespan_cycles"] // (c + 1))
                       for c in range(4)], ignore_index=True)
    meta = {"scenario_name": "hand", "hardware": "atlas-300i-duo", "batches": 400, "batch": 8, "block_dim": 4,
            "seed": 1}
    checks = pd.DataFrame(columns=["batch_index", "kind", "policy", "makespan_surrogate_cycles",
                                   "makespan_phase_cycles", "makespan_rel_err", "finish_max_rel_err"])
    return types.SimpleNamespace(batches=b, summary=summary, core_finish=cores, meta=meta, checks=checks)


def test_console_line_carries_the_p99_interval_of_the_summary():
    study = _study(_batches())
    lines = study_lines(study)
    for row in study.summary.itertuples():
        line = next(ln for ln in lines if ln.split()[0] == row.policy)
        assert f"[{row.p99_lo_us:,.1f}, {row.p99_hi_us:,.1f}]" in line
        assert row.p99_lo_us <= row.p99_us <= row.p99_hi_us


@pytest.mark.slow
def test_every_tail_plot_is_written(tmp_path):
    written = plot_study(_study(_batches()), tmp_path)
    assert set(written) == {"makespan_cdf", "makespan_percentiles", "makespan_over_lb", "load_balance",
                            "makespan_vs_max_seqlen"}
    assert all(p.stat().st_size > 10_000 for p in written.values())
