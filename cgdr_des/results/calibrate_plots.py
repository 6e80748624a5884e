"""The plot of ``cgdr-des calibrate`` (Agg canvas, as ``results/plots.py``).

``calibration.png``: per measured point, the prediction's error against the measurement (%) at the
profile's nominal values, after the fit, and predicted by a refit that left the point out. A fit
that only helps the points it saw shows small "fitted" bars and large "leave-one-out" bars.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from cgdr_des.results.palette import NEUTRAL, series_colour
from cgdr_des.results.plots import save_figure

FILE = "calibration.png"


def plot_calibration(points: pd.DataFrame, fit: dict, path: str | Path) -> Path:
    """Horizontal grouped bars per point: nominal, fitted and leave-one-out error, % of measured."""
    nominal = 100 * (points["nominal_us"] / points["measured_us"] - 1)
    series = [("nominal (before the fit)", nominal, NEUTRAL),
              (f"fitted (rms {fit.get('rms_residual_pct', float('nan')):.1f} %)", points["residual_pct"],
               series_colour(0))]
    if points["loo_error_pct"].notna().any():
        series.append((f"leave-one-out (rms {fit.get('rms_loo_pct') or float('nan'):.1f} %)",
                       points["loo_error_pct"], series_colour(1)))
    n = len(points)
    fig = Figure(figsize=(8.5, 1.6 + 0.45 * n * len(series) / 2), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(n)
    h = 0.8 / len(series)
    for i, (label, values, colour) in enumerate(series):
        ax.barh(y + (i - (len(series) - 1) / 2) * h, values, h, label=label, color=colour)
    ax.set_yticks(y, list(points["scenario"]), fontsize=7)
    ax.invert_yaxis()
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlabel("prediction error, % of the measured latency")
    fields = ", ".join(f"{k} {_short(fit.get('nominal', {}).get(k))} → {_short(v)}"
                       for k, v in (fit.get("fitted") or {}).items())
    where = f" on {fit['profile']}" if fit.get("profile") else ""
    title = f"calibration{where}: {fields}" if fields else f"calibration{where}"
    ax.set_title(textwrap.fill(title, 100), fontsize=9)  # many fitted fields: lines, not off the picture
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    return save_figure(fig, path)


def _short(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
