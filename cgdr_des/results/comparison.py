"""The side-by-side table of ``cgdr-des compare`` and the sentence that explains each row.

One row per setting (docs/double-buffering.md §3, docs/frames.md): the kernel fields, the host tiling
(``v_step``, ``v_tiles``, ``ub_used_bytes``), the makespan and the speed-up over the first setting,
the critical core's busy and stall cycles per pipe, its critical-path parts
(cgdr_des/results/attribution.py) and the overlap bound, and ``cause``: one sentence naming the
bounding pipe and why the makespan moved. A setting the host cannot place in UB has no run: its row
carries ``status`` (the diagnostic) and empty timing columns.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from cgdr_des.isa import PIPES
from cgdr_des.results.attribution import PARTS, AttributionUnavailable, attribute_result

SUMMARY = ("makespan_cycles", "makespan_us", "imbalance", "finish_p99_cycles", "util_S", "util_V",
           "util_MTE2", "util_MTE3")
_COUNTS = ("makespan_cycles", "v_step", "v_tiles", "ub_used_bytes", "ub_bytes", "critical_core", "barrier_V",
           "dma_sync", "state_load_S", "exposed_dma", "overlap_bound")
#: a makespan change below this fraction is reported as no change
NOISE = 1e-4


def setting_row(name: str, fields: dict[str, Any], tiling: Any, result: Any | None, status: str = "ok") -> dict:
    """One row of the table (``result`` None when the setting did not run: ``status`` says why)."""
    row: dict[str, Any] = {"setting": name, **fields, "status": status}
    if tiling is not None:
        row.update(v_step=tiling.v_step, v_tiles=tiling.v_tile_count, ub_used_bytes=tiling.ub_needed_bytes,
                   ub_bytes=tiling.ub_size)
    if result is None:
        return row
    row.update(result.summary.iloc[0][list(SUMMARY)].to_dict(), fidelity=result.meta.get("fidelity"))
    try:
        att = attribute_result(result)
    except AttributionUnavailable as exc:
        row["attribution_note"] = str(exc)
        return row
    crit = result.cores.set_index("core").loc[att.core]
    row["critical_core"] = att.core
    for p in PIPES:
        row[f"busy_{p}"], row[f"stall_{p}"] = int(crit[f"busy_{p}"]), int(crit[f"stall_{p}"])
    for p in PARTS:
        row[f"cp_{p}"] = getattr(att, p)
    row.update(barrier_V=att.barrier_V, dma_sync=att.dma_sync, state_load_S=att.state_load_S,
               exposed_dma=att.exposed_dma,
               overlap_bound=att.overlap_bound, bounding_part=att.bounding_part)
    return row


def comparison_table(rows: list[dict]) -> pd.DataFrame:
    """The rows as a frame, with ``speedup`` over the first setting that ran and ``cause``."""
    table = pd.DataFrame(rows)
    ran = table[table["status"] == "ok"]
    ref = ran.iloc[0] if len(ran) else None
    if ref is not None and "makespan_cycles" in table:
        table["speedup"] = ref["makespan_cycles"] / table["makespan_cycles"]
    table["cause"] = [explain(ref, row) for _, row in table.iterrows()]
    counts = [c for c in table if c.startswith(("cp_", "busy_", "stall_")) or c in _COUNTS]
    return table.astype({c: "Int64" for c in counts})  # cycles stay integers beside a setting not run


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "n/a"


def _why(ref: pd.Series, row: pd.Series) -> str:
    """Why ``row``'s makespan differs from ``ref``'s, in a few words."""
    if row["v_step"] != ref["v_step"]:
        return (f"a tiling change: the host shrank vStep {int(ref['v_step'])} -> {int(row['v_step'])} "
                f"({int(ref['v_tiles'])} -> {int(row['v_tiles'])} V-tiles) to make room for the variant's buffers")
    delta = ref["makespan_cycles"] - row["makespan_cycles"]
    if pd.isna(ref.get("overlap_bound")) or pd.isna(row.get("overlap_bound")):
        return f"makespan {int(ref['makespan_cycles']):,} -> {int(row['makespan_cycles']):,} cycles"
    if abs(delta) <= NOISE * ref["makespan_cycles"]:
        return f"no change beyond {NOISE:.2%}: what the variant overlaps is not on the critical core's path"
    gains = {
        "exposed DMA hidden (DMA waits, PIPE_ALL drains and DMA event calls {} -> {} cycles)":
            ("exposed_dma", "barrier_V", "dma_sync"),
        "the first state tile staged by DMA (scalar initial-state reads {} -> {} cycles)": ("state_load_S",),
        "queue and flag stalls removed (flag waits {} -> {} cycles)": ("cp_flags",),
    }
    before = {text: sum(int(ref[c]) for c in cols) for text, cols in gains.items()}
    after = {text: sum(int(row[c]) for c in cols) for text, cols in gains.items()}
    best = max(gains, key=lambda text: before[text] - after[text])
    if delta > 0 and before[best] > after[best]:
        return best.format(f"{before[best]:,}", f"{after[best]:,}")
    return f"scalar and vector work moved (S {int(ref['cp_S']):,} -> {int(row['cp_S']):,} cycles on the critical path)"


def explain(ref: pd.Series | None, row: pd.Series) -> str:
    """One sentence: the setting's speed-up, its bounding pipe and the cause."""
    if row["status"] != "ok":
        return f"{row['setting']}: not run, {row['status']}"
    if "bounding_part" not in row or pd.isna(row.get("bounding_part")):
        return f"{row['setting']}: makespan {int(row['makespan_cycles']):,} cycles (no per-op rows to attribute)"
    mk, part = row["makespan_cycles"], row["bounding_part"]
    # a phase-fidelity compute run is one S row: its V work and V->S waits count as S (attribution.py)
    what = "S with its compute runs" if part == "S" and row.get("fidelity") == "phase" else part
    head = (f"{row['setting']}: {int(mk):,} cycles, bound by {what} "
            f"({_pct(row['cp_' + row['bounding_part']], mk)} of the critical core), overlap could save at most "
            f"{int(row['overlap_bound']):,} cycles ({_pct(row['overlap_bound'], mk)})")
    if ref is None or ref["setting"] == row["setting"]:
        return head + "."
    return f"{head}; x{ref['makespan_cycles'] / mk:.4f} vs {ref['setting']}: {_why(ref, row)}."
