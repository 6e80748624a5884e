"""``cgdr-des sweep``: many points from one sweep file, on a local pool or a Dask cluster; ``--status``.

Exit codes: 0 when every point is done, 1 when some points failed (each is listed, the others are
stored), 2 for bad input (the CLI's error contract).
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from cgdr_des.bounds import MAX_WORKERS, check_count
from cgdr_des.cli import common
from cgdr_des.cli.app import main
from cgdr_des.cli.options import cache_options, calibration_cache, override_options, overrides_from
from cgdr_des.errors import InputError

#: a Dask scheduler address: scheme://host[:port]
SCHEDULER = re.compile(r"^(tcp|tls|ucx|inproc|ws|wss)://[^\s/]+$")


@main.command()
@click.argument("sweep_file", metavar="SWEEP", required=False)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Directory of the sweep's results.")
@click.option("--workers", type=int, default=None,
              help="Worker processes (default: the CPUs available; 0 runs the points in this process).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on Dask: tcp://HOST:PORT of a running scheduler, or local-dask for a LocalCluster.")
@click.option("--max-points", type=click.IntRange(min=1), default=None, help="Run at most this many points now.")
@click.option("--force", is_flag=True, help="Recompute stored points whose fingerprint no longer matches.")
@click.option("--dry-run", is_flag=True, help="Print the points and what is stored; run nothing.")
@click.option("--status", "status_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Say which points of the sweep in this directory are done, failed, pending.")
@common.max_memory_option
@override_options
@cache_options
@click.pass_context
def sweep(ctx: click.Context, sweep_file: str | None, out: Path | None, workers: int | None, scheduler: str | None,
          max_points: int | None, force: bool, dry_run: bool, status_dir: Path | None, sets: tuple[str, ...],
          seed: int | None, cache_dir: Path | None, no_cache: bool, max_memory: str | None) -> None:
    """Run the points of SWEEP (a TOML sweep file) and store them under --out (see docs/sweeps.md)."""
    from cgdr_des.sweep import SweepStore, load_sweep

    if status_dir is not None:
        _print_status(SweepStore(status_dir))
        return
    if sweep_file is None:
        raise InputError("SWEEP", "nothing", "a sweep file (or --status DIR)")
    _check_options(workers, scheduler)  # --seed is the sweep file's seed: checked with it
    spec = load_sweep(sweep_file, overrides=overrides_from(sets, None), seed=seed)
    if dry_run:
        _print_points(spec, out)
        return
    if out is None:
        raise InputError("--out", "nothing", "a directory for the sweep's results")
    with calibration_cache(cache_dir, no_cache):  # the workers inherit it: each calibration is measured once
        report = _run(spec, out, workers, scheduler, force, max_points, max_memory)
    if report.status.failed:
        click.echo(f"error: {len(report.status.failed)} of {_total(report.status)} points failed "
                   f"(cgdr-des sweep --status {out})", err=True)
        ctx.exit(1)


def _run(spec, out: Path, workers: int | None, scheduler: str | None, force: bool, max_points: int | None,
         max_memory: str | None = None):
    from cgdr_des.cli.common import output_dir, write_page
    from cgdr_des.sweep import expand, make_executor, run_sweep

    points = expand(spec, whole=True)  # every point validated before --out is touched
    workers = _default_workers() if workers is None else workers
    _check_memory(spec, points, workers, max_memory)
    target = output_dir(out, force, "sweep", in_place=True)  # points are stored in place: a killed sweep resumes
    with target, target.writing(), make_executor(scheduler, workers) as executor, \
            SweepProgress(executor.name) as bar:
        report = run_sweep(spec, out, executor, force=force, max_points=max_points, progress=bar, points=points)
        from cgdr_des.cli.redraw import write_sweep_plot

        write_sweep_plot(out)  # sweep_summary.png from summary.parquet, under the sweep's lock
        write_page(target, out, "sweep")
    s = report.status
    click.echo(f"sweep      {spec.name}: {_total(s)} points, {report.ran} run now, {report.skipped} already "
               f"stored ({executor.name})")
    click.echo(f"status     done {len(s.done)}, failed {len(s.failed)}, pending {len(s.pending)}")
    _print_failures(s.errors)
    click.echo(f"summary    {report.summary} ({len(s.done)} points)" if report.summary else "summary    none yet")
    return report


def _check_memory(spec, points, workers: int, max_memory: str | None) -> None:
    """Refuse a sweep whose largest point, times the points that run at once, is estimated above
    ``--max-memory`` (a run point by ``run``'s estimate, a tail point by the study's), before any runs."""
    from cgdr_des.cli.common import check_estimate, check_study_memory
    from cgdr_des.scenario import Scenario

    parallel = max(1, min(workers, len(points)))
    for p in points:
        if p.error is None:
            sc = Scenario.from_dict(p.scenario)
            if spec.kind in ("tail", "advise"):  # an advise point holds one variant's study at a time
                policies = spec.point_options().get("policies")
                check_study_memory(sc, spec.point_options().get("batches"), len(policies) if policies else None,
                                   max_memory, parallel)
            else:
                check_estimate(sc, max_memory, parallel=parallel, quiet=True)


def _check_options(workers: int | None, scheduler: str | None) -> None:
    """The flags within their bounds before the sweep file is even read (docs/reliability.md)."""
    if workers is not None:
        check_count("--workers", workers, 0, MAX_WORKERS, "0 runs the points in this process")
    if scheduler is not None and scheduler != "local-dask" and not SCHEDULER.match(scheduler):
        from cgdr_des.scenario.messages import cut

        raise InputError("--scheduler", cut(scheduler), "local-dask, or a Dask scheduler address such as "
                         "tcp://HOST:8786")


def _print_points(spec, out: Path | None) -> None:
    import pandas as pd

    from cgdr_des.sweep import SweepStore, expand

    points = expand(spec)
    stored = SweepStore(out) if out is not None and out.is_dir() else None
    rows = []
    for p in points:
        m = stored.manifest(p.point) if stored else None
        state = "new" if m is None else (m["status"] if m["fingerprint"] == p.fingerprint else "mismatch")
        rows.append({"point": p.point, **p.params, "stored": state, "fingerprint": p.fingerprint[:12],
                     "error": p.error or ""})
    frame = pd.DataFrame(rows)
    if not frame["error"].any():
        frame = frame.drop(columns="error")
    click.echo(f"sweep      {spec.name}: {len(points)} {spec.kind} points from {spec.base_scenario.name}")
    click.echo(frame.to_string(index=False))


def _print_status(store) -> None:
    info, s = store.info(), store.status()
    click.echo(f"sweep      {info['name']} ({info['kind']} points, cgdr-des {info['version']}) in {store.root}")
    click.echo(f"status     done {len(s.done)}, failed {len(s.failed)}, pending {len(s.pending)} "
               f"of {_total(s)}")
    _print_failures(s.errors)
    if s.pending:
        shown = ", ".join(str(i) for i in s.pending[:20]) + (" ..." if len(s.pending) > 20 else "")
        click.echo(f"pending    {shown}")


def _print_failures(errors: dict[int, str]) -> None:
    """One line per distinct error, with the points that raised it."""
    by_error: dict[str, list[int]] = {}
    for point, error in errors.items():
        by_error.setdefault(error, []).append(point)
    for error, points in by_error.items():
        shown = ", ".join(str(i) for i in points[:8]) + (f" (+{len(points) - 8} more)" if len(points) > 8 else "")
        click.echo(f"failed     point{'s' if len(points) > 1 else ''} {shown}: {error}")


def _total(status) -> int:
    return len(status.done) + len(status.failed) + len(status.pending)


def _default_workers() -> int:
    from cgdr_des.pool import usable_cpus

    return usable_cpus()


class SweepProgress:
    """The sweep's one stage, ``running N points on <executor>``: fed ``(done, failed, total, elapsed)``
    by ``run_sweep`` (first with nothing finished, then after each point), failures in its note."""

    def __init__(self, where: str, progress=None):
        from cgdr_des.results.progress import Progress

        self.where, self.progress, self.stage = where, progress or Progress(), None

    def __call__(self, done: int, failed: int, total: int, elapsed: float) -> None:
        if self.stage is None:
            self.stage = self.progress.stage(f"running {total} point{'s' if total != 1 else ''} on {self.where}",
                                             total, "points")
        self.stage.update(done + failed, total, note=f"{failed} failed" if failed else None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if self.stage is not None:
            self.stage.__exit__(*exc)
