"""The joint-sample plot of ``cgdr-des sensitivity`` (Agg canvas, as ``results/plots.py``; the
tornado is ``timing/tornado.py``).

``joint_makespan.png``: the makespans of the joint Latin-hypercube samples as a histogram (µs), the
nominal makespan and the one-at-a-time ends marked, and the interval (the least and largest makespan
of every run) shaded: where in the interval the joint samples fall, and whether its ends are rare.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from cgdr_des.results.palette import REFERENCE, series_colour
from cgdr_des.results.plots import plain_numbers, save_figure, scenario_on

FILE = "joint_makespan.png"


def plot_joint_makespan(runs: pd.DataFrame, summary: dict, path: str | Path) -> Path:
    """Histogram of the joint samples' makespans with the nominal, the one-at-a-time ends and the interval."""
    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.add_subplot()
    lo, hi, nom = summary["low_us"], summary["high_us"], summary["nominal_us"]
    ax.axvspan(lo, hi, color=series_colour(0), alpha=0.12, label=f"interval [{lo:,.1f}, {hi:,.1f}] µs")
    joint = runs.loc[runs["kind"] == "lhs", "makespan_us"].to_numpy(np.float64)
    if joint.size:
        edges = np.linspace(lo, hi, 31) if hi > lo else 10
        ax.hist(joint, bins=edges, color=series_colour(0), alpha=0.8, label=_count(joint.size, "joint sample"))
    else:
        ax.text(0.5, 0.5, "no joint samples (--samples 0)", transform=ax.transAxes, ha="center", color="dimgray")
    oat = runs.loc[runs["kind"] == "oat", "makespan_us"].to_numpy(np.float64)
    ax.plot(oat, np.zeros_like(oat), "|", color=REFERENCE, ms=14, mew=1.5,
            label=_count(oat.size, "one-at-a-time end"), clip_on=False)
    ax.axvline(nom, color="black", lw=1.2, label=f"nominal {nom:,.1f} µs")
    ax.set_xlabel("makespan, µs")
    plain_numbers(ax.xaxis)
    ax.set_ylabel("joint samples")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title(f"{scenario_on(summary['scenario'], summary.get('profile'))}: makespan over the ranged profile fields "
                 f"({_count(len(summary['params']), 'field')}, seed {summary['seed']})", fontsize=10)
    return save_figure(fig, path)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
