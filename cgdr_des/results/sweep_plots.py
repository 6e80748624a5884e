"""The plot of ``cgdr-des sweep`` (Agg canvas, as ``results/plots.py``).

``sweep_summary.png``: the sweep's main metric (p99 makespan for tail points, makespan for run
points; µs, the mean over replications) against each numeric parameter of the grid, one panel per
parameter and one line per value of the other parameters (and per policy for tail points).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from cgdr_des.results.palette import policy_colour, series_colour
from cgdr_des.results.plots import profile_name, save_figure, scenario_on

FILE = "sweep_summary.png"
#: the metric drawn: the first of these the summary holds
METRICS = ("p99_us", "makespan_us")
MARKERS = ("o", "s", "^", "D", "v", "x")
DASHES = ("-", "--", ":", "-.")
#: lines one panel labels; past that the legend says how many more
MAX_LINES = 12
#: parameters that only tell replications apart: averaged over, never an axis
REPLICATION = ("workload.seed", "seed", "replication")


def plot_sweep_summary(summary: pd.DataFrame, params: list[str], path: str | Path, *, name: str = "",
                       scenario: str = "", profiles: list[str] | tuple[str, ...] = ()) -> Path:
    """One panel per numeric parameter (metric against it), one line per combination of the others;
    the title names the sweep, its base ``scenario`` and the ``profiles`` its points ran on."""
    metric = next((m for m in METRICS if m in summary), None)
    axes_params = [p for p in params if p in summary and p not in REPLICATION]
    numeric = [p for p in axes_params if pd.api.types.is_numeric_dtype(summary[p]) and summary[p].nunique() > 1]
    panels = numeric or axes_params[:1]
    fig = Figure(figsize=(5.5 * max(len(panels), 1) + 2.5, 4), layout="constrained")
    if metric is None or not panels:
        ax = fig.add_subplot()
        ax.text(0.5, 0.5, "no done point with a numeric parameter to draw", ha="center", transform=ax.transAxes)
        ax.set_axis_off()
    for i, p in enumerate(panels if metric else []):
        ax = fig.add_subplot(1, len(panels), i + 1)
        _panel(ax, summary, p, [q for q in axes_params if q != p] + _policy(summary, params), metric)
    what = {"p99_us": "p99 makespan", "makespan_us": "makespan"}.get(metric, metric)
    on = scenario_on(scenario or "?", ", ".join(map(profile_name, profiles)) or None)
    fig.suptitle(f"sweep {name} ({on}): {what} (µs, mean over replications) against each parameter", fontsize=10)
    return save_figure(fig, path)


def _policy(summary: pd.DataFrame, params: list[str]) -> list[str]:
    """``["policy"]`` when the summary has one row per policy (tail points) not already a parameter."""
    if "policy" not in summary or any(p.split(".")[-1] == "policy" for p in params):
        return []
    return ["policy"]


def _colour(keys: list, values: tuple, i: int) -> str:
    """A line's colour: its policy's, as in every plot, when a policy tells the lines apart; else the
    ``i``-th series colour."""
    for k, v in zip(keys, values, strict=False):
        if k is not None and k.split(".")[-1] == "policy":
            return policy_colour(v)
    return series_colour(i)


def _panel(ax, summary: pd.DataFrame, param: str, others: list[str], metric: str) -> None:
    keys = others or [None]
    groups = summary.groupby(others, dropna=False, sort=True) if others else [((), summary)]
    drawn = 0
    for key, g in groups:
        mean = g.groupby(param, sort=True)[metric].mean()
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join(f"{k}={v}" for k, v in zip(keys, key, strict=False) if k is not None) or metric
        categorical = not pd.api.types.is_numeric_dtype(summary[param])
        x = np.arange(len(mean)) if categorical else mean.index.to_numpy()
        # markers and dashes vary so that lines that coincide (policies that agree) stay visible
        ax.plot(x, mean.to_numpy(), marker=MARKERS[drawn % len(MARKERS)], ms=5, ls=DASHES[drawn % len(DASHES)],
                mfc="none", color=_colour(keys, key, drawn), label=label if drawn < MAX_LINES else None)
        if categorical:
            ax.set_xticks(x, [str(v) for v in mean.index])
        drawn += 1
    ax.set_xlabel(param)
    ax.set_ylabel({"p99_us": "p99 makespan, µs", "makespan_us": "makespan, µs"}.get(metric, metric))
    ax.grid(alpha=0.3)
    if drawn > 1 or others:
        more = f" (+{drawn - MAX_LINES} more)" if drawn > MAX_LINES else ""
        ax.legend(fontsize=7, title=f"lines{more}", title_fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
