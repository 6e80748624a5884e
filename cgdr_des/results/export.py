"""Writing a run to a directory, and reading it back.

Directory layout written by ``write_results`` (every file optional except the frames and meta):
- ``ops.parquet``, ``items.parquet``, ``cores.parquet``, ``summary.parquet`` — always (Parquet is what
  ``read_frames`` reads); ``*.csv`` copies as well with ``csv=True``;
- ``meta.json`` — ``{"meta": result.meta, "tiling": <tiling fields>}``;
- ``scenario.resolved.json`` — ``Scenario.resolved_dict()`` (loads again with ``Scenario.from_dict``);
- ``outputs.npz`` — ``out`` and ``final_state`` when numerics produced them;
- ``trace.json`` — the Chrome trace (options from the scenario's ``[sim]`` table);
- ``core_load.png``, ``finish_cdf.png``, ``gantt_core{N}.png`` — options from ``[output]``.
- ``index.html`` — the one page that shows the answer, the tables and every plot (``results/page.py``).

- ``manifest.json`` — written last: every file with its size and sha256 (``results/outdir.py``).

The directory is staged and renamed into place (``results/outdir.py``): it is complete or absent.
``read_result`` and ``replot`` refuse a directory whose files do not match its manifest.
``replot(out_dir)`` redraws the PNGs and the page from the saved frames, meta and scenario alone.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cgdr_des.errors import InputError
from cgdr_des.results.outdir import OutputDir, Redraw, check_readable
from cgdr_des.results.page import write_index
from cgdr_des.results.plots import plot_run
from cgdr_des.results.result import Result
from cgdr_des.results.trace import trace_from_result, trace_notes, write_trace
from cgdr_des.runtime import no_cyclic_gc

FRAMES = ("ops", "items", "cores", "summary")
SCENARIO_FILE = "scenario.resolved.json"


def write_results(result: Result, out_dir: str | Path, *, csv: bool = False, trace: bool = True,
                  plots: bool = True, force: bool = False) -> dict[str, Path]:
    """Write ``result`` into ``out_dir`` atomically (see ``results/outdir.py``: a new, empty or, with
    ``force``, previous output directory); returns {label: path} of what was written."""
    out = Path(out_dir)
    target = OutputDir(out, force=force, field="out_dir")
    with target as staging, target.writing():
        written, _ = write_files(result, staging, csv=csv, trace=trace, plots=plots)
        written["index"] = write_index(staging, "run")
    return {label: out / path.relative_to(staging) for label, path in written.items()}


def write_files(result: Result, out: Path, *, csv: bool = False, trace: bool = True,
                plots: bool = True) -> tuple[dict[str, Path], list[str]]:
    """Write ``result``'s files into the existing directory ``out`` (no manifest, not atomic: the
    caller stages ``out``, as :func:`write_results` does). Returns {label: path} and the console
    notes about what the trace leaves out (``trace_notes``). The cyclic garbage collector is off
    meanwhile: the ops frame, the trace and the plots make millions of objects, and a collection
    walks them all (the figures' few cycles are collected after)."""
    with no_cyclic_gc():
        return _write_files(result, out, csv=csv, trace=trace, plots=plots)


def _write_files(result: Result, out: Path, *, csv: bool, trace: bool,
                 plots: bool) -> tuple[dict[str, Path], list[str]]:
    written: dict[str, Path] = {}
    for name in FRAMES:
        frame = getattr(result, name)
        written[name] = out / f"{name}.parquet"
        frame.to_parquet(written[name], index=False)
        if csv:
            written[f"{name}_csv"] = out / f"{name}.csv"
            frame.to_csv(written[f"{name}_csv"], index=False)
    written["meta"] = _write_json(out / "meta.json", {"meta": result.meta, "tiling": _plain(result.tiling)})
    if result.scenario is not None:
        written["scenario"] = _write_json(out / SCENARIO_FILE, result.scenario.resolved_dict())
    arrays = {k: v for k, v in (result.outputs or {}).items() if v is not None}
    if arrays:
        written["outputs"] = out / "outputs.npz"
        np.savez_compressed(written["outputs"], **arrays)
    notes: list[str] = []
    if trace:
        tr = trace_from_result(result)
        written["trace"] = write_trace(tr, out / "trace.json")
        notes = trace_notes(tr["otherData"], result.meta["clock_mhz"], _makespan(result))
    if plots:
        paths, gantt_notes = plot_run(result, out, **_gantt_options(_scenario_dict(result)))
        written.update({path.stem: path for path in paths})
        notes += [Note(n) for n in gantt_notes]
    return written, notes


class Note(str):
    """A console note that is not a warning (what the Gantt shows): ``kind`` labels its line."""

    kind = "note"


def _makespan(result: Result) -> int | None:
    if "makespan_cycles" in result.summary.columns and len(result.summary):
        return int(result.summary["makespan_cycles"].iloc[0])
    return None


def read_frames(out_dir: str | Path) -> dict[str, pd.DataFrame]:
    """The four frames of a written run (Parquet, or the CSV copies when Parquet is missing)."""
    out = Path(out_dir)
    frames = {}
    for name in FRAMES:
        pq, csv = out / f"{name}.parquet", out / f"{name}.csv"
        frames[name] = pd.read_parquet(pq) if pq.exists() else pd.read_csv(csv)
    return frames


def read_meta(out_dir: str | Path) -> dict[str, Any]:
    """``{"meta": ..., "tiling": ...}`` as written."""
    return json.loads((Path(out_dir) / "meta.json").read_text(encoding="utf-8"))


def read_result(out_dir: str | Path, *, field: str = "out_dir") -> Result:
    """A Result rebuilt from a written run; ``scenario`` is the resolved dict (not re-validated).

    The directory must be complete: its manifest lists every file with the size and hash it was
    written with (InputError on ``field`` otherwise). A setting of a ``compare`` output
    (``DIR/buffer_num_2``) is read through the comparison's manifest, which lists its files.
    """
    out = Path(out_dir)
    files = check_readable(out, field)
    if "meta.json" not in files:
        raise InputError(field, str(out), "a run's output (its manifest lists no meta.json)")
    saved = read_meta(out)
    outputs: dict[str, Any] = {"out": None, "final_state": None}
    if "outputs.npz" in files:
        with np.load(out / "outputs.npz") as npz:
            outputs.update({k: npz[k] for k in npz.files})
    scenario = json.loads((out / SCENARIO_FILE).read_text(encoding="utf-8")) if SCENARIO_FILE in files else None
    return Result(**read_frames(out), outputs=outputs, scenario=scenario, tiling=saved.get("tiling"),
                  meta=saved["meta"])


def replot(out_dir: str | Path, *, field: str = "out_dir", gantt: Callable[[Result], dict] | None = None,
           notes: list[str] | None = None, extra: Callable[[Path], list[Path]] | None = None) -> list[Path]:
    """Redraw the PNGs of a written run from its saved frames; returns the files written.

    ``gantt(result)`` ({"gantt_core", "gantt_window"}, the window in cycles), when given, replaces
    the scenario's ``[output]`` choice; what the Gantt shows is appended to ``notes``. ``extra(staging)``,
    when given, draws more plots in the same staging copy (``plot``: a ``run --with-range``'s ``range/``).
    Under the output's lock (``results/outdir.py`` ``Redraw``; refused while a writer holds it) the
    run is read, its files linked into a staging copy, the PNGs redrawn there and the whole swapped
    into place with a new manifest: a reader sees the old plots or the new ones, and the plots are
    always those of the frames they sit beside.
    """
    out = Path(out_dir)
    with Redraw(out, field=field, command="run") as staging:
        result = read_result(staging, field=field)
        options = gantt(result) if gantt else _gantt_options(result.scenario)
        drawn, gantt_notes = plot_run(result, staging, **options)
        if extra is not None:
            drawn = [*drawn, *extra(staging)]
        write_index(staging, "run", redraw=True)  # the page beside the plots it inlines
    if notes is not None:
        notes.extend(gantt_notes)
    return [out / path.relative_to(staging) for path in drawn]


def _scenario_dict(result: Result) -> dict[str, Any] | None:
    sc = result.scenario
    if sc is None or isinstance(sc, dict):
        return sc
    return sc.model_dump(mode="json")


def _gantt_options(scenario: dict[str, Any] | None) -> dict[str, Any]:
    output = (scenario or {}).get("output") or {}
    return {"gantt_core": output.get("gantt_core"), "gantt_window": output.get("gantt_window")}


def _plain(obj: Any) -> Any:
    """Dataclass / pydantic / plain object -> JSON-able dict (None stays None)."""
    if obj is None or isinstance(obj, dict):
        return obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    return dict(vars(obj)) if hasattr(obj, "__dict__") else repr(obj)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    plain = _plain(obj)
    return plain if plain is not obj else repr(obj)


def _write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=2, default=_json_default), encoding="utf-8")
    return path
