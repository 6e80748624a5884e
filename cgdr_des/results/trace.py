"""Chrome trace (``trace.json``) of a run, for Perfetto / chrome://tracing / MindStudio Insight.

Layout, following ``msprof op simulator`` (docs/hardware.md §7):
- ``pid`` = core id, named ``core{N}`` by a ``process_name`` metadata event;
- one thread per pipe, named as msprof names them: ``SCALAR`` (pipe S), ``VECTOR`` (V), ``MTE2``,
  ``MTE3``; span rows of an aggregated run (pipe ``ALL``) go to ``PHASE``. Instructions in one pipe
  overlap in time (a pipelined V op is issued while the previous one completes), and a Chrome track
  must not hold overlapping complete events, so overlapping events are laid onto extra threads
  ``VECTOR_1``, ``VECTOR_2`` … (msprof's ``<PIPE>_<n>``) by interval partitioning: each event takes the
  lowest-numbered lane free at its start. Thread ids are ``msprof pipe pid × 100 + lane`` (SCALAR 10,
  VECTOR 30, MTE2 60, MTE3 70, ALL 100), so lanes sort under their pipe;
- ``ph: "X"`` events: ``name`` = op, ``ts``/``dur`` in µs (cycles / clock MHz, rounded to 1 ps), args
  = phase, batch, head, vtile, chunk, elements, bytes and the exact ``start_cycle``/``end_cycle``;
- flow events (``ph`` ``s`` → ``f``) link each ``SetFlag:<EVENT>`` row to the ``WaitFlag:<EVENT>`` row
  that consumed it: the k-th set and the k-th wait of one (core, event), each ordered by start, form a
  pair (matched over the whole run, then kept only when both ends are in the trace).

Keeping big traces small: ``cores`` keeps only those pids, ``window`` ([start, end) cycles) keeps events
that overlap it, and at most ``max_events`` X events are kept — the earliest by start; ``otherData``
then says ``truncated: true`` and how many were dropped.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

THREAD_NAMES = {"S": "SCALAR", "V": "VECTOR", "MTE2": "MTE2", "MTE3": "MTE3", "ALL": "PHASE"}
TID_BASE = {"S": 1000, "V": 3000, "MTE2": 6000, "MTE3": 7000, "ALL": 10000}
DEFAULT_MAX_EVENTS = 200_000
_ARGS = ("phase", "batch", "head", "vtile", "chunk", "elements", "bytes")


def assign_lanes(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Lane per interval such that intervals sharing a lane never overlap; lane 0 is used first.

    Greedy interval partitioning in (start, end) order with the lowest free lane: for intervals of
    positive length it uses as many lanes as the most intervals alive at one instant (the optimum).
    Touching intervals share a lane; a zero-length event shares one only at a boundary. A track where
    every interval starts after all earlier ones ended (S and MTE, most of a run) is lane 0 throughout,
    found without the walk.
    """
    order = np.lexsort((end, start))
    s_sorted, e_sorted = start[order], end[order]
    if len(order) < 2 or (s_sorted[1:] >= np.maximum.accumulate(e_sorted)[:-1]).all():
        return np.zeros(len(start), np.int64)
    lanes = np.empty(len(start), np.int64)
    busy: list[tuple[int, int]] = []  # (end, lane)
    free: list[int] = []
    n_lanes = 0
    for i, s, e in zip(order.tolist(), s_sorted.tolist(), e_sorted.tolist(), strict=True):
        while busy and busy[0][0] <= s:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane, n_lanes = n_lanes, n_lanes + 1
        lanes[i] = lane
        heapq.heappush(busy, (e, lane))
    return lanes


def _in_window(df: pd.DataFrame, window: Sequence[int] | None) -> pd.DataFrame:
    if window is None:
        return df
    w0, w1 = int(window[0]), int(window[1])
    return df[(df["start"] < w1) & ((df["end"] > w0) | (df["start"] >= w0))]


def _flag_rows(df: pd.DataFrame) -> pd.DataFrame:
    """core, start, event, is_set of the SetFlag/WaitFlag rows (names parsed once per category)."""
    col = df["op"] if isinstance(df["op"].dtype, pd.CategoricalDtype) else df["op"].astype("category")
    cats = [str(c) for c in col.cat.categories]
    kind = np.array([1 if c.startswith("SetFlag:") else 2 if c.startswith("WaitFlag:") else 0 for c in cats]
                    + [0], np.int8)  # the extra 0 catches code -1 (missing)
    event = np.array([c.partition(":")[2] for c in cats] + [""], dtype=object)
    codes = col.cat.codes.to_numpy()
    k = kind[codes]
    mask = k > 0
    return pd.DataFrame({"core": df["core"].to_numpy()[mask], "start": df["start"].to_numpy()[mask],
                         "event": event[codes[mask]], "is_set": k[mask] == 1}, index=df.index[mask])


