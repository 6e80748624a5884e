"""PNG plots of a run (matplotlib, Agg canvas; pyplot is never imported, so no global backend is set).

Every title names the scenario; every time axis is in µs.

- ``core_load.png``: per-core busy time stacked by work item (coloured by the item's length), with
  each core's tokens (the unit the source's scan balances) and ``avgload`` on a second axis: an
  item's fixed work makes short items cost far more time than their tokens say;
- ``finish_cdf.png``: empirical CDF of core finish times (µs);
- ``gantt_core{N}.png``: pipe Gantt of one core in a time window (:func:`gantt_view` picks them).
  Default: the critical core (the one that finishes last) and its longest work item, whole; a
  scenario's ``[output]`` gantt_core / gantt_window or ``cgdr-des plot DIR --core N --window T0:T1``
  choose others. At most ``GANTT_MAX_OPS`` operations are drawn: past that the window is shortened
  to end where the first operation left out starts. The title and the console note say which core,
  which window (µs), why, and what is left out.
  One row per pipe lane (overlapping instructions of a pipe are spread over lanes exactly as in the
  Chrome trace), coloured by kernel phase; an aggregated run shows its spans on one PHASE row;
- ``buffer_compare.png`` (``plot_buffer_compare``): makespan and per-core finish for each buffer_num.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.collections import PolyCollection
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import NullFormatter, StrMethodFormatter

from cgdr_des.errors import InputError
from cgdr_des.results.formats import extra_formats
from cgdr_des.results.palette import REFERENCE, phase_colour, phase_order, series_colour
from cgdr_des.results.trace import THREAD_NAMES, assign_lanes

#: Operations one Gantt draws at most: beyond ~20 000 bars the PNG takes seconds and shows no more.
GANTT_MAX_OPS = 20_000
PIPE_ORDER = ("S", "V", "MTE2", "MTE3", "ALL")
DPI = 110


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` as a PNG at the plots' DPI (Agg canvas: no display needed), and in each format
    :func:`figure_formats` asks for; every plot module saves through it. Returns the PNG's path."""
    path = Path(path)
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=DPI)
    for fmt in extra_formats():
        fig.savefig(path.with_suffix(f".{fmt}"), format=fmt)
    return path


def bars(ax, x0, width, y: float, height: float, **style) -> PolyCollection:
    """Horizontal bars ``[x0, x0 + width)`` by ``[y, y + height)`` as one PolyCollection on ``ax``: the
    rectangles ``ax.broken_barh`` draws (same vertices, same picture), built by numpy rather than one
    Python tuple per bar (a run's Gantt of 20 000 bars: ~0.3 s less). ``style``: PolyCollection properties."""
    x0 = np.asarray(x0, np.float64)
    x1 = x0 + np.asarray(width, np.float64)
    verts = np.empty((len(x0), 4, 2))
    verts[:, :2, 0], verts[:, 2:, 0] = x0[:, None], x1[:, None]
    verts[:, ::3, 1], verts[:, 1:3, 1] = y, y + height
    col = PolyCollection(verts, **style)
    ax.add_collection(col)
    return col


def plain_numbers(axis) -> None:
    """Tick labels as plain numbers with thousands separators (``1,250,000``), never a ``1e6`` offset
    a reader has to multiply in; a log axis keeps its own labels."""
    if axis.get_scale() == "linear":
        axis.set_major_formatter(StrMethodFormatter("{x:,.10g}"))


def run_title(meta: Mapping[str, Any]) -> str:
    """``small on atlas-300i-duo``: the scenario and the profile every title names."""
    return scenario_on(meta.get("scenario_name", ""), meta.get("hardware"))


def scenario_on(scenario: str, profile: str | None) -> str:
    """``small on atlas-300i-duo``, the words every title starts with; a profile file by its name
    (not its whole path), an output saved before the profile was recorded as ``?``."""
    return f"{scenario} on {profile_name(profile) or '?'}"


def profile_name(profile: str | None) -> str | None:
    """A shipped profile's name as is, a profile file (``.toml``) by its file name."""
    return Path(profile).name if profile and str(profile).endswith(".toml") else profile


