"""Every command's plots drawn from the frames it saved: what ``cgdr-des plot DIR`` runs, and what the
commands themselves call after writing their frames, so that a redraw draws exactly what the command
drew.

``draw_<command>(directory)`` reads the saved files of ``directory`` and writes its PNGs there,
returning their paths. :func:`redraw` dispatches on the command the manifest records (``sweep.json``
marks a sweep) and draws through :class:`~cgdr_des.results.outdir.Redraw`: under the output's lock,
into a staging copy swapped into place with a new manifest. A sweep, whose points are stored in place
so that a killed sweep resumes, has no manifest: its one PNG is drawn under the same lock and renamed
into place.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from cgdr_des.errors import InputError
from cgdr_des.results.outdir import ANY, OutputDir, Redraw, output_owner
from cgdr_des.results.page import write_index


def draw_compare(directory: Path) -> list[Path]:
    """``compare --kernel``: the per-pipe bars; otherwise the comparison plots and each setting's run plots."""
    import pandas as pd

    if (directory / "kernels_summary.parquet").is_file():
        from cgdr_des.results.kernels_plots import FILE, plot_kernel_pipes

        return [plot_kernel_pipes(pd.read_parquet(directory / "kernels_summary.parquet"),
                                  pd.read_parquet(directory / "kernels_pipes.parquet"), directory / FILE)]
    from cgdr_des.results.compare_plots import plot_chunk_gantt, plot_critical_path
    from cgdr_des.results.plots import plot_buffer_compare, plot_run

    table = pd.read_parquet(directory / "compare.parquet")
    results = {name: _setting(directory / name) for name in table["setting"] if (directory / name).is_dir()}
    drawn = [plot_critical_path(table, directory / "critical_path.png")]
    if results:
        drawn.append(plot_chunk_gantt(results, directory / "chunk_gantt.png"))
    buffers = {int(n.rsplit("_", 1)[1]): r for n, r in results.items() if n.startswith("buffer_num_")}
    if buffers:
        drawn.append(plot_buffer_compare(buffers, directory / "buffer_compare.png"))
    for name, result in results.items():
        output = (result.scenario or {}).get("output") or {}
        if output.get("plots", True):
            paths, _ = plot_run(result, directory / name, gantt_core=output.get("gantt_core"),
                                gantt_window=output.get("gantt_window"))
            drawn += list(paths)
    return drawn


def _setting(directory: Path):
    """One setting's run inside a comparison (its files are covered by the comparison's manifest,
    checked by the caller): the frames, meta and scenario the plots need."""
    from cgdr_des.results.export import SCENARIO_FILE, read_frames, read_meta
    from cgdr_des.results.result import Result

    saved = read_meta(directory)
    scenario_file = directory / SCENARIO_FILE
    scenario = json.loads(scenario_file.read_text(encoding="utf-8")) if scenario_file.is_file() else None
    return Result(**read_frames(directory), outputs={"out": None, "final_state": None}, scenario=scenario,
                  tiling=saved.get("tiling"), meta=saved["meta"])


def draw_tail(directory: Path) -> list[Path]:
    """The tail study's plots from its frames and ``study.json``."""
    import pandas as pd

    from cgdr_des.results.tail_plots import plot_study

    study = SimpleNamespace(batches=pd.read_parquet(directory / "batches.parquet"),
                            core_finish=pd.read_parquet(directory / "core_finish.parquet"),
                            summary=pd.read_parquet(directory / "tail_summary.parquet"),
                            checks=pd.read_csv(directory / "checks.csv"),
                            meta=json.loads((directory / "study.json").read_text(encoding="utf-8")))
    return list(plot_study(study, directory).values())


def draw_measured(directory: Path) -> list[Path]:
    """Predicted against measured, from ``measured.csv`` and ``verdicts.json``."""
    import pandas as pd

    from cgdr_des.results.measured_plots import FILE, plot_measured

    df = pd.read_csv(directory / "measured.csv", dtype={"error": str}, keep_default_na=False)
    verdicts = pd.DataFrame(json.loads((directory / "verdicts.json").read_text(encoding="utf-8")))
    return [plot_measured(df, verdicts, directory / FILE)]


def draw_calibrate(directory: Path) -> list[Path]:
    """Residuals before and after the fit and leave-one-out, from ``residuals.csv`` and ``fit.json``."""
    import pandas as pd

    from cgdr_des.results.calibrate_plots import FILE, plot_calibration

    fit = json.loads((directory / "fit.json").read_text(encoding="utf-8"))
    return [plot_calibration(pd.read_csv(directory / "residuals.csv"), fit, directory / FILE)]


def draw_sensitivity(directory: Path) -> list[Path]:
    """The tornado and the joint samples' makespans, from ``samples.parquet`` and ``interval.json``."""
    import pandas as pd

    from cgdr_des.results.sensitivity_plots import FILE, plot_joint_makespan
    from cgdr_des.timing.sensitivity import Sensitivity
    from cgdr_des.timing.tornado import plot_tornado

    runs = pd.read_parquet(directory / "samples.parquet")
    summary = json.loads((directory / "interval.json").read_text(encoding="utf-8"))
    study = Sensitivity(summary["scenario"], runs, tuple(summary["params"]), summary["seed"],
                        summary.get("profile") or "")
    return [plot_tornado(study, directory / "tornado.png"), plot_joint_makespan(runs, summary, directory / FILE)]


