"""Running one point, wherever it runs (a pool worker, a Dask worker, the calling process).

``run_point(task)`` never raises for a failing point: any exception becomes ``Outcome.error``, one line
(``KernelDiagnostic: WriteAttnTileToGm: curV=24 ...``), so one bad point never stops the others. The
outcome carries DataFrames, not files: the process that drives the sweep writes them, so a Dask cluster
needs no file system shared with the client.

``kind = "run"``: one ``simulate``; the summary is its one-row ``result.summary``. ``kind = "tail"``: one
``cgdr_des.tail.run_study``; the summary is its per-policy ``.summary``. ``kind = "advise"``: one
``cgdr_des.advise.run_advice``; the summary is its ranked table (one row per variant x policy). The
point's parameters are added to the summary as columns in every case.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

RUN_FRAMES = ("items", "cores", "ops")
TAIL_FRAMES = ("batches", "core_finish", "checks")
ADVISE_FRAMES = ("batches", "points", "variants")


@dataclass(frozen=True)
class Task:
    """What a worker needs: plain data only (it is pickled to other processes and machines)."""

    point: int
    kind: str
    scenario: dict[str, Any] | None
    params: dict[str, Any]
    frames: bool | list[str] = False
    tail: dict[str, Any] = field(default_factory=dict)  # the point's study options: [tail] or [advise]
    version: str = ""
    error: str | None = None


@dataclass
class Outcome:
    """A finished point: its summary rows and frames, or its one-line error; ``wall_s`` and ``cpu_s``
    (the process's CPU seconds while it ran the point) are not stored in the summary (they differ from
    run to run)."""

    point: int
    summary: pd.DataFrame | None = None
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    error: str | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0


def run_point(task: Task) -> Outcome:
    """Run ``task``'s point; every exception is caught and reported as a one-line error."""
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        if task.error is not None:
            raise _Recorded(task.error)
        _check_version(task.version)
        runner = {"run": _run, "tail": _tail, "advise": _advise}[task.kind]
        summary, frames = runner(task)
        summary = _with_params(summary, task.params)
        out = Outcome(task.point, summary, frames if task.frames else {})
    except Exception as exc:  # noqa: BLE001 -- a failing point is data, recorded and survived
        out = Outcome(task.point, error=one_line(exc))
    out.wall_s = time.perf_counter() - t0
    out.cpu_s = time.process_time() - c0
    return out


def one_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (the message alone for an error recorded earlier)."""
    if isinstance(exc, _Recorded):
        return str(exc)
    first = str(exc).strip().partition("\n")[0]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


class _Recorded(Exception):
    """An error found while building the point (its overrides did not validate)."""


def _check_version(version: str) -> None:
    from cgdr_des.runtime import package_version

    here = package_version()
    if version and here != version:
        raise RuntimeError(f"worker has cgdr-des {here}, the sweep was fingerprinted with {version}")


def _scenario(task: Task):
    from cgdr_des.scenario import Scenario

    # the tiling was checked when the points were built, and the version check above pins the code
    return Scenario.from_dict(task.scenario, check_tiling=False)


def _run(task: Task) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    from cgdr_des.simulation import simulate

    wanted = _wanted(task.frames, RUN_FRAMES)
    # a point that stores no ops frame keeps no per-op rows (the same cycles, a third less CPU at instr)
    result = simulate(_scenario(task), keep_ops=None if "ops" in wanted else False)
    frames = {name: getattr(result, name) for name in wanted}
    return result.summary, frames


def _tail(task: Task) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    from cgdr_des.tail import run_study  # the tail-study interface; a point fails cleanly without it

    # workers=1: the point already runs on one of the sweep's workers (or in its process), so its
    # checks run one after another there; a point's [tail] options cannot ask for more (spec.py)
    study = run_study(_scenario(task), **task.tail, workers=1)
    frames = {name: getattr(study, name) for name in _wanted(task.frames, TAIL_FRAMES)}
    return study.summary, frames


def _advise(task: Task) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    from cgdr_des.advise import run_advice

    advice = run_advice(_scenario(task), **task.tail)
    frames = {name: getattr(advice, name) for name in _wanted(task.frames, ADVISE_FRAMES)}
    return advice.table, frames


def _wanted(frames: bool | list[str], known: tuple[str, ...]) -> tuple[str, ...]:
    """The frames a point stores: all of ``known`` for ``true``, none for ``false``, else the listed ones
    (a tail point's ``core_finish`` is cores x policies x batches rows: a study may keep only ``batches``)."""
    if isinstance(frames, bool):
        return known if frames else ()
    return tuple(name for name in known if name in frames)


def _with_params(summary: pd.DataFrame, params: dict[str, Any]) -> pd.DataFrame:
    out = summary.reset_index(drop=True).copy()
    for key, value in params.items():
        out[key] = value
    return out
