"""``run_advice``: a tail study per (kernel variant x dispatch policy), ranked by what it buys at p99.

Every variant times the *same* sampled batches (common random numbers: a gain is not blurred by a
second sample), from its own calibrated item costs (:mod:`cgdr_des.item_costs`, keyed by the variant),
through the tail surrogate (:mod:`cgdr_des.tail.surrogate`). A scenario with a fixed batch is one
batch: its p50 and p99 are that batch's makespan. A gain is ``p(baseline, greedy) - p(variant,
policy)`` in µs, positive when the change helps; its interval is the minimum and maximum of that gain
over the nominal profile, the one-at-a-time ends of every ranged profile field and the joint
Latin-hypercube samples (:mod:`cgdr_des.timing.space`, as ``cgdr-des sensitivity`` draws them), each
point's item costs obtained by the probe shift of :mod:`cgdr_des.advise.costs`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from cgdr_des.advise import costs as item
from cgdr_des.advise.ranking import REFERENCE_POLICY, rank_rows
from cgdr_des.advise.settings import BASELINE, Setting, changed_fields, parse_names, resolve
from cgdr_des.errors import InputError

#: joint samples per advice (sensitivity's default is 32: each point here costs a probe per variant)
DEFAULT_SAMPLES = 8


@dataclass
class Advice:
    """The frames of one advice (``docs/frames.md`` lists every column) and its settings."""

    table: pd.DataFrame      # one row per (variant, policy), ranked
    variants: pd.DataFrame   # one row per variant: status, the two numbers, UB
    batches: pd.DataFrame    # one row per (variant, policy, batch): makespan
    points: pd.DataFrame     # one row per (profile point, variant, policy): p50, p99, gains
    meta: dict = field(default_factory=dict)


def run_advice(sc, *, variants=None, policies=None, batches: int | None = None, samples: int = DEFAULT_SAMPLES,
               fields=None, progress=None) -> Advice:
    """Rank every (variant, policy) of scenario ``sc`` by its p99 gain over the source kernel with greedy
    (see the module docstring). ``variants``: names (:mod:`cgdr_des.advise.settings`; None: the default
    list); ``policies``: policy names (None: ``[study] policies``, else every one that applies to every
    variant); ``batches``: None takes ``[study] batches``; ``samples``, ``fields``: the joint samples and
    ranged fields of the intervals (``fields`` None: all). ``progress``: stages on stderr."""
    from cgdr_des.results.progress import Progress

    progress = progress if progress is not None else Progress.off()
    req = check_request(sc, variants, policies, batches, samples, fields)
    seed = sc.workload.seed
    settings = resolve(sc, req.names)
    if not settings[0].runs:  # every gain is measured from the source kernel: nothing to rank without it
        raise InputError("kernel", BASELINE, f"a shape the source kernel fits ({settings[0].status})")
    ran = [s for s in settings if s.runs]
    with progress.stage(f"calibrating item costs of {len(ran)} variants (phase fidelity, or the cache)",
                        len(ran), "variants") as stage:
        costs = {}
        for s in ran:
            costs[s.name] = _costs(s, req.profile)
            stage.advance()
    lengths = _lengths(sc, req.batches, seed)
    pols = _policy_names(req.policies, costs, lengths.shape[1])
    batch_rows, nominal = _time(ran, costs, lengths, pols, progress)
    points, per_point = _intervals(sc, req, ran, costs, lengths, pols, progress)
    table = rank_rows(settings, costs, pols, nominal, per_point, _bootstrap(batch_rows, sc.study.bootstrap, seed))
    prof = req.profile
    meta = {"scenario_name": sc.name, "hardware": prof.name, "clock_mhz": float(prof.clock_mhz),
            "batch": int(lengths.shape[1]), "batches": int(lengths.shape[0]), "seed": int(seed),
            "fixed_batch": sc.workload.distribution is None, "variants": req.names, "policies": pols,
            "samples": int(samples), "fields": [p.name for p in req.params], "points": len(req.plan),
            "shape": {"nk": sc.shape.nk, "nv": sc.shape.nv, "dk": sc.shape.dk, "dv": sc.shape.dv}}
    return Advice(table, variant_rows(settings, costs, points), batch_rows, points, meta)


@dataclass(frozen=True)
class Request:
    """An advice's checked inputs: variant names, policies (None: the default), batches, the loaded
    profile, its ranged parameters and the profile points (kind, field, end, point), nominal first."""

    names: list[str]
    policies: list[str] | None
    batches: int
    profile: object
    params: list
    plan: list[tuple]


def check_request(sc, variants=None, policies=None, batches: int | None = None, samples: int = DEFAULT_SAMPLES,
                  fields=None) -> Request:
    """Every input of :func:`run_advice` checked, cheaply, before any calibration (InputError otherwise)."""
    from cgdr_des.bounds import MAX_SAMPLES, MAX_STUDY_BATCHES, check_count, check_seed
    from cgdr_des.hw import load_profile
    from cgdr_des.kernel.policies import POLICIES
    from cgdr_des.timing.space import latin_hypercube, one_at_a_time, select

    if sc.kernel.kernel_version != "vector":
        raise InputError("kernel.kernel_version", sc.kernel.kernel_version, "vector: advise ranks changes to "
                         "the vector kernel")
    if isinstance(samples, bool) or not isinstance(samples, int) or not 0 <= samples <= MAX_SAMPLES:
        raise InputError("--samples", samples, f"an integer in [0, {MAX_SAMPLES:,}] (each costs a probe per variant)")
    check_seed("workload.seed", sc.workload.seed)
    names = parse_names(variants)
    requested = policies if policies is not None else sc.study.policies
    requested = None if requested is None else list(dict.fromkeys(requested))
    for name in requested or ():
        if name not in POLICIES:
            raise InputError("policy", name, f"one of {', '.join(POLICIES)}")
    if requested is not None and REFERENCE_POLICY not in requested:  # the reference every gain is measured from
        requested = [REFERENCE_POLICY, *requested]
    n = sc.study.batches if batches is None else check_count("--batches", batches, 1, MAX_STUDY_BATCHES,
                                                              "as [study] batches")
    prof = load_profile(sc.profile_ref(), dict(sc.hardware.overrides) or None)
    params = select(prof, fields, "vector")
    plan = [("nominal", None, None, {})] + [("oat", name, end, {name: x})
                                            for name, end, x in one_at_a_time(prof, params)]
    plan += [("lhs", None, None, pt) for pt in latin_hypercube(params, samples, sc.workload.seed)]
    return Request(names, requested, n, prof, params, plan)


def _costs(s: Setting, prof):
    from cgdr_des.tail.calibration import costs_for

    sh, k = s.scenario.shape, s.scenario.kernel
    return costs_for(prof, sh.nk, sh.nv, sh.dk, sh.dv, sh.has_gamma, k.buffer_num, k.tiling_options())


def _lengths(sc, n: int, seed: int) -> np.ndarray:
    """``(n, batch)`` sampled lengths, or the scenario's one fixed batch ``(1, batch)``."""
    from cgdr_des.tail.study import sample_batches

    if sc.workload.distribution is None:
        return np.asarray(sc.lengths(), np.int64)[None, :]
    return sample_batches(sc.workload.distribution, sc.workload.batch, n, seed)


