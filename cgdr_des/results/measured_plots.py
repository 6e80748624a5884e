"""The plot of ``cgdr-des measured`` (Agg canvas, as ``results/plots.py``).

``measured.png``: per hypothesis, each shape's predicted end-to-end latency (nominal, with the
fast-to-slow corner range as an error bar) against its measured latency, log-log. On the y = x line
prediction and measurement agree; a dotted line per hypothesis is where the device time would sit if
the fitted constant factor (``verdicts.json`` ``factor``) explained every shape.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from cgdr_des.results.palette import series_colour
from cgdr_des.results.plots import profile_name, save_figure, scenario_on

FILE = "measured.png"


def _shapes_on(df: pd.DataFrame) -> str:
    """``6 shapes on atlas-300i-duo`` (the profiles, when the shapes' scenarios name several)."""
    shapes = df["shape"].nunique()
    profiles = df["profile"].dropna().astype(str).unique() if "profile" in df else []
    return scenario_on(f"{shapes} shape{'' if shapes == 1 else 's'}", ", ".join(map(profile_name, profiles)) or None)


def plot_measured(df: pd.DataFrame, verdicts: pd.DataFrame, path: str | Path) -> Path:
    """Predicted (nominal, interval) against measured, one colour per hypothesis; y = x and the fitted factor."""
    fig = Figure(figsize=(9.5, 6), layout="constrained")
    ax = fig.add_subplot()
    ok = df[~df["error"].fillna("").astype(bool)]
    factors = {r["hypothesis"]: r.get("factor") for _, r in verdicts.iterrows()}
    values = np.concatenate([df["measured_us"].to_numpy(np.float64),
                             ok[["predicted_low_us", "predicted_high_us"]].to_numpy(np.float64).ravel()])
    lo, hi = np.nanmin(values) / 1.5, np.nanmax(values) * 1.5
    ax.plot([lo, hi], [lo, hi], color="black", lw=1, label="y = x (prediction = measurement)")
    colours = tuple(series_colour(i) for i in range(5))
    groups = list(ok.groupby("hypothesis", sort=False))
    for i, (name, g) in enumerate(groups):
        c = colours[i % len(colours)]
        shift = 1.04 ** (i - (len(groups) - 1) / 2)  # side by side on the log axis, not on top of each other
        err = np.vstack([g["predicted_us"] - g["predicted_low_us"], g["predicted_high_us"] - g["predicted_us"]])
        ax.errorbar(g["measured_us"] * shift, g["predicted_us"], yerr=err.clip(min=0), fmt="o", color=c, capsize=3,
                    ms=5, label=f"{name}: predicted, fast-slow range ({int(g['inside'].sum())}/{len(g)} inside)")
        factor = factors.get(name)
        if factor is not None and np.isfinite(factor):
            ax.plot([lo, hi], [lo / factor, hi / factor], color=c, lw=1, ls=":",
                    label=f"{name}: fitted factor {factor:.2f} (where device time = measured / factor)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_anchor("W")  # the square axes at the left, its legend beside it: no empty band between them
    ax.set_xlabel("measured latency, µs")
    ax.set_ylabel("predicted latency, µs")
    # the shapes' names on a top axis at their measured latencies: inside the axes they crossed the error bars
    shapes = df.drop_duplicates("shape")
    top = ax.secondary_xaxis("top")
    top.set_xticks(shapes["measured_us"].to_numpy(np.float64), [str(v) for v in shapes["shape"]], rotation=90,
                   fontsize=7)
    top.xaxis.set_minor_locator(NullLocator())
    skipped = sorted(set(df.loc[df["error"].fillna("").astype(bool), "hypothesis"]))
    note = f" ({', '.join(skipped)}: not simulated on every shape)" if skipped else ""
    ax.set_title(f"{_shapes_on(df)}: measured vs predicted latency{note}", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))  # beside the square axes, not the figure's edge
    return save_figure(fig, path)
