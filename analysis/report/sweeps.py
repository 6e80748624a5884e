"""The report's sweeps: which files, the ``--quick`` reductions, the axes filled in here, running them.

Each study is a sweep file in ``scenarios/sweeps/`` run through ``cgdr-des sweep``'s Python layer
(``load``/``run_sweep``, the same code the command runs), so its output directory is resumable and
fingerprinted: a second ``python -m analysis.report`` reruns nothing that is stored.

Two axes are not in the files because they are data of the project, not of the study:

- :data:`BUFFER_VARIANTS`, the kernel variants of the buffering section (today BUFFER_NUM 1 and 2,
  what ``cgdr-des compare --buffer-num 1 2`` runs; a variant is a set of ``kernel`` fields, so a
  prefetch or state-double-buffer variant is one more entry here);
- the sensitivity sweep's profile overrides: every ranged parameter of the profile at each end, then
  a Latin-hypercube sample of them jointly (``cgdr_des.timing.space``, as ``cgdr-des sensitivity``).
"""

from __future__ import annotations

import copy
import json
import resource
import time
from dataclasses import dataclass
from pathlib import Path

from cgdr_des.hw import load_profile
from cgdr_des.hw.ranges import merge_overrides, set_param
from cgdr_des.scenario import read_toml
from cgdr_des.sweep import SweepStore, make_executor, run_sweep
from cgdr_des.sweep.spec import SweepSpec, sweep_from_dict
from cgdr_des.timing.space import latin_hypercube, one_at_a_time, select

SWEEP_DIR = Path(__file__).resolve().parents[2] / "scenarios" / "sweeps"
SWEEPS = ("grid", "checks", "balance", "long_tail", "skew", "buffering", "sensitivity", "advise",
          "advise_long_tail")

#: label -> the ``kernel`` fields of that variant (the buffering section's bars, in this order).
BUFFER_VARIANTS = {"single (BUFFER_NUM 1)": {"buffer_num": 1}, "double (BUFFER_NUM 2)": {"buffer_num": 2},
                   "prefetch": {"buffer_num": 1, "prefetch": True},
                   "state double buffer": {"buffer_num": 1, "state_double_buffer": True}}

#: joint Latin-hypercube samples of the sensitivity sweep, and their seed (full / quick).
SENS_SAMPLES, SENS_SEED = 16, 0

#: ``--quick``: per sweep, grid axes cut to the listed values' indices, and [tail] / [set] changes.
#: Every quick tail study runs on one shape, Nv = 8 with dk = dv = 64, so that the whole report
#: calibrates item costs four times (each chip, and the two ends of the sensitivity parameter), and
#: none of them on split V-tiles (dv = 64 is one V-tile on the 48-core A2: the split probes cost ~30 s).
QUICK_SHAPE = {"shape.dk": 64, "shape.dv": 64}
#: ``--quick`` advise options: two variants (the state DMAs and the union of the code changes; each variant
#: costs one calibration, a few seconds of CPU at this shape), one ranged field, no joint samples
QUICK_ADVISE = {"samples": 0, "fields": ["vec_pipe_delay_cycles"], "variants": ["state_load_dma", "code_all"]}
QUICK = {
    "grid": {"grid": {"shape": [0], "workload.batch": [1, 2]}, "tail": {"batches": 60}, "set": QUICK_SHAPE},
    "checks": {"grid": {"hardware": [0], "shape": [0]}, "tail": {"batches": 20},
               "set": {"study.check_batches": 1, "workload.distribution.median": 64, "workload.distribution.max": 256,
                       **QUICK_SHAPE}},
    "balance": {"grid": {"hardware": [0]}, "tail": {"batches": 60},
                "set": {"shape.nk": 8, "shape.nv": 8, **QUICK_SHAPE}},
    "long_tail": {"set": QUICK_SHAPE},
    "skew": {"grid": {"hardware": [0], "shape": [0]}, "set": QUICK_SHAPE},
    "buffering": {"grid": {"shape": [0, 2]}},
    "sensitivity": {"tail": {"batches": 60}, "set": {"shape.nk": 8, "shape.nv": 8, **QUICK_SHAPE}},
    # the headline law only, on the quick grid's shape (its item costs are calibrated once per variant for
    # both advise sweeps: long_tail's quick shape is the same), few batches, one ranged field, no joint samples
    "advise": {"grid": {"workload.distribution": [2]}, "set": {"shape.nk": 8, "shape.nv": 8, **QUICK_SHAPE},
               "advise": QUICK_ADVISE | {"batches": 40}},
    "advise_long_tail": {"set": QUICK_SHAPE, "advise": QUICK_ADVISE},
}
QUICK_SENS_PARAMS = ("vec_pipe_delay_cycles",)


