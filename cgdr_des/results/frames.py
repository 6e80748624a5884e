"""Machine records -> pandas frames (docs/architecture.md §4). All times are integer core cycles.

Input: a ``MachineRun`` from ``cgdr_des.hw`` (``ops`` tuples in ``OP_COLUMNS`` order, possibly empty
when ops were not kept; ``spans`` tuples in ``SPAN_COLUMNS`` order, one per labelled segment of a
core's program; ``cores`` dicts; ``makespan``) and the work assignment (per core, the WorkItems it
processed, in order).

Frames:
- ``ops``: ``OP_COLUMNS`` + ``n_ops`` + ``aggregated``. With ops kept, one row per operation
  (``n_ops`` 1, ``aggregated`` False). Without, one row per span: pipe ``"ALL"`` (a span covers every
  pipe of its core), op = phase, elements/bytes 0, ``n_ops`` from the span, ``aggregated`` True.
- ``items``: batch, head, vtile, seqlen, core, start, end. An item's window is the hull of the spans on
  its core labelled with its (batch, head, vtile). Spans with vtile -1 (per-chunk phases shared by the
  V-tiles) belong to the item when its core holds only one item of that (batch, head); otherwise to the
  V-tile of the next V-tile-labelled span of that (batch, head) on the core (the per-chunk phases run
  just before the tile steps they feed), or failing that the previous one. Items with no span get
  ``<NA>``.
- ``cores``: core, items, tokens (Σ seqlen of its items), finish, busy_{S,V,MTE2,MTE3},
  stall_{S,V,MTE2,MTE3}, plus any other per-core counter the machine reports (``n_records``).
- ``summary``: one row; ``SUMMARY_COLUMNS``: every field of docs/architecture.md §4 (makespan in cycles and µs,
  ``lower_bound_cycles`` = max(ceil(Σ item durations / cores), longest item), ``imbalance`` = max/mean
  core finish, ``cv``, finish p50/p95/p99, ``util_<pipe>`` = mean over cores of busy/makespan, and the
  provenance ``PROVENANCE`` taken from ``meta``, else from the scenario), then ``n_cores`` (cores that
  ran), ``n_items``, ``tokens`` (Σ item seqlen = realT·NV·W, the load the kernel balances), ``clock_mhz``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from cgdr_des.hw.machine import OP_COLUMNS, SPAN_COLUMNS
from cgdr_des.isa import PIPES
from cgdr_des.results import metrics
from cgdr_des.results.result import Result

ITEM_COLUMNS = ("batch", "head", "vtile", "seqlen", "core", "start", "end")
CORE_COLUMNS = ("core", "items", "tokens", "finish", *(f"busy_{p}" for p in PIPES),
                *(f"stall_{p}" for p in PIPES))
PROVENANCE = ("scenario_name", "scenario_hash", "hardware", "policy", "buffer_num", "fidelity", "numerics")
SUMMARY_COLUMNS = (
    "makespan_cycles", "makespan_us", "lower_bound_cycles", "imbalance", "cv",
    "finish_p50_cycles", "finish_p95_cycles", "finish_p99_cycles",
    *(f"util_{p}" for p in PIPES), *PROVENANCE,
    "n_cores", "n_items", "tokens", "clock_mhz",
)
_TEXT = ("pipe", "op", "phase")


def build_result(run: Any, assignment: Sequence[Sequence[Any]], *, meta: dict[str, Any], clock_mhz: float,
                 outputs: dict[str, np.ndarray | None] | None, scenario: Any = None,
                 tiling: Any = None) -> Result:
    """Frames, summary and provenance of one run (see the module docstring for every column)."""
    columns = getattr(run, "span_columns", None)  # the machine's columnar spans; tuples otherwise
    spans = spans_frame(run.spans) if columns is None else spans_frame_from_columns(columns)
    items = items_frame(assignment, spans)
    cores = cores_frame(run.cores, items)
    meta = {**meta, "clock_mhz": float(clock_mhz)}
    summary = summary_frame(run.makespan, items, cores, provenance(meta, scenario), clock_mhz)
    op_columns = getattr(run, "op_columns", None)   # the machine's ops by column; tuples from other runs
    return Result(ops=lambda: ops_frame(op_columns() if op_columns is not None else run.ops, spans), items=items,
                  cores=cores, summary=summary,
                  outputs=dict(outputs) if outputs else {"out": None, "final_state": None},
                  scenario=scenario, tiling=tiling, meta=meta)


def _records_frame(rows: Sequence[tuple], columns: Sequence[str]) -> pd.DataFrame:
    """Tuples -> frame, column by column: ints as int64, labels as categoricals (compact, fast Parquet)."""
    return _columns_frame(_by_column(rows, columns))


def _by_column(rows: Sequence[tuple], columns: Sequence[str]) -> dict[str, list]:
    """Tuples -> one list per column (a comprehension per column: several times faster than zip(*rows))."""
    return {name: [r[i] for r in rows] for i, name in enumerate(columns)}


def _columns_frame(cols: dict[str, list]) -> pd.DataFrame:
    """One list per column -> frame: ints as int64, labels as categoricals."""
    if not next(iter(cols.values()), None):
        return pd.DataFrame({c: pd.Categorical([]) if c in _TEXT else np.zeros(0, np.int64) for c in cols})
    return pd.DataFrame({name: _categorical(col) if name in _TEXT else np.asarray(col, dtype=np.int64)
                         for name, col in cols.items()})


def _categorical(col) -> pd.Categorical:
    """``pd.Categorical(col)`` (sorted categories) from codes looked up in a dict: a run's few dozen
    labels over ~10^5 rows make pandas' own factorisation the slower way."""
    cats = sorted(set(col))
    index = {c: k for k, c in enumerate(cats)}
    return pd.Categorical.from_codes(np.fromiter(map(index.__getitem__, col), np.int32, len(col)), cats)


