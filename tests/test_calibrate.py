"""Calibration: "measurements" simulated from a perturbed profile are fitted back to the perturbation;
the fitted profile file loads and reproduces the fitted latencies; measurement files are read (and
refused) as documented."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SCENARIOS

import cgdr_des
from cgdr_des.cli import main
from cgdr_des.errors import InputError
from cgdr_des.hw import load_profile
from cgdr_des.scenario import load_scenario
from cgdr_des.timing.calibrate import build_problem, calibrate
from cgdr_des.timing.evaluate import Evaluator
from cgdr_des.timing.measurements import Measurement, read_measurements

SHAPES = {"a": (64, 64), "b": (128, 128)}
TRUTH = {"vec_pipe_delay_cycles": 22, "dcache_miss_cycles": 420}


def _scenarios(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, (dk, dv) in SHAPES.items():
        p = tmp_path / f"{name}.toml"
        p.write_text(f'name = "{name}"\n[shape]\nnk = 1\nnv = 1\ndk = {dk}\ndv = {dv}\n[workload]\nlengths = [8]\n'
                     '[sim]\nnumerics = "off"\ntrace = false\n[output]\nplots = false\n')
        out[name] = p
    return out


def _measured(paths: dict[str, Path], truth: dict) -> list[Measurement]:
    return [Measurement(p, Evaluator(load_scenario(p)).makespan(truth)[1]) for p in paths.values()]


def _csv(tmp_path: Path, ms: list[Measurement]) -> Path:
    p = tmp_path / "measured.csv"
    p.write_text("scenario,latency_us\n" + "".join(f"{m.scenario.name},{m.latency_us!r}\n" for m in ms))
    return p


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cal")
    return tmp, _measured(_scenarios(tmp), TRUTH)


@pytest.mark.slow
def test_recovers_a_known_perturbation(measured):
    _, ms = measured
    fit = calibrate(build_problem(ms, list(TRUTH), load_scenario), loo=False)
    nominal = load_profile()
    assert fit.nominal == {"vec_pipe_delay_cycles": nominal.vec_pipe_delay_cycles,
                           "dcache_miss_cycles": nominal.dcache_miss_cycles}
    assert abs(fit.fitted["vec_pipe_delay_cycles"] - 22) <= 1
    assert abs(fit.fitted["dcache_miss_cycles"] - 420) <= 10
    assert fit.rms_residual_pct < 0.1
    assert (fit.points["nominal_us"] < fit.points["measured_us"]).all()   # both fields were raised


def test_a_value_outside_the_range_is_fitted_to_the_range_end(tmp_path):
    ms = _measured(_scenarios(tmp_path), {"vec_pipe_delay_cycles": 40})    # range is [0, 30]
    fit = calibrate(build_problem(ms, ["vec_pipe_delay_cycles"], load_scenario))
    assert fit.fitted["vec_pipe_delay_cycles"] == 30
    assert (fit.points["residual_pct"] < 0).all()
    assert fit.points["loo_error_pct"].notna().all()


def test_cli_writes_a_profile_that_reproduces_the_fit(measured, tmp_path):
    src, ms = measured
    csv = _csv(src, ms)
    out = tmp_path / "fit"
    r = CliRunner().invoke(main, ["calibrate", str(csv), "--fields", "vec_pipe_delay_cycles", "--out", str(out),
                                  "--no-loo"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "fit.json").read_text())
    prof = load_profile(out / "profile.toml")
    assert {"vec_pipe_delay_cycles": prof.vec_pipe_delay_cycles} == summary["fitted"]
    assert prof.dcache_miss_cycles == load_profile().dcache_miss_cycles
    assert prof.sources["vec_pipe_delay_cycles"]["source"].startswith("calibrated")
    sc = load_scenario(src / "a.toml").with_changes({"hardware": {"profile": str(out / "profile.toml")},
                                                   "sim": {"fidelity": "phase"}})
    us = cgdr_des.simulate(sc).summary["makespan_us"].iloc[0]
    fitted_us = {row.split(",")[0]: float(row.split(",")[3]) for row in
                 (out / "residuals.csv").read_text().splitlines()[1:]}
    assert us == pytest.approx(fitted_us["a"], rel=1e-12)


def test_reads_latency_and_msprof_rows(tmp_path):
    (tmp_path / "op_summary.csv").write_text(
        "Op Name,OP Type,Task Duration(us)\nx,ChunkGatedDeltaRule,100\ny,ChunkGatedDeltaRule,300\n"
        "z,ChunkGatedDeltaRule,200\nw,Cast,5\n")
    (tmp_path / "m.csv").write_text("scenario,latency_us,msprof_csv\na.toml,12.5,\nb.toml,,op_summary.csv\n")
    ms = read_measurements(tmp_path / "m.csv")
    assert [(m.scenario.name, m.latency_us) for m in ms] == [("a.toml", 12.5), ("b.toml", 200.0)]


@pytest.mark.parametrize("text, field", [("scenario,ms\na.toml,1\n", "measurements"),
                                         ("scenario,latency_us\na.toml,-3\n", "measurements row 2.latency_us"),
                                         ("scenario,latency_us\n", "measurements")])
def test_bad_measurements_are_input_errors(tmp_path, text, field):
    (tmp_path / "m.csv").write_text(text)
    with pytest.raises(InputError) as exc:
        read_measurements(tmp_path / "m.csv")
    assert exc.value.field == field


def test_shipped_measurements_name_the_six_shapes():
    ms = read_measurements(SCENARIOS / "measured" / "latencies_310p.csv")
    assert [m.scenario.stem for m in ms] == ["small", "representative", "low_head_dv256", "long_t512_batch2",
                                             "long_t1024", "long_t2048"]
    assert all(m.scenario.is_file() for m in ms)


def test_cli_bad_field_exits_2(measured):
    src, ms = measured
    r = CliRunner().invoke(main, ["calibrate", str(_csv(src, ms)), "--fields", "aiv_num", "--out", str(src / "o")])
    assert r.exit_code == 2 and r.output.startswith("error: --fields")
