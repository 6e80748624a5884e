"""PNG plots of a tail study (Agg canvas, like ``plots.py``); every title names the scenario and profile.

Policies whose makespans coincide batch for batch (:func:`coincident_groups`: on tail_lognormal,
round_robin, longest_first and cost_lpt pick the same split of every batch) are drawn once, in the
first one's colour, and labelled together ("round_robin = longest_first = cost_lpt"). Legends sit
outside the data.

- ``makespan_cdf.png``: the complementary CDF, the share of batches whose makespan is at least x
  (1 − F), on a log y axis, so p99 (y = 0.01) and p99.9 (y = 0.001) are as readable as the median;
  p50, p99 and p99.9 of each policy are marked on its curve, with dotted guides at those shares;
- ``makespan_percentiles.png``: p50, p90, p95, p99 and p99.9 per policy, one panel each (its own µs
  scale), with the 95 % bootstrap interval of tail_summary as error bars;
- ``makespan_over_lb.png``: step histograms of makespan ÷ lower bound per policy, log y axis (a policy
  at the bound in every batch is one tall bar and the others stay readable);
- ``load_balance.png``: per-core busy time ÷ that batch's mean busy time, pooled over all batches,
  one panel per policy (1.0 is a perfectly even split; 0 is an idle core);
- ``makespan_vs_max_seqlen.png``: the makespan against the batch's longest sequence, as the median
  per bin of equally many batches, with the p10–p90 band of each bin.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from cgdr_des.integers import ceil_div
from cgdr_des.results.palette import POLICY_COLOURS, policy_colour
from cgdr_des.results.plots import plain_numbers, run_title, save_figure

__all__ = ["POLICY_COLOURS", "policy_colour", "plot_study", "coincident_groups", "ccdf_points",
           "binned_medians"]

#: points a curve keeps at most: every one of the top 1 000, then log-spaced ranks (the tail is dense)
CCDF_POINTS = 2000
#: the percentiles marked on the CCDF and their share of batches at or above them
MARKED = ((50, "p50"), (99, "p99"), (99.9, "p99.9"))
SEQLEN_BINS = 20
LEGEND = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "fontsize": "small", "borderaxespad": 0.0}


def plot_study(result, out: Path) -> dict[str, Path]:
    """All five plots into ``out``; returns ``{name: path}``."""
    meta = result.meta
    name = run_title(meta)
    b = result.batches
    groups = coincident_groups(b)
    return {
        "makespan_cdf": plot_makespan_ccdf(b, out / "makespan_cdf.png", name, groups),
        "makespan_percentiles": plot_percentiles(result.summary, out / "makespan_percentiles.png", name, groups),
        "makespan_over_lb": plot_ratio_hist(b, out / "makespan_over_lb.png", name, groups),
        "load_balance": plot_load_balance(result.core_finish, out / "load_balance.png", name, groups),
        "makespan_vs_max_seqlen": plot_vs_max_seqlen(b, out / "makespan_vs_max_seqlen.png", name, groups),
    }


def coincident_groups(batches: pd.DataFrame) -> list[tuple[str, ...]]:
    """The policies, in order of appearance, grouped where their makespans are equal batch for batch
    (the same batches, the same cycles). A policy is its own group when it differs in any batch."""
    col = "makespan_cycles" if "makespan_cycles" in batches else "makespan_us"
    series = {p: g.sort_values("batch_index")[["batch_index", col]].to_numpy()
              for p, g in batches.groupby("policy", sort=False, observed=True)}
    groups: list[list[str]] = []
    for policy, values in series.items():
        home = next((g for g in groups if np.array_equal(series[g[0]], values)), None)
        if home is None:
            groups.append([policy])
        else:
            home.append(policy)
    return [tuple(g) for g in groups]


def group_label(group: tuple[str, ...]) -> str:
    """``round_robin = longest_first = cost_lpt``."""
    return " = ".join(group)


def _first(batches: pd.DataFrame, group: tuple[str, ...]) -> pd.DataFrame:
    return batches[batches["policy"] == group[0]]


def ccdf_points(values) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of the empirical CCDF drawn as ``step(x, y, where="pre")``: y is the share of values at
    least x, from 1 at the smallest value down to 1/n at the largest (never 0: it fits a log axis).
    Large samples keep every point of the top ranks and log-spaced ranks below them."""
    x = np.sort(np.asarray(values, np.float64))
    n = x.size
    y = (n - np.arange(n)) / max(n, 1)
    if n > CCDF_POINTS:
        from_top = np.unique(np.concatenate([np.arange(1, CCDF_POINTS // 2 + 1),
                                             np.geomspace(1, n, CCDF_POINTS // 2).round().astype(int)]))
        keep = np.unique(np.concatenate([[0], n - from_top]))
        x, y = x[keep], y[keep]
    return x, y


def ccdf_at(x: np.ndarray, y: np.ndarray, at: float) -> float:
    """The drawn curve's height at ``at`` (``where="pre"``: the value of the first point at or past it)."""
    i = int(np.searchsorted(x, at, side="left"))
    return float(y[i]) if i < x.size else 0.0


def plot_makespan_ccdf(batches, path: Path, name: str, groups=None) -> Path:
    """The makespan CCDF (µs) per policy group, log y, with p50/p99/p99.9 marked."""
    groups = groups or coincident_groups(batches)
    n = int(batches["batch_index"].nunique())
    fig = Figure(figsize=(10, 5), layout="constrained")
    ax = fig.add_subplot()
    for group in groups:
        mk = _first(batches, group)["makespan_us"].to_numpy(np.float64)
        x, y = ccdf_points(mk)
        colour = policy_colour(group[0])
        ax.step(x, y, where="pre", color=colour, label=group_label(group))
        shares = [1 - q / 100 for q, _ in MARKED]
        pts = np.percentile(mk, [q for q, _ in MARKED])
        ax.plot(pts, shares, "o", color=colour, markersize=5, markeredgecolor="white")
    for _, label in MARKED:
        share = 1 - float(label[1:]) / 100
        ax.axhline(share, color="grey", linestyle=":", linewidth=0.8)
        ax.annotate(label, (0.0, share), xycoords=("axes fraction", "data"), xytext=(3, 2),
                    textcoords="offset points", fontsize="small", color="dimgrey")
    mk = batches["makespan_us"]
    if mk.min() > 0 and mk.max() / mk.min() > 10:
        ax.set_xscale("log")
    plain_numbers(ax.xaxis)
    ax.set_yscale("log")
    ax.set_ylim(min(1e-3, 1 / max(n, 1)) * 0.5, 1.3)
    ax.set(xlabel="makespan x (µs)", ylabel="share of batches with makespan ≥ x (1 − F)",
           title=f"{name}: makespan tail over {n:,} batches (dots: p50, p99, p99.9)")
    if n < 1000:
        ax.text(0.99, 0.02, f"p99.9 needs ≥ 1,000 batches: here the curve ends at 1/{n:,}",
                transform=ax.transAxes, ha="right", fontsize="small", color="dimgrey")
    ax.grid(alpha=0.3, which="both")
    ax.legend(title="policy", **LEGEND)
    return save_figure(fig, path)


def plot_percentiles(summary: pd.DataFrame, path: Path, name: str, groups=None) -> Path:
    """One panel per percentile: each policy group's value (µs) with its bootstrap interval."""
    groups = groups or [(p,) for p in summary["policy"]]
    rows = summary.set_index("policy")
    cols = percentile_columns(summary)
    fig = Figure(figsize=(3.0 + 1.6 * len(cols), 4.2), layout="constrained")
    axes = fig.subplots(1, len(cols), squeeze=False)[0]
    for ax, col in zip(axes, cols, strict=True):
        for i, group in enumerate(groups):
            r = rows.loc[group[0]]
            v, lo, hi = r[f"{col}_us"], r[f"{col}_lo_us"], r[f"{col}_hi_us"]
            ax.errorbar([i], [v], yerr=[[v - lo], [hi - v]], fmt="o", capsize=4, color=policy_colour(group[0]),
                        label=group_label(group))
        ax.set_xticks([])
        ax.set_xlim(-0.7, len(groups) - 0.3)
        ax.set_title(col.replace("_", "."), fontsize="medium")
        ax.grid(alpha=0.3, axis="y")
        plain_numbers(ax.yaxis)
    axes[0].set_ylabel("makespan (µs)")
    n = int(summary["batches"].iloc[0]) if len(summary) else 0
    fig.suptitle(f"{name}: makespan percentiles over {n:,} batches (bars: 95 % bootstrap interval)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(3, len(labels)), fontsize="small")
    return save_figure(fig, path)


def percentile_columns(summary: pd.DataFrame) -> list[str]:
    """The percentile names of tail_summary (``p50`` .. ``p99_9``), from its ``<name>_us`` columns."""
    return [c[:-3] for c in summary if re.fullmatch(r"p\d+(_\d+)?_us", c)]


def plot_ratio_hist(batches, path: Path, name: str, groups=None) -> Path:
    """Step histograms of makespan ÷ lower bound per policy group (shared bins, log y)."""
    groups = groups or coincident_groups(batches)
    fig = Figure(figsize=(10, 5), layout="constrained")
    ax = fig.add_subplot()
    ratio = batches["makespan_over_lb"].to_numpy()
    bins = np.linspace(1.0, max(float(np.percentile(ratio, 99.5)), 1.01), 60)
    for group in groups:
        r = _first(batches, group)["makespan_over_lb"].clip(upper=bins[-1])
        ax.stairs(np.histogram(r, bins=bins)[0], bins, label=group_label(group), color=policy_colour(group[0]),
                  linewidth=1.5)
    ax.set_yscale("log")
    ax.set(xlabel="makespan ÷ lower bound (1.0: at the bound; last bin: beyond)", ylabel="batches (log)",
           title=f"{name}: distance from the lower bound")
    ax.legend(title="policy", **LEGEND)
    return save_figure(fig, path)


def plot_load_balance(cores, path: Path, name: str, groups=None) -> Path:
    """Per policy group, a panel: histogram of busy ÷ the batch's mean busy, over every core of every batch."""
    groups = groups or [(p,) for p in cores["policy"].unique()]
    cols = min(4, len(groups))
    rows = ceil_div(len(groups), cols)
    fig = Figure(figsize=(3.4 * cols, 2.7 * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True)
    shares = {group: busy_shares(cores[cores["policy"] == group[0]]) for group in groups}
    bins = share_bins(np.concatenate(list(shares.values())) if shares else np.ones(1))
    for ax, group in zip(axes.ravel(), groups, strict=False):
        ax.stairs(np.histogram(shares[group], bins=bins)[0], bins, fill=True, color=policy_colour(group[0]))
        ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
        ax.set_title("\n".join(group), fontsize="small")
        ax.tick_params(labelbottom=True)  # a panel with none below it has no other tick labels in its column
    for ax in axes.ravel()[len(groups):]:
        ax.set_visible(False)
    fig.supxlabel("core busy time ÷ the batch's mean core busy time (1.0: an even split)")
    fig.supylabel("cores (pooled over batches)")
    fig.suptitle(f"{name}: load balance in time")
    return save_figure(fig, path)


def busy_shares(cores: pd.DataFrame) -> np.ndarray:
    """Each core's busy time ÷ its batch's mean core busy time, over every core of every batch (one policy)."""
    busy = cores.sort_values(["batch_index", "core"])["busy_cycles"].to_numpy(np.float64)
    busy = busy.reshape(-1, cores["core"].nunique())  # one row per batch
    mean = busy.mean(axis=1, keepdims=True)
    return np.divide(busy, mean, out=np.zeros_like(busy), where=mean > 0).ravel()


def share_bins(shares: np.ndarray, n: int = 50) -> np.ndarray:
    """Histogram edges over the shares drawn, in steps of 0.1 around them and always around 1.0 (an even
    split): a fixed 0 to 2 range squeezed policies that balance within ±15 % into a few bins."""
    lo = min(0.9, np.floor(10 * float(shares.min())) / 10)
    hi = max(1.1, np.ceil(10 * float(shares.max()) * 1.0001) / 10)
    return np.linspace(lo, hi, n)


def binned_medians(batches: pd.DataFrame, bins: int = SEQLEN_BINS) -> pd.DataFrame:
    """Per policy and bin of ``max_seqlen`` (edges at its quantiles over all batches, so bins hold about
    equally many batches): ``x`` (the bin's median longest sequence), ``median``, ``p10``, ``p90`` (µs)
    and ``n``; only bins that hold a batch."""
    seq = batches["max_seqlen"].to_numpy(np.float64)
    edges = np.unique(np.quantile(seq, np.linspace(0, 1, bins + 1)))
    which = np.clip(np.searchsorted(edges, seq, side="right") - 1, 0, max(edges.size - 2, 0))
    rows = []
    for policy, idx in batches.groupby("policy", sort=False, observed=True).indices.items():
        mk = batches["makespan_us"].to_numpy(np.float64)[idx]
        for b in np.unique(which[idx]):
            sel = which[idx] == b
            p10, med, p90 = np.percentile(mk[sel], [10, 50, 90])
            rows.append({"policy": policy, "bin": int(b), "x": float(np.median(seq[idx][sel])), "median": med,
                         "p10": p10, "p90": p90, "n": int(sel.sum())})
    return pd.DataFrame(rows, columns=["policy", "bin", "x", "median", "p10", "p90", "n"])


def plot_vs_max_seqlen(batches, path: Path, name: str, groups=None) -> Path:
    """Binned medians of the makespan (µs) against the longest sequence, p10–p90 bands, per policy group."""
    groups = groups or coincident_groups(batches)
    n = int(batches["batch_index"].nunique())
    table = binned_medians(batches, max(5, min(SEQLEN_BINS, n // 25)))  # >= ~25 batches a bin when it can
    fig = Figure(figsize=(10, 5), layout="constrained")
    ax = fig.add_subplot()
    for group in groups:
        t = table[table["policy"] == group[0]]
        colour = policy_colour(group[0])
        # the band's edges in the policy's colour: filled alone, overlapping bands merged into one grey
        ax.fill_between(t["x"], t["p10"], t["p90"], color=colour, alpha=0.05, linewidth=0)
        for edge in ("p10", "p90"):
            ax.plot(t["x"], t[edge], color=colour, linewidth=0.8, linestyle="--", alpha=0.7)
        ax.plot(t["x"], t["median"], marker="o", markersize=3, color=colour, label=group_label(group))
    plain_numbers(ax.xaxis)
    plain_numbers(ax.yaxis)
    per_bin = int(table["n"].median()) if len(table) else 0
    ax.set(xlabel="longest sequence of the batch (tokens; bin median)", ylabel="makespan (µs)",
           title=f"{name}: makespan against the longest sequence\n"
                 f"median per bin of ~{per_bin:,} batches, band p10–p90")
    ax.grid(alpha=0.3)
    ax.legend(title="policy", **LEGEND)
    return save_figure(fig, path)