def _policy_names(requested, costs: dict, batch: int) -> list[str]:
    """The policies every studied variant can run (``optimal`` only where every variant's batches are small)."""
    from cgdr_des.tail.study import _policies

    names = None
    for c in costs.values():
        own = _policies(requested, c, batch)
        names = own if names is None else [p for p in names if p in own]
    return names or []


def _time(ran: list[Setting], costs: dict, lengths: np.ndarray, pols: list[str], progress):
    """Every (variant, policy)'s batch rows and its nominal (p50, p99) in µs."""
    from cgdr_des.tail.study import _frames
    from cgdr_des.tail.surrogate import estimate, items_of

    frames, nominal = [], {}
    n = lengths.shape[0]
    with progress.stage(f"timing {n:,} batch{'es' if n != 1 else ''} x {len(ran)} variants x {len(pols)} policies",
                        len(ran), "variants") as stage:
        for s in ran:
            c = costs[s.name]
            items = items_of(c, lengths)
            for p in pols:
                rows, _ = _frames(p, lengths, estimate(c, lengths, p, items=items), c)
                rows = rows.drop(columns=["lengths"])
                rows.insert(0, "variant", s.name)
                frames.append(rows)
                nominal[s.name, p] = tuple(np.percentile(rows["makespan_us"].to_numpy(np.float64), [50, 99]))
            stage.advance()
    return pd.concat(frames, ignore_index=True), nominal


