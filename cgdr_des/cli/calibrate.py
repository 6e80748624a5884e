"""``cgdr-des calibrate``: fit ranged profile fields to measured latencies."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cgdr_des.cli import common
from cgdr_des.cli.app import main
from cgdr_des.cli.sensitivity import parse_fields


@main.command()
@click.argument("measurements")
@click.option("--fields", required=True, help="Comma-separated ranged fields to fit (field or field.op).")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for profile.toml, residuals.csv, fit.json and calibration.png.")
@click.option("--no-loo", is_flag=True, help="Skip the leave-one-out refits.")
@common.force_option
def calibrate(measurements: str, fields: str, out: Path, no_loo: bool, force: bool) -> None:
    """Fit --fields within their ranges to the latencies in MEASUREMENTS (a CSV of scenario file ->
    latency_us, or -> msprof_csv); write the fitted profile (usable as [hardware] profile), the
    residuals and a leave-one-out error per point."""
    from cgdr_des.scenario import load_scenario
    from cgdr_des.timing.calibrate import build_problem
    from cgdr_des.timing.calibrate import calibrate as fit
    from cgdr_des.timing.measurements import check_scenario_files, read_measurements
    from cgdr_des.timing.profile_toml import dump_profile, fitted_profile_doc

    names = parse_fields(fields)
    ms = read_measurements(measurements)
    check_scenario_files(ms)
    problem = build_problem(ms, names, load_scenario)
    from cgdr_des.results.progress import Progress

    target = common.output_dir(out, force, "calibrate")
    with target as staging:  # checked and locked before the fit; the three files appear whole or not at all
        res = fit(problem, loo=not no_loo, progress=Progress())
        ev = problem.evaluators[0]
        note = f"cgdr-des calibrate {Path(measurements).name} ({len(ms)} points, fields {','.join(names)})"
        doc = fitted_profile_doc(ev.scenario.profile_ref(), ev.profile, res.fitted, note)
        summary = {"profile": ev.scenario.hardware.profile, "fields": names, "nominal": res.nominal,
                   "fitted": res.fitted, "loss": res.loss,
                   "evaluations": res.evaluations, "rms_residual_pct": res.rms_residual_pct,
                   "rms_loo_pct": None if no_loo else res.rms_loo_pct}
        with target.writing():
            (staging / "profile.toml").write_text(dump_profile(doc), encoding="utf-8")
            res.points.to_csv(staging / "residuals.csv", index=False)
            (staging / "fit.json").write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
            from cgdr_des.cli.redraw import draw_calibrate

            draw_calibrate(staging)  # calibration.png, from the files just written (as `plot` redraws it)
        common.write_page(target, staging, "calibrate")
    for name in names:
        click.echo(f"fitted     {name}: {res.nominal[name]} -> {res.fitted[name]}")
    us = common.time_unit()
    for _, r in res.points.iterrows():
        loo = "" if no_loo else f", leave-one-out {r['loo_error_pct']:+.1f} %"
        click.echo(f"point      {r['scenario']}: measured {r['measured_us']:,.1f} {us}, "
                   f"nominal {r['nominal_us']:,.1f}, fitted {r['fitted_us']:,.1f} ({r['residual_pct']:+.1f} %{loo})")
    click.echo(f"outputs    {out}: fit.json, profile.toml, residuals.csv, calibration.png")
