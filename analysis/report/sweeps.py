"""The report's sweeps: which files, the ``--quick`` reductions, the axes filled in here, running them.

Each study is a sweep file in ``scenarios/sweeps/`` run through ``cgdr-des sweep``'s Python layer
(``load``/``run_sweep``, the same code the command runs), so its output directory is resumable and
fingerprinted: a second ``python -m analysis.report`` reruns nothing that is stored.

One axis is not in the files because it is data of the project, not of the study:
:data:`BUFFER_VARIANTS`, the kernel variants of the buffering section (today BUFFER_NUM 1 and 2,
what ``cgdr-des compare --buffer-num 1 2`` runs; a variant is a set of ``kernel`` fields, so a
prefetch or state-double-buffer variant is one more entry here).

The sweeps share item-cost calibrations and advise probes through the calibration cache
(:mod:`cgdr_des.cost_cache`): the grid's shapes are the other tail sweeps' shapes, the advise
sweep's seven laws share one shape, so a regeneration from an empty cache measures each once.
"""

from __future__ import annotations

import copy
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cgdr_des.scenario import read_toml
from cgdr_des.sweep import SweepStore, run_sweep
from cgdr_des.sweep.executors import InProcess, SharedPool
from cgdr_des.sweep.points import expand
from cgdr_des.sweep.spec import SweepSpec, sweep_from_dict
from cgdr_des.sweep.work import Outcome, Task, run_point

SWEEP_DIR = Path(__file__).resolve().parents[2] / "scenarios" / "sweeps"
SWEEPS = ("grid", "checks", "balance", "long_tail", "skew", "buffering", "sensitivity", "advise",
          "advise_long_tail")

#: label -> the ``kernel`` fields of that variant (the buffering section's bars, in this order).
BUFFER_VARIANTS = {"single (BUFFER_NUM 1)": {"buffer_num": 1}, "double (BUFFER_NUM 2)": {"buffer_num": 2},
                   "prefetch": {"buffer_num": 1, "prefetch": True},
                   "state double buffer": {"buffer_num": 1, "state_double_buffer": True}}

#: ``--quick``: per sweep, grid axes cut to the listed values' indices, and [tail] / [set] changes.
#: Every quick tail study runs on one shape, Nv = 8 with dk = dv = 64, so that the whole report
#: calibrates item costs twice (each chip; the sensitivity sweep probes the ends of its one field), and
#: none of them on split V-tiles (dv = 64 is one V-tile on the 48-core A2: the split probes cost ~30 s).
QUICK_SHAPE = {"shape.dk": 64, "shape.dv": 64}
#: ``--quick`` advise options: one variant (the union of the code changes: a variant costs one calibration
#: and its probes, ~7 s of CPU at this shape, and one is enough to fill every table of section 8), one
#: ranged field, no joint samples
QUICK_ADVISE = {"samples": 0, "fields": ["vec_pipe_delay_cycles"], "variants": ["code_all"]}
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
    "sensitivity": {"set": {"shape.nk": 8, "shape.nv": 8, **QUICK_SHAPE},
                    "advise": {"batches": 60, "samples": 0, "fields": ["vec_pipe_delay_cycles"]}},
    # the headline law only, on the quick grid's shape (its item costs are calibrated once per variant for
    # both advise sweeps: long_tail's quick shape is the same), few batches, one ranged field, no joint samples
    "advise": {"grid": {"workload.distribution": [2]}, "set": {"shape.nk": 8, "shape.nv": 8, **QUICK_SHAPE},
               "advise": QUICK_ADVISE | {"batches": 40}},
    "advise_long_tail": {"set": QUICK_SHAPE, "advise": QUICK_ADVISE},
}


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
    if quick:
        cut = QUICK[name]
        for axis, keep in cut.get("grid", {}).items():
            doc["grid"][axis] = [doc["grid"][axis][i] for i in keep]
        doc.setdefault("set", {}).update(cut.get("set", {}))
        doc.setdefault("tail", {}).update(cut.get("tail", {}))
        if "advise" in cut:
            doc.setdefault("advise", {}).update(cut["advise"])
    return sweep_from_dict(doc, base_dir=path.parent)


