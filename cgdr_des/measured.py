"""Measured end-to-end latencies beside the predictions of each program, with ranges
(``cgdr-des measured``; docs/kernel-cube.md §7).

A *hypothesis* is a program plus an assumption about the device: the vector-only kernel; the
Cube-era kernel on the profile's UB (its fast path on every full chunk); the Cube-era kernel on a
device reporting less than the 247 552 B the 128 bucket needs (every dk = 128 chunk on the vector
path). For each shape and hypothesis the launch is simulated three times (``phase`` fidelity,
numerics off): at the profile's values, at the *fast corner* and at the *slow corner* of the ranged
profile fields (every cost field at its low end and every rate at its high end, or the other way
round). The end-to-end prediction adds the ranged ``host_overhead_cycles``: nominal + nominal
overhead, fast corner + lowest overhead, slow corner + highest overhead.

Per hypothesis the verdict answers two questions: does every measurement lie inside its predicted
range, and does one constant host overhead (fitted, least squares) or one constant factor on the
device time explain all six within a stated tolerance. A constant overhead must lie inside the
overhead's range to count as an explanation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from cgdr_des.errors import CgdrError
from cgdr_des.hw.ranges import get_param
from cgdr_des.timing.evaluate import Evaluator
from cgdr_des.timing.measurements import read_measurements

#: a device reporting this much UB cannot fit the 128 bucket's fast path (it needs 247 552 B)
SHORT_UB_BYTES = 240 * 1024
#: ranged parameters for which a *higher* value makes the launch faster
FASTER_WHEN_HIGH = ("clock_mhz", "gm_bandwidth_gbps", "dma_unaligned_efficiency", "dma_outstanding",
                    "dcache_bytes", "queue_depth", "ub_usable_bytes")
#: the alternatives of choice parameters that slow the launch down
SLOW_CHOICES = {"flag_double_set": "stall", "raw_interlock": True}
#: never moved by the corners: the UB is what the hypotheses set, the overhead is added apart
FIXED = ("ub_usable_bytes", "host_overhead_cycles")
#: a constant (offset or factor) "explains" the measurements when every residual is within this
FIT_TOLERANCE = 0.10


@dataclass(frozen=True)
class Hypothesis:
    """A program and a device assumption: scenario changes and profile overrides on top of the shape."""

    name: str
    description: str
    kernel_version: str
    overrides: tuple[tuple[str, object], ...] = ()


HYPOTHESES = (
    Hypothesis("vector", "the vector-only kernel (!1108), profile UB", "vector"),
    Hypothesis("cube", "the Cube-era kernel (!1174), profile UB: Cube fast path", "cube"),
    Hypothesis("cube_short_ub", f"the Cube-era kernel on a device reporting {SHORT_UB_BYTES} B of UB "
               "(< 247 552 B: the 128 bucket on its vector path)", "cube", (("ub_usable_bytes", SHORT_UB_BYTES),)),
)


def _faster_when_high(name: str) -> bool:
    field = name.split(".", 1)[0]
    return field in FASTER_WHEN_HIGH or field.endswith("_per_cycle")


def corners(profile) -> dict[str, dict]:
    """``{"fast": point, "slow": point}`` over every ranged parameter but :data:`FIXED`."""
    fast, slow = {}, {}
    for p in profile.ranges.values():
        if p.field in FIXED:
            continue
        if p.choices:
            nominal = get_param(profile, p.name)
            fast[p.name] = nominal
            slow[p.name] = SLOW_CHOICES.get(p.field, nominal)
            continue
        lo, hi = (p.high, p.low) if _faster_when_high(p.name) else (p.low, p.high)
        fast[p.name], slow[p.name] = lo, hi
    return {"fast": fast, "slow": slow}


def _evaluator(scenario, hyp: Hypothesis) -> Evaluator:
    changes: dict = {"kernel": {"kernel_version": hyp.kernel_version}}
    if hyp.overrides:
        base = dict(scenario.hardware.overrides)
        changes["hardware"] = {"overrides": {**base, **dict(hyp.overrides)}}
    return Evaluator(scenario.with_changes(changes))


def predict(scenario, hyp: Hypothesis) -> dict:
    """Nominal, fast-corner and slow-corner makespans (µs) of one shape under one hypothesis, and the
    end-to-end predictions with the host overhead's nominal, low and high values."""
    ev = _evaluator(scenario, hyp)
    prof = ev.profile
    pts = corners(prof)
    nominal = ev.makespan({})[1]
    fast, slow = ev.makespan(pts["fast"])[1], ev.makespan(pts["slow"])[1]
    host = prof.ranges["host_overhead_cycles"]
    to_us = prof.cycles_to_us
    return {"device_us": nominal, "device_fast_us": fast, "device_slow_us": slow,
            "host_us": to_us(prof.host_overhead_cycles), "predicted_us": nominal + to_us(prof.host_overhead_cycles),
            "predicted_low_us": fast + to_us(host.low), "predicted_high_us": slow + to_us(host.high),
            "host_low_us": to_us(host.low), "host_high_us": to_us(host.high)}