def spans_frame(spans: Sequence[tuple]) -> pd.DataFrame:
    """The spans frame (one row per SPAN_COLUMNS tuple; cycles int64, labels categorical)."""
    return _records_frame(spans, SPAN_COLUMNS)


def spans_frame_from_columns(columns: dict) -> pd.DataFrame:
    """The same frame from one array per SPAN_COLUMNS name (what the machine returns)."""
    return pd.DataFrame({name: _categorical(columns[name]) if name in _TEXT else columns[name]
                         for name in SPAN_COLUMNS})


def ops_frame(ops: Sequence[tuple] | dict[str, list], spans: pd.DataFrame) -> pd.DataFrame:
    """Executed operations (:data:`OP_COLUMNS` tuples, or one list per column), or the spans standing in
    for them (``aggregated`` True) when none were kept."""
    cols = ops if isinstance(ops, dict) else _by_column(ops, OP_COLUMNS)
    if cols["core"]:
        df = _columns_frame(cols)
        df["n_ops"] = np.ones(len(df), np.int64)
        df["aggregated"] = False
        return df
    df = spans  # built for this call and not used after it: extended in place, not copied
    df["pipe"] = pd.Categorical(["ALL"] * len(df))
    df["op"] = df["phase"]
    df["elements"] = np.zeros(len(df), np.int64)
    df["bytes"] = np.zeros(len(df), np.int64)
    df["aggregated"] = True
    return df[[*OP_COLUMNS, "n_ops", "aggregated"]]


def items_frame(assignment: Sequence[Sequence[Any]], spans: pd.DataFrame) -> pd.DataFrame:
    """One row per work item, in per-core processing order, with its window from the spans."""
    rows = [(int(it.batch), int(it.head), int(it.vtile), int(it.seqlen), core)
            for core, core_items in enumerate(assignment) for it in core_items]
    if _one_item_per_key(rows):
        return _sole_items_frame(np.array(rows, dtype=np.int64), spans)
    return _merged_items_frame(rows, spans)


def _one_item_per_key(rows: list[tuple]) -> bool:
    """Whether no two items share a (core, batch, head) (no V-tile split on one core), and all those labels
    are >= 0 (``_span_owners`` folds them into one integer)."""
    keys = {(r[4], r[0], r[1]) for r in rows}
    return bool(rows) and len(keys) == len(rows) and min(min(k) for k in keys) >= 0


def _sole_items_frame(rows: np.ndarray, spans: pd.DataFrame) -> pd.DataFrame:
    """items_frame when each (core, batch, head) has one item: it owns every labelled span of that key
    whatever the span's vtile, so its window is their min start / max end. numpy, because pandas' merge
    and groupby overhead dominates at a few dozen items; the same frame as ``_merged_items_frame``."""
    owner, span_start, span_end = _span_owners(rows, spans)
    start = np.full(len(rows), np.iinfo(np.int64).max)
    end = np.full(len(rows), np.iinfo(np.int64).min)
    np.minimum.at(start, owner, span_start)
    np.maximum.at(end, owner, span_end)
    missing = np.bincount(owner, minlength=len(rows)) == 0  # an item with no span gets <NA>
    start[missing] = end[missing] = 0
    data = {name: rows[:, i] for i, name in enumerate(ITEM_COLUMNS[:5])}
    data["start"] = pd.arrays.IntegerArray(start, missing.copy())
    data["end"] = pd.arrays.IntegerArray(end, missing)
    return pd.DataFrame(data)


