"""The gain plot of ``cgdr-des advise`` (Agg canvas, as ``results/plots.py``).

``advice_gain.png``: one horizontal bar per (variant, policy) that ran, in rank order (best on top),
its length the p99 gain over the source kernel with greedy (µs), a whisker from the least to the
largest gain over the profile points (the interval), coloured by dispatch policy; a p50 gain marker
beside it. Variants that do not fit UB are named under the axis with their shortfall.

Policies that tie on a variant (the same p50 and p99 gains and the same interval: with Nv a multiple of
the core count, round_robin, longest_first and cost_lpt deal the same schedules) are drawn as one bar
named ``variant · round_robin = longest_first = cost_lpt``, coloured by the first of them, as the tail
study's CCDF draws coinciding policies once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from cgdr_des.results.palette import NEUTRAL, policy_colour
from cgdr_des.results.plots import save_figure

FILE = "advice_gain.png"
#: at most this many bars (the best ones); the rest are in advice.csv
MAX_BARS = 40


#: the figures two policies must share, to the µs's millionth, to be one bar
TIE_COLUMNS = ("gain_p99_us", "gain_p50_us", "gain_p99_min_us", "gain_p99_max_us")


def bars(table: pd.DataFrame) -> pd.DataFrame:
    """The rows that ran, in rank order, tied policies of one variant folded into the first one's row
    (its ``policy`` column then reads ``a = b = c``; ``first_policy`` keeps the colour's policy)."""
    ran = table[table["gain_p99_us"].notna()]
    key = [ran["variant"]] + [ran[c].round(6) for c in TIE_COLUMNS]
    label = ran.groupby(key, sort=False, dropna=False)["policy"].transform(lambda p: " = ".join(p))
    out = ran.assign(first_policy=ran["policy"], policy=label)
    return out[~pd.concat(key, axis=1).duplicated()]


def plot_gains(table: pd.DataFrame, path: str | Path, meta: dict) -> Path:
    """Bars of the p99 gain per (variant, policy) with their interval whiskers (module docstring)."""
    every = bars(table)
    ran = every.head(MAX_BARS)
    fig = Figure(figsize=(10, 1.6 + 0.28 * max(len(ran), 1)), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(ran))[::-1]
    gain = ran["gain_p99_us"].to_numpy(np.float64)
    lo = ran["gain_p99_min_us"].to_numpy(np.float64)
    hi = ran["gain_p99_max_us"].to_numpy(np.float64)
    ax.barh(y, gain, color=[policy_colour(p) for p in ran["first_policy"]], alpha=0.85)
    ax.errorbar(gain, y, xerr=[np.maximum(gain - lo, 0), np.maximum(hi - gain, 0)], fmt="none", ecolor="black",
                elinewidth=1, capsize=3)
    ax.plot(ran["gain_p50_us"].to_numpy(np.float64), y, "d", color=NEUTRAL, ms=5)
    ax.axvline(0, color="black", lw=1)
    ax.set_yticks(y, [f"{v} · {p}" for v, p in zip(ran["variant"], ran["policy"], strict=True)], fontsize=8)
    ax.set_xlabel("gain over the source kernel with greedy, µs (bar: p99, ◆: p50; whisker: p99 over the profile "
                  "ranges)")
    policies = list(dict.fromkeys(ran["first_policy"]))
    handles = [Patch(color=policy_colour(p), label=p) for p in policies]
    handles.append(Line2D([], [], marker="d", ls="none", color=NEUTRAL, label="p50 gain"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))  # µs with separators, no 1e6 offset
    skipped = table.loc[table["gain_p99_us"].isna(), ["variant", "status"]].drop_duplicates("variant")
    if len(skipped):
        note = "; ".join(f"{r.variant}: {r.status}" for r in skipped.itertuples())
        fig.text(0.01, 0.005, f"not run: {note}", fontsize=7, color=NEUTRAL, wrap=True)
    shown = f" (best {MAX_BARS} of {len(every)})" if len(ran) < len(every) else ""
    ax.set_title(f"{meta.get('scenario_name', '')} on {meta.get('hardware', '')}: p99 gain per kernel variant × "
                 f"policy{shown}, {meta.get('batches', 0):,} batches, {meta.get('points', 0)} profile points",
                 fontsize=10)
    return save_figure(fig, path)
