"""The ``cgdr-des`` command line: run / compare / plot / validate / schema.

Errors: every ``CgdrError`` (``InputError``, ``KernelDiagnostic``) becomes one line on stderr,
``error: <message>``, and exit code 2 — never a traceback (``-v`` adds the rest of a multi-line
diagnostic). Click's own usage errors also exit with 2. ``simulate`` is imported only by the
commands that simulate, so ``validate``/``schema``/``plot`` stay fast.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from cgdr_des.errors import CgdrError, InputError
from cgdr_des.results.export import write_results
from cgdr_des.results.progress import ProgressBar
from cgdr_des.scenario import Scenario, load_scenario, validate_tiling


class _Cli(click.Group):
    """A group that turns CgdrError into ``error: <first line>`` on stderr and exit 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except CgdrError as exc:
            first, _, rest = str(exc).partition("\n")
            click.echo(f"error: {first}", err=True)
            if rest and ctx.params.get("verbose"):
                click.echo(rest, err=True)
            ctx.exit(2)


@click.group(cls=_Cli)
@click.option("-v", "--verbose", is_flag=True, help="Print every line of a multi-line diagnostic.")
def main(verbose: bool) -> None:
    """Discrete-event simulator of the vector-only chunk_gated_delta_rule AscendC kernel."""


def _simulate():
    from cgdr_des.simulation import simulate  # lazy: the simulation stack is heavy and not needed elsewhere

    return simulate


def _prepare_out(out: Path) -> Path:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError("--out", str(out), f"a writable directory ({exc.strerror})") from None
    return out


def _run_one(sc: Scenario, out: Path, csv: bool) -> tuple[object, dict[str, Path]]:
    with ProgressBar(f"{sc.name}") as bar:
        result = _simulate()(sc, progress=bar)
    written = write_results(result, out, csv=csv or sc.output.csv, trace=sc.sim.trace,
                            plots=sc.output.plots)
    return result, written


def _summary_lines(result) -> list[str]:
    s = result.summary.iloc[0]
    return [
        f"scenario   {s['scenario_name']} ({s['scenario_hash']}) on {s['hardware']}: policy {s['policy']}, "
        f"buffer_num {s['buffer_num']}, fidelity {s['fidelity']}, numerics {s['numerics']}",
        f"makespan   {int(s['makespan_cycles']):,} cycles = {s['makespan_us']:,.3f} us "
        f"(lower bound {int(s['lower_bound_cycles']):,} cycles)",
        f"balance    imbalance {s['imbalance']:.3f}, cv {s['cv']:.3f}, "
        f"p99 core finish {s['finish_p99_cycles']:,.0f} cycles over {int(s['n_cores'])} cores",
    ]


@main.command()
@click.argument("scenario")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for frames, trace and plots.")
@click.option("--csv", is_flag=True, help="Also write the frames as CSV.")
def run(scenario: str, out: Path, csv: bool) -> None:
    """Simulate SCENARIO (a TOML file) and write its results into --out."""
    sc = load_scenario(scenario)
    result, written = _run_one(sc, _prepare_out(out), csv)
    for line in _summary_lines(result):
        click.echo(line)
    click.echo(f"outputs    {out}: {', '.join(sorted(p.name for p in written.values()))}")


@main.command()
@click.argument("scenario")
def validate(scenario: str) -> None:
    """Check SCENARIO without simulating: fields, lengths, host tiling."""
    sc = load_scenario(scenario)
    lengths = sc.lengths()
    click.echo(f"ok: {sc.name} ({sc.scenario_hash()}): {lengths.size} sequences, "
               f"{int(lengths.sum())} tokens, nk={sc.shape.nk} nv={sc.shape.nv} "
               f"dk={sc.shape.dk} dv={sc.shape.dv} on {sc.hardware.profile}")
    tiling = validate_tiling(sc)
    click.echo(f"tiling: v_step={tiling.v_step} v_tiles={tiling.v_tile_count} "
               f"block_dim={tiling.block_dim} tmp_buff={tiling.tmp_buff_bytes} B "
               f"out_queue={tiling.out_queue_bytes} B")


@main.command()
def schema() -> None:
    """Print the JSON schema of scenario files."""
    click.echo(json.dumps(Scenario.model_json_schema(), indent=2))


@main.command()
@click.argument("directory", type=click.Path(path_type=Path))
def plot(directory: Path) -> None:
    """Redraw the PNG plots of a run directory from its saved frames."""
    from cgdr_des.results.export import replot

    if not (directory / "meta.json").is_file():
        raise InputError("DIRECTORY", str(directory), "a directory written by 'cgdr-des run'")
    for path in replot(directory):
        click.echo(str(path))


@main.command()
@click.argument("scenario")
@click.argument("more_buffer_nums", nargs=-1, type=int, metavar="")
@click.option("--buffer-num", "buffer_nums", multiple=True, type=int,
              help="buffer_num values to compare: --buffer-num 1 2 (default 1 2).")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--csv", is_flag=True, help="Also write the frames as CSV.")
def compare(scenario: str, more_buffer_nums: tuple[int, ...], buffer_nums: tuple[int, ...], out: Path,
            csv: bool) -> None:
    """Run SCENARIO once per buffer_num and plot single vs double buffering.

    Values after --buffer-num are collected greedily (``--buffer-num 1 2``); each run goes to
    OUT/buffer_num_<n>/, the comparison to OUT/buffer_compare.png and OUT/compare.csv.
    """
    from cgdr_des.results.plots import plot_buffer_compare

    values = list(dict.fromkeys((*buffer_nums, *more_buffer_nums))) or [1, 2]
    for v in values:
        if v not in (1, 2):
            raise InputError("--buffer-num", v, "1 or 2")
    base = load_scenario(scenario)
    _prepare_out(out)
    results = {}
    for bn in values:
        sc = base.with_changes({"kernel": {"buffer_num": bn}})
        results[bn], _ = _run_one(sc, _prepare_out(out / f"buffer_num_{bn}"), csv)
    plot_buffer_compare(results, out / "buffer_compare.png")
    table = _compare_table(results)
    table.to_csv(out / "compare.csv", index=False)
    click.echo(table.to_string(index=False))
    click.echo(f"outputs    {out}: buffer_compare.png, compare.csv, "
               + ", ".join(f"buffer_num_{bn}/" for bn in values))


def _compare_table(results: dict):
    import pandas as pd

    cols = ["makespan_cycles", "makespan_us", "imbalance", "finish_p99_cycles", "util_S", "util_V",
            "util_MTE2", "util_MTE3"]
    # vStep shows what the extra out-queue buffer cost: the host gives tmpBuff that much less UB
    rows = [{"buffer_num": bn, "v_step": res.meta.get("v_step"), **res.summary.iloc[0][cols].to_dict()}
            for bn, res in results.items()]
    table = pd.DataFrame(rows)
    table["speedup"] = table["makespan_cycles"].iloc[0] / table["makespan_cycles"]
    return table