def run_all(work: Path, *, quick: bool, workers: int, names=SWEEPS, log=print) -> dict[str, Ran]:
    """Run (or resume) every report sweep into ``work/<name>``; ``workers = 0`` runs them one after the
    other in this process. With workers, the sweeps run side by side (a thread each) on one shared pool,
    so a sweep of one long point (advise_long_tail, long_tail) or a sweep waiting for a calibration
    another worker is making leaves no worker idle while other sweeps have points left."""
    specs = {name: spec_for(name, quick) for name in names}
    if workers == 0:
        return {name: _run_one(specs[name], work / name, InProcess(), 0, log) for name in names}
    out: dict[str, Ran] = {}
    with SharedPool(workers) as pool, ThreadPoolExecutor(len(names) + 1) as threads:
        # the calibrations first, one task each (the pool starts tasks in order): two points that need
        # the same one would otherwise hold both workers, one calibrating and one waiting for its lock
        warm = threads.submit(_warm, pool.run(calibrations(specs.values()), calibrate), work, workers, log)
        futures = {threads.submit(_run_one, specs[name], work / name, pool, workers, log): name
                   for name in sorted(names, key=lambda n: FIRST.index(n) if n in FIRST else len(FIRST))}
        for fut, name in futures.items():
            out[name] = fut.result()
        warm.result()
    return {name: out[name] for name in names}


#: sweeps whose points are few and long go to the pool first, so that the short points of the others
#: fill the workers around them at the end
FIRST = ("sensitivity", "advise_long_tail", "advise", "checks", "long_tail")


def _warm(running, work: Path, workers: int, log) -> None:
    """Wait for the :func:`calibrations` submitted to the pool; their time is recorded in ``work/calibrations``."""
    t0, start = time.perf_counter(), time.time()
    outcomes = list(running)
    wall, cpu = time.perf_counter() - t0, sum(o.cpu_s for o in outcomes)
    log(f"calibrations: {len(outcomes)} item-cost tables, {wall:.0f} s ({cpu:.0f} s of CPU)")
    (work / CALIBRATIONS).mkdir(parents=True, exist_ok=True)
    _record_time(work / CALIBRATIONS, wall, cpu, len(outcomes), workers, (start, time.time()))


#: the folder (under ``--work``) that records the time of the calibrations run before the sweeps
CALIBRATIONS = "calibrations"


def all_times(rans: dict) -> dict[str, dict]:
    """Every sweep's recorded time, and the calibrations' (when they ran before the sweeps)."""
    times = {n: sweep_time(r.store.root) for n, r in rans.items()}
    first = next(iter(rans.values()), None)
    if first is not None and (first.store.root.parent / CALIBRATIONS / TIMING_FILE).is_file():
        times[CALIBRATIONS] = sweep_time(first.store.root.parent / CALIBRATIONS)
    return times


def calibrations(specs) -> list[Task]:
    """One task per distinct item-cost calibration the sweeps' points need (the tail studies' shapes and
    chips, every advise variant's program), for :func:`calibrate`."""
    from cgdr_des.advise.settings import parse_names, resolve
    from cgdr_des.scenario import Scenario

    jobs: dict[str, dict] = {}
    for spec in specs:
        if spec.kind not in ("tail", "advise"):
            continue
        for p in expand(spec, whole=True):
            if p.error is not None:
                continue
            sc = Scenario.from_dict(p.scenario, check_tiling=False)
            variants = [sc] if spec.kind == "tail" else [
                v.scenario for v in resolve(sc, parse_names(spec.advise.variants)) if v.runs]
            for v in variants:
                s = v.shape
                job = {"profile": v.profile_ref(), "overrides": dict(v.hardware.overrides), "nk": s.nk, "nv": s.nv,
                       "dk": s.dk, "dv": s.dv, "has_gamma": s.has_gamma, "kernel": v.kernel.tiling_options()}
                jobs.setdefault(json.dumps(job, sort_keys=True, default=str), job)
    # longest first (the pool starts tasks in order): a 48-core chip's calibration, then more heads and
    # wider heads, so the last to start is a short one and neither worker idles at the end (LPT)
    from cgdr_des.hw import load_profile

    order = sorted(jobs.values(), key=lambda j: (-load_profile(j["profile"]).aiv_num, -j["nv"], -j["dk"] * j["dv"]))
    return [Task(i, "calibrate", None, job) for i, job in enumerate(order)]


