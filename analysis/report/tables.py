"""The small frames the report quotes and plots, derived from the sweeps' stored frames.

Every function takes a :class:`~analysis.report.sweeps.Ran` (a stored sweep) and returns a DataFrame
with plain columns (chip, cores, nv, batch, law, policy, ...) and units in the column names
(``_us``, ``_cycles``, ``_share``: a fraction in [0, 1], ``_gain``: a relative change). They are
written to ``frames/*.csv`` next to the README, and the text quotes them back from those files.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from cgdr_des.hw import load_profile
from cgdr_des.scenario.sections import Kernel
from cgdr_des.sweep import expand

PIPES = ("S", "V", "MTE2", "MTE3")


def law_label(dist: dict) -> str:
    """A short name of a length law (the grid's columns)."""
    kind = dist["kind"]
    if kind == "lognormal":
        return f"lognormal σ={dist['sigma']:g}"
    if kind == "zipf":
        return f"zipf θ={dist['theta']:g}"
    if kind == "pareto":
        return f"pareto α={dist['alpha']:g}"
    if kind == "bimodal":
        return "one long, rest short" if dist["n_long"] == 1 and dist["long"] > dist["short"] else "bimodal"
    if kind == "fixed":
        return f"fixed {dist['length']}"
    return kind


def describe(ran) -> pd.DataFrame:
    """One row per point: chip, cores, nv, batch, law (from each point's resolved scenario)."""
    rows = []
    for p in expand(ran.spec):
        sc = p.scenario or {}
        hw, wl = sc.get("hardware", {}), sc.get("workload", {})
        dist = wl.get("distribution")
        rows.append({"point": p.point, "chip": hw.get("profile"), "cores": load_profile(hw["profile"]).aiv_num,
                     "nv": sc.get("shape", {}).get("nv"), "dk": sc.get("shape", {}).get("dk"),
                     "dv": sc.get("shape", {}).get("dv"), "nk": sc.get("shape", {}).get("nk"),
                     "batch": wl.get("batch") if dist else len(wl.get("lengths") or []),
                     "law": law_label(dist) if dist else "", "kernel_fields": json.dumps(sc.get("kernel", {}))})
    return pd.DataFrame(rows)


def _summary(ran) -> pd.DataFrame:
    s = pd.read_parquet(ran.store.root / "summary.parquet")
    s["point"] = s["point"].astype(int)
    return s.merge(describe(ran), on="point")


def frame_of(ran, name: str) -> pd.DataFrame:
    """A stored frame of every point of a sweep (``point`` as int)."""
    f = pd.read_parquet(ran.store.root / "frames" / name)
    f["point"] = f["point"].astype(int)
    return f


def grid_table(ran) -> pd.DataFrame:
    """Per (point, policy): makespan p50/p95/p99 (µs, p99's bootstrap interval), makespan ÷ lower bound
    at p50/p99 and its mean, the share within 1 % of the bound, and the p99 gain over greedy."""
    s = _summary(ran)
    b = frame_of(ran, "batches")
    ratio = b.groupby(["point", "policy"], observed=True)["makespan_over_lb"].quantile([0.5, 0.99]).unstack()
    ratio.columns = ["lb_ratio_p50", "lb_ratio_p99"]
    out = s.merge(ratio.reset_index(), on=["point", "policy"])
    greedy = out[out["policy"] == "greedy"].set_index("point")["p99_us"]
    out["p99_gain"] = out["point"].map(greedy) / out["p99_us"] - 1.0
    cols = ["point", "chip", "cores", "nv", "batch", "law", "policy", "batches", "p50_us", "p95_us", "p99_us",
            "p99_lo_us", "p99_hi_us", "lb_ratio_p50", "lb_ratio_p99", "makespan_over_lb_mean", "within_1pct_of_lb",
            "p99_gain"]
    return out[cols].sort_values(["point", "policy"], key=_policy_order).reset_index(drop=True)


def _policy_order(col: pd.Series) -> pd.Series:
    from cgdr_des.kernel.policies import POLICIES

    order = {p: i for i, p in enumerate(POLICIES)}
    return col.map(order) if col.name == "policy" else col


def policy_gains(grid: pd.DataFrame) -> pd.DataFrame:
    """Per (chip or "both", policy): the p99 gain over greedy across the grid points with more than one
    sequence (B = 1 leaves nothing to deal out): mean, median, min, max, share of points it beats greedy."""
    g = grid[(grid["batch"] > 1) & (grid["policy"] != "greedy")]
    rows = []
    for chip, part in [("both", g), *g.groupby("chip", sort=True)]:
        for policy, grp in part.groupby("policy", sort=False):
            x = grp["p99_gain"].to_numpy()
            rows.append({"chip": chip, "policy": policy, "points": x.size, "mean_gain": x.mean(),
                         "median_gain": float(np.median(x)), "min_gain": x.min(), "max_gain": x.max(),
                         "beats_greedy_share": float((x > 0.001).mean()), "loses_share": float((x < -0.001).mean())})
    return pd.DataFrame(rows)


def nv_gains(grid: pd.DataFrame) -> pd.DataFrame:
    """Per (chip, nv, policy): the mean p99 gain over greedy (points with B > 1)."""
    g = grid[(grid["batch"] > 1) & (grid["policy"] != "greedy")]
    out = g.groupby(["chip", "nv", "policy"], sort=False)["p99_gain"].mean().reset_index()
    return out.rename(columns={"p99_gain": "mean_gain"})


def law_gains(grid: pd.DataFrame) -> pd.DataFrame:
    """Per (law, policy): the mean and largest p99 gain over greedy (points with B > 1, both chips)."""
    g = grid[(grid["batch"] > 1) & (grid["policy"] != "greedy")]
    out = g.groupby(["law", "policy"], sort=False)["p99_gain"].agg(["mean", "max", "min"]).reset_index()
    return out.rename(columns={"mean": "mean_gain", "max": "max_gain", "min": "min_gain"})


def balance_table(ran) -> pd.DataFrame:
    """Per (chip, law, policy): how busy time spreads over the cores, and where the last core stands.

    ``busy_ratio`` is a core's busy time ÷ its batch's mean core busy time; ``last_core_*`` look at the
    highest-numbered core (the one the source's Ceil avgload leaves the remainder to)."""
    cf = frame_of(ran, "core_finish").merge(describe(ran)[["point", "chip", "law"]], on="point")
    rows = []
    for (chip, law, policy), grp in cf.groupby(["chip", "law", "policy"], sort=False, observed=True):
        busy = grp.sort_values(["batch_index", "core"])["busy_cycles"].to_numpy(np.float64)
        fin = grp.sort_values(["batch_index", "core"])["finish_cycles"].to_numpy(np.float64)
        m = grp["core"].nunique()
        busy, fin = busy.reshape(-1, m), fin.reshape(-1, m)
        ratio = busy / busy.mean(axis=1, keepdims=True)
        rows.append({"chip": chip, "law": law, "policy": policy, "cores": m, "batches": busy.shape[0],
                     "within_10pct_share": float((np.abs(ratio - 1) <= 0.1).mean()),
                     "idle_core_share": float((busy == 0).mean()), "busy_ratio_max_p99": float(
                         np.percentile(ratio.max(axis=1), 99)),
                     "last_core_busy_ratio_mean": float(ratio[:, -1].mean()),
                     "last_core_idle_share": float((busy[:, -1] == 0).mean()),
                     "last_core_finish_share": float((fin[:, -1] / fin.max(axis=1)).mean())})
    return pd.DataFrame(rows)


def busy_ratios(ran) -> pd.DataFrame:
    """Every (chip, law, policy, batch, core)'s busy ÷ its batch's mean busy (the histograms' data)."""
    cf = frame_of(ran, "core_finish").merge(describe(ran)[["point", "chip", "law"]], on="point")
    mean = cf.groupby(["point", "policy", "batch_index"], observed=True)["busy_cycles"].transform("mean")
    cf["busy_ratio"] = cf["busy_cycles"] / mean
    return cf[["chip", "law", "policy", "batch_index", "core", "busy_ratio"]]


def long_tail_table(ran) -> pd.DataFrame:
    """Per (policy, core) of the long_tail batch: items, tokens, busy and finish (µs), and how much of
    the busy time is per-item fixed work (each item counted at the cost of a 1-token item)."""
    from cgdr_des.tail import calibrate

    # the point's scenario, the sweep's [set] applied: the shape the study ran (--quick changes it), so
    # these are the costs its dispatch used, read from the calibration cache rather than measured again
    sc = expand(ran.spec)[0].scenario
    s, hw = sc["shape"], sc["hardware"]
    costs = calibrate(hw["profile"], nk=s["nk"], nv=s["nv"], dk=s["dk"], dv=s["dv"], has_gamma=s["has_gamma"],
                      buffer_num=sc["kernel"]["buffer_num"], overrides=dict(hw.get("overrides") or {}) or None)
    fixed = int(costs.item_cycles(np.array([1]), np.array([-1]))[0])
    cf = frame_of(ran, "core_finish")
    cf = cf[cf["batch_index"] == 0].copy()
    mhz = costs.clock_mhz
    cf["busy_us"] = cf["busy_cycles"] / mhz
    cf["finish_us"] = cf["finish_cycles"] / mhz
    cf["fixed_us"] = cf["items"] * fixed / mhz
    cf["per_token_us"] = cf["busy_us"] - cf["fixed_us"]
    cf["one_token_item_us"] = fixed / mhz
    cf["critical"] = cf["finish_cycles"] == cf.groupby("policy", observed=True)["finish_cycles"].transform("max")
    cols = ["policy", "core", "items", "tokens", "busy_us", "fixed_us", "per_token_us", "finish_us", "critical",
            "one_token_item_us"]
    return cf[cols].sort_values(["policy", "core"], key=_policy_order).reset_index(drop=True)


def long_tail_policies(ran, cores: pd.DataFrame) -> pd.DataFrame:
    """Per policy on the long_tail batch: makespan (µs), ÷ lower bound, and its critical core's load."""
    b = frame_of(ran, "batches").set_index("policy")
    rows = []
    for policy, grp in cores.groupby("policy", sort=False):
        crit = grp[grp["critical"]].iloc[0]
        rows.append({"policy": policy, "makespan_us": float(b.loc[policy, "makespan_us"]),
                     "makespan_over_lb": float(b.loc[policy, "makespan_over_lb"]),
                     "lower_bound_us": float(b.loc[policy, "makespan_us"] / b.loc[policy, "makespan_over_lb"]),
                     "critical_core": int(crit["core"]), "critical_cores": int(grp["critical"].sum()),
                     "critical_items": int(crit["items"]), "critical_tokens": int(crit["tokens"]),
                     "critical_busy_us": float(crit["busy_us"]),
                     "critical_fixed_share": float(crit["fixed_us"] / crit["busy_us"]),
                     "idle_cores": int((grp["items"] == 0).sum()),
                     "max_tokens_core_busy_us": float(grp.sort_values("tokens").iloc[-1]["busy_us"])})
    return pd.DataFrame(rows)


def skew_table(ran) -> pd.DataFrame:
    """Per (chip, nv, policy): the skewed (28 672 + 4 096) and even (2 x 16 384) makespans and their ratio."""
    s = _summary(ran)
    s["split"] = np.where(s["law"] == "fixed 16384", "even", "skewed")
    wide = s.pivot_table(index=["chip", "cores", "nv", "policy"], columns="split", values="p50_us").reset_index()
    wide = wide.rename(columns={"even": "even_us", "skewed": "skewed_us"})
    wide["penalty"] = wide["skewed_us"] / wide["even_us"]
    wide.columns.name = None
    return wide.sort_values(["chip", "nv", "policy"], key=_policy_order).reset_index(drop=True)


def checks_table(*rans) -> pd.DataFrame:
    """Every stored phase-fidelity check of these tail sweeps, with its point's chip, nv, batch and law."""
    parts = []
    for ran in rans:
        c = frame_of(ran, "checks").merge(describe(ran)[["point", "chip", "nv", "batch", "law"]], on="point")
        parts.append(c.assign(sweep=ran.spec.name))
    cols = ["sweep", "point", "chip", "nv", "batch", "law", "kind", "policy", "makespan_rel_err",
            "finish_max_rel_err", "within_bound"]
    return pd.concat(parts, ignore_index=True)[cols]


SHAPE_NAMES = {(16, 16, 128, 128): "representative (16, 16, 128, 128)",
               (8, 8, 128, 128): "long_t512_batch2 (8, 8, 128, 128)", (8, 8, 64, 64): "small (8, 8, 64, 64)",
               (1, 1, 128, 256): "low_head_dv256 (1, 1, 128, 256)",
               (16, 32, 128, 128): "qwen3_next_gqa (16, 32, 128, 128)"}


#: the kernel fields a buffering variant may set: a run matches a variant when all of them agree
ALL_VARIANT_FIELDS = ("buffer_num", "keep_tiling", "prefetch", "state_double_buffer")


def buffering_table(ran, variants: dict) -> pd.DataFrame:
    """Per (shape, variant): makespan (µs), speedup over the first variant, the bounding pipe (the
    busiest) and the out-queue chain measured in the ops frame (:func:`out_chain`)."""
    s = _summary(ran)
    ops = frame_of(ran, "ops")
    fields = sorted({k for v in variants.values() for k in v})      # every field some variant sets
    defaults = Kernel().model_dump()
    label = {json.dumps({k: {**defaults, **v}[k] for k in fields}, sort_keys=True): name
             for name, v in variants.items()}
    rows = []
    for _, r in s.iterrows():
        kernel = json.loads(r["kernel_fields"])
        key = json.dumps({k: kernel.get(k, defaults[k]) for k in fields}, sort_keys=True)
        util = {p: float(r[f"util_{p}"]) for p in PIPES}
        bound = max(util, key=util.get)
        shape = (int(r["nk"]), int(r["nv"]), int(r["dk"]), int(r["dv"]))
        rows.append({"shape": SHAPE_NAMES.get(shape, str(shape)), "variant": label.get(key, key),
                     "makespan_us": float(r["makespan_us"]), "bounding_pipe": bound, "bounding_util": util[bound],
                     **{f"util_{p}": u for p, u in util.items()}, **out_chain(ops[ops["point"] == r["point"]]),
                     "point": int(r["point"])})
    out = pd.DataFrame(rows)
    first = out.groupby("shape")["makespan_us"].transform("first")
    out["speedup"] = first / out["makespan_us"]
    return out


def out_chain(ops: pd.DataFrame) -> dict:
    """The out-queue chain (Cast -> MTE3 copy -> free) of one run's ``WriteAttnTileToGm`` phases.

    ``serial_share``: share of write-outs whose V work starts after the previous write-out's MTE3 copy
    ended on that core (1.0: the chain never overlaps itself); ``v_wait_mte3_cycles``: V's waits on the
    MTE3->V flag, summed over cores; ``copy_v_overlap_share``: share of the MTE3 copy time during which V
    is busy with other work (1.0: the copy is hidden behind the next phases)."""
    wo = ops[ops["phase"] == "S6b_WriteOut"]
    after = total = waits = copy = hidden = 0
    for _core, g in wo.groupby("core"):
        v = g[(g["pipe"] == "V") & ~g["op"].astype(str).str.startswith(("WaitFlag", "SetFlag"))]
        cp = g[(g["pipe"] == "MTE3") & (g["op"] == "DataCopy:UB2GM")].sort_values("start")
        first_v = v.groupby(["batch", "head", "vtile", "chunk"])["start"].min().sort_values().to_numpy()
        ends = cp["end"].to_numpy()
        after += int((first_v[1:] >= ends[:-1]).sum()) if len(first_v) > 1 and len(ends) >= len(first_v) else 0
        total += max(len(first_v) - 1, 0)
        waits += int((g["end"] - g["start"])[(g["pipe"] == "V") & (g["op"] == "WaitFlag:MTE3_V")].sum())
        busy = ops[(ops["core"] == _core) & (ops["pipe"] == "V") & ~ops["op"].astype(str).str.startswith("WaitFlag")]
        vs, ve = busy["start"].to_numpy(), busy["end"].to_numpy()
        for a, b in zip(cp["start"].to_numpy(), ends, strict=True):
            copy += b - a
            hidden += int(np.clip(np.minimum(ve, b) - np.maximum(vs, a), 0, None).sum())
    return {"write_outs": int(len(wo[(wo["pipe"] == "MTE3") & (wo["op"] == "DataCopy:UB2GM")])),
            "serial_share": after / total if total else 1.0, "v_wait_mte3_cycles": waits,
            "copy_cycles": int(copy), "copy_v_overlap_share": hidden / copy if copy else 0.0}


def sensitivity_table(ran) -> pd.DataFrame:
    """Per (sensitivity profile point, policy): p99 (µs) and the p99 gain over greedy at the same point,
    from the sensitivity sweep's one advise point (the source kernel alone: its ``points`` frame holds
    the p99 of every policy at the nominal profile, each ranged field at each end ("oat") and the joint
    samples ("lhs")). A point whose probe raised a kernel diagnostic has no rows. ``point`` here is the
    frame's ``profile_point`` (the sweep holds one point)."""
    path = next((ran.store.root / "frames" / "points").glob("point=*/part-0.parquet"))
    f = pd.read_parquet(path).rename(columns={"profile_point": "point"})
    f = f[(f["variant"] == "baseline") & (f["error"].fillna("") == "") & f["p99_us"].notna()].copy()
    greedy = f[f["policy"] == "greedy"].set_index("point")["p99_us"]
    f["p99_gain"] = f["point"].map(greedy) / f["p99_us"] - 1.0
    f[["param", "end"]] = f[["param", "end"]].fillna("")
    return f[["point", "kind", "param", "end", "policy", "p99_us", "p99_gain"]].reset_index(drop=True)


def tail_batches(ran) -> pd.DataFrame:
    """The stored batches frame of a tail sweep, with each point's chip and law."""
    b = frame_of(ran, "batches").merge(describe(ran)[["point", "chip", "law"]], on="point")
    return b.drop(columns=["lengths"])


def run_ops(ran, variants: dict, shape_point: int = 0) -> dict[str, pd.DataFrame]:
    """The ops frame of the first shape's point under each variant (label -> frame)."""
    d = describe(ran)
    ops = frame_of(ran, "ops")
    first = d[(d["nk"] == d["nk"].iloc[shape_point]) & (d["nv"] == d["nv"].iloc[shape_point])
              & (d["dk"] == d["dk"].iloc[shape_point]) & (d["dv"] == d["dv"].iloc[shape_point])]
    out = {}
    for label, fields in variants.items():
        for _, r in first.iterrows():
            kernel = {**Kernel().model_dump(), **json.loads(r["kernel_fields"])}
            if all(kernel[k] == {**Kernel().model_dump(), **fields}[k] for k in ALL_VARIANT_FIELDS):
                out[label] = ops[ops["point"] == r["point"]]
    return out


#: the advice frame's columns the report keeps (docs/frames.md §17), in this order
ADVICE_COLS = ["rank", "variant", "policy", "status", "fields", "p50_us", "p99_us", "gain_p99_us", "gain_p99_min_us",
               "gain_p99_max_us", "gain_p99_pct", "gain_p50_us", "gain_p50_min_us", "gain_p50_max_us",
               "item_fixed_us", "chunk_us", "base_item_fixed_us", "base_chunk_us", "v_step", "ub_needed_bytes",
               "ub_shortfall_bytes"]


def advice_table(*rans) -> pd.DataFrame:
    """Every (study, variant, policy) row of the advise sweeps, ranked within its study. ``study`` is the
    point's length law, or the sweep's base scenario (``long_tail``) for a sweep without a law axis;
    ``gain_*_pct`` are shares of the study's source-kernel p99 (p50) with greedy, in percent; the p99
    gain's interval in percent is taken point by point (:func:`_point_pct`)."""
    s = pd.concat([_with_study(ran, _summary(ran)) for ran in rans], ignore_index=True)
    ref = s[(s["variant"] == "baseline") & (s["policy"] == "greedy")].set_index("study")
    s["base_p99_us"] = s["study"].map(ref["p99_us"])
    s["base_p50_us"] = s["study"].map(ref["p50_us"])
    s["ub_extra_bytes"] = s["ub_needed_bytes"] - s["study"].map(ref["ub_needed_bytes"])
    s["gain_p99_pct"] = 100.0 * s["gain_p99_us"] / s["base_p99_us"]
    s = s.merge(pd.concat([_point_pct(ran) for ran in rans], ignore_index=True), on=["study", "variant", "policy"],
                how="left")
    s["gain_p50_pct"] = 100.0 * s["gain_p50_us"] / s["base_p50_us"]
    s["rank"] = s["rank"].astype("Int64")
    cols = ["study", "chip", "nv", "batch", *ADVICE_COLS, "gain_p99_min_pct", "gain_p99_max_pct", "gain_p50_pct",
            "base_p99_us", "base_p50_us", "ub_extra_bytes"]
    return s[cols].sort_values(["study", "rank"], key=_study_order, na_position="last").reset_index(drop=True)


def _with_study(ran, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (rows with the sweep's ``point`` and ``law``) with a ``study`` column: the point's length law,
    or the sweep's base scenario name when the sweep has no law axis (long_tail)."""
    laws = "workload.distribution" in ran.spec.grid
    return df.assign(study=df["law"] if laws else ran.spec.base_scenario.name)


def _point_pct(ran) -> pd.DataFrame:
    """Per (study, variant, policy): the least and largest p99 gain over the profile points as a percent of
    the source kernel's p99 with greedy *at the same point* (a slower point has a larger p99, so the
    nominal p99 is not the right denominator), from each sweep point's stored ``points`` frame (its
    ``profile_point`` column; ``point=<id>`` in the path is the sweep point)."""
    parts = []
    for path in sorted((ran.store.root / "frames" / "points").glob("point=*/part-0.parquet")):
        f = pd.read_parquet(path)
        f = f[(f["error"].fillna("") == "") & f["gain_p99_us"].notna()]
        base = f[(f["variant"] == "baseline") & (f["policy"] == "greedy")].set_index("profile_point")["p99_us"]
        f = f.assign(pct=100.0 * f["gain_p99_us"] / f["profile_point"].map(base))
        g = f.groupby(["variant", "policy"])["pct"].agg(gain_p99_min_pct="min", gain_p99_max_pct="max").reset_index()
        parts.append(g.assign(point=int(path.parent.name.partition("=")[2])))
    if not parts:
        return pd.DataFrame(columns=["study", "variant", "policy", "gain_p99_min_pct", "gain_p99_max_pct"])
    g = pd.concat(parts, ignore_index=True).merge(describe(ran)[["point", "law"]], on="point")
    return _with_study(ran, g).drop(columns=["point", "law"])


def _study_order(col: pd.Series) -> pd.Series:
    if col.name != "study":
        return col
    from analysis.report.figures import LAW_ORDER

    order = {law: i for i, law in enumerate(LAW_ORDER)}
    return col.map(lambda s: order.get(s, len(order)))


def advice_best(adv: pd.DataFrame) -> pd.DataFrame:
    """Per study, five rows against the source kernel with greedy (``choice``): ``source`` (that
    reference), ``policy only`` (the best policy on the source kernel), ``code only`` (the best variant
    with greedy), ``single change`` (the best variant that sets one ``[kernel]`` field, with greedy: a
    union such as ``code_all`` is several changes) and ``combined`` (the best (variant, policy) row: rank 1)."""
    rows = []
    ok = adv[adv["rank"].notna()]
    for study, g in ok.groupby("study", sort=False):
        base, greedy = g[g["variant"] == "baseline"], g[g["policy"] == "greedy"]
        changes = greedy[greedy["variant"] != "baseline"]
        picks = {"source": base[base["policy"] == "greedy"], "policy only": base, "code only": changes,
                 "single change": changes[changes["fields"].str.count("=") == 1], "combined": g}
        for choice, rows_of in picks.items():
            if rows_of.empty:
                continue
            r = rows_of.sort_values("rank").iloc[0]
            rows.append({"study": study, "choice": choice, **{c: r[c] for c in (
                "variant", "policy", "fields", "p99_us", "p50_us", "gain_p99_us", "gain_p99_pct", "gain_p99_min_pct",
                "gain_p99_max_pct", "gain_p50_pct", "item_fixed_us", "chunk_us", "ub_needed_bytes", "ub_extra_bytes",
                "base_p99_us")}})
    return pd.DataFrame(rows)


def advice_variants(*rans) -> pd.DataFrame:
    """Per (study, variant): status, the two numbers (µs) beside the source kernel's, their change in
    percent, UB bytes, and the profile points whose probe failed (from each point's ``variants`` frame)."""
    v = pd.concat([_with_study(ran, frame_of(ran, "variants").merge(describe(ran)[["point", "law"]], on="point"))
                   for ran in rans], ignore_index=True)
    v["item_fixed_change_pct"] = 100.0 * (v["item_fixed_us"] / v["base_item_fixed_us"] - 1.0)
    v["chunk_change_pct"] = 100.0 * (v["chunk_us"] / v["base_chunk_us"] - 1.0)
    cols = ["study", "variant", "status", "fields", "item_fixed_us", "base_item_fixed_us", "item_fixed_change_pct",
            "chunk_us", "base_chunk_us", "chunk_change_pct", "v_step", "ub_needed_bytes", "base_ub_needed_bytes",
            "ub_shortfall_bytes", "points_failed"]
    return v[[c for c in cols if c in v]].sort_values("study", key=_study_order, kind="stable").reset_index(drop=True)
