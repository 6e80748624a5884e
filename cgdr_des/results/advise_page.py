"""What ``index.html`` says for an ``advise`` output: the change to make first, read from its files.

The answer is one sentence: the best-ranked (variant, policy), what it buys at p99 (µs and % of the
source kernel's p99 with greedy) with its interval over the profile points, and what it costs in UB
(the bytes its buffers need and the vStep, beside the source kernel's). A second sentence names the
best kernel change under greedy when the best row also changes the policy; then the variants whose
probe raised a kernel diagnostic at some profile points, and the variants that do not fit UB.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd


def answer(table: pd.DataFrame, variants: pd.DataFrame, meta: dict, us: str = "µs") -> list[str]:
    """The answer's sentences (see the module docstring); ``us``: the unit text."""
    ran = table[table["gain_p99_us"].notna()]
    if not len(ran):
        return ["No variant fits UB for this shape: nothing was timed."]
    best = ran.iloc[0]
    base = variants[variants["variant"] == "baseline"].iloc[0]
    if best["gain_p99_us"] <= 0:
        out = [f"Keep the source kernel with greedy: no variant and policy lowers its p99 "
               f"({best['p99_us'] + best['gain_p99_us']:,.1f} {us}) on this workload."]
    else:
        out = [f"{_change(best)} first: it cuts the p99 makespan by {best['gain_p99_us']:,.1f} {us} "
               f"({best['gain_p99_pct']:.1f} % of the source kernel's with greedy; "
               f"[{best['gain_p99_min_us']:,.1f}, {best['gain_p99_max_us']:,.1f}] {us} over the profile's ranges), "
               f"and {_ub_cost(best, base)}."]
        kernel_only = ran[(ran["policy"] == "greedy") & (ran["variant"] != "baseline")]
        if best["policy"] != "greedy" and len(kernel_only):
            k = kernel_only.iloc[0]
            interval = f"[{k['gain_p99_min_us']:,.1f}, {k['gain_p99_max_us']:,.1f}] {us}"
            if k["gain_p99_us"] > 0:
                out.append(f"The best kernel change alone (with greedy) is {k['variant']} ({k['fields']}): "
                           f"{k['gain_p99_us']:,.1f} {us} off the p99, {interval}.")
            else:
                out.append(f"No kernel change alone (with greedy) lowers the p99: the closest, {k['variant']} "
                           f"({k['fields']}), adds {-k['gain_p99_us']:,.1f} {us} (gain {interval}).")
    if "points_failed" in variants:
        for r in variants[variants["points_failed"] > 0].itertuples():
            out.append(f"{r.variant} raised a kernel diagnostic at {r.points_failed} of {meta['points']} profile "
                       f"points, left out of its intervals; the first: {r.point_error}")
    skipped = variants[variants["status"] != "ok"]
    if len(skipped):
        out.append("Not run: " + "; ".join(f"{r.variant} ({r.status.removeprefix('not run: ')})"
                                           for r in skipped.itertuples()) + ".")
    return out


def _change(row) -> str:
    if row["variant"] == "baseline":
        return f"Change the dispatch policy to {row['policy']} (no kernel change)"
    policy = "" if row["policy"] == "greedy" else f" with the dispatch policy {row['policy']}"
    return f"Make the kernel change {row['variant']} ({row['fields']}){policy}"


def _ub_cost(row, base) -> str:
    if row["variant"] == "baseline":
        return "costs no UB"
    extra = int(row["ub_needed_bytes"]) - int(base["ub_needed_bytes"])
    step = (f"vStep {int(row['v_step'])} (source {int(base['v_step'])})" if int(row["v_step"]) != int(base["v_step"])
            else f"the same vStep {int(row['v_step'])}")
    return f"its buffers need {int(row['ub_needed_bytes']):,} B of UB ({extra:+,} B against the source) at {step}"


def describe_advise(d: Path):
    """The page of an ``advise`` output (``results/page.py`` renders it)."""
    from cgdr_des.results.page import Page

    m = json.loads((d / "advice.json").read_text(encoding="utf-8"))
    table = pd.read_parquet(d / "advice.parquet")
    variants = pd.read_csv(d / "variants.csv", keep_default_na=False, na_values=[""])
    what = {"scenario": str(m["scenario_name"]), "profile": str(m["hardware"]),
            "fidelity": "surrogate from phase-fidelity item costs per variant", "numerics": "off",
            "advice": f"{'1 fixed batch' if m['fixed_batch'] else format(m['batches'], ',') + ' batches'} of "
                      f"{m['batch']} sequences; variants {', '.join(m['variants'])}; policies "
                      f"{', '.join(m['policies'])}; {m['points']} profile points ({len(m['fields'])} ranged "
                      f"fields, {m['samples']} joint samples), seed {m['seed']}",
            "intervals": "min and max of each gain over the nominal profile, the one-at-a-time ends and the "
                         "joint samples; item costs at each point by one probe launch per variant shifting "
                         "the calibrated tables (docs/advise.md)"}
    cols = ["rank", "variant", "policy", "status", "p50_us", "p99_us", "gain_p99_us", "gain_p99_min_us",
            "gain_p99_max_us", "gain_p99_pct", "gain_p50_us", "gain_p50_min_us", "gain_p50_max_us"]
    vcols = ["variant", "status", "fields", "item_fixed_us", "base_item_fixed_us", "chunk_us", "base_chunk_us",
             "v_step", "ub_needed_bytes", "ub_shortfall_bytes", "points_failed"]
    per_variant = variants[[c for c in vcols if c in variants]]
    return Page(what, answer(table, variants, m),
                {"Ranking (µs)": table[[c for c in cols if c in table]],
                 "The two numbers that decide the tail, per variant (µs)": per_variant})