def calibrate(task: Task) -> Outcome:
    """Make (or find in the cache) one calibration of :func:`calibrations` (in a pool worker)."""
    from cgdr_des.hw import load_profile
    from cgdr_des.tail.calibration import costs_for

    t0, c0 = time.perf_counter(), time.process_time()
    j = task.params
    try:
        costs_for(load_profile(j["profile"], j["overrides"] or None), j["nk"], j["nv"], j["dk"], j["dv"],
                  j["has_gamma"], j["kernel"]["buffer_num"], j["kernel"])
        out = Outcome(task.point)
    except Exception as exc:  # noqa: BLE001 -- the point that needs it will meet the error and record it
        out = Outcome(task.point, error=str(exc)[:200])
    out.wall_s, out.cpu_s = time.perf_counter() - t0, time.process_time() - c0
    return out


class _Timed:
    """An executor's outcomes, their workers' CPU seconds summed (a sweep's CPU time when sweeps share a pool)."""

    def __init__(self, executor: InProcess):
        self.executor, self.cpu_s = executor, 0.0

    def run(self, tasks, fn=run_point):
        """The wrapped executor's outcomes, counted."""
        for outcome in self.executor.run(tasks, fn):
            self.cpu_s += outcome.cpu_s
            yield outcome


def _run_one(spec: SweepSpec, folder: Path, executor: InProcess, workers: int, log) -> Ran:
    """One sweep run (or resumed) into ``folder``, its wall and CPU time recorded."""
    timed = _Timed(executor)
    t0, start = time.perf_counter(), time.time()
    report = run_sweep(spec, folder, timed, force=True)
    wall = time.perf_counter() - t0
    log(f"sweep {spec.name}: {report.ran} run now, {report.skipped} stored, {wall:.0f} s "
        f"({timed.cpu_s:.0f} s of CPU)")
    _record_time(folder, wall, timed.cpu_s, report.ran, workers, (start, time.time()))
    if report.status.failed:
        errors = sorted(set(report.status.errors.values()))
        log(f"  {len(report.status.failed)} failed: " + "; ".join(errors))
    return Ran(spec.name, spec, SweepStore(folder), wall, report.ran)


TIMING_FILE = "report_timing.json"


def _record_time(folder: Path, wall: float, cpu: float, ran: int, workers: int, span: tuple[float, float]) -> None:
    """Add this invocation's wall and CPU time to the sweep's record when it computed points (a resumed
    or repeated run adds what it computed, so the record is the time the stored points took to make).
    ``cpu``: the points' own CPU seconds, measured in the process that ran each; ``span``: this run's
    start and end (epoch seconds: sweeps that ran side by side overlap)."""
    path = folder / TIMING_FILE
    rec = sweep_time(folder)
    if ran:
        rec = {"wall_s": rec["wall_s"] + wall, "cpu_s": rec.get("cpu_s", 0.0) + cpu,
               "points_run": rec["points_run"] + ran, "workers": workers, "span": list(span)}
        path.write_text(json.dumps(rec) + "\n", encoding="utf-8")


def sweeps_wall(times: list[dict]) -> float:
    """The sweeps' wall time: from the first one's start to the last one's end when every record has
    its span (sweeps side by side), else the sum of their wall times."""
    spans = [x["span"] for x in times if x["points_run"]]
    if spans and all(spans):
        return max(e for _, e in spans) - min(s for s, _ in spans)
    return sum(x["wall_s"] for x in times)


def sweep_time(folder: Path) -> dict:
    """The recorded computing time of a sweep directory (``wall_s``, ``cpu_s``, ``points_run``, ``workers``)."""
    path = folder / TIMING_FILE
    empty = {"wall_s": 0.0, "cpu_s": 0.0, "points_run": 0, "workers": 0, "span": None}
    return {**empty, **json.loads(path.read_text())} if path.is_file() else empty