def _span_owners(rows: np.ndarray, spans: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The item row (of ``rows``, unique (core, batch, head) keys) owning each span labelled with an
    item's key, and those spans' start and end; spans of no item's key are left out."""
    batch, head, core = rows[:, 0], rows[:, 1], rows[:, 4]
    nb, nh = int(batch.max()) + 1, int(head.max()) + 1
    s = {c: spans[c].to_numpy() for c in ("core", "batch", "head", "start", "end")}
    ok = (s["core"] >= 0) & (s["batch"] >= 0) & (s["batch"] < nb) & (s["head"] >= 0) & (s["head"] < nh)
    span_key = (s["core"][ok] * nb + s["batch"][ok]) * nh + s["head"][ok]
    item_key = (core * nb + batch) * nh + head  # one integer per key: 0 <= batch < nb, 0 <= head < nh
    order = np.argsort(item_key)
    pos = order[np.searchsorted(item_key, span_key, sorter=order).clip(max=len(order) - 1)]
    hit = item_key[pos] == span_key
    return pos[hit], s["start"][ok][hit], s["end"][ok][hit]


def _merged_items_frame(rows: list[tuple], spans: pd.DataFrame) -> pd.DataFrame:
    """items_frame in general (V-tiles of one head split on one core): windows by the module-doc rule."""
    items = pd.DataFrame(rows, columns=list(ITEM_COLUMNS[:5]), dtype=np.int64)
    windows = _item_windows(items, spans)
    out = items.merge(windows, on=["core", "batch", "head", "vtile"], how="left", validate="many_to_one")
    for col in ("start", "end"):
        out[col] = out[col].astype("Int64")
    return out[list(ITEM_COLUMNS)]


def _item_windows(items: pd.DataFrame, spans: pd.DataFrame) -> pd.DataFrame:
    """[start, end) per (core, batch, head, vtile) item key, from the labelled spans (rule: module doc)."""
    key = ["core", "batch", "head"]
    s = spans.loc[(spans["batch"] >= 0) & (spans["head"] >= 0), [*key, "vtile", "start", "end"]]
    s = s.sort_values(["core", "start"], kind="stable")
    counts = items.groupby(key).size().rename("n").reset_index()
    sole = items.merge(counts[counts["n"] == 1], on=key)[[*key, "vtile"]].rename(columns={"vtile": "sole"})
    s = s.merge(sole, on=key, how="left")
    labelled = s["vtile"].where(s["vtile"] >= 0)
    g = labelled.groupby([s[k] for k in key])
    nearest = g.bfill().fillna(g.ffill())
    s["vtile"] = s["sole"].fillna(nearest)
    s = s.dropna(subset=["vtile"]).astype({"vtile": np.int64})
    return s.groupby([*key, "vtile"], as_index=False).agg(start=("start", "min"), end=("end", "max"))


def cores_frame(cores: Sequence[dict[str, Any]], items: pd.DataFrame) -> pd.DataFrame:
    """One row per core the machine ran (plus any assigned core it did not report, with zeros)."""
    machine = pd.DataFrame(list(cores))  # pandas' own dtype inference for the machine's counters
    if _reports_every_item_core(machine, items):
        return _reported_cores_frame(machine, items)
    return _merged_cores_frame(machine, items)


def _merged_cores_frame(machine: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """cores_frame in general: an outer merge adds the assigned cores the machine did not report."""
    per_item = items.groupby("core").agg(items=("seqlen", "size"), tokens=("seqlen", "sum")).reset_index()
    df = machine.merge(per_item, on="core", how="outer").sort_values("core", kind="stable")
    for col in CORE_COLUMNS:
        df[col] = df[col].fillna(0).astype(np.int64) if col in df.columns else np.int64(0)
    extra = [c for c in df.columns if c not in CORE_COLUMNS]
    return df[[*CORE_COLUMNS, *extra]].reset_index(drop=True)


def _reports_every_item_core(machine: pd.DataFrame, items: pd.DataFrame) -> bool:
    """Whether the machine reported each core once, every core with an item among them (the usual run)."""
    if "core" not in machine.columns or {"items", "tokens"} & set(machine.columns):
        return False
    ids = machine["core"].to_numpy()
    reported = set(ids.tolist())
    return ids.dtype == np.int64 and len(reported) == len(ids) and reported.issuperset(items["core"].tolist())


def _reported_cores_frame(machine: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """cores_frame without the merge: no core needs adding, so counting the items per reported core and
    sorting by core gives ``_merged_cores_frame``'s frame (whose pandas overhead dominates at a few cores)."""
    ids = machine["core"].to_numpy()
    order = np.argsort(ids, kind="stable")
    if (order != np.arange(len(order))).any():
        machine = machine.iloc[order].reset_index(drop=True)
        ids = ids[order]
    at = np.searchsorted(ids, items["core"].to_numpy())  # each item's row among the sorted cores
    tokens = np.zeros(len(ids), np.int64)
    np.add.at(tokens, at, items["seqlen"].to_numpy(np.int64))
    load = {"items": np.bincount(at, minlength=len(ids)).astype(np.int64), "tokens": tokens}
    data = {col: load[col] if col in load else _int_column(machine, col) for col in CORE_COLUMNS}
    data.update({col: _column(machine, col) for col in machine.columns if col not in data})
    return pd.DataFrame(data)


def _column(machine: pd.DataFrame, col: str) -> np.ndarray | pd.Series:
    """An extra counter as it is: a numeric numpy array bare (cheaper to frame), any other kept a Series."""
    values = machine[col]
    return values.to_numpy() if isinstance(values.dtype, np.dtype) and values.dtype.kind in "biuf" else values


def _int_column(machine: pd.DataFrame, col: str) -> np.ndarray:
    """A CORE_COLUMNS counter as int64, absent or missing values as 0 (as the general path fills them)."""
    if col not in machine.columns:
        return np.zeros(len(machine), np.int64)
    values = machine[col]
    return values.to_numpy() if values.dtype == np.int64 else values.fillna(0).astype(np.int64).to_numpy()


def provenance(meta: dict[str, Any], scenario: Any) -> dict[str, Any]:
    """Scenario name/hash, hardware and variant: from ``meta``, else from the scenario, else None."""
    from_scenario = {}
    if scenario is not None:
        from_scenario = {
            "scenario_name": scenario.name, "scenario_hash": scenario.scenario_hash(),
            "hardware": scenario.hardware.profile, "policy": scenario.kernel.policy,
            "buffer_num": scenario.kernel.buffer_num, "fidelity": scenario.sim.fidelity,
            "numerics": scenario.sim.numerics,
        }
    return {k: meta.get(k, from_scenario.get(k)) for k in PROVENANCE}


def summary_frame(makespan: int, items: pd.DataFrame, cores: pd.DataFrame, prov: dict[str, Any],
                  clock_mhz: float) -> pd.DataFrame:
    """The one-row summary (docs/architecture.md §4); finish statistics are over the cores that ran."""
    makespan = int(makespan)
    finish = cores["finish"].to_numpy(np.float64)
    tails = metrics.tail_percentiles(finish, (50, 95, 99))
    row: dict[str, Any] = {
        "makespan_cycles": makespan,
        "makespan_us": makespan / clock_mhz,
        "lower_bound_cycles": metrics.lower_bound(_durations(items), len(cores)),
        "imbalance": metrics.imbalance(finish),
        "cv": metrics.coefficient_of_variation(finish),
        **{f"finish_p{q}_cycles": tails[q] for q in (50, 95, 99)},
        **{f"util_{p}": metrics.utilisation(cores[f"busy_{p}"].to_numpy(), makespan) for p in PIPES},
        **prov,
        "n_cores": len(cores), "n_items": len(items), "tokens": int(items["seqlen"].to_numpy().sum()),
        "clock_mhz": float(clock_mhz),
    }
    # column by column: a third faster than a frame from [row], with the same per-column dtype inference
    return pd.DataFrame({k: [row[k]] for k in SUMMARY_COLUMNS})


def _durations(items: pd.DataFrame) -> np.ndarray:
    """end - start of the items that have a window (numpy on the arrays: Series arithmetic costs more)."""
    start, end = items["start"].array, items["end"].array
    keep = ~(start.isna() | end.isna())
    return np.asarray(end[keep], np.int64) - np.asarray(start[keep], np.int64)