@dataclass(frozen=True)
class Ran:
    """One sweep as the report ran it: its spec, where it is stored, and how long this run took."""

    name: str
    spec: SweepSpec
    store: SweepStore
    wall_s: float
    ran: int


def spec_for(name: str, quick: bool) -> SweepSpec:
    """The validated spec of ``report_<name>.toml``, with this module's axes and ``--quick`` cuts."""
    path = SWEEP_DIR / f"report_{name}.toml"
    doc = copy.deepcopy(read_toml(path, "sweep", "TOML sweep file"))
    if name == "buffering":
        doc["grid"].pop("kernel.buffer_num", None)
        doc["grid"]["kernel"] = list(BUFFER_VARIANTS.values())
    if name == "sensitivity":
        base = sweep_from_dict(doc, base_dir=path.parent).base_scenario
        doc["grid"]["hardware.overrides"] = [p[3] for p in sensitivity_points(base.hardware.profile, quick)]
    if quick:
        cut = QUICK[name]
        for axis, keep in cut.get("grid", {}).items():
            doc["grid"][axis] = [doc["grid"][axis][i] for i in keep]
        doc.setdefault("set", {}).update(cut.get("set", {}))
        doc.setdefault("tail", {}).update(cut.get("tail", {}))
        if "advise" in cut:
            doc.setdefault("advise", {}).update(cut["advise"])
    return sweep_from_dict(doc, base_dir=path.parent)


def sensitivity_points(profile: str, quick: bool) -> list[tuple[str, str, str, dict]]:
    """``(kind, parameter, end, overrides)`` in point order: the nominal profile, every ranged parameter
    alone at each end ("oat"), then joint Latin-hypercube points ("lhs")."""
    prof = load_profile(profile)
    params = select(prof, QUICK_SENS_PARAMS if quick else None)
    points = [("nominal", "", "", {})]
    points += [("oat", name, end, set_param(prof, name, x)) for name, end, x in one_at_a_time(prof, params)]
    if not quick:
        for joint in latin_hypercube(params, SENS_SAMPLES, SENS_SEED):
            points.append(("lhs", "", "", merge_overrides(set_param(prof, n, x) for n, x in joint.items())))
    return points


def run_all(work: Path, *, quick: bool, workers: int, names=SWEEPS, log=print) -> dict[str, Ran]:
    """Run (or resume) every report sweep into ``work/<name>``; ``workers = 0`` runs them in this process."""
    out = {}
    with make_executor(None, workers) as executor:
        for name in names:
            spec = spec_for(name, quick)
            t0, c0 = time.perf_counter(), cpu_seconds()
            report = run_sweep(spec, work / name, executor, force=True)
            wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
            log(f"sweep {spec.name}: {report.ran} run now, {report.skipped} stored, {wall:.0f} s "
                f"({cpu:.0f} s of CPU)")
            _record_time(work / name, wall, cpu, report.ran, workers)
            if report.status.failed:
                errors = sorted(set(report.status.errors.values()))
                log(f"  {len(report.status.failed)} failed: " + "; ".join(errors))
            out[name] = Ran(name, spec, SweepStore(work / name), wall, report.ran)
    return out


TIMING_FILE = "report_timing.json"


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and of its finished children (the pool's workers are
    reaped when each sweep's pool shuts down), in seconds."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _record_time(folder: Path, wall: float, cpu: float, ran: int, workers: int) -> None:
    """Add this invocation's wall and CPU time to the sweep's record when it computed points (a resumed
    or repeated run adds what it computed, so the record is the time the stored points took to make)."""
    path = folder / TIMING_FILE
    rec = sweep_time(folder)
    if ran:
        rec = {"wall_s": rec["wall_s"] + wall, "cpu_s": rec.get("cpu_s", 0.0) + cpu,
               "points_run": rec["points_run"] + ran, "workers": workers}
        path.write_text(json.dumps(rec) + "\n", encoding="utf-8")


def sweep_time(folder: Path) -> dict:
    """The recorded computing time of a sweep directory (``wall_s``, ``cpu_s``, ``points_run``, ``workers``)."""
    path = folder / TIMING_FILE
    empty = {"wall_s": 0.0, "cpu_s": 0.0, "points_run": 0, "workers": 0}
    return {**empty, **json.loads(path.read_text())} if path.is_file() else empty