def compare_measured(path: str | Path, hypotheses=HYPOTHESES, load=None, progress=None) -> pd.DataFrame:
    """One row per (shape, hypothesis): measured, predicted (nominal, low, high) and whether the
    measurement lies in the range. ``path``: a measurements CSV (cgdr_des.timing.measurements).
    ``progress`` (a :class:`~cgdr_des.results.progress.Progress`) shows one stage, a step per row."""
    from cgdr_des.results.progress import Progress
    from cgdr_des.scenario import load_scenario

    load = load or load_scenario
    progress = progress if progress is not None else Progress.off()
    measured = [(m, load(m.scenario)) for m in read_measurements(path)]
    rows = []
    with progress.stage(f"predicting {len(measured)} shapes x {len(hypotheses)} hypotheses (3 runs each)",
                        len(measured) * len(hypotheses), "predictions") as stage:
        for m, sc in measured:
            for hyp in hypotheses:
                stage.advance(0, note=f"now {sc.name}: {hyp.name}")
                rows.append(_compare_one(m, sc, hyp))
                stage.advance()
    return pd.DataFrame(rows)


def _compare_one(m, sc, hyp: Hypothesis) -> dict:
    """The row of one measurement under one hypothesis (NaN and ``error`` where it cannot run)."""
    row = {"shape": sc.name.removeprefix("measured_"), "profile": sc.hardware.profile, "hypothesis": hyp.name,
           "measured_us": m.latency_us}
    try:
        p = predict(sc, hyp)
    except CgdrError as exc:  # a program this machine cannot run yet: say why, keep the rest
        return {**row, **dict.fromkeys(_COLUMNS, np.nan), "inside": False, "error": str(exc)}
    return {**row, **p, "inside": p["predicted_low_us"] <= m.latency_us <= p["predicted_high_us"],
            "measured_over_device": m.latency_us / p["device_us"], "error": ""}


_COLUMNS = ("device_us", "device_fast_us", "device_slow_us", "host_us", "predicted_us", "predicted_low_us",
            "predicted_high_us", "host_low_us", "host_high_us", "measured_over_device")


def verdicts(df: pd.DataFrame, tolerance: float = FIT_TOLERANCE) -> pd.DataFrame:
    """Per hypothesis: all inside their range?; the least-squares constant overhead and its worst
    relative residual; the geometric-mean constant factor and its worst relative residual; and
    whether either constant explains every shape within ``tolerance``."""
    rows = []
    for name, g in df.groupby("hypothesis", sort=False):
        if g["error"].astype(bool).any():
            rows.append({"hypothesis": name, "error": g["error"][g["error"].astype(bool)].iloc[0]})
            continue
        meas, dev = g["measured_us"].to_numpy(), g["device_us"].to_numpy()
        offset = float(np.mean(meas - dev))
        off_res = float(np.max(np.abs(dev + offset - meas) / meas))
        factor = float(np.exp(np.mean(np.log(meas / dev))))
        fac_res = float(np.max(np.abs(dev * factor - meas) / meas))
        in_host = bool(g["host_low_us"].iloc[0] <= offset <= g["host_high_us"].iloc[0])
        rows.append({"hypothesis": name, "all_inside": bool(g["inside"].all()), "n_inside": int(g["inside"].sum()),
                     "n": len(g), "offset_us": offset, "offset_in_host_range": in_host,
                     "offset_worst_residual": off_res, "factor": factor, "factor_worst_residual": fac_res,
                     "offset_explains": in_host and off_res <= tolerance, "factor_explains": fac_res <= tolerance,
                     "error": ""})
    return pd.DataFrame(rows)
