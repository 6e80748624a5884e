"""``cgdr-des compare``: one scenario under several kernel settings, side by side."""

from __future__ import annotations

from pathlib import Path

import click

from cgdr_des.cli import common
from cgdr_des.cli.app import main
from cgdr_des.cli.options import load_with_overrides, override_options
from cgdr_des.errors import InputError


@main.command()
@click.argument("scenario")
@click.argument("more_buffer_nums", nargs=-1, type=int, metavar="")
@click.option("--buffer-num", "buffer_nums", multiple=True, type=int,
              help="buffer_num values to compare: --buffer-num 1 2 (default 1 2).")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--csv", is_flag=True, help="Also write the frames as CSV.")
@common.force_option
@common.max_memory_option
@override_options
def compare(scenario: str, more_buffer_nums: tuple[int, ...], buffer_nums: tuple[int, ...], out: Path,
            csv: bool, force: bool, max_memory: str | None, sets: tuple[str, ...], seed: int | None) -> None:
    """Run SCENARIO once per buffer_num and plot single vs double buffering.

    Values after --buffer-num are collected greedily (``--buffer-num 1 2``); each run goes to
    OUT/buffer_num_<n>/, the comparison to OUT/buffer_compare.png and OUT/compare.csv.
    """
    from cgdr_des.results.plots import plot_buffer_compare

    values = list(dict.fromkeys((*buffer_nums, *more_buffer_nums))) or [1, 2]
    for v in values:
        if v not in (1, 2):
            raise InputError("--buffer-num", v, "1 or 2")
    base = load_with_overrides(scenario, sets, seed)
    points = [base.with_changes({"kernel": {"buffer_num": bn}}) for bn in values]
    for sc in points:
        common.check_estimate(sc, max_memory)
    results = {}
    target = common.output_dir(out, force)
    with target as staging:  # the whole comparison is one owned output
        for bn, sc in zip(values, points, strict=True):
            results[bn], _ = common.run_one(sc, common.prepare_out(staging / f"buffer_num_{bn}"), csv, target)
        with target.writing():
            plot_buffer_compare(results, staging / "buffer_compare.png")
            table = _compare_table(results)
            table.to_csv(staging / "compare.csv", index=False)
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
