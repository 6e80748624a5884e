"""What the uncertain profile fields do to one scenario's makespan.

Each ranged parameter is moved alone to each end of its range (one at a time, the rest nominal),
then all of them jointly over a seeded Latin-hypercube sample. The makespan *interval* is the
minimum and maximum over the nominal run, the one-at-a-time ends and the joint sample: not a
confidence interval (the ranges carry no probabilities), but the spread of makespans the declared
ranges allow, as far as the sample found it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from cgdr_des.timing import DEFAULT_SAMPLES, DEFAULT_SEED
from cgdr_des.timing.evaluate import Evaluator
from cgdr_des.timing.space import latin_hypercube, nominal, one_at_a_time, select


@dataclass(frozen=True)
class Sensitivity:
    """The runs of one sensitivity study: ``runs`` has one row per simulated point (``kind``
    nominal / oat / lhs, the parameter and end of a one-at-a-time row, every parameter's value,
    ``makespan_cycles``, ``makespan_us``, ``change_pct`` against nominal); ``profile``: the hardware
    profile the scenario ran on (empty in a study saved before it was recorded)."""

    scenario: str
    runs: pd.DataFrame
    params: tuple[str, ...]
    seed: int
    profile: str = ""

    @property
    def nominal_us(self) -> float:
        """Makespan in µs with every parameter at its profile value."""
        return float(self.runs.loc[self.runs["kind"] == "nominal", "makespan_us"].iloc[0])

    @property
    def interval_us(self) -> tuple[float, float]:
        """``(low, high)`` makespan in µs over every run."""
        return float(self.runs["makespan_us"].min()), float(self.runs["makespan_us"].max())

    def oat(self) -> pd.DataFrame:
        """The one-at-a-time rows, one per (parameter, end)."""
        return self.runs[self.runs["kind"] == "oat"][["param", "end", "value", "makespan_us", "change_pct"]]

    def summary(self) -> dict:
        """JSON-able summary: scenario and profile, nominal and range of the makespan (µs), parameters,
        run counts, seed."""
        lo, hi = self.interval_us
        counts = self.runs["kind"].value_counts()
        return {"scenario": self.scenario, "profile": self.profile, "nominal_us": self.nominal_us, "low_us": lo,
                "high_us": hi, "params": list(self.params), "oat_runs": int(counts.get("oat", 0)),
                "lhs_samples": int(counts.get("lhs", 0)), "seed": self.seed}


def _row(kind: str, point: dict, full: dict, cycles: int, us: float, param=None, end=None, value=None) -> dict:
    return {"kind": kind, "param": param, "end": end, "value": None if value is None else str(value),
            **{k: str(v) if isinstance(v, bool | str) else v for k, v in {**full, **point}.items()},
            "makespan_cycles": cycles, "makespan_us": us}


def run_sensitivity(scenario, *, fields=None, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED,
                    progress=None) -> Sensitivity:
    """One-at-a-time ends and ``samples`` joint Latin-hypercube points of the ranged parameters of
    the scenario's profile (``fields`` restricts them: names ``field`` or ``field.op``). ``progress``
    (a :class:`~cgdr_des.results.progress.Progress`) shows two stages: the nominal run with the
    one-at-a-time ends, then the joint sample."""
    from cgdr_des.results.progress import Progress

    progress = progress if progress is not None else Progress.off()
    ev = Evaluator(scenario)
    params = select(ev.profile, fields, scenario.kernel.kernel_version)
    nom = nominal(ev.profile, params)
    oat = one_at_a_time(ev.profile, params)
    joint = latin_hypercube(params, samples, seed)
    rows = []
    with progress.stage(f"nominal and {len(oat)} one-at-a-time ends of {len(params)} fields", 1 + len(oat),
                        "runs") as stage:
        rows.append(_row("nominal", {}, nom, *ev.makespan({})))
        stage.advance()
        for name, end, x in oat:
            rows.append(_row("oat", {name: x}, nom, *ev.makespan({name: x}), param=name, end=end, value=x))
            stage.advance()
    with progress.stage(f"{len(joint)} joint Latin-hypercube samples", len(joint), "samples") as stage:
        for point in joint:
            rows.append(_row("lhs", point, nom, *ev.makespan(point)))
            stage.advance()
    runs = pd.DataFrame(rows)
    runs["change_pct"] = 100.0 * (runs["makespan_us"] / rows[0]["makespan_us"] - 1.0)
    return Sensitivity(scenario.name, runs, tuple(p.name for p in params), seed, scenario.hardware.profile)


def write_sensitivity(result: Sensitivity, out: Path) -> dict[str, Path]:
    """``samples.parquet`` (every run), ``interval.json`` and ``tornado.png`` into ``out``."""
    from cgdr_des.timing.tornado import plot_tornado

    paths = {"samples": out / "samples.parquet", "interval": out / "interval.json", "tornado": out / "tornado.png"}
    result.runs.astype({"value": "string"}).to_parquet(paths["samples"], index=False)
    paths["interval"].write_text(json.dumps(result.summary(), indent=2) + "\n", encoding="utf-8")
    plot_tornado(result, paths["tornado"])
    return paths


def interval_line(result: Sensitivity, us: str = "µs") -> str:
    """One console line: the nominal makespan and its interval (``us``: the console's unit text)."""
    lo, hi = result.interval_us
    s = result.summary()
    return (f"range      {result.nominal_us:,.1f} {us} in [{lo:,.1f}, {hi:,.1f}] {us} "
            f"({s['oat_runs']} one-at-a-time ends and {s['lhs_samples']} joint samples over "
            f"{len(result.params)} ranged fields, seed {result.seed}; phase fidelity, numerics off)")