def core_ticks(ax, cores: Sequence[int]) -> None:
    """One tick per core up to 16 cores, else every 2nd/4th/.. so 48 labels never run together."""
    cores = list(cores)
    step = max(1, -(-len(cores) // 16))
    ax.set_xticks(cores[::step])
    ax.set_xlim(min(cores, default=0) - 0.6, max(cores, default=0) + 0.6)


def _length_ticks(lengths: np.ndarray) -> list[float]:
    """Colour-bar ticks for item lengths: each distinct length when there are at most 6, else the
    1-2-5 steps between the shortest and the longest."""
    distinct = np.unique(lengths)
    if distinct.size <= 6:
        return [float(v) for v in distinct]
    lo, hi = float(distinct[0]), float(distinct[-1])
    steps = [m * 10.0 ** e for e in range(int(np.floor(np.log10(max(lo, 1)))), int(np.log10(hi)) + 1)
             for m in (1, 2, 5)]
    return [v for v in steps if lo <= v <= hi] or [lo, hi]


def plot_core_load(cores: pd.DataFrame, items: pd.DataFrame, path: str | Path, *, clock_mhz: float,
                   name: str = "", avgload: float | None = None) -> Path:
    """Per core, its busy time (µs) stacked by work item, coloured by the item's length; tokens on a
    second axis (the unit the source's scan balances, with its avgload marked on that axis only), so
    the two can disagree visibly. One item length: one colour, named in the legend (no colour bar)."""
    fig = Figure(figsize=(max(9.0, 0.22 * len(cores) + 4), 4.5), layout="constrained")
    ax = fig.add_subplot()
    it = items.sort_values(["core", "start"])
    dur = (it["end"] - it["start"]).to_numpy(np.float64) / clock_mhz
    bottom = np.zeros_like(dur)
    if dur.size:
        bottom = pd.Series(dur).groupby(it["core"].to_numpy()).cumsum().to_numpy() - dur
    lengths = it["seqlen"].to_numpy(np.float64)
    one_length = lengths.size == 0 or lengths.min() == lengths.max()
    norm = LogNorm(vmin=max(lengths.min(), 1), vmax=max(lengths.max(), 2)) if not one_length else None
    colour = colormaps["viridis"](norm(lengths)) if norm else colormaps["viridis"](0.35)
    label = None if norm else f"work item ({int(lengths[0]) if lengths.size else 0:,} tokens each)"
    ax.bar(it["core"].to_numpy(), dur, bottom=bottom, width=0.7, color=colour, edgecolor="white", linewidth=0.2,
           label=label)
    if norm:
        bar = fig.colorbar(ScalarMappable(norm=norm, cmap="viridis"), ax=ax, label="item length (tokens)",
                           pad=0.01, location="bottom", shrink=0.5, aspect=40)
        bar.set_ticks(_length_ticks(lengths))  # the lengths themselves, or 1-2-5 steps: 200 rather than 2x10^2
        bar.ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        bar.ax.xaxis.set_minor_formatter(NullFormatter())
    busy = pd.Series(dur).groupby(it["core"].to_numpy()).sum().reindex(cores["core"], fill_value=0.0)
    ax.axhline(busy.mean(), color=REFERENCE, linestyle="--", label=f"mean busy = {busy.mean():,.1f} µs")
    core_ticks(ax, cores["core"].to_numpy())
    plain_numbers(ax.yaxis)
    ax.set(xlabel="core", ylabel="busy time (µs), one segment per work item",
           title=f"{name}: per-core load in time (critical core {last_core(cores)})")
    tok = ax.twinx()
    tok.plot(cores["core"], cores["tokens"], "D", color="black", markersize=4, label="tokens")
    if avgload is not None:
        # on the token axis only: a tick and a label at its right edge, not a line across the µs bars
        tok.plot([1.0], [avgload], marker="<", markersize=9, color="black", clip_on=False,
                 transform=tok.get_yaxis_transform(), linestyle="none", label=f"avgload = {avgload:,.0f} tokens")
    tok.set_ylim(bottom=0, top=max(float(cores["tokens"].max()) if len(cores) else 0.0, avgload or 0, 1) * 1.1)
    tok.set_ylabel("tokens (Σ seqlen of items)")
    plain_numbers(tok.yaxis)
    handles = ax.get_legend_handles_labels()[0] + tok.get_legend_handles_labels()[0]
    fig.legend(handles=handles, fontsize="small", loc="outside right upper")
    return save_figure(fig, path)


def plot_finish_cdf(cores: pd.DataFrame, path: str | Path, *, clock_mhz: float, name: str = "") -> Path:
    """Empirical CDF of the core finish times, in µs."""
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    finish = np.sort(cores["finish"].to_numpy(np.float64)) / clock_mhz
    frac = np.arange(1, finish.size + 1) / max(finish.size, 1)
    ax.step(finish, frac, where="post", marker="o")
    ax.set(xlabel="core finish (µs)", ylabel="fraction of cores", ylim=(0, 1.05), title=f"{name}: core finish CDF")
    plain_numbers(ax.xaxis)
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


def last_core(cores: pd.DataFrame) -> int:
    """The core that finishes last (lowest id on ties)."""
    return int(cores.sort_values(["finish", "core"], ascending=[False, True]).iloc[0]["core"])


def _meeting(ops: pd.DataFrame, core: int, window: Sequence[int] | None) -> pd.DataFrame:
    """The core's ops that meet [w0, w1): start before w1 and end after w0 (or an instant inside),
    earliest first."""
    df = ops[ops["core"] == core]
    if window is not None:
        df = df[(df["start"] < window[1]) & ((df["end"] > window[0]) | (df["start"] >= window[0]))]
    return df.sort_values("start", kind="stable")


def gantt_rows(ops: pd.DataFrame, core: int, window: Sequence[int] | None,
               max_ops: int = GANTT_MAX_OPS) -> tuple[pd.DataFrame, bool]:
    """The core's rows in the window (earliest ``max_ops``), with a ``row`` label per pipe lane."""
    df = _meeting(ops, core, window)
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


@dataclass(frozen=True)
class GanttView:
    """What one Gantt shows: ``core``, the ``window`` [t0, t1) in cycles, its ``rows`` (from
    :func:`gantt_rows`), ``why`` that core and window, and ``left_out`` (empty: nothing)."""

    core: int
    window: tuple[int, int]
    rows: pd.DataFrame
    why: str
    left_out: str

    def shows(self, clock_mhz: float) -> str:
        """``core 4, 1,234.5-1,300.2 µs (its longest work item: ...), 96 operations`` (``phase spans``
        where the run kept no row per operation)."""
        t0, t1 = (t / clock_mhz for t in self.window)
        unit = "phase spans" if self.spans else "operations"
        return f"core {self.core}, {t0:,.1f}-{t1:,.1f} µs ({self.why}), {len(self.rows):,} {unit}"

    @property
    def spans(self) -> bool:
        """The rows are phase spans: the run kept no row per operation (``[sim] ops = false`` or past
        the row limit; the frame's ``aggregated`` column)."""
        return "aggregated" in self.rows and bool(self.rows["aggregated"].any())

    def note(self, path: str | Path, clock_mhz: float) -> str:
        """The console line: what the PNG shows and what it leaves out."""
        rest = f"; left out: {self.left_out}" if self.left_out else ""
        return (f"{Path(path).name} shows {self.shows(clock_mhz)}{rest}; "
                "'cgdr-des plot DIR --core N --window T0:T1' (µs) draws any other")


def _us(cycles: float, clock_mhz: float) -> str:
    return f"{cycles / clock_mhz:,.1f}"


def default_item(items: pd.DataFrame, core: int) -> pd.Series | None:
    """The core's longest work item in time (earliest on ties), or None for a core with no item."""
    mine = items[items["core"] == core]
    if mine.empty:
        return None
    dur = (mine["end"] - mine["start"]).to_numpy()
    order = np.lexsort((mine["start"].to_numpy(), -dur))
    return mine.iloc[int(order[0])]


def gantt_view(ops: pd.DataFrame, items: pd.DataFrame, cores: pd.DataFrame, *, clock_mhz: float,
               core: int | None = None, window: Sequence[int] | None = None,
               max_ops: int = GANTT_MAX_OPS) -> GanttView:
    """Choose the Gantt's core and window (cycles; clipped to the run) and its rows; see the module
    docstring. ``core`` None: the critical core; ``window`` None: the core's longest item, whole."""
    critical = last_core(cores)
    core = critical if core is None else int(core)
    who = "the critical core" if core == critical else f"the critical core is {critical}"
    end_of_run = int(cores["finish"].max()) if len(cores) else 0
    item = default_item(items, core) if window is None else None
    if window is not None:
        t0, t1 = int(window[0]), min(int(window[1]), max(end_of_run, int(window[0]) + 1))
        what = f"the window asked for; {who}"
        rest = [f"the window past the run's end ({_us(end_of_run, clock_mhz)} µs) was clipped"] \
            if t1 < int(window[1]) else []
    elif item is None:
        t0, t1, rest = 0, max(end_of_run, 1), []
        what = f"the whole run: core {core} ran no work item; {who}"
    else:
        t0, t1 = int(item["start"]), int(item["end"])
        tile = f"V-tile {int(item['vtile'])}, " if int(item["vtile"]) >= 0 else ""  # -1: not split
        what = (f"batch {int(item['batch'])}, head {int(item['head'])}, {tile}{int(item['seqlen'])} tokens; "
                f"{who}")
        n_items = int((items["core"] == core).sum())
        finish = _us(int(cores.set_index("core").loc[core, "finish"]), clock_mhz)
        rest = [f"its other {n_items - 1:,} work items (the rest of its 0.0-{finish} µs)"] if n_items > 1 else []
    starts = _meeting(ops, core, (t0, t1))["start"].to_numpy()
    cut = starts.size > max_ops and starts[max_ops] > t0
    if cut:
        # end the window where the first op past the cap starts: what is drawn is then exactly
        # what meets the shorter window
        cut_at = int(starts[max_ops])
        rest.insert(0, f"{int((starts >= cut_at).sum()):,} of the window's {starts.size:,} operations "
                       f"({_us(cut_at, clock_mhz)}-{_us(t1, clock_mhz)} µs), past the {max_ops:,}-operation cap")
        t1 = cut_at
    if item is not None:
        what = f"its longest work item, {'its start' if cut else 'whole'}: {what}"
    rows, _ = gantt_rows(ops, core, (t0, t1), max_ops)
    return GanttView(core, (t0, t1), rows, what, ", ".join(rest))


def parse_window_us(text: str, field: str = "--window") -> tuple[float, float]:
    """``"T0:T1"`` (µs, 0 <= T0 < T1) -> (T0, T1); anything else is an InputError on ``field``."""
    allowed = "T0:T1 in µs with 0 <= T0 < T1, e.g. 0:250.5"
    head, sep, tail = str(text).partition(":")
    try:
        t0, t1 = float(head), float(tail)
    except ValueError:
        raise InputError(field, text, allowed) from None
    if not sep or not (np.isfinite(t0) and np.isfinite(t1)) or t0 < 0 or t1 <= t0:
        raise InputError(field, text, allowed)
    return t0, t1


def gantt_choice(result: Any, core: int | None, window: str | None) -> dict[str, Any]:
    """The Gantt options of ``cgdr-des plot DIR --core N --window T0:T1`` for ``result``: the core
    must be one of the run's, the window (µs, made cycles) must start before the run's end (its end
    past it is clipped, and the note says so)."""
    cores = sorted(int(c) for c in result.cores["core"])
    if core is not None and core not in cores:
        raise InputError("--core", core, f"a core of this run, {cores[0]}..{cores[-1]}" if cores else "no cores")
    cycles = None
    if window is not None:
        clock = float(result.meta["clock_mhz"])
        t0, t1 = parse_window_us(window)
        end = float(result.cores["finish"].max()) / clock if len(result.cores) else 0.0
        if t0 >= end:
            raise InputError("--window", window, f"a window that starts before the run's end, {end:,.1f} µs")
        cycles = (int(round(t0 * clock)), max(int(round(t1 * clock)), int(round(t0 * clock)) + 1))
    return {"gantt_core": core, "gantt_window": cycles}


def gantt_colours(phases) -> dict[str, str]:
    """The run Gantt's colour of each phase label: the palette's (results/palette.py)."""
    return {str(ph): phase_colour(ph) for ph in phases}


def plot_gantt(ops: pd.DataFrame, path: str | Path, *, core: int, window: Sequence[int] | None = None,
               max_ops: int = GANTT_MAX_OPS, clock_mhz: float = 1.0, title: str | None = None,
               rows: pd.DataFrame | None = None) -> Path:
    """Pipe Gantt of ``core`` in ``window`` (cycles), one row per pipe lane, coloured by phase; x in µs.
    ``rows``: the rows to draw, already chosen (:func:`gantt_view`); else :func:`gantt_rows`'s."""
    cut = False
    df = rows
    if df is None:
        df, cut = gantt_rows(ops, core, window, max_ops)
    rows = sorted(set(zip(df["row_key"], df["row"], strict=True)))
    y = {name: i for i, (_, name) in enumerate(rows)}
    phases = phase_order(df["phase"].astype(str).unique())
    colours = gantt_colours(phases)
    # tall enough for one bar per lane and for the phase legend beside them
    height = max(2.5, 1.2 + 0.35 * len(rows), 1.0 + 0.22 * min(len(phases), 20))
    fig = Figure(figsize=(12, height), layout="constrained")
    ax = fig.add_subplot()
    for (row, phase), grp in df.groupby(["row", df["phase"].astype(str)], sort=False):
        bars(ax, grp["start"].to_numpy() / clock_mhz, np.maximum(grp["end"] - grp["start"], 1).to_numpy() / clock_mhz,
             y[row] - 0.4, 0.8, facecolors=colours[phase], linewidth=0)
    ax.set_yticks(range(len(rows)), [name for _, name in rows])
    ax.invert_yaxis()
    if window is not None:
        ax.set_xlim(window[0] / clock_mhz, window[1] / clock_mhz)
    if phases:
        handles = [Patch(color=colours[ph], label=ph) for ph in phases[:24]]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", title="phase")
    note = f" (first {max_ops} ops)" if cut else ""
    # wrapped: the title states core, window, why and what is left out, longer than the plot is wide
    text = "\n".join(textwrap.fill(line, 150) for line in f"{title or f'core {core} pipe Gantt'}{note}".splitlines())
    ax.set_title(text, fontsize="medium")
    ax.set_xlabel("time (µs)")
    plain_numbers(ax.xaxis)
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
        ax_m.bar(str(bn), mk, color=series_colour(i))
        ax_m.annotate(f"{mk:,.4g} µs\n×{base / mk:.2f}" if mk else "0", (i, mk), ha="center", va="bottom")
        clock = float(res.summary["clock_mhz"].iloc[0])
        width = 0.8 / len(keys)
        x = res.cores["core"].to_numpy() + (i - (len(keys) - 1) / 2) * width
        ax_c.bar(x, res.cores["finish"] / clock, width=width, color=series_colour(i), label=f"buffer_num={bn}")
    ax_m.margins(y=0.25)
    plain_numbers(ax_m.yaxis)
    plain_numbers(ax_c.yaxis)
    # the scenario once, over both panels: repeated in each narrow panel's title it ran off the figure
    if keys:
        fig.suptitle(f"{run_title(results_by_buffer_num[keys[0]].meta)}: makespan and per-core finish by buffer_num")
    first = f"buffer_num {keys[0]}" if keys else "the first"
    ax_m.set(xlabel="buffer_num", ylabel="makespan (µs)", title=f"makespan (×: speed-up vs {first})")
    cores = sorted({int(c) for res in results_by_buffer_num.values() for c in res.cores["core"]})
    core_ticks(ax_c, cores)
    ax_c.set(xlabel="core", ylabel="finish (µs)", title="per-core finish")
    ax_c.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return save_figure(fig, path)


def plot_all(result: Any, out_dir: str | Path, *, gantt_core: int | None = None,
             gantt_window: Sequence[int] | None = None) -> list[Path]:
    """The per-run plots into ``out_dir``; returns the files written."""
    return plot_run(result, out_dir, gantt_core=gantt_core, gantt_window=gantt_window)[0]


def plot_run(result: Any, out_dir: str | Path, *, gantt_core: int | None = None,
             gantt_window: Sequence[int] | None = None) -> tuple[list[Path], list[str]]:
    """The per-run plots into ``out_dir``; returns the files written and the console note saying
    what the Gantt shows and leaves out."""
    out = Path(out_dir)
    clock = float(result.meta["clock_mhz"])
    name = run_title(result.meta)
    paths = [plot_core_load(result.cores, result.items, out / "core_load.png", clock_mhz=clock, name=name,
                            avgload=result.meta.get("avgload")),
             plot_finish_cdf(result.cores, out / "finish_cdf.png", clock_mhz=clock, name=name)]
    notes: list[str] = []
    if len(result.ops):
        view = gantt_view(result.ops, result.items, result.cores, clock_mhz=clock, core=gantt_core,
                          window=gantt_window)
        path = out / f"gantt_core{view.core}.png"
        left = f"\nleft out: {view.left_out}" if view.left_out else ""
        kind = "phase spans (no row per operation kept)" if view.spans else "pipe Gantt"
        title = f"{name}: {kind} of {view.shows(clock)}{left}"
        paths.append(plot_gantt(result.ops, path, core=view.core, window=view.window, clock_mhz=clock,
                                rows=view.rows, title=title))
        notes.append(view.note(path, clock))
    return paths, notes
