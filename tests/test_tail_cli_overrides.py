"""``cgdr-des tail`` takes ``--set``/``--seed`` like ``run`` and writes an owned output directory."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner
from test_sweep_tail import BASE

from cgdr_des.cli import main
from cgdr_des.scenario import load_scenario
from cgdr_des.tail import run_study


def tail(*args):
    """The command without its five study plots (~3 s a run: tests/test_tail_plots.py draws them); these
    tests read the frames and the directory's ownership."""
    return CliRunner().invoke(main, ["tail", *[str(a) for a in args], "--set", "output.plots=false"])


@pytest.mark.slow
def test_set_and_seed_change_the_study_as_the_edited_file_would(tmp_path):
    base = tmp_path / "base.toml"
    base.write_text(BASE, encoding="utf-8")
    res = tail(base, "--out", tmp_path / "o", "--batches", 20, "--policy", "greedy", "--set", "shape.nv=4",
               "--seed", 9)
    assert res.exit_code == 0, res.output
    meta = json.loads((tmp_path / "o" / "study.json").read_text())
    assert meta["shape"]["nv"] == 4 and meta["seed"] == 9
    assert not list((tmp_path / "o").glob("*.png"))  # [output] plots = false: the study draws none
    edited = tmp_path / "edited.toml"
    edited.write_text(BASE.replace("nv = 2", "nv = 4").replace("seed = 3", "seed = 9"), encoding="utf-8")
    want = run_study(load_scenario(edited), batches=20, policies=["greedy"]).batches
    got = pd.read_parquet(tmp_path / "o" / "batches.parquet")
    assert got["makespan_cycles"].tolist() == want["makespan_cycles"].tolist()


@pytest.mark.slow
def test_bad_override_and_reused_out_are_one_line(tmp_path):
    base = tmp_path / "base.toml"
    base.write_text(BASE, encoding="utf-8")
    res = tail(base, "--out", tmp_path / "o", "--set", "shape.nk=3")
    assert res.exit_code == 2 and res.stderr.strip().splitlines() == [
        "error: shape.nv: got 2; a multiple of nk (3) (after setting shape.nk=3, output.plots=False)"]
    assert tail(base, "--out", tmp_path / "o", "--batches", 5, "--policy", "greedy").exit_code == 0
    again = tail(base, "--out", tmp_path / "o", "--batches", 5, "--policy", "greedy")
    assert again.exit_code == 2 and "--force replaces it whole" in again.stderr
    assert tail(base, "--out", tmp_path / "o", "--batches", 5, "--policy", "greedy", "--force").exit_code == 0
