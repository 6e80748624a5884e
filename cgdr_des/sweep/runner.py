"""Driving a sweep: expand, skip what is stored, run the rest on an executor, store, assemble.

``run_sweep`` is what ``cgdr-des sweep`` calls. Stored points whose fingerprint matches are skipped
(a killed sweep resumes where it stopped); a stored point with another fingerprint stops the sweep
before anything runs, unless ``force``. Each outcome is stored as soon as it arrives, in whatever order
the executor finishes them; ``summary.parquet`` is assembled at the end, sorted by point id, so it does
not depend on that order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cgdr_des.runtime import package_version
from cgdr_des.sweep.executors import InProcess
from cgdr_des.sweep.points import Point, expand
from cgdr_des.sweep.spec import SweepSpec
from cgdr_des.sweep.store import Status, SweepStore
from cgdr_des.sweep.work import Outcome, Task, run_point

Progress = Callable[[int, int, int, float], None]  # (done, failed, total, elapsed seconds)


@dataclass(frozen=True)
class SweepReport:
    """What one invocation did: points run now, skipped as already stored, and the final status."""

    ran: int
    skipped: int
    status: Status
    summary: Path | None


def tasks_for(spec: SweepSpec, points: list[Point]) -> list[Task]:
    """The picklable work items of ``points``."""
    version = package_version()
    return [Task(p.point, spec.kind, p.scenario, p.params, spec.frames, spec.point_options(), version, p.error)
            for p in points]


def profiles_of(points: list[Point]) -> list[str]:
    """The hardware profiles the points run on, in point order (the plot's title names them)."""
    return list(dict.fromkeys(p.scenario["hardware"]["profile"] for p in points if p.scenario))


def run_sweep(spec: SweepSpec, out: str | Path, executor: InProcess, *, force: bool = False,
              max_points: int | None = None, progress: Progress | None = None,
              fn: Callable[[Task], Outcome] = run_point, points: list[Point] | None = None) -> SweepReport:
    """Run every point of ``spec`` not yet stored in ``out`` (at most ``max_points`` of them now);
    ``points``: ``expand(spec, whole=True)`` when the caller has it already."""
    store = SweepStore(out)
    points = expand(spec, whole=True) if points is None else points
    todo = store.to_run(points, force=force)
    skipped = len(points) - len(todo)
    if max_points is not None:
        todo = todo[:max_points]
    store.write_sweep({"name": spec.name, "kind": spec.kind, "version": package_version(),
                       "scenario": spec.base_scenario.name, "profiles": profiles_of(points)}, points)
    by_id = {p.point: p for p in points}
    done = failed = 0
    t0 = time.monotonic()
    if progress and todo:  # the total, before the first point (which may take long) finishes
        progress(0, 0, len(todo), 0.0)
    for outcome in executor.run(tasks_for(spec, todo), fn):
        store.put(by_id[outcome.point], outcome)
        failed += outcome.error is not None
        done += outcome.error is None
        if progress:
            progress(done, failed, len(todo), time.monotonic() - t0)
    status = store.status()
    return SweepReport(done + failed, skipped, status, store.assemble(status.done))
