"""``cgdr-des measured``: the published 310P latencies beside each program's prediction, with ranges."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cgdr_des.cli import common
from cgdr_des.cli.app import main
from cgdr_des.errors import InputError

DEFAULT_CSV = "published_310p.csv"


def _csv_of(path: Path) -> Path:
    """A measurements CSV, or a directory holding ``published_310p.csv``."""
    if path.is_dir():
        path = path / DEFAULT_CSV
    if not path.is_file():
        raise InputError("MEASUREMENTS", str(path), f"a measurements CSV or a directory with {DEFAULT_CSV}")
    return path


@main.command()
@click.argument("measurements", type=click.Path(path_type=Path))
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for measured.csv, verdicts.json and measured.png.")
@click.option("--hypotheses", default="vector,cube,cube_short_ub", show_default=True,
              help="Comma-separated hypotheses to run (vector, cube, cube_short_ub).")
@common.force_option
def measured(measurements: Path, out: Path, hypotheses: str, force: bool) -> None:
    """Set each measured latency in MEASUREMENTS (a CSV of scenario -> latency_us, or a directory
    with published_310p.csv, e.g. scenarios/measured) beside the vector-only and Cube-era
    predictions: nominal and a range from the profile's fast and slow corners plus the ranged host
    overhead; then say which hypothesis the measurements are consistent with."""
    from cgdr_des.measured import HYPOTHESES, compare_measured, verdicts
    from cgdr_des.timing.measurements import check_scenario_files, read_measurements

    known = {h.name: h for h in HYPOTHESES}
    chosen = [s.strip() for s in hypotheses.split(",") if s.strip()]
    for name in chosen:
        if name not in known:
            from cgdr_des.scenario.messages import cut as shown

            raise InputError("--hypotheses", shown(name), f"one of {', '.join(known)}")
    csv = _csv_of(measurements)
    from cgdr_des.results.progress import Progress

    check_scenario_files(read_measurements(csv))  # every row readable, before anything runs
    target = common.output_dir(out, force, "measured")
    with target as staging:  # checked and locked before anything runs; both files appear or neither
        df = compare_measured(csv, [known[n] for n in chosen], progress=Progress())
        v = verdicts(df)
        with target.writing():
            df.to_csv(staging / "measured.csv", index=False)
            (staging / "verdicts.json").write_text(json.dumps(v.to_dict(orient="records"), indent=2) + "\n",
                                                   encoding="utf-8")
            from cgdr_des.cli.redraw import draw_measured

            draw_measured(staging)  # measured.png, from the files just written (as `plot` redraws it)
        common.write_page(target, staging, "measured")
    us = common.time_unit()
    for _, r in df.iterrows():
        if r["error"]:
            click.echo(f"shape      {r['shape']:<17} {r['hypothesis']:<14} measured {r['measured_us']:>9,.0f} {us}  "
                       f"not simulated: {r['error'][:100]}")
            continue
        click.echo(f"shape      {r['shape']:<17} {r['hypothesis']:<14} measured {r['measured_us']:>9,.0f} {us}  "
                   f"predicted {r['predicted_us']:>9,.0f} [{r['predicted_low_us']:,.0f}, {r['predicted_high_us']:,.0f}]"
                   f"  {'inside' if r['inside'] else 'OUTSIDE'}  measured/device {r['measured_over_device']:.2f}")
    for _, r in v.iterrows():
        if r["error"]:
            click.echo(f"verdict    {r['hypothesis']}: not simulated on every shape")
            continue
        click.echo(f"verdict    {r['hypothesis']}: {int(r['n_inside'])}/{int(r['n'])} inside; constant overhead "
                   f"{r['offset_us']:,.0f} {us} (worst residual {100 * r['offset_worst_residual']:.0f} %"
                   f"{'' if r['offset_in_host_range'] else ', outside the overhead range'}); constant factor "
                   f"{r['factor']:.2f} (worst residual {100 * r['factor_worst_residual']:.0f} %)")
    click.echo(f"outputs    {out}: measured.csv, verdicts.json, measured.png")