def _flag_pairs(df: pd.DataFrame) -> pd.DataFrame:
    """``set`` and ``wait`` (row labels) and ``event`` of each flow: the k-th set with the k-th wait of
    one (core, event), each ordered by start (ties in row order); in order of core, event name, k."""
    flags = _flag_rows(df)
    names, event = np.unique(flags["event"].to_numpy(str), return_inverse=True)
    core, start = flags["core"].to_numpy(np.int64), flags["start"].to_numpy(np.int64)
    order = np.lexsort((start, event, core))       # stable: equal starts keep their row order
    side = pd.DataFrame({"core": core[order], "event": event[order], "set": flags["is_set"].to_numpy()[order],
                         "label": flags.index.to_numpy()[order]})
    side["k"] = side.groupby(["core", "event", "set"], sort=False).cumcount()
    sets, waits = side[side["set"]], side[~side["set"]]
    pairs = sets.merge(waits, on=["core", "event", "k"], suffixes=("", "_w"))    # in the sets' order
    return pd.DataFrame({"set": pairs["label"].to_numpy(), "wait": pairs["label_w"].to_numpy(),
                         "event": names[pairs["event"].to_numpy(np.int64)]})


def _x_events(df: pd.DataFrame, clock_mhz: float) -> tuple[list[dict], dict[str, np.ndarray], set]:
    """X events; per row pid, tid, ts and end for the flows; the set of (pid, tid, pipe, lane)."""
    lanes = np.zeros(len(df), np.int64)
    start, end = df["start"].to_numpy(np.int64), df["end"].to_numpy(np.int64)
    for _, idx in df.groupby(["core", "pipe"], observed=True, sort=False).indices.items():
        lanes[idx] = assign_lanes(start[idx], end[idx])
    ts_all = np.round(start / clock_mhz, 6)
    end_all = np.round(end / clock_mhz, 6)
    pipe = df["pipe"].tolist()
    tid = np.fromiter((TID_BASE.get(p, 20000) for p in pipe), np.int64, len(pipe)) + lanes
    core, tids, lane_list = df["core"].tolist(), tid.tolist(), lanes.tolist()
    threads = set(zip(core, tids, pipe, lane_list, strict=True))
    args = [{"phase": ph, "batch": b, "head": h, "vtile": vt, "chunk": ch, "elements": el, "bytes": by,
             "start_cycle": s, "end_cycle": e}
            for ph, b, h, vt, ch, el, by, s, e in zip(*(df[c].tolist() for c in _ARGS), start.tolist(),
                                                         end.tolist(), strict=True)]
    aggregated = np.flatnonzero(df["aggregated"].to_numpy(bool)).tolist()
    n_ops = df["n_ops"].tolist() if aggregated else []
    for i in aggregated:
        args[i]["n_ops"] = n_ops[i]
    events = [{"ph": "X", "name": op, "cat": p, "pid": c, "tid": t, "ts": ts, "dur": dur, "args": a}
              for op, p, c, t, ts, dur, a in zip(df["op"].tolist(), pipe, core, tids, ts_all.tolist(),
                                                 np.round(end_all - ts_all, 6).tolist(), args, strict=True)]
    return events, {"pid": df["core"].to_numpy(np.int64), "tid": tid, "ts": ts_all, "end": end_all}, threads


def _metadata(threads: set) -> list[dict]:
    """process_name per core and thread_name per (core, tid), with sort indices (pipes, then lanes)."""
    meta = []
    for core in sorted({t[0] for t in threads}):
        meta.append({"ph": "M", "name": "process_name", "pid": core, "args": {"name": f"core{core}"}})
        meta.append({"ph": "M", "name": "process_sort_index", "pid": core, "args": {"sort_index": core}})
    for core, tid, pipe, lane in sorted(threads):
        base = THREAD_NAMES.get(pipe, str(pipe))
        name = base if lane == 0 else f"{base}_{lane}"
        meta.append({"ph": "M", "name": "thread_name", "pid": core, "tid": tid, "args": {"name": name}})
        meta.append({"ph": "M", "name": "thread_sort_index", "pid": core, "tid": tid,
                     "args": {"sort_index": tid}})
    return meta


