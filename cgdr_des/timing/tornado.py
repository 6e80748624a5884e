"""The tornado plot of a sensitivity study: one bar per parameter, from its low end's change of the
makespan to its high end's, the widest at the top (matplotlib Agg canvas, as the other plots)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from cgdr_des.results.palette import range_end_colour
from cgdr_des.results.plots import save_figure, scenario_on

TOP = 20


def tornado_table(result):
    """Per parameter: the makespan change (%) at its low end and at its high end (a choice's other
    alternatives count as its high end; 0 where the end is the nominal value), widest first."""
    oat = result.oat()
    low = oat[oat["end"] == "low"].groupby("param")["change_pct"].first()
    high = oat[oat["end"] != "low"].groupby("param")["change_pct"].agg(lambda c: c.loc[c.abs().idxmax()])
    t = pd.DataFrame({"low": low, "high": high}).fillna(0.0)
    t["span"] = t[["low", "high"]].max(axis=1).clip(lower=0) - t[["low", "high"]].min(axis=1).clip(upper=0)
    return t.sort_values("span", ascending=False)


def plot_tornado(result, path: str | Path) -> Path:
    """Horizontal bars of :func:`tornado_table` (the ``TOP`` widest), and the joint interval."""
    t = tornado_table(result).head(TOP).iloc[::-1]
    fig = Figure(figsize=(8, 0.32 * max(len(t), 4) + 2.0), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(t))
    # the two ends side by side, not on top of each other: ends that move the makespan the same way both show
    ax.barh(y - 0.2, t["low"], 0.4, color=range_end_colour("low"), label="field at the low end of its range")
    ax.barh(y + 0.2, t["high"], 0.4, color=range_end_colour("high"),
            label="field at the high end (or the other choice)")
    ax.set_yticks(list(y), list(t.index), fontsize=7)
    ax.axvline(0, color="black", lw=0.8)
    lo, hi = result.interval_us
    nom = result.nominal_us
    ax.set_xlabel("makespan change, % of nominal (each field alone at the ends of its range)")
    ax.set_title(f"{scenario_on(result.scenario, result.profile)}: nominal {nom:,.1f} µs\njoint interval "
                 f"[{lo:,.1f}, {hi:,.1f}] µs ({100 * (lo / nom - 1):+.1f} % / {100 * (hi / nom - 1):+.1f} %)",
                 fontsize=9)
    fig.legend(fontsize=7, loc="outside lower center", ncols=2)
    return save_figure(fig, path)
