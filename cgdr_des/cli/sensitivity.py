"""``cgdr-des sensitivity``: what the ranged profile fields do to one scenario's makespan."""

from __future__ import annotations

from pathlib import Path

import click

from cgdr_des.bounds import MAX_SAMPLES, check_seed
from cgdr_des.cli import common
from cgdr_des.cli.app import main
from cgdr_des.errors import InputError
from cgdr_des.timing import DEFAULT_SAMPLES, DEFAULT_SEED  # the package, not .sensitivity: no pandas at --help

TOP_LINES = 10


def parse_fields(text: str | None) -> list[str] | None:
    """``"a,b.c"`` -> ``["a", "b.c"]``; None stays None (every ranged field); empty names are errors."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise InputError("--fields", text, "comma-separated ranged field names (field or field.op)")
    return names


def check_samples(samples: int, seed: int) -> None:
    """``--samples`` and ``--seed`` within their bounds (docs/reliability.md), before any work."""
    if not 0 <= samples <= MAX_SAMPLES:
        raise InputError("--samples", samples, f"an integer in [0, {MAX_SAMPLES:,}] (each sample is one simulation)")
    check_seed("--seed", seed)


def sensitivity_of(sc, fields, samples: int, seed: int):
    """Run the study, its progress on stderr."""
    from cgdr_des.results.progress import Progress
    from cgdr_des.timing.sensitivity import run_sensitivity

    check_samples(samples, seed)
    return run_sensitivity(sc, fields=fields, samples=samples, seed=seed, progress=Progress())


@main.command()
@click.argument("scenario")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for samples.parquet, interval.json, tornado.png and joint_makespan.png.")
@click.option("--fields", default=None, help="Comma-separated ranged fields to perturb (default: all).")
@click.option("--samples", default=DEFAULT_SAMPLES, show_default=True, type=int,
              help=f"Joint Latin-hypercube samples (0 .. {MAX_SAMPLES:,}).")
@click.option("--seed", default=DEFAULT_SEED, show_default=True, type=int, help="Seed of the joint sample (>= 0).")
@common.force_option
def sensitivity(scenario: str, out: Path, fields: str | None, samples: int, seed: int, force: bool) -> None:
    """Perturb each ranged profile field of SCENARIO alone (both ends), then all jointly; write the
    makespan interval, a tornado plot and one row per simulated point (phase fidelity, numerics off)."""
    from cgdr_des.scenario import load_scenario
    from cgdr_des.timing.sensitivity import interval_line, write_sensitivity
    from cgdr_des.timing.tornado import tornado_table

    check_samples(samples, seed)
    sc = load_scenario(scenario)
    names = parse_fields(fields)
    target = common.output_dir(out, force, "sensitivity")
    with target as staging:  # checked and locked before the study; the files appear whole or not at all
        res = sensitivity_of(sc, names, samples, seed)
        with target.writing():
            paths = write_sensitivity(res, staging)
            paths["joint_makespan"] = plot_joint(res, staging)
        common.write_page(target, staging, "sensitivity")
    click.echo(interval_line(res, common.time_unit()))
    for name, row in tornado_table(res).head(TOP_LINES).iterrows():
        click.echo(f"  {name:<40} low end {row['low']:+7.2f} %   high end {row['high']:+7.2f} %")
    click.echo(f"outputs    {out}: {', '.join(sorted(p.name for p in paths.values()))}")


def plot_joint(res, directory: Path) -> Path:
    """``joint_makespan.png``: the joint samples' makespans within the interval (results/sensitivity_plots.py)."""
    from cgdr_des.results.sensitivity_plots import FILE, plot_joint_makespan

    return plot_joint_makespan(res.runs, res.summary(), directory / FILE)


def print_range(sc, directory: Path) -> None:
    """``run --with-range``: the default study, its line on the console, its files in ``directory``
    (``range/`` inside the run's staging directory, so that they are part of its one output)."""
    from cgdr_des.timing.sensitivity import interval_line, write_sensitivity

    res = sensitivity_of(sc, None, DEFAULT_SAMPLES, DEFAULT_SEED)
    directory.mkdir(exist_ok=True)
    write_sensitivity(res, directory)
    plot_joint(res, directory)
    click.echo(interval_line(res, common.time_unit()))