def _flows(pairs: pd.DataFrame, kept: pd.Index, where: dict[str, np.ndarray]) -> list[dict]:
    """Flow events of the ``pairs`` whose set and wait are both among the ``kept`` rows (``where``: their
    pid, tid, ts and end, row by row), numbered in pair order."""
    pos_s, pos_w = kept.get_indexer(pairs["set"]), kept.get_indexer(pairs["wait"])
    both = (pos_s >= 0) & (pos_w >= 0)
    pos_s, pos_w, events = pos_s[both], pos_w[both], pairs["event"].to_numpy()[both].tolist()
    s_ts, w_ts = where["ts"][pos_s], where["ts"][pos_w]
    # The arrow ends inside the wait slice, not before the set: the wait is released by it.
    w_ts = np.minimum(np.maximum(w_ts, s_ts), where["end"][pos_w])
    flows = []
    for fid, (event, core, s_tid, s_t, w_tid, w_t) in enumerate(zip(
            events, where["pid"][pos_s].tolist(), where["tid"][pos_s].tolist(), s_ts.tolist(),
            where["tid"][pos_w].tolist(), w_ts.tolist(), strict=True)):
        flows.append({"ph": "s", "id": fid, "name": event, "cat": "flag", "pid": core, "tid": s_tid, "ts": s_t})
        flows.append({"ph": "f", "bp": "e", "id": fid, "name": event, "cat": "flag", "pid": core, "tid": w_tid,
                      "ts": w_t})
    return flows


def build_trace(ops: pd.DataFrame, *, clock_mhz: float, window: Sequence[int] | None = None,
                cores: Sequence[int] | None = None, max_events: int = DEFAULT_MAX_EVENTS,
                meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Chrome trace dict (``traceEvents`` + ``otherData``) of an ops frame (see the module doc)."""
    if "n_ops" not in ops.columns:
        ops = ops.assign(n_ops=1, aggregated=False)
    if cores is not None:
        ops = ops[ops["core"].isin(list(cores))]
    if not ops.index.is_unique:     # rows are told apart by label (a frame put together from others)
        ops = ops.reset_index(drop=True)
    pairs = _flag_pairs(ops)  # over the whole run of each kept core: a window must not shift the pairing
    selected = _in_window(ops, window)
    kept = selected.sort_values(["start", "core"], kind="stable").head(max_events)
    events, where, threads = _x_events(kept, clock_mhz)
    dropped = len(selected) - len(kept)
    other = {"clock_mhz": clock_mhz, "time_unit": "ts and dur in us = cycles / clock_mhz",
             "truncated": dropped > 0, "dropped_events": int(dropped), "max_trace_events": int(max_events),
             "window_cycles": list(window) if window is not None else None,
             "cores": list(cores) if cores is not None else None,
             "aggregated": bool(ops["aggregated"].any()) if len(ops) else False,
             "kept_until_cycle": int(kept["start"].max()) if len(kept) else None,
             "selected_until_cycle": int(selected["end"].max()) if len(selected) else None}
    other["run"] = {k: v for k, v in (meta or {}).items() if isinstance(v, (str, int, float, bool))}
    return {"traceEvents": _metadata(threads) + events + _flows(pairs, kept.index, where),
            "displayTimeUnit": "ns", "otherData": other}


def trace_from_result(result: Any) -> dict[str, Any]:
    """``build_trace`` with the scenario's ``[sim]`` trace options (defaults when there is no scenario)."""
    sim = getattr(result.scenario, "sim", None)
    return build_trace(
        result.ops, clock_mhz=result.meta["clock_mhz"],
        window=getattr(sim, "trace_window", None), cores=getattr(sim, "trace_cores", None),
        max_events=getattr(sim, "max_trace_events", DEFAULT_MAX_EVENTS), meta=result.meta)


def write_trace(trace: dict[str, Any], path: str | Path) -> Path:
    """Write compact JSON; returns the path."""
    path = Path(path)
    # dumps then one write: json.dump's many small writes are several times slower on big traces
    path.write_text(json.dumps(trace, separators=(",", ":"), default=_json_default), encoding="utf-8")
    return path


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def trace_notes(other: dict[str, Any], clock_mhz: float, makespan: int | None = None) -> list[str]:
    """Console lines about what the trace leaves out: a cut at ``max_trace_events`` (how many events
    were dropped, where the trace stops, how to get the rest), or a window with no events."""
    notes = []
    if other.get("truncated"):
        until, end = other.get("kept_until_cycle") or 0, other.get("selected_until_cycle") or 0
        notes.append(f"trace cut at {other['max_trace_events']:,} events: {other['dropped_events']:,} later "
                     f"events dropped (it stops at {until / clock_mhz:,.1f} us of {end / clock_mhz:,.1f} us); "
                     "for the rest narrow [sim] trace_window or trace_cores, or raise max_trace_events")
    window = other.get("window_cycles")
    if window is not None and other.get("kept_until_cycle") is None:
        where = f" (the run ends at cycle {makespan:,})" if makespan is not None else ""
        notes.append(f"trace window [{window[0]:,}, {window[1]:,}) cycles holds no events{where}")
    return notes
