"""``python -m analysis.report --check``: recompute a handful of the report's quoted numbers, cheaply.

Which numbers (each takes seconds on the 310P: one calibration, numpy over the batches, or one short
phase-fidelity run; the 48-core chip's calibrations take minutes and are left out):

- the headline p99 of every policy on atlas-300i-duo (grid point: lognormal σ = 1, B = 16, Nv = 16): the
  whole study the sweep ran (same point, same seed, all its batches) with its surrogate, no checks;
- the skew penalty of ``greedy`` on atlas-300i-duo with Nv = 8 (two one-batch studies);
- the buffering row of the representative shape, single buffer (one phase-fidelity run).

The committed value is the cell of ``frames/<name>.csv`` the README quotes. The tolerance is half a unit
of the last digit the README prints it with (``quotes.csv``'s format): the check fails exactly when the
printed number would be off by more than rounding. A number not quoted gets a relative 1e-9.

The input fingerprints (``inputs.py``) are compared too, and their differences only printed: the
source hash moves with every code change, most of which move no number.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.report import inputs, sweeps
from analysis.report.quotes import QUOTES_FILE, read_frame, select

CHIP = "atlas-300i-duo"
HEADLINE = {"chip": CHIP, "nv": 16, "batch": 16, "law": "lognormal σ=1"}
SKEW = {"chip": CHIP, "nv": 8, "policy": "greedy"}
BUFFER_ROW = {"shape": "representative (16, 16, 128, 128)", "variant": "single (BUFFER_NUM 1)"}


@dataclass(frozen=True)
class Number:
    """One recomputed number: where the report keeps it, what it is now, and how far it may be."""

    name: str
    frame: str
    where: dict
    column: str
    committed: float
    recomputed: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return abs(self.recomputed - self.committed) <= self.tolerance

    def line(self) -> str:
        return (f"{self.name}: committed {self.committed:.6g}, recomputed {self.recomputed:.6g}, "
                f"tolerance {self.tolerance:.3g}")


def run_check(folder: Path, log=print) -> int:
    """Check the report in ``folder``; prints one line per differing number and per fingerprint note.
    Returns the number of differing numbers (0: the check passes)."""
    folder = Path(folder)
    meta = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    for line in inputs.differences(meta.get("inputs"), inputs.inputs()):
        log(f"note: {line}")
    numbers = recompute(folder, quick=bool(meta.get("quick")))
    bad = [n for n in numbers if not n.ok]
    for n in bad:
        log(n.line())
    log(f"check: {len(numbers) - len(bad)} of {len(numbers)} numbers within tolerance")
    return len(bad)


def recompute(folder: Path, *, quick: bool = False) -> list[Number]:
    """The numbers listed in the module docstring, committed and recomputed."""
    frames = {name: read_frame(folder / "frames" / f"{name}.csv") for name in ("grid", "skew", "buffering")}
    tol = tolerances(folder)
    out = []

    def number(name, frame, where, column, value):
        committed = float(select(frames[frame], where)[column])
        key = (frame, json.dumps(where, sort_keys=True, default=str), column)
        out.append(Number(name, frame, where, column, committed, float(value), tol.get(key, 1e-9 * abs(committed))))

    grid = frames["grid"]
    head = grid[np.logical_and.reduce([grid[k] == v for k, v in HEADLINE.items()])]
    if head.empty:
        raise LookupError(f"no grid point {HEADLINE} in {folder}: --check reads a full report")
    point = int(head["point"].iloc[0])
    batches = _study(sweeps.spec_for("grid", quick), point).batches
    for policy in head["policy"]:
        p99 = np.percentile(batches.loc[batches["policy"] == policy, "makespan_us"].to_numpy(), 99)
        number(f"headline p99 {CHIP} {policy}", "grid", {"point": point, "policy": policy}, "p99_us", p99)

    spec = sweeps.spec_for("skew", quick)
    pts = {law: i for i, law in _points(spec, SKEW["chip"], SKEW["nv"]).items()}
    ms = {law: _study(spec, i, policies=[SKEW["policy"]]).summary["p50_us"].iloc[0] for law, i in pts.items()}
    number(f"skew penalty {CHIP} nv {SKEW['nv']} {SKEW['policy']}", "skew", SKEW, "penalty",
           ms["bimodal"] / ms["fixed"])

    from cgdr_des.simulation import simulate

    run = simulate(_scenario(sweeps.spec_for("buffering", quick), 0))
    number(f"buffering {BUFFER_ROW['shape']} {BUFFER_ROW['variant']}", "buffering", BUFFER_ROW, "makespan_us",
           run.summary["makespan_us"].iloc[0])
    return out


def against(folder: Path, numbers: list[Number]) -> list[Number]:
    """``numbers`` (recomputed once) judged against the report in ``folder``: its committed cells and
    tolerances (a test checks an edited copy without recomputing)."""
    tol = tolerances(folder)
    out = []
    for n in numbers:
        committed = float(select(read_frame(folder / "frames" / f"{n.frame}.csv"), n.where)[n.column])
        key = (n.frame, json.dumps(n.where, sort_keys=True, default=str), n.column)
        out.append(Number(n.name, n.frame, n.where, n.column, committed, n.recomputed,
                          tol.get(key, 1e-9 * abs(committed))))
    return out


def tolerances(folder: Path) -> dict[tuple[str, str, str], float]:
    """(frame, where as JSON, column) -> half a unit of the last digit the README prints that cell with."""
    path = folder / QUOTES_FILE
    q = pd.read_csv(path, keep_default_na=False) if path.is_file() else pd.DataFrame(columns=["frame"])
    out = {}
    for r in q.itertuples():
        m = re.search(r"\.(\d+)([f%])", r.fmt)
        if m:
            unit = 10.0 ** -int(m.group(1)) * (0.01 if m.group(2) == "%" else 1.0)
            out[(r.frame, json.dumps(json.loads(r.where), sort_keys=True), r.column)] = unit / 2
    return out


def _scenario(spec, point: int):
    from cgdr_des.scenario import Scenario
    from cgdr_des.sweep import expand

    return Scenario.from_dict(expand(spec)[point].scenario, check_tiling=False)


def _study(spec, point: int, policies=None):
    """The tail study of one sweep point, as the sweep ran it (its ``[tail]`` options), without checks."""
    from cgdr_des.tail import run_study

    kwargs = spec.tail.kwargs() | ({"policies": policies} if policies else {})
    sc = _scenario(spec, point).with_changes({"study": {"check_batches": 0}})
    return run_study(sc, **kwargs)


def _points(spec, chip: str, nv: int) -> dict[int, str]:
    """{point: distribution kind} of the sweep's points on ``chip`` with ``nv`` value heads."""
    from cgdr_des.sweep import expand

    return {p.point: p.scenario["workload"]["distribution"]["kind"] for p in expand(spec)
            if p.scenario and p.scenario["hardware"]["profile"] == chip and p.scenario["shape"]["nv"] == nv}
