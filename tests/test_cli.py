"""The cgdr-des command line: one-line errors with exit code 2, validate/schema/plot, run/compare."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SCENARIOS
from conftest import TINY_OUTPUTS as GOOD

from cgdr_des.cli import main

BAD = {
    "unknown key": (GOOD + "colour = 1\n", "sim.colour"),
    "wrong type": (GOOD.replace("nk = 1", 'nk = "one"'), "shape.nk"),
    "negative length": (GOOD.replace("[8, 3]", "[8, -3]"), "workload.lengths[1]"),
    "nv not a multiple of nk": (GOOD.replace("nk = 1", "nk = 3"), "shape.nv"),
    "missing lengths file": (GOOD.replace("lengths = [8, 3]", 'lengths_csv = "gone.csv"'),
                             "workload.lengths_csv"),
    "bad toml": ("name = \n", "scenario"),
    "tiling cannot fit UB": (GOOD.replace("dk = 16", "dk = 8192"), "tiling.ub_size"),
}


def scenario_file(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text, encoding="utf-8")
    return p


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def assert_one_line_error(result, field):
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: got "), result.stderr
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception,
                                                                                        SystemExit)


@pytest.mark.parametrize("case", sorted(BAD))
def test_validate_bad_scenario_is_one_line_exit_2(tmp_path, case):
    text, field = BAD[case]
    assert_one_line_error(invoke("validate", scenario_file(tmp_path, text)), field)


def test_unknown_profile_is_one_line_exit_2(tmp_path, monkeypatch):
    import cgdr_des.scenario as scen

    monkeypatch.setattr(scen, "known_profiles", lambda: ["atlas-300i-duo"])
    text = GOOD + '[hardware]\nprofile = "atlas-9000"\n'
    assert_one_line_error(invoke("validate", scenario_file(tmp_path, text)), "hardware.profile")


def test_missing_scenario_file():
    assert_one_line_error(invoke("validate", "/nonexistent/x.toml"), "scenario")


def test_validate_subprocess_exit_code_and_stderr(tmp_path):
    exe = shutil.which("cgdr-des")
    cmd = [exe] if exe else [sys.executable, "-c", "from cgdr_des.cli import main; main()"]
    bad = scenario_file(tmp_path, GOOD.replace("nk = 1", "nk = 3"))
    proc = subprocess.run([*cmd, "validate", str(bad)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith("error: shape.nv: got 2") and "Traceback" not in proc.stderr


def test_validate_good_and_shipped(tmp_path):
    ok = invoke("validate", scenario_file(tmp_path, GOOD))
    assert ok.exit_code == 0 and ok.stdout.startswith("ok: tiny")
    for path in sorted(SCENARIOS.glob("*.toml")):
        res = invoke("validate", path)
        assert res.exit_code == 0, (path.name, res.output)


def test_usage_error_is_exit_2():
    assert invoke("run").exit_code == 2  # missing SCENARIO and --out
    assert invoke("frobnicate").exit_code == 2


def test_schema_is_json():
    res = invoke("schema")
    assert res.exit_code == 0
    schema = json.loads(res.stdout)
    assert "shape" in schema["properties"] and "workload" in schema["properties"]


def test_plot_of_a_directory_without_results(tmp_path):
    assert_one_line_error(invoke("plot", tmp_path), "DIRECTORY")


@pytest.mark.slow
def test_plot_redraws_a_written_run(tmp_path):
    from test_results_export import result  # a hand-built run (tests/ is on sys.path)

    from cgdr_des.results.export import write_results

    write_results(result(), tmp_path, trace=False, plots=False)
    res = invoke("plot", tmp_path)
    assert res.exit_code == 0, res.output
    assert {Path(line).name for line in res.stdout.split()} >= {"core_load.png", "finish_cdf.png"}
    assert (tmp_path / "core_load.png").exists()


def test_compare_rejects_a_bad_buffer_num(tmp_path):
    res = invoke("compare", scenario_file(tmp_path, GOOD), "--buffer-num", "1", "3", "--out", tmp_path / "o")
    assert_one_line_error(res, "--buffer-num")


@pytest.mark.slow
def test_run_writes_results_and_prints_a_summary(tmp_path):
    out = tmp_path / "out"
    res = invoke("run", scenario_file(tmp_path, GOOD), "--out", out, "--csv")
    assert res.exit_code == 0, res.output
    for name in ("ops", "items", "cores", "summary"):
        assert (out / f"{name}.parquet").exists() and (out / f"{name}.csv").exists()
    assert (out / "trace.json").exists() and (out / "scenario.resolved.json").exists()
    assert "makespan" in res.stdout and "cycles" in res.stdout and "imbalance" in res.stdout


@pytest.mark.slow
def test_compare_runs_each_buffer_num(tmp_path):
    out = tmp_path / "cmp"
    res = invoke("compare", scenario_file(tmp_path, GOOD), "--buffer-num", "1", "2", "--out", out)
    assert res.exit_code == 0, res.output
    assert (out / "buffer_compare.png").exists()
    assert (out / "buffer_num_1" / "summary.parquet").exists()
    assert (out / "buffer_num_2" / "summary.parquet").exists()
    table = (out / "compare.csv").read_text().splitlines()
    assert len(table) == 3


def stub_simulate(sc, progress=None):
    """A stand-in for cgdr_des.simulate.simulate: a hand-built run carrying the scenario's variant."""
    from test_results_frames import ASSIGN, synth_run

    from cgdr_des.results.frames import build_result

    run, _ = synth_run(ASSIGN, seed=sc.kernel.buffer_num)
    if progress is not None:
        progress(1, 1)
    return build_result(run, ASSIGN, meta={"avgload": 100}, clock_mhz=1000.0, outputs=None, scenario=sc)


@pytest.mark.slow
def test_run_command_with_a_stub_simulator(tmp_path, monkeypatch):
    import cgdr_des.cli.common as cli

    monkeypatch.setattr(cli, "_simulate", lambda: stub_simulate)
    out = tmp_path / "out"
    res = invoke("run", scenario_file(tmp_path, GOOD), "--out", out)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith("estimate   ~") and lines[1].startswith("scenario   tiny (")
    assert any(line.startswith("makespan ") and " µs " in line for line in lines)
    assert any("imbalance" in line and "p99" in line for line in lines)
    assert lines[-1].startswith(f"outputs    {out}") and "trace.json" in lines[-1]
    assert not (out / "items.csv").exists()
    assert (out / "core_load.png").exists()


@pytest.mark.slow
def test_compare_command_with_a_stub_simulator(tmp_path, monkeypatch):
    import pandas as pd

    import cgdr_des.cli.common as cli

    monkeypatch.setattr(cli, "_simulate", lambda: stub_simulate)
    out = tmp_path / "cmp"
    res = invoke("compare", scenario_file(tmp_path, GOOD), "--buffer-num", "1", "2", "--out", out)
    assert res.exit_code == 0, res.output
    table = pd.read_csv(out / "compare.csv")
    assert table["buffer_num"].tolist() == [1, 2]
    for bn in (1, 2):
        summary = pd.read_parquet(out / f"buffer_num_{bn}" / "summary.parquet")
        assert summary["buffer_num"].iloc[0] == bn
    assert table["speedup"].iloc[0] == 1.0
    assert table["speedup"].iloc[1] == pytest.approx(table["makespan_cycles"].iloc[0]
                                                     / table["makespan_cycles"].iloc[1])
    assert (out / "buffer_compare.png").exists()
