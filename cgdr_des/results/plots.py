"""PNG plots of a run (matplotlib, Agg canvas; pyplot is never imported, so no global backend is set).

Every title names the scenario; every time axis is in µs.

- ``core_load.png``: per-core busy time stacked by work item (coloured by the item's length), with
  each core's tokens (the unit the source's scan balances) and ``avgload`` on a second axis: an
  item's fixed work makes short items cost far more time than their tokens say;
- ``finish_cdf.png``: empirical CDF of core finish times (µs);
- ``gantt_core{N}.png``: pipe Gantt of one core (default: the critical core, the one that finishes
  last; the title says which and why) in a cycle window.
  One row per pipe lane (overlapping instructions of a pipe are spread over lanes exactly as in the
  Chrome trace), coloured by kernel phase; an aggregated run shows its spans on one PHASE row. More than
  ``GANTT_MAX_OPS`` rows in the window are cut to the earliest ones and the title says so;
- ``buffer_compare.png`` (``plot_buffer_compare``): makespan and per-core finish for each buffer_num.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from cgdr_des.results.trace import THREAD_NAMES, assign_lanes

GANTT_MAX_OPS = 20_000
PIPE_ORDER = ("S", "V", "MTE2", "MTE3", "ALL")
DPI = 110


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` as a PNG at the plots' DPI (Agg canvas: no display needed); every plot module saves
    through it."""
    path = Path(path)
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=DPI)
    return path


def plot_core_load(cores: pd.DataFrame, items: pd.DataFrame, path: str | Path, *, clock_mhz: float,
                   name: str = "", avgload: float | None = None) -> Path:
    """Per core, its busy time (µs) stacked by work item, coloured by the item's length; tokens on a
    second axis (the unit the source's scan balances, with its avgload), so the two can disagree visibly."""
    fig = Figure(figsize=(9, 4.5), layout="constrained")
    ax = fig.add_subplot()
    it = items.sort_values(["core", "start"])
    dur = (it["end"] - it["start"]).to_numpy(np.float64) / clock_mhz
    bottom = np.zeros_like(dur)
    if dur.size:
        bottom = pd.Series(dur).groupby(it["core"].to_numpy()).cumsum().to_numpy() - dur
    lengths = it["seqlen"].to_numpy(np.float64)
    norm = LogNorm(vmin=max(lengths.min(), 1), vmax=max(lengths.max(), 2)) if lengths.size else LogNorm(1, 2)
    ax.bar(it["core"].to_numpy(), dur, bottom=bottom, width=0.7, color=colormaps["viridis"](norm(lengths)),
           edgecolor="white", linewidth=0.2)
    fig.colorbar(ScalarMappable(norm=norm, cmap="viridis"), ax=ax, label="item length (tokens)", pad=0.12)
    busy = pd.Series(dur).groupby(it["core"].to_numpy()).sum().reindex(cores["core"], fill_value=0.0)
    ax.axhline(busy.mean(), color="tab:red", linestyle="--", label=f"mean busy = {busy.mean():,.1f} µs")
    ax.set_xticks(cores["core"].to_numpy())
    ax.set(xlabel="core", ylabel="busy time (µs), one segment per work item",
           title=f"{name}: per-core load in time (critical core {last_core(cores)})")
    tok = ax.twinx()
    tok.plot(cores["core"], cores["tokens"], "D", color="black", markersize=5, label="tokens")
    if avgload is not None:
        tok.axhline(avgload, color="black", linestyle=":", linewidth=1, label=f"avgload = {avgload:,.0f} tokens")
    tok.set_ylim(bottom=0)
    tok.set_ylabel("tokens (Σ seqlen of items)")
    handles = ax.get_legend_handles_labels()[0] + tok.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize="small", loc="upper right")
    return save_figure(fig, path)


def plot_finish_cdf(cores: pd.DataFrame, path: str | Path, *, clock_mhz: float, name: str = "") -> Path:
    """Empirical CDF of the core finish times, in µs."""
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    finish = np.sort(cores["finish"].to_numpy(np.float64)) / clock_mhz
    frac = np.arange(1, finish.size + 1) / max(finish.size, 1)
    ax.step(finish, frac, where="post", marker="o")
    ax.set(xlabel="core finish (µs)", ylabel="fraction of cores", ylim=(0, 1.05), title=f"{name}: core finish CDF")
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


def last_core(cores: pd.DataFrame) -> int:
    """The core that finishes last (lowest id on ties)."""
    return int(cores.sort_values(["finish", "core"], ascending=[False, True]).iloc[0]["core"])


def gantt_rows(ops: pd.DataFrame, core: int, window: Sequence[int] | None,
               max_ops: int = GANTT_MAX_OPS) -> tuple[pd.DataFrame, bool]:
    """The core's rows in the window (earliest ``max_ops``), with a ``row`` label per pipe lane."""
    df = ops[ops["core"] == core]
    if window is not None:
        df = df[(df["start"] < window[1]) & ((df["end"] > window[0]) | (df["start"] >= window[0]))]
    df = df.sort_values("start", kind="stable")
    cut = len(df) > max_ops
    df = df.head(max_ops).copy()
    lanes = np.zeros(len(df), np.int64)
    for _, idx in df.groupby("pipe", observed=True, sort=False).indices.items():
        lanes[idx] = assign_lanes(df["start"].to_numpy()[idx], df["end"].to_numpy()[idx])
    names = [THREAD_NAMES.get(p, str(p)) for p in df["pipe"].astype(str)]
    df["row"] = [n if lane == 0 else f"{n}_{lane}" for n, lane in zip(names, lanes, strict=True)]
    df["row_key"] = [(PIPE_ORDER.index(p) if p in PIPE_ORDER else 99, int(lane))
                     for p, lane in zip(df["pipe"].astype(str), lanes, strict=True)]
    return df, cut


