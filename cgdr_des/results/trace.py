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
    Touching intervals share a lane; a zero-length event shares one only at a boundary.
    """
    order = np.lexsort((end, start))
    lanes = np.empty(len(start), np.int64)
    busy: list[tuple[int, int]] = []  # (end, lane)
    free: list[int] = []
    n_lanes = 0
    for i in order:
        s = start[i]
        while busy and busy[0][0] <= s:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane, n_lanes = n_lanes, n_lanes + 1
        lanes[i] = lane
        heapq.heappush(busy, (int(end[i]), lane))
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


def _flag_pairs(df: pd.DataFrame) -> list[tuple[int, int, str]]:
    """(set row label, wait row label, event) pairs: k-th set with k-th wait per (core, event)."""
    flags = _flag_rows(df)
    pairs = []
    for (_, event), grp in flags.groupby(["core", "event"], sort=True):
        grp = grp.sort_values("start", kind="stable")
        sets, waits = grp.index[grp["is_set"]], grp.index[~grp["is_set"]]
        pairs.extend((s, w, event) for s, w in zip(sets, waits, strict=False))
    return pairs


def _x_events(df: pd.DataFrame, clock_mhz: float) -> tuple[list[dict], dict, set]:
    """X events; row label -> (pid, tid, ts, end) for the flows; the set of (pid, tid, pipe, lane)."""
    lanes = np.zeros(len(df), np.int64)
    start, end = df["start"].to_numpy(np.int64), df["end"].to_numpy(np.int64)
    pos = np.arange(len(df))
    for _, idx in df.groupby(["core", "pipe"], observed=True, sort=False).indices.items():
        lanes[idx] = assign_lanes(start[idx], end[idx])
    ts_all = np.round(start / clock_mhz, 6)
    end_all = np.round(end / clock_mhz, 6)
    dur_all = np.round(end_all - ts_all, 6)
    events, where, threads = [], {}, set()
    cols = [df[c].tolist() for c in ("core", "pipe", "op", *_ARGS, "n_ops", "aggregated")]
    labels = df.index.tolist()
    for i, (core, pipe, op, phase, b, h, vt, ch, el, by, n_ops, agg) in zip(pos, zip(*cols, strict=True),
                                                                             strict=True):
        tid = TID_BASE.get(pipe, 20000) + int(lanes[i])
        threads.add((core, tid, pipe, int(lanes[i])))
        ts = float(ts_all[i])
        args = {"phase": phase, "batch": b, "head": h, "vtile": vt, "chunk": ch, "elements": el,
                "bytes": by, "start_cycle": int(start[i]), "end_cycle": int(end[i])}
        if agg:
            args["n_ops"] = n_ops
        events.append({"ph": "X", "name": op, "cat": pipe, "pid": core, "tid": tid, "ts": ts,
                       "dur": float(dur_all[i]), "args": args})
        where[labels[i]] = (core, tid, ts, float(end_all[i]))
    return events, where, threads


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


def _flows(pairs: list[tuple[int, int, str]], where: dict) -> list[dict]:
    flows = []
    for fid, (s, w, event) in enumerate(p for p in pairs if p[0] in where and p[1] in where):
        (core, s_tid, s_ts, _), (_, w_tid, w_ts, w_end) = where[s], where[w]
        # The arrow ends inside the wait slice, not before the set: the wait is released by it.
        w_ts = min(max(w_ts, s_ts), w_end)
        flows.append({"ph": "s", "id": fid, "name": event, "cat": "flag", "pid": core, "tid": s_tid,
                      "ts": s_ts})
        flows.append({"ph": "f", "bp": "e", "id": fid, "name": event, "cat": "flag", "pid": core,
                      "tid": w_tid, "ts": w_ts})
    return flows


def build_trace(ops: pd.DataFrame, *, clock_mhz: float, window: Sequence[int] | None = None,
                cores: Sequence[int] | None = None, max_events: int = DEFAULT_MAX_EVENTS,
                meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Chrome trace dict (``traceEvents`` + ``otherData``) of an ops frame (see the module doc)."""
    if "n_ops" not in ops.columns:
        ops = ops.assign(n_ops=1, aggregated=False)
    if cores is not None:
        ops = ops[ops["core"].isin(list(cores))]
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
    return {"traceEvents": _metadata(threads) + events + _flows(pairs, where),
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
