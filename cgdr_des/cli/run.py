"""``cgdr-des run``: simulate one scenario and write its results."""

from __future__ import annotations

from pathlib import Path

import click

from cgdr_des.cli import common
from cgdr_des.cli.app import main
from cgdr_des.cli.options import cache_options, calibration_cache, load_with_overrides, override_options


@main.command()
@click.argument("scenario")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for frames, trace and plots.")
@click.option("--csv", is_flag=True, help="Also write the frames as CSV.")
@click.option("--with-range", is_flag=True,
              help="Also print the makespan interval over the profile's field ranges (see `sensitivity`).")
@common.force_option
@common.max_memory_option
@override_options
@cache_options
def run(scenario: str, out: Path, csv: bool, with_range: bool, force: bool, max_memory: str | None,
        sets: tuple[str, ...], seed: int | None, cache_dir: Path | None, no_cache: bool) -> None:
    """Simulate SCENARIO (a TOML file) and write its results into --out.

    A cost-weighted ``[kernel] policy`` calibrates item costs first (cached: --cache-dir, --no-cache)."""
    sc = load_with_overrides(scenario, sets, seed)
    common.check_estimate(sc, max_memory)
    target = common.output_dir(out, force)
    with target as staging, calibration_cache(cache_dir, no_cache):
        result, written = common.run_one(sc, staging, csv, target)
        for line in common.summary_lines(result):
            click.echo(line)
        if with_range:  # its files in OUT/range/: part of the run's one output
            from cgdr_des.cli.sensitivity import print_range

            with target.writing():
                print_range(sc, staging / "range")
        common.write_page(target, staging, "run")
    click.echo(f"outputs    {out}: {', '.join(sorted(p.name for p in written.values()))}")