def plot_gantt(ops: pd.DataFrame, path: str | Path, *, core: int, window: Sequence[int] | None = None,
               max_ops: int = GANTT_MAX_OPS, clock_mhz: float = 1.0, title: str | None = None) -> Path:
    """Pipe Gantt of ``core`` in ``window`` (cycles), one row per pipe lane, coloured by phase; x in µs."""
    df, cut = gantt_rows(ops, core, window, max_ops)
    rows = sorted(set(zip(df["row_key"], df["row"], strict=True)))
    y = {name: i for i, (_, name) in enumerate(rows)}
    phases = sorted(df["phase"].astype(str).unique())
    palette = colormaps["tab20"].colors  # the kernel has ~17 phases: 20 distinct colours
    colours = {ph: palette[i % len(palette)] for i, ph in enumerate(phases)}
    # tall enough for one bar per lane and for the phase legend beside them
    height = max(2.5, 1.2 + 0.35 * len(rows), 1.0 + 0.22 * min(len(phases), 20))
    fig = Figure(figsize=(12, height), layout="constrained")
    ax = fig.add_subplot()
    for (row, phase), grp in df.groupby(["row", df["phase"].astype(str)], sort=False):
        spans = np.column_stack([grp["start"], np.maximum(grp["end"] - grp["start"], 1)]) / clock_mhz
        ax.broken_barh(spans, (y[row] - 0.4, 0.8), facecolors=colours[phase], linewidth=0)
    ax.set_yticks(range(len(rows)), [name for _, name in rows])
    ax.invert_yaxis()
    for ph in phases[:20]:
        ax.bar(0, 0, color=colours[ph], label=ph)
    if phases:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", title="phase")
    note = f" (first {max_ops} ops)" if cut else ""
    ax.set(xlabel="time (µs)", title=f"{title or f'core {core} pipe Gantt'}{note}")
    return save_figure(fig, path)


def plot_buffer_compare(results_by_buffer_num: Mapping[int, Any], path: str | Path) -> Path:
    """Makespan (µs) per buffer_num, and the per-core finish of each, side by side."""
    fig = Figure(figsize=(11, 4), layout="constrained")
    ax_m, ax_c = fig.subplots(1, 2, width_ratios=[1, 2])
    keys = sorted(results_by_buffer_num)
    base = None
    for i, bn in enumerate(keys):
        res = results_by_buffer_num[bn]
        mk = float(res.summary["makespan_us"].iloc[0])
        base = mk if base is None else base
        ax_m.bar(str(bn), mk, color=f"C{i}")
        ax_m.annotate(f"{mk:,.4g} µs\n×{base / mk:.2f}" if mk else "0", (i, mk), ha="center", va="bottom")
        clock = float(res.summary["clock_mhz"].iloc[0])
        width = 0.8 / len(keys)
        x = res.cores["core"].to_numpy() + (i - (len(keys) - 1) / 2) * width
        ax_c.bar(x, res.cores["finish"] / clock, width=width, color=f"C{i}", label=f"buffer_num={bn}")
    ax_m.margins(y=0.25)
    name = str(results_by_buffer_num[keys[0]].summary["scenario_name"].iloc[0]) if keys else ""
    ax_m.set(xlabel="buffer_num", ylabel="makespan (µs)", title=f"{name}: makespan (speed-up vs first)")
    cores = sorted({int(c) for res in results_by_buffer_num.values() for c in res.cores["core"]})
    ax_c.set_xticks(cores)
    ax_c.set(xlabel="core", ylabel="finish (µs)", title=f"{name}: per-core finish")
    ax_c.legend()
    return save_figure(fig, path)


def plot_all(result: Any, out_dir: str | Path, *, gantt_core: int | None = None,
             gantt_window: Sequence[int] | None = None) -> list[Path]:
    """The per-run plots into ``out_dir``; returns the files written."""
    out = Path(out_dir)
    clock = float(result.meta["clock_mhz"])
    name = str(result.meta.get("scenario_name", ""))
    paths = [plot_core_load(result.cores, result.items, out / "core_load.png", clock_mhz=clock, name=name,
                            avgload=result.meta.get("avgload")),
             plot_finish_cdf(result.cores, out / "finish_cdf.png", clock_mhz=clock, name=name)]
    if len(result.ops):
        critical = last_core(result.cores)
        core = critical if gantt_core is None else int(gantt_core)
        finish = float(result.cores.set_index("core").loc[critical, "finish"]) / clock
        why = (f"the critical core (finishes last, {finish:,.1f} µs)" if core == critical
               else f"chosen by [output] gantt_core; the critical core is {critical}")
        paths.append(plot_gantt(result.ops, out / f"gantt_core{core}.png", core=core, window=gantt_window,
                                clock_mhz=clock, title=f"{name}: core {core} pipe Gantt, {why}"))
    return paths
