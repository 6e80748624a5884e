"""The plots of ``cgdr-des compare`` (matplotlib, Agg canvas, as cgdr_des/results/plots.py):

- ``critical_path.png`` (:func:`plot_critical_path`): per setting, one stacked bar of the critical
  core's parts (launch, S, V, MTE2, MTE3, flags; results/attribution.py), in cycles, with the
  makespan and the overlap bound written above it;
- ``chunk_gantt.png`` (:func:`plot_chunk_gantt`): one chunk of the critical core under each setting,
  one panel per setting on a shared time axis (cycles from the chunk's first op), one row per pipe,
  coloured by phase: the chunk is the critical core's first item's chunk 1 (the first chunk with a
  workspace state round trip) or chunk 0 when the item has one chunk.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from cgdr_des.isa import PIPES
from cgdr_des.results.attribution import PARTS
from cgdr_des.results.plots import save_figure

PIPE_ROWS = PIPES


def plot_critical_path(table: pd.DataFrame, path: str | Path) -> Path:
    """Stacked critical-path parts per setting that ran and was attributed."""
    rows = table[(table["status"] == "ok") & table.get("cp_S", pd.Series(dtype=float)).notna()]
    fig = Figure(figsize=(max(5.0, 1.6 * len(rows) + 2), 4.5), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    for i, part in enumerate(PARTS):
        values = rows[f"cp_{part}"].to_numpy(float) if len(rows) else np.zeros(0)
        ax.bar(x, values, bottom=bottom, color=f"C{i}", label=part)
        bottom += values
    for xi, (_, row) in zip(x, rows.iterrows(), strict=True):
        ax.annotate(f"{int(row['makespan_cycles']):,}\nbound {int(row['overlap_bound']):,}", (xi, bottom[xi]),
                    ha="center", va="bottom", fontsize="small")
    ax.set_xticks(x, rows["setting"].tolist(), rotation=20, ha="right")
    ax.set_ylim(0, 1.2 * max(bottom.max(initial=0.0), 1.0))
    ax.set(ylabel="cycles of the critical core", title="critical path by part (sums to the makespan)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return save_figure(fig, path)


def chunk_window(result: Any) -> tuple[int, pd.DataFrame]:
    """The critical core and its ops rows of the chunk :func:`plot_chunk_gantt` shows (empty if none)."""
    cores = result.cores
    core = int(cores["core"].to_numpy()[int(np.argmax(cores["finish"].to_numpy()))])
    ops = result.ops
    mine = ops[(ops["core"] == core) & (ops["chunk"] >= 0)]
    if not len(mine):
        return core, mine
    first = mine.iloc[int(np.argmin(mine["start"].to_numpy()))]
    item = mine[(mine["batch"] == first["batch"]) & (mine["head"] == first["head"])]
    chunk = 1 if (item["chunk"] == 1).any() else 0
    return core, item[item["chunk"] == chunk]


def plot_chunk_gantt(results: Mapping[str, Any], path: str | Path) -> Path:
    """One chunk of the critical core per setting, on a shared time axis."""
    names = list(results)
    fig = Figure(figsize=(12, 1.2 + 1.3 * max(1, len(names))), layout="constrained")
    axes = np.atleast_1d(fig.subplots(max(1, len(names)), 1, sharex=True, squeeze=False)[:, 0])
    phases = sorted({str(p) for r in results.values() for p in chunk_window(r)[1]["phase"].unique()})
    cmap = colormaps["tab20"]
    colours = {ph: cmap(i % 20) for i, ph in enumerate(phases)}
    for ax, name in zip(axes, names, strict=False):
        core, rows = chunk_window(results[name])
        if len(rows):
            t0 = int(rows["start"].min())
            for lane, pipe in enumerate(PIPE_ROWS):
                sel = rows[rows["pipe"].astype(str) == pipe]
                spans = list(zip(sel["start"] - t0, sel["end"] - sel["start"], strict=True))
                ax.broken_barh(spans, (lane - 0.4, 0.8),
                               facecolors=[colours[str(p)] for p in sel["phase"]])
            label = f"{name}: core {core}, chunk {int(rows['chunk'].iloc[0])}"
        else:
            label = f"{name}: no per-op rows"
        ax.set_yticks(range(len(PIPE_ROWS)), PIPE_ROWS)
        ax.invert_yaxis()
        ax.set_title(label, fontsize="small", loc="left")
    axes[-1].set_xlabel("cycles from the chunk's first op")
    if phases:
        handles = [Patch(color=colours[ph], label=ph) for ph in phases]
        fig.legend(handles=handles, loc="outside right upper", fontsize="x-small", title="phase")
    return save_figure(fig, path)