def draw_advise(directory: Path) -> list[Path]:
    """The gain plot of an advice, from ``advice.parquet`` and ``advice.json``."""
    import pandas as pd

    from cgdr_des.results.advise_plots import FILE, plot_gains

    meta = json.loads((directory / "advice.json").read_text(encoding="utf-8"))
    return [plot_gains(pd.read_parquet(directory / "advice.parquet"), directory / FILE, meta)]


def draw_run_range(directory: Path) -> list[Path]:
    """``run --with-range``: the run's plots are drawn by ``replot``; its ``range/`` study's here."""
    return draw_sensitivity(directory / "range") if (directory / "range" / "interval.json").is_file() else []


def draw_sweep(directory: Path, target: Path | None = None) -> list[Path]:
    """The summary metric against each parameter, from ``summary.parquet`` and ``sweep.json``;
    written to ``target`` (default: ``directory/sweep_summary.png``)."""
    import pandas as pd

    from cgdr_des.results.sweep_plots import FILE, plot_sweep_summary

    info = json.loads((directory / "sweep.json").read_text(encoding="utf-8"))
    summary_file = directory / "summary.parquet"
    if not summary_file.is_file():
        return []
    params = list(dict.fromkeys(k for p in info.get("points", []) for k in p.get("params", {})))
    return [plot_sweep_summary(pd.read_parquet(summary_file), params, target or directory / FILE,
                               name=info.get("name", ""), scenario=info.get("scenario", ""),
                               profiles=info.get("profiles", ()))]


#: command -> the files its plots are drawn from (checked before anything heavy is imported)
NEEDS: dict[str, tuple[str, ...]] = {
    "tail": ("batches.parquet", "core_finish.parquet", "tail_summary.parquet", "checks.csv", "study.json"),
    "measured": ("measured.csv", "verdicts.json"), "calibrate": ("residuals.csv", "fit.json"),
    "sensitivity": ("samples.parquet", "interval.json"), "advise": ("advice.parquet", "advice.json", "variants.csv"),
}
#: command -> the function that draws its directory's plots (``run`` is ``export.replot``'s)
DRAWERS: dict[str, Callable[[Path], list[Path]]] = {
    "compare": draw_compare, "tail": draw_tail, "measured": draw_measured, "calibrate": draw_calibrate,
    "sensitivity": draw_sensitivity, "advise": draw_advise,
}


def redraw(directory: str | Path, *, field: str = "DIRECTORY") -> list[Path]:
    """Redraw the plots of any command's output ``directory`` (not a run's: ``export.replot``)."""
    out = Path(directory)
    command = output_owner(out) if out.is_dir() and not out.is_symlink() else None
    if command == "sweep":
        return _redraw_sweep(out, field)
    if command not in DRAWERS:
        raise InputError(field, str(out), "a directory written by cgdr-des (run, compare, tail, measured, "
                         "calibrate, sensitivity, advise or sweep)")
    kernels = (out / "kernels_summary.parquet").is_file()
    needs = NEEDS.get(command) or (("kernels_summary.parquet", "kernels_pipes.parquet") if kernels
                                   else ("compare.parquet",))
    for name in needs:
        if not (out / name).is_file():
            raise InputError(field, str(out), f"a complete '{command}' output ({name} is missing)")
    with Redraw(out, field=field, command=command) as staging:
        try:
            drawn = DRAWERS[command](staging)
        except FileNotFoundError as exc:  # listed and complete, yet not what the command writes
            name = Path(exc.filename or "a file").name
            raise InputError(field, str(out), f"a complete '{command}' output ({name} is missing)") from None
        write_index(staging, command, redraw=True)  # the page beside the plots it inlines
    return [out / p.relative_to(staging) for p in drawn]


def _redraw_sweep(out: Path, field: str) -> list[Path]:
    with OutputDir(out, field=field, command="sweep", in_place=True):  # the sweep's lock: no writer meanwhile
        drawn = write_sweep_plot(out)
        write_index(out, "sweep", redraw=True)
        return drawn


def write_sweep_plot(out: Path) -> list[Path]:
    """:func:`draw_sweep` into a temporary file renamed into place (the caller holds the sweep's lock):
    a reader sees the old plot or the new one, as every file of a sweep."""
    from cgdr_des.results.sweep_plots import FILE

    tmp = out / f".{FILE}.{os.getpid()}.tmp.png"
    try:
        drawn = draw_sweep(out, tmp)
        if drawn:
            os.replace(tmp, out / FILE)
    finally:
        tmp.unlink(missing_ok=True)
    return [out / FILE] if drawn else []


def is_run(directory: Path) -> bool:
    """A run's directory (``export.replot`` redraws it): its manifest says ``run``, or it predates the record."""
    return output_owner(directory) in ("run", ANY) and (directory / "meta.json").is_file()
