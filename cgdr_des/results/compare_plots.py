"""The plots of ``cgdr-des compare`` (matplotlib, Agg canvas, as cgdr_des/results/plots.py); colours from
results/palette.py, times in µs, titles naming the scenario and profile:

- ``critical_path.png`` (:func:`plot_critical_path`): per setting, one horizontal bar of the critical
  core's parts (launch, S, V, MTE2, MTE3, flags; results/attribution.py) as shares of its makespan,
  each labelled with its percentage; a part too small to see is widened to a minimum visible width
  (its label keeps the true share). Beside each bar: the makespan (µs) and the overlap bound (the
  most that hiding every load could save). A setting whose buffers do not fit UB gets a hatched bar
  "does not fit UB by N B" instead of disappearing;
- ``chunk_gantt.png`` (:func:`plot_chunk_gantt`): one chunk of the critical core under each setting,
  one panel per setting on a shared time axis (µs from the chunk's first op), one row per pipe,
  coloured by phase: the chunk is the critical core's first item's chunk 1 (the first chunk with a
  workspace state round trip) or chunk 0 when the item has one chunk.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from cgdr_des.isa import PIPES
from cgdr_des.results.attribution import PARTS
from cgdr_des.results.palette import phase_colour, phase_order, pipe_colour
from cgdr_des.results.plots import bars, run_title, save_figure

PIPE_ROWS = PIPES
#: a part narrower than this share of the bar is drawn this wide (its label keeps the true share)
MIN_VISIBLE = 0.025


def compare_title(results: Mapping[str, Any]) -> str:
    """``small on atlas-300i-duo`` from the first setting that ran ('' when none did)."""
    return run_title(next(iter(results.values())).meta) if results else ""


def part_shares(row: pd.Series) -> dict[str, float]:
    """The critical path's parts of one setting as percentages of its makespan (they sum to 100)."""
    values = {p: float(row[f"cp_{p}"]) for p in PARTS}
    total = sum(values.values())
    return {p: 100 * v / total if total else 0.0 for p, v in values.items()}


def drawn_widths(shares: Mapping[str, float], minimum: float = 100 * MIN_VISIBLE) -> dict[str, float]:
    """Widths (percent) to draw: every non-zero part at least ``minimum``, the others shrunk in
    proportion so the bar still spans 100."""
    small = {p for p, v in shares.items() if 0 < v < minimum}
    big = sum(v for p, v in shares.items() if p not in small)
    room = 100 - minimum * len(small)
    return {p: minimum if p in small else (v * room / big if big else 0.0) for p, v in shares.items()}


def overflow_bytes(row: pd.Series) -> int | None:
    """By how many bytes a setting that was not run overflows UB (None: unknown or not an overflow)."""
    used, size = row.get("ub_used_bytes"), row.get("ub_bytes")
    if pd.isna(used) or pd.isna(size) or int(used) <= int(size):
        return None
    return int(used) - int(size)


def plot_critical_path(table: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """One bar per setting: its critical-path parts as labelled shares; a setting not run is marked."""
    has_cp = table.get("cp_S", pd.Series(pd.NA, index=table.index)).notna()
    shown = table[((table["status"] == "ok") & has_cp) | (table["status"] != "ok")]
    fig = Figure(figsize=(11, 1.6 + 0.75 * max(len(shown), 1)), layout="constrained")
    ax = fig.subplots()
    for y, (_, row) in enumerate(shown.iterrows()):
        if row["status"] != "ok":
            n = overflow_bytes(row)
            why = f"does not fit UB by {n:,} B" if n is not None else f"not run: {str(row['status'])[:60]}"
            ax.barh(y, 100, color="white", edgecolor="grey", hatch="//", height=0.6)
            ax.text(50, y, why, ha="center", va="center", fontsize="small",
                    bbox={"facecolor": "white", "edgecolor": "none"})
            continue
        shares = part_shares(row)
        left = 0.0
        for part, width in drawn_widths(shares).items():
            if width <= 0:
                continue
            ax.barh(y, width, left=left, color=pipe_colour(part), height=0.6, edgecolor="white", linewidth=0.5)
            share = f"{shares[part]:.1f}" if shares[part] >= 0.1 else f"{shares[part]:.2g}"  # 0.0011, not 0.00
            text = f"{part} {share} %" if width >= 12 else share
            ax.text(left + width / 2, y, text, ha="center", va="center", fontsize="x-small",
                    rotation=0 if width >= 6 else 90)
            left += width
        mk_us = float(row["makespan_us"])
        clock = float(row["makespan_cycles"]) / mk_us if mk_us else 1.0
        ax.text(101, y, f"{mk_us:,.1f} µs\nbound {float(row['overlap_bound']) / clock:,.1f} µs "
                        f"({100 * float(row['overlap_bound']) / float(row['makespan_cycles']):.1f} %)",
                va="center", fontsize="x-small")
    ax.set_yticks(range(len(shown)), shown["setting"].tolist())
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of the critical core's makespan (%); parts under "
                  f"{100 * MIN_VISIBLE:g} % drawn {100 * MIN_VISIBLE:g} % wide, labelled with their share")
    head = f"{title}: " if title else ""
    ax.set_title(f"{head}critical path by part, and the overlap bound\n"
                 "(bound: the most that hiding every load, DMA wait and its synchronisation could save)",
                 fontsize="medium")
    handles = [Patch(color=pipe_colour(p), label=p) for p in PARTS]
    fig.legend(handles=handles, loc="outside lower center", ncols=len(PARTS), fontsize="small")
    return save_figure(fig, path)


