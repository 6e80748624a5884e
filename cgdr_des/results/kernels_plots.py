"""The plot of ``cgdr-des compare --kernel A --kernel B`` (Agg canvas, as ``results/plots.py``).

``kernels_pipes.png``: per pipe, the busy time of one core (the mean over the launch's cores) under
each kernel program, in µs, with each bar's share of that program's makespan: what the Cube-era
program moved off the vector pipe and what it pays in DMA and scalar work instead.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from cgdr_des.results.palette import series_colour
from cgdr_des.results.plots import PIPE_ORDER, plain_numbers, save_figure, scenario_on

FILE = "kernels_pipes.png"
#: the busy column of ``kernels_pipes`` (``kernels_compare.BUSY``; results sit below it in the layers)
BUSY = "busy_cycles_mean_per_core"


def plot_kernel_pipes(summary: pd.DataFrame, pipes: pd.DataFrame, path: str | Path) -> Path:
    """Grouped bars: pipe on x, one bar per kernel program, mean busy µs per core on y."""
    clock = {r.kernel_version: r.makespan_cycles / r.makespan_us for r in summary.itertuples()}
    span = dict(zip(summary["kernel_version"], summary["makespan_us"], strict=True))
    versions = list(summary["kernel_version"])
    present = set(pipes["pipe"])
    order = [p for p in PIPE_ORDER if p in present] + sorted(present - set(PIPE_ORDER))
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / max(len(versions), 1)
    x = np.arange(len(order))
    for i, v in enumerate(versions):
        busy = pipes[pipes["kernel_version"] == v].set_index("pipe")[BUSY].reindex(order).fillna(0.0)
        us = busy.to_numpy(np.float64) / clock[v]
        bars = ax.bar(x + (i - (len(versions) - 1) / 2) * width, us, width, color=series_colour(i),
                      label=f"{v}: makespan {span[v]:,.1f} µs")
        ax.bar_label(bars, [f"{100 * u / span[v]:.0f} %" if u else "" for u in us], fontsize=7)
    ax.set_xticks(x, order)
    ax.set_xlabel("pipe")
    ax.set_ylabel("busy time of one core, µs\n(mean over the launch's cores)")
    ax.margins(y=0.12)
    plain_numbers(ax.yaxis)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), title="program (bar label: % of makespan)",
              title_fontsize=8)
    first = summary.iloc[0]
    ax.set_title(f"{scenario_on(first.get('scenario', ''), first.get('hardware'))}: per-pipe busy time per core, "
                 "by kernel program", fontsize=10)
    return save_figure(fig, path)
