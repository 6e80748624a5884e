"""Sweep points that are tail studies: each stored summary is ``run_study`` of that point's scenario."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from cgdr_des.cli import main
from cgdr_des.scenario import Scenario
from cgdr_des.sweep import expand, load_sweep
from cgdr_des.tail import run_study

BASE = """
name = "tiny_tail"
[shape]
nk = 2  # two K/Q heads: a calibration at half the CPU (conftest.CALIBRATED_NK)
nv = 2
dk = 16
dv = 16
[workload]
batch = 4
seed = 3
[workload.distribution]
kind = "lognormal"
median = 48
sigma = 1.0
min = 1
max = 256
[sim]
numerics = "off"
trace = false
[output]
plots = false
[study]
check_batches = 0
"""

SWEEP = """
name = "tiny_tail_sweep"
base = "base.toml"
kind = "tail"
[grid]
"workload.distribution.sigma" = [0.5, 1.5]
[tail]
batches = 40
policies = ["greedy", "cost_lpt"]
"""


@pytest.mark.slow
def test_tail_points_store_the_studies_of_their_scenarios(tmp_path):
    (tmp_path / "base.toml").write_text(BASE, encoding="utf-8")
    path = tmp_path / "sweep.toml"
    path.write_text(SWEEP, encoding="utf-8")
    result = CliRunner().invoke(main, ["sweep", str(path), "--out", str(tmp_path / "out"), "--workers", "0"])
    assert result.exit_code == 0, result.output
    table = pd.read_parquet(tmp_path / "out" / "summary.parquet")
    points = expand(load_sweep(path))
    assert sorted(set(table["point"])) == [p.point for p in points]
    for p in points:
        sc = Scenario.from_dict(p.scenario)
        assert sc.workload.distribution.sigma == p.params["workload.distribution.sigma"]  # the law, not one batch
        want = run_study(sc, batches=40, policies=["greedy", "cost_lpt"]).summary.reset_index(drop=True)
        got = table[table["point"] == p.point].reset_index(drop=True)[want.columns]
        pd.testing.assert_frame_equal(got, want, check_dtype=False)


@pytest.mark.slow
def test_a_frames_list_keeps_only_the_named_frames(tmp_path):
    """``frames = ["batches"]`` stores the batches frame of each point and no core_finish (the large one)."""
    (tmp_path / "base.toml").write_text(BASE, encoding="utf-8")
    path = tmp_path / "sweep.toml"
    path.write_text(SWEEP.replace('kind = "tail"', 'kind = "tail"\nframes = ["batches"]'), encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["sweep", str(path), "--out", str(out), "--workers", "0"])
    assert result.exit_code == 0, result.output
    assert sorted(d.name for d in (out / "frames").iterdir()) == ["batches"]
    p = expand(load_sweep(path))[1]
    want = run_study(Scenario.from_dict(p.scenario), batches=40, policies=["greedy", "cost_lpt"]).batches
    got = pd.read_parquet(out / "frames" / "batches" / "point=1" / "part-0.parquet")
    pd.testing.assert_frame_equal(got.drop(columns="lengths"), want.drop(columns="lengths"), check_dtype=False)


def test_a_frame_the_point_kind_does_not_have_is_one_error_line(tmp_path):
    (tmp_path / "base.toml").write_text(BASE, encoding="utf-8")
    path = tmp_path / "sweep.toml"
    path.write_text(SWEEP.replace('kind = "tail"', 'kind = "tail"\nframes = ["ops"]'), encoding="utf-8")
    result = CliRunner().invoke(main, ["sweep", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: sweep.frames: got 'ops'; true, false or a list of batches, core_finish, checks "
        "(the frames of a tail point)"]
