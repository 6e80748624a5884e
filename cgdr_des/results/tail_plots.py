"""PNG plots of a tail study (Agg canvas, like ``plots.py``); every title names the scenario.

- ``makespan_cdf.png``: empirical CDF of the makespan (µs) per policy, log-x when it spans > 10x;
- ``makespan_over_lb.png``: histogram of makespan ÷ lower bound per policy;
- ``load_balance.png``: per-core busy time ÷ that batch's mean busy time, pooled over all batches,
  one panel per policy (1.0 is a perfectly even split; 0 is an idle core);
- ``makespan_vs_max_seqlen.png``: each batch's makespan against its longest sequence.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from cgdr_des.integers import ceil_div
from cgdr_des.results.plots import save_figure

CDF_POINTS, SCATTER_POINTS = 2000, 3000

#: One colour per dispatch policy, in every tail figure (and analysis/report's): a reader who has
#: learnt that cost_lpt is green does not have to read another legend.
POLICY_COLOURS = {
    "greedy": "#444444", "round_robin": "#d62728", "float_share": "#ff7f0e", "longest_first": "#9467bd",
    "cost_greedy": "#1f77b4", "cost_lpt": "#2ca02c", "minmax_contiguous": "#17becf", "optimal": "#e377c2",
}


def policy_colour(policy: str) -> str:
    """The policy's colour in :data:`POLICY_COLOURS` (grey for a policy added without one)."""
    return POLICY_COLOURS.get(policy, "#7f7f7f")


def plot_study(result, out: Path) -> dict[str, Path]:
    """All four plots into ``out``; returns ``{name: path}``."""
    name = result.meta.get("scenario_name", "")
    b = result.batches
    return {
        "makespan_cdf": plot_makespan_cdf(b, out / "makespan_cdf.png", name),
        "makespan_over_lb": plot_ratio_hist(b, out / "makespan_over_lb.png", name),
        "load_balance": plot_load_balance(result.core_finish, out / "load_balance.png", name),
        "makespan_vs_max_seqlen": plot_vs_max_seqlen(b, out / "makespan_vs_max_seqlen.png", name),
    }


def _by_policy(frame):
    return frame.groupby("policy", sort=False, observed=True)


def plot_makespan_cdf(batches, path: Path, name: str) -> Path:
    """Empirical CDF of makespan (µs) per policy."""
    fig = Figure(figsize=(8, 5), layout="constrained")
    ax = fig.add_subplot()
    for policy, grp in _by_policy(batches):
        x = np.sort(grp["makespan_us"].to_numpy())
        frac = np.arange(1, x.size + 1) / x.size
        if x.size > CDF_POINTS:  # the same curve through evenly spaced order statistics: cheaper to draw
            keep = np.unique(np.linspace(0, x.size - 1, CDF_POINTS).round().astype(int))
            x, frac = x[keep], frac[keep]
        ax.step(x, frac, where="post", label=policy, color=policy_colour(policy))
    mk = batches["makespan_us"]
    if mk.min() > 0 and mk.max() / mk.min() > 10:
        ax.set_xscale("log")
    ax.set(xlabel="makespan (µs)", ylabel="fraction of batches", ylim=(0, 1.02),
           title=f"{name}: makespan CDF over {batches['batch_index'].nunique():,} batches")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return save_figure(fig, path)


def plot_ratio_hist(batches, path: Path, name: str) -> Path:
    """Histogram of makespan ÷ lower bound per policy (outlines, shared bins)."""
    fig = Figure(figsize=(8, 5), layout="constrained")
    ax = fig.add_subplot()
    ratio = batches["makespan_over_lb"].to_numpy()
    bins = np.linspace(1.0, max(float(np.percentile(ratio, 99.5)), 1.01), 60)
    for policy, grp in _by_policy(batches):
        ax.stairs(np.histogram(grp["makespan_over_lb"].clip(upper=bins[-1]), bins=bins)[0], bins, label=policy,
                  color=policy_colour(policy))
    ax.set(xlabel="makespan ÷ lower bound (last bin: beyond)", ylabel="batches",
           title=f"{name}: distance from the lower bound")
    ax.legend(fontsize="small")
    return save_figure(fig, path)


def plot_load_balance(cores, path: Path, name: str) -> Path:
    """Per policy, a panel: histogram of busy ÷ the batch's mean busy, over every core of every batch."""
    groups = list(_by_policy(cores))
    cols = min(4, len(groups))
    rows = ceil_div(len(groups), cols)
    fig = Figure(figsize=(3.2 * cols, 2.6 * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True)
    for ax, (policy, grp) in zip(axes.ravel(), groups, strict=False):
        busy = grp.sort_values(["batch_index", "core"])["busy_cycles"].to_numpy(np.float64)
        busy = busy.reshape(-1, grp["core"].nunique())  # one row per batch
        mean = busy.mean(axis=1, keepdims=True)
        share = np.divide(busy, mean, out=np.zeros_like(busy), where=mean > 0).ravel()
        bins = np.linspace(0, max(2.0, float(share.max()) * 1.01), 50)
        ax.stairs(np.histogram(share, bins=bins)[0], bins, fill=True, color=policy_colour(policy))
        ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
        ax.set_title(policy, fontsize="medium")
    for ax in axes.ravel()[len(groups):]:
        ax.set_visible(False)
    fig.supxlabel("core busy time ÷ the batch's mean core busy time")
    fig.supylabel("cores (pooled over batches)")
    fig.suptitle(f"{name}: load balance in time")
    return save_figure(fig, path)


def plot_vs_max_seqlen(batches, path: Path, name: str) -> Path:
    """Each batch's makespan (µs) against its longest sequence (tokens), per policy."""
    fig = Figure(figsize=(8, 5), layout="constrained")
    ax = fig.add_subplot()
    step = 1
    for policy, grp in _by_policy(batches):
        step = max(1, ceil_div(len(grp), SCATTER_POINTS))
        ax.scatter(grp["max_seqlen"].iloc[::step], grp["makespan_us"].iloc[::step], s=4, alpha=0.4, label=policy,
                   color=policy_colour(policy))
    shown = "" if step == 1 else f" (every {step}th batch)"
    ax.set(xlabel="longest sequence of the batch (tokens)", ylabel="makespan (µs)",
           title=f"{name}: makespan against the longest sequence{shown}")
    ax.legend(fontsize="small", markerscale=3)
    return save_figure(fig, path)
