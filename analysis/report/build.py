"""``build_report``: sweeps -> frames -> facts and choices -> figures -> README.

The choices the text makes (headline point, heaviest law, recommended policy, verdicts) are made
here from the frames as read back from their files, by the rules stated in the text.
"""

from __future__ import annotations

import json
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from analysis.report import figures, inputs, sweeps, tables, text
from analysis.report.quotes import Quotes
from cgdr_des.kernel.policies import POLICIES
from cgdr_des.runtime import package_version

#: The GPU figures the skew section compares with (ms, H200, d = 128, forward; FlashQLA's published
#: benchmark_results_H200.txt): the same 32 768 tokens split 28 672 + 4 096 and 16 384 + 16 384.
PUBLISHED = [("fla", 8, 0.829, 0.611), ("FlashInfer", 8, 1.449, 0.830), ("FlashQLA", 8, 0.316, 0.301),
             ("fla", 32, 1.889, 1.891)]
BALANCE_LAW = "lognormal σ=1"


def build_report(out: Path, *, quick: bool, workers: int, work: Path | None = None, log=print) -> dict:
    """Run (or resume) the sweeps and write the README, its figures, frames and quotes into ``out``."""
    out = Path(out)
    work = Path(work) if work is not None else out / "_sweeps" / ("quick" if quick else "full")
    t0 = time.perf_counter()
    stamp = inputs.inputs()  # before the sweeps: an edit while they run shows as a difference in --check
    rans = sweeps.run_all(work, quick=quick, workers=workers, log=log)
    t1 = time.perf_counter()
    q = Quotes(out)
    t = frames_and_facts(q, rans, workers, quick)
    t2 = time.perf_counter()
    names = draw(t, rans, out)
    t3 = time.perf_counter()
    meta = {"version": package_version(), "quick": quick, "workers": workers, "figures": names,
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), **git_state()}
    body = "\n".join([text.section_header(q, meta), text.section_method(q, t), text.section_tail(q, t),
                      text.section_balance(q, t), text.section_long_tail(q, t), text.section_skew(q, t),
                      text.section_buffering(q, t), text.section_claims(q, t), text.section_recommendation(q, t),
                      text.section_advise(q, t), text.section_files(meta)])
    (out / "README.md").write_text(body, encoding="utf-8")
    q.write()
    now = time.perf_counter()
    meta |= {"build_s": now - t0, "inputs": stamp,
             # this invocation's wall time per stage: each sweep (0 when resumed from its store), then the rest
             "sections_s": {**{f"sweep {n}": r.wall_s for n, r in rans.items()},
                            "frames": t2 - t1, "figures": t3 - t2, "text": now - t3},
             "sweeps": sweeps.all_times(rans)}
    (out / "report.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta


def git_state() -> dict:
    """The commit the report is generated from, and whether the tree had uncommitted changes."""
    root = Path(__file__).resolve().parents[2]

    def git(*args):
        """git's stdout in the repository, stripped ("" when git is missing or fails)."""
        try:
            return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True).stdout.strip()
        except OSError:
            return ""

    status = git("status", "--porcelain", "--", "cgdr_des", "scenarios", "analysis/report/build.py",
                 "analysis/report/sweeps.py", "analysis/report/tables.py", "analysis/report/text.py")
    return {"commit": git("rev-parse", "--short=12", "HEAD") or "unknown", "dirty": bool(status)}