def _bootstrap(batch_rows: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """The tail summary (percentiles and their 95 % bootstrap intervals) per (variant, policy)."""
    from cgdr_des.tail.summary import summarise

    parts = []
    for variant, grp in batch_rows.groupby("variant", sort=False):
        part = summarise(grp, n_boot=n_boot, seed=seed)
        part.insert(0, "variant", variant)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _intervals(sc, req: Request, ran, costs, lengths, pols, progress):
    """Per profile point (nominal first), variant and policy: p50, p99 (µs at the point's clock) and
    the gains over the baseline with greedy at the same point."""
    from cgdr_des.hw import load_profile
    from cgdr_des.timing.evaluate import Evaluator

    ev = Evaluator(sc)
    ub = int(ev.profile.ub_usable_bytes)
    rows, per_point = [], {}
    with progress.stage(f"probing {len(ran)} variants at {len(req.plan)} profile points (the gain intervals)",
                        len(ran) * len(req.plan), "probes") as stage:
        keys = [json.dumps(ev.overrides(pt), sort_keys=True, default=str) for *_, pt in req.plan]
        profiles = {}
        for key, (*_, pt) in zip(keys, req.plan, strict=True):
            if key not in profiles:
                profiles[key] = load_profile(sc.profile_ref(), ev.overrides(pt) or None)
        for s in ran:
            seen: dict[str, dict | str] = {}
            base_probe = _probe(s.scenario, profiles[keys[0]], ub)
            for i, (kind, name, end, pt) in enumerate(req.plan):
                if keys[i] not in seen:
                    seen[keys[i]] = _at_point(costs[s.name], base_probe, s.scenario, profiles[keys[i]], ub,
                                              lengths, pols, nominal=i == 0)
                got = seen[keys[i]]
                for p in pols:
                    p50, p99 = (np.nan, np.nan) if isinstance(got, str) else got[p]
                    if not isinstance(got, str):
                        per_point.setdefault((s.name, p), []).append((i, p50, p99))
                    rows.append({"profile_point": i, "kind": kind, "param": name, "end": end,
                                 "values": json.dumps(pt, sort_keys=True, default=str), "variant": s.name,
                                 "policy": p, "p50_us": p50, "p99_us": p99,
                                 "error": got if isinstance(got, str) else ""})
                stage.advance()
    points = pd.DataFrame(rows)
    base = points[(points["variant"] == BASELINE) & (points["policy"] == REFERENCE_POLICY)].set_index("profile_point")
    for q in ("p50", "p99"):
        points[f"gain_{q}_us"] = points["profile_point"].map(base[f"{q}_us"]) - points[f"{q}_us"]
    return points, per_point


def _probe(sc, prof, ub: int):
    """The probe launch, or the first line of the kernel diagnostic it raised (a deadlock, a hazard)."""
    from cgdr_des.errors import KernelDiagnostic

    try:
        return item.probe(sc, prof, ub)
    except KernelDiagnostic as exc:
        return str(exc).partition("\n")[0][:300]


def _at_point(costs, base_probe, sc, prof, ub: int, lengths, pols, *, nominal: bool) -> dict | str:
    """{policy: (p50, p99)} in µs at one profile point, or why the variant could not be timed there."""
    from cgdr_des.tail.surrogate import estimate, items_of

    if not nominal:
        if isinstance(base_probe, str):
            return f"the nominal probe failed: {base_probe}"
        probe = _probe(sc, prof, ub)
        if isinstance(probe, str):
            return probe
        costs = item.shifted(costs, base_probe, probe, prof.clock_mhz)
    items = items_of(costs, lengths)
    return {p: tuple(np.percentile(estimate(costs, lengths, p, items=items).makespan / costs.clock_mhz, [50, 99]))
            for p in pols}


def variant_rows(settings: list[Setting], costs: dict, points: pd.DataFrame) -> pd.DataFrame:
    """One row per variant: status, changed fields, the two numbers beside the baseline's, tiling, UB,
    and the profile points where its probe raised a kernel diagnostic (``points_failed``, the first)."""
    bad_rows = points[points["error"] != ""].drop_duplicates(["variant", "profile_point"])
    failed = {v: list(g["error"]) for v, g in bad_rows.groupby("variant", sort=False)}
    base = item.two_numbers(costs[BASELINE]) if BASELINE in costs else {}
    base_t = next((s.tiling for s in settings if s.name == BASELINE and s.runs), None)
    rows = []
    for s in settings:
        row = {"variant": s.name, "status": s.status, "fields": changed_fields(s.fields)}
        if s.runs:
            row |= item.two_numbers(costs[s.name])
            row |= {"v_step": s.tiling.v_step, "v_tiles": s.tiling.v_tile_count,
                    "ub_needed_bytes": s.tiling.ub_needed_bytes}
        row |= {f"base_{k}": v for k, v in base.items()}
        if base_t is not None:
            row |= {"base_v_step": base_t.v_step, "base_ub_needed_bytes": base_t.ub_needed_bytes}
        row["ub_shortfall_bytes"] = s.shortfall_bytes
        bad = failed.get(s.name, [])
        row |= {"points_failed": len(bad), "point_error": bad[0] if bad else ""}
        rows.append(row)
    return pd.DataFrame(rows)

