"""``cgdr-des validate``, ``schema`` and ``plot``: commands that look at files without simulating.

The scenario model (pydantic, numpy) is imported when a command runs, not when the CLI loads; the
writers (pandas, pyarrow, matplotlib) only by ``plot``.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from cgdr_des.cli import common
from cgdr_des.cli.app import main
from cgdr_des.errors import InputError
from cgdr_des.results.formats import FORMATS


def load_scenario(path: str):
    """:func:`cgdr_des.scenario.load_scenario`, imported on first call (tests replace this name)."""
    from cgdr_des.scenario import load_scenario as load

    return load(path)


@main.command()
@click.argument("scenario")
@common.max_memory_option
def validate(scenario: str, max_memory: str | None) -> None:
    """Check SCENARIO without simulating: fields, bounds, lengths, host tiling, the diagnostics the
    tiling alone reveals, and the memory/time estimate."""
    from cgdr_des.scenario import validate_tiling

    sc = load_scenario(scenario)
    lengths = sc.lengths()
    click.echo(f"ok: {sc.name} ({sc.scenario_hash()}): {lengths.size} sequences, "
               f"{int(lengths.sum())} tokens, nk={sc.shape.nk} nv={sc.shape.nv} "
               f"dk={sc.shape.dk} dv={sc.shape.dv} on {sc.hardware.profile}")
    tiling = validate_tiling(sc)
    click.echo(f"tiling: v_step={tiling.v_step} v_tiles={tiling.v_tile_count} "
               f"block_dim={tiling.block_dim} tmp_buff={tiling.tmp_buff_bytes} B "
               f"out_queue={tiling.out_queue_bytes} B")
    common.check_estimate(sc, max_memory)


@main.command()
def schema() -> None:
    """Print the JSON schema of scenario files: every field with its description and units
    (docs/scenario.md is the same text as a table)."""
    from cgdr_des.scenario.model import scenario_json_schema

    click.echo(json.dumps(scenario_json_schema(), indent=2))


@main.command()
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--core", type=click.IntRange(min=0), default=None,
              help="Core of the Gantt (default: the critical core, the one that finishes last).")
@click.option("--window", metavar="T0:T1", default=None,
              help="Gantt window in µs (default: the core's longest work item, whole); an end past the "
                   "run's is clipped, a start past it refused.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="png", show_default=True,
              help="Also write each plot in this vector format beside its PNG (the page inlines the PNGs).")
def plot(directory: Path, core: int | None, window: str | None, fmt: str) -> None:
    """Redraw the PNG plots of any cgdr-des output DIRECTORY (run, compare, tail, measured, calibrate,
    sensitivity, advise, sweep) from its saved frames, under its lock, swapped in whole. For a run, --core and
    --window choose the Gantt's core and time window (they replace the scenario's [output]
    gantt_core / gantt_window)."""
    from cgdr_des.results.formats import figure_formats

    with figure_formats(fmt):
        _plot(directory, core, window)


def _plot(directory: Path, core: int | None, window: str | None) -> None:
    from functools import partial

    from cgdr_des.cli.redraw import draw_run_range, is_run, redraw  # light: matplotlib, pandas load when drawing

    if not is_run(directory):
        if core is not None or window is not None:
            raise InputError("--core" if core is not None else "--window", core if core is not None else window,
                             "only with a run's directory (it chooses the run's Gantt)")
        for path in redraw(directory, field="DIRECTORY"):  # refuses what no cgdr-des command wrote
            click.echo(str(path))
        return
    from cgdr_des.results.export import replot
    from cgdr_des.results.plots import gantt_choice, parse_window_us

    if window is not None:
        parse_window_us(window)  # a malformed window is refused before the frames are read
    choose = partial(gantt_choice, core=core, window=window) if core is not None or window is not None else None
    notes: list[str] = []
    # refuses an incomplete directory; extra: a run --with-range's range/ plots, in the same swap
    for path in replot(directory, field="DIRECTORY", gantt=choose, notes=notes, extra=draw_run_range):
        click.echo(str(path))
    for note in notes:
        click.echo(f"note       {note}", err=True)
