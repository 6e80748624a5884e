"""The advice table: one row per (variant, policy), ranked by p99 gain over the source kernel with greedy.

Rows that ran are ranked by ``gain_p99_us`` (largest first), ties by ``gain_p50_us``, then in the order
the variants and policies were given; a variant that does not fit UB keeps one row per policy, unranked
(``rank`` empty), its ``status`` saying by how many bytes. ``gain_p99_min_us``/``gain_p99_max_us`` (and
the p50 pair) are the gain's interval over the profile points (:mod:`cgdr_des.advise.study`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cgdr_des.advise import costs as item
from cgdr_des.advise.settings import BASELINE, changed_fields

REFERENCE_POLICY = "greedy"


def rank_rows(settings, costs: dict, pols: list[str], nominal: dict, per_point: dict,
              boot: pd.DataFrame) -> pd.DataFrame:
    """The ranked table (see the module docstring)."""
    ref = nominal.get((BASELINE, REFERENCE_POLICY))
    ref_pts = {i: (a, b) for i, a, b in per_point.get((BASELINE, REFERENCE_POLICY), [])}
    base = item.two_numbers(costs[BASELINE]) if BASELINE in costs else {}
    rows = []
    for order, s in enumerate(settings):
        for p_order, p in enumerate(pols):
            row = {"variant": s.name, "policy": p, "status": s.status, "fields": changed_fields(s.fields),
                   "order": order * len(pols) + p_order}
            if s.runs and ref is not None:
                p50, p99 = nominal[s.name, p]
                # points where the variant's or the reference's probe failed have no gain: left out
                mine = [(i, a, b) for i, a, b in per_point.get((s.name, p), []) if i in ref_pts]
                g50 = [ref_pts[i][0] - a for i, a, _ in mine] or [ref[0] - p50]
                g99 = [ref_pts[i][1] - b for i, _, b in mine] or [ref[1] - p99]
                b = boot[(boot["variant"] == s.name) & (boot["policy"] == p)].iloc[0]
                row |= {"p50_us": p50, "p99_us": p99, "p99_lo_us": b["p99_lo_us"], "p99_hi_us": b["p99_hi_us"],
                        "gain_p99_us": ref[1] - p99, "gain_p99_min_us": min(g99), "gain_p99_max_us": max(g99),
                        "gain_p99_pct": 100.0 * (ref[1] - p99) / ref[1],
                        "gain_p50_us": ref[0] - p50, "gain_p50_min_us": min(g50), "gain_p50_max_us": max(g50),
                        **item.two_numbers(costs[s.name]),
                        "v_step": s.tiling.v_step, "ub_needed_bytes": s.tiling.ub_needed_bytes}
            row |= {f"base_{k}": v for k, v in base.items()}
            row["ub_shortfall_bytes"] = s.shortfall_bytes
            rows.append(row)
    table = pd.DataFrame(rows)
    if "gain_p99_us" not in table:
        table["gain_p99_us"] = np.nan
        table["gain_p50_us"] = np.nan
    ok = table["gain_p99_us"].notna()
    table = pd.concat([table[ok].sort_values(["gain_p99_us", "gain_p50_us", "order"], ascending=[False, False, True],
                                             kind="stable"),
                       table[~ok].sort_values("order", kind="stable")], ignore_index=True)
    table.insert(0, "rank", pd.array(np.where(table["gain_p99_us"].notna(), np.arange(1, len(table) + 1), 0),
                                     dtype="Int64"))
    table.loc[table["gain_p99_us"].isna(), "rank"] = pd.NA
    return table.drop(columns="order")