def chunk_colours(phases) -> dict[str, str]:
    """The chunk Gantt's colour of each phase label: the palette's (results/palette.py)."""
    return {str(ph): phase_colour(ph) for ph in phases}


def chunk_window(result: Any) -> tuple[int, pd.DataFrame]:
    """The critical core and its ops rows of the chunk :func:`plot_chunk_gantt` shows (empty if none)."""
    cores = result.cores
    core = int(cores["core"].to_numpy()[int(np.argmax(cores["finish"].to_numpy()))])
    ops = result.ops
    mine = ops[(ops["core"] == core) & (ops["chunk"] >= 0)]
    if "aggregated" in mine.columns:    # a run that kept spans only has no pipe rows to draw
        mine = mine[~mine["aggregated"].astype(bool)]
    if not len(mine):
        return core, mine
    first = mine.iloc[int(np.argmin(mine["start"].to_numpy()))]
    item = mine[(mine["batch"] == first["batch"]) & (mine["head"] == first["head"])]
    chunk = 1 if (item["chunk"] == 1).any() else 0
    return core, item[item["chunk"] == chunk]


def plot_chunk_gantt(results: Mapping[str, Any], path: str | Path, title: str = "") -> Path:
    """One chunk of the critical core per setting, on a shared time axis (µs from the chunk's start)."""
    names = list(results)
    fig = Figure(figsize=(12, 1.2 + 1.3 * max(1, len(names))), layout="constrained")
    axes = np.atleast_1d(fig.subplots(max(1, len(names)), 1, sharex=True, squeeze=False)[:, 0])
    phases = phase_order(p for r in results.values() for p in chunk_window(r)[1]["phase"].unique())
    colours = chunk_colours(phases)
    for ax, name in zip(axes, names, strict=False):
        core, rows = chunk_window(results[name])
        if len(rows):
            t0 = int(rows["start"].min())
            clock = float(results[name].meta["clock_mhz"])
            for lane, pipe in enumerate(PIPE_ROWS):
                sel = rows[rows["pipe"].astype(str) == pipe]
                bars(ax, ((sel["start"] - t0) / clock).to_numpy(), ((sel["end"] - sel["start"]) / clock).to_numpy(),
                     lane - 0.4, 0.8, facecolors=[colours[str(p)] for p in sel["phase"]])
            label = f"{name}: core {core}, chunk {int(rows['chunk'].iloc[0])}"
        else:
            label = f"{name}: no per-op rows"
            if not results[name].meta.get("ops_kept", True):
                label += " (the run kept spans only: [sim] ops = false, or more ops than a run keeps)"
            ax.set_ylim(-0.6, len(PIPE_ROWS) - 0.4)     # the lanes where a drawn panel has them
        ax.set_yticks(range(len(PIPE_ROWS)), PIPE_ROWS)
        ax.invert_yaxis()
        ax.set_title(label, fontsize="small", loc="left")
    axes[-1].set_xlabel("µs from the chunk's first op")
    if title:
        fig.suptitle(f"{title}: one chunk of the critical core per setting", fontsize="medium")
    if phases:
        handles = [Patch(color=colours[ph], label=ph) for ph in phases]
        fig.legend(handles=handles, loc="outside right upper", fontsize="x-small", title="phase")
    return save_figure(fig, path)
