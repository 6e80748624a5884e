"""``python -m analysis.report --out analysis/report [--quick] [--workers N] [--work DIR] [--check]``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from cgdr_des.errors import CgdrError


@click.command()
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("analysis/report"),
              show_default=True, help="Where the README, its figures and frames go.")
@click.option("--quick", is_flag=True, help="The reduced grid (tests, development): minutes become seconds.")
@click.option("--workers", type=click.IntRange(min=0), default=None,
              help="Sweep worker processes (default: the CPUs available; 0 runs in this process).")
@click.option("--work", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The sweeps' output directories (default: OUT/_sweeps/full or OUT/_sweeps/quick).")
@click.option("--check", "check", is_flag=True,
              help="Regenerate nothing: recompute a few quoted numbers of the report in OUT and exit 1 when one "
                   "differs beyond its tolerance (input fingerprint changes are printed as notes).")
def main(out: Path, quick: bool, workers: int | None, work: Path | None, check: bool) -> None:
    """Run the report's sweeps (scenarios/sweeps/report_*.toml) and write OUT/README.md."""
    from analysis.report.build import build_report

    if check:
        _check(out)
        return

    workers = len(os.sched_getaffinity(0)) if workers is None else workers
    try:
        meta = build_report(out, quick=quick, workers=workers, work=work)
    except CgdrError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    click.echo(f"report     {out / 'README.md'} ({len(meta['figures'])} figures, {meta['build_s']:.0f} s)")


def _check(out: Path) -> None:
    """``--check``: exit 0 when every recomputed number is within tolerance, 1 when one is not, 2 on bad input."""
    from analysis.report.check import run_check

    if not (out / "report.json").is_file():
        click.echo(f"error: --out: got {str(out)[:40]}; a report folder holding report.json", err=True)
        sys.exit(2)
    try:
        bad = run_check(out, log=click.echo)
    except (CgdrError, LookupError, FileNotFoundError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