def frames_and_facts(q: Quotes, rans: dict, workers: int, quick: bool) -> dict:
    """Write every quoted frame and fact; return what the text and figures need (``t``)."""
    grid = q.frame("grid", tables.grid_table(rans["grid"]))
    gains = q.frame("gains", tables.policy_gains(grid))
    laws = q.frame("law_gains", tables.law_gains(grid))
    nvg = q.frame("gains_nv", tables.nv_gains(grid))
    balance = q.frame("balance", tables.balance_table(rans["balance"]))
    lt = q.frame("long_tail", tables.long_tail_table(rans["long_tail"]))
    ltp = q.frame("long_tail_policies", tables.long_tail_policies(rans["long_tail"], lt))
    sk = q.frame("skew", tables.skew_table(rans["skew"]))
    buf = q.frame("buffering", tables.buffering_table(rans["buffering"], sweeps.BUFFER_VARIANTS))
    checks = q.frame("checks", tables.checks_table(rans["checks"], rans["long_tail"]))
    sens = q.frame("sensitivity", tables.sensitivity_table(rans["sensitivity"]))
    q.frame("published", pd.DataFrame([{"system": s, "heads": h, "skewed_ms": a, "even_ms": b, "penalty": a / b,
                                        "source": "FlashQLA benchmark_results_H200.txt (H200, d=128, forward)"}
                                       for s, h, a, b in PUBLISHED]))
    adv = q.frame("advice", tables.advice_table(rans["advise"], rans["advise_long_tail"]))
    q.frame("advice_best", tables.advice_best(adv))
    q.frame("advice_variants", tables.advice_variants(rans["advise"], rans["advise_long_tail"]))
    t = choices(grid, gains, laws, balance, ltp, sk, buf, sens)
    t["advise"] = advise_choices(adv, t["headline"]["law"])
    t["advise"]["fields"] = list(rans["advise"].spec.advise.fields or [])
    t["nv_cols"] = sorted({(c, int(n)) for c, n in zip(nvg["chip"], nvg["nv"], strict=True)})
    facts(q, t, rans, grid, gains, checks, buf, sens, workers)
    t.update(grid=grid, laws=laws, balance=balance, lt=lt, sk=sk, buf=buf, sens=sens, adv=adv)
    return t


def choices(grid, gains, laws, balance, ltp, sk, buf, sens) -> dict:
    """The headline point, policy lists, heaviest law, recommendation and verdict inputs."""
    order = list(POLICIES)
    nv = 16 if 16 in set(grid["nv"]) else int(grid["nv"].min())
    batch = 16 if 16 in set(grid["batch"]) else int(grid["batch"].max())
    law = BALANCE_LAW if BALANCE_LAW in set(grid["law"]) else grid["law"].iloc[0]
    head = grid[(grid["nv"] == nv) & (grid["batch"] == batch) & (grid["law"] == law)]
    both = gains[gains["chip"] == "both"].set_index("policy")["mean_gain"]
    shippable = both.drop(labels=["optimal"], errors="ignore")
    skewed_laws = grid[(grid["policy"] == "greedy") & (grid["batch"] > 1) & ~grid["law"].str.startswith("fixed")]
    buf_pairs = list(zip(buf["shape"], buf["variant"], strict=True))
    rep = next((s for s, _ in buf_pairs if s.startswith("representative")), buf_pairs[0][0])
    return {
        "headline": {"law": law, "batch": batch, "nv": nv,
                     "points": dict(zip(head.drop_duplicates("point")["chip"], head.drop_duplicates("point")["point"],
                                        strict=True))},
        "policies_at": {pid: sorted(g["policy"], key=order.index) for pid, g in grid.groupby("point")},
        "gain_policies": sorted(shippable.index.union(both.index), key=order.index),
        "balance_law": BALANCE_LAW, "balance_chips": sorted(balance["chip"].unique()),
        "balance_policies": sorted(balance["policy"].unique(), key=order.index),
        "long_tail_policies": list(ltp["policy"]),
        "skew_policies": sorted(sk["policy"].unique(), key=order.index),
        "skew_cols": sorted({(c, int(n)) for c, n in zip(sk["chip"], sk["nv"], strict=True)}),
        "skew_free": ", ".join(f"`{p}`" for p, g in sk.groupby("policy", sort=False)
                               if (g["penalty"] <= 1.01).all()) or "none",
        "heavy_law": skewed_laws.groupby("law")["lb_ratio_p99"].mean().idxmax(),
        "buffer_rows": buf_pairs, "buffer_shape": rep, "buffer_variants": list(dict.fromkeys(buf["variant"])),
        "buffer_pipe": {(s, v): p for s, v, p in zip(buf["shape"], buf["variant"], buf["bounding_pipe"], strict=True)},
        "bounding_pipes": " or ".join(f"`{p}`" for p in sorted(buf["bounding_pipe"].unique())),
        "recommended": shippable.idxmax(),
        "contiguous": shippable[[p for p in text.CONTIGUOUS if p in shippable.index]].idxmax(),
    }


def facts(q: Quotes, t: dict, rans: dict, grid, gains, checks, buf, sens, workers: int) -> None:
    """Every derived number the text quotes that is not one cell of a frame (the ``facts`` frame)."""
    timed = sweeps.all_times(rans)
    times = list(timed.values())
    q.fact("sweeps_wall_min", sweeps.sweeps_wall(times) / 60)
    q.fact("sweeps_cpu_min", sum(x["cpu_s"] for x in times) / 60)
    q.fact("points_run", sum(x["points_run"] for n, x in timed.items() if n != sweeps.CALIBRATIONS))
    q.fact("workers", max([x["workers"] for x in times if x["points_run"]] or [workers]))
    q.fact("grid_points", grid["point"].nunique())
    q.fact("grid_batches", grid["batches"].max())
    q.fact("checks", len(checks))
    q.fact("check_makespan_err", checks["makespan_rel_err"].abs().max())
    q.fact("check_finish_err", checks["finish_max_rel_err"].abs().max())
    fs = grid[(grid["batch"] > 1) & (grid["policy"] == "float_share")]["p99_gain"]
    q.fact("gain_points", fs.size)
    q.fact("b_median", fs.median())
    q.fact("b_single_digit", (fs < 0.10).mean())
    q.fact("b_max", fs.max())
    q.fact("balance_batches", tables.frame_of(rans["balance"], "batches")["batch_index"].nunique())
    sc = rans["long_tail"].spec.base_scenario
    lengths = tables.frame_of(rans["long_tail"], "batches")["lengths"].iloc[0]
    q.fact("long_tail_avgload", -(-int(sum(lengths)) * sc.shape.nv // load_cores(sc)))
    q.fact("max_util_mte3", buf["util_MTE3"].max())
    q.fact("sens_runs", sens["point"].nunique())
    advise_facts(q, rans)
    for key, policy in (("rec", t["recommended"]), ("alt", t["contiguous"])):
        s = sens[sens["policy"] == policy]
        q.fact(f"{key}_gain_nominal", s[s["kind"] == "nominal"]["p99_gain"].iloc[0])
        q.fact(f"{key}_gain_low", s["p99_gain"].min())
        q.fact(f"{key}_gain_high", s["p99_gain"].max())
    facts = q.close_facts().set_index("key")["value"]
    t["claims"] = verdicts(t, facts, rans, q)


def advise_choices(adv: pd.DataFrame, law: str) -> dict:
    """The advise section's studies (the grid's laws in order, then long_tail), its headline study (the
    report's headline law), and the rows each table shows: per study, each variant's best row (its rank)."""
    studies = list(dict.fromkeys(adv["study"]))
    head = law if law in studies else studies[0]
    ranked = adv[adv["rank"].notna()]
    return {"studies": studies, "headline": head, "long_tail": next((s for s in studies if s == "long_tail"), None),
            "top": {s: [int(r) for r in g.sort_values("rank").drop_duplicates("variant")["rank"]]
                    for s, g in ranked.groupby("study", sort=False)},
            "variants": list(dict.fromkeys(adv["variant"])),
            "unfit": sorted(set(adv.loc[adv["rank"].isna(), "variant"]))}


def advise_facts(q: Quotes, rans: dict) -> None:
    """How the advise sweeps ran: variants, policies, batches, ranged fields, joint samples, profile points."""
    spec, lt = rans["advise"].spec, rans["advise_long_tail"].spec
    adv = q.frames["advice"]
    q.fact("advise_variants", adv["variant"].nunique())
    q.fact("advise_code_variants", adv["variant"].nunique() - 1)
    q.fact("advise_policies", adv.groupby("study")["policy"].nunique().max())
    q.fact("advise_studies", adv["study"].nunique())
    q.fact("advise_batches", spec.advise.batches or spec.base_scenario.study.batches)
    q.fact("advise_long_tail_batches", lt.advise.batches or 1)
    fields = spec.advise.fields or []
    q.fact("advise_fields", len(fields))
    q.fact("advise_samples", spec.advise.samples if spec.advise.samples is not None else 8)


def load_cores(sc) -> int:
    """The launch's block dim as the kernel sees it (the vector cores of the scenario's chip)."""
    from cgdr_des.hw import load_profile

    return load_profile(sc.hardware.profile, dict(sc.hardware.overrides) or None).aiv_num


def verdicts(t: dict, f: pd.Series, rans: dict, q: Quotes) -> dict:
    """The claims' verdicts, by the rules the text states next to each."""
    bal, laws, buf = q.frames["balance"], q.frames["law_gains"], q.frames["buffering"]
    greedy = bal[(bal["law"] == t["balance_law"]) & (bal["policy"] == "greedy")]
    lg = laws.set_index(["law", "policy"])["mean_gain"]
    single = buf[(buf["shape"] == t["buffer_shape"]) & (buf["variant"] == t["buffer_variants"][0])].iloc[0]
    return {
        "a": bool((greedy["last_core_busy_ratio_mean"] < 0.95).all()),
        "b": bool(f["b_single_digit"] >= 0.9),
        "c": bool(lg.get(("one long, rest short", "round_robin"), 0.0) < 0),
        "d": bool(lg[(t["heavy_law"], "longest_first")] > 0
                  and lg[(t["heavy_law"], "longest_first")] > lg.get(("fixed 1024", "longest_first"), 0.0)),
        "e": bool(single["serial_share"] == 1.0),
    }


def draw(t: dict, rans: dict, out: Path) -> list[str]:
    """Every figure into ``out``; returns their names (file stems)."""
    grid, nv = t["grid"], t["headline"]["nv"]
    ratios = tables.busy_ratios(rans["balance"])
    names = {"grid_ratio": lambda p: figures.grid_ratio(grid, nv, p),
             "gain_by_nv": lambda p: figures.gain_by_nv(grid, p),
             "long_tail": lambda p: figures.long_tail(t["lt"], p),
             "skew": lambda p: figures.skew(t["sk"], p, PUBLISHED[0][2] / PUBLISHED[0][3]),
             "buffering": lambda p: figures.buffering(t["buf"], p),
             "claim_a": lambda p: figures.claim_a(ratios, t["balance_law"], p),
             "claim_b": lambda p: figures.claim_b(grid, p),
             "claim_c": lambda p: figures.claim_c(_law_batches(rans, t["balance_law"]), p),
             "claim_d": lambda p: figures.claim_d(t["laws"], p),
             "claim_e": lambda p: figures.claim_e(tables.run_ops(rans["buffering"], sweeps.BUFFER_VARIANTS), p),
             "sensitivity": lambda p: figures.sensitivity(t["sens"], t["recommended"], p),
             "advise_gain": lambda p: figures.advise_gain(t["adv"], [s for s in (t["advise"]["headline"],
                                                                                  t["advise"]["long_tail"]) if s], p)}
    for chip in t["balance_chips"]:
        names[f"load_balance_{chip}"] = lambda p, chip=chip: figures.load_balance(ratios, chip, p)
    for name, fn in names.items():
        fn(out / f"{name}.png")
    return list(names)


def _law_batches(rans, law: str) -> pd.DataFrame:
    b = tables.tail_batches(rans["balance"])
    return b[b["law"] == law]
