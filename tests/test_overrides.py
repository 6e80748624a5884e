"""``--set section.field=value`` and ``--seed``: TOML-typed values, the same validation as a file,
errors that name the dotted path, on ``run`` and ``compare``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import TINY

from cgdr_des.cli import main
from cgdr_des.errors import InputError
from cgdr_des.overrides import apply_overrides, parse_set
from cgdr_des.scenario import load_scenario

LOGNORMAL = TINY.replace("lengths = [8, 3]", "batch = 3\nseed = 4\n[workload.distribution]\n"
                                            'kind = "lognormal"\nmedian = 16\nsigma = 1.0\nmax = 64')


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("text, value", [
    ("kernel.buffer_num=2", 2), ("shape.scale_value=0.5", 0.5), ("shape.has_gamma=false", False),
    ("workload.lengths=[64, 8]", [64, 8]), ('kernel.policy="round_robin"', "round_robin"),
    ("kernel.policy=round_robin", "round_robin"),  # a bare word is a string
    ('workload.distribution={kind = "uniform", low = 1, high = 9}', {"kind": "uniform", "low": 1, "high": 9}),
])
def test_values_are_read_as_toml(text, value):
    path, parsed = parse_set(text)
    assert path == text.partition("=")[0] and parsed == value and type(parsed) is type(value)


@pytest.mark.parametrize("sets, edit", [
    (["kernel.policy=longest_first"], ('policy = "greedy"', 'policy = "longest_first"')),
    (["shape.dv=32", "shape.nv=4"], ("nv = 2\ndk = 16\ndv = 16", "nv = 4\ndk = 16\ndv = 32")),
    (["workload.distribution.sigma=0.25"], ("sigma = 1.0", "sigma = 0.25")),
    (["workload.seed=11"], ("seed = 4", "seed = 11")),
    (["workload.lengths=[5, 6, 7]"], ("batch = 3\nseed = 4\n[workload.distribution]\nkind = \"lognormal\"\n"
                                      "median = 16\nsigma = 1.0\nmax = 64", "lengths = [5, 6, 7]\nseed = 4")),
    (['workload.distribution={kind = "uniform", min = 2, max = 30}'],
     ('kind = "lognormal"\nmedian = 16\nsigma = 1.0\nmax = 64', 'kind = "uniform"\nmin = 2\nmax = 30')),
])
def test_override_equals_the_edited_file(tmp_path, sets, edit):
    """An override gives exactly the scenario of the file edited by hand (same resolved dict)."""
    base = LOGNORMAL.replace("[kernel]", "") + '[kernel]\npolicy = "greedy"\n'
    assert edit[0] in base
    got = apply_overrides(load_scenario(write(tmp_path, base)), [parse_set(s) for s in sets])
    want = load_scenario(write(tmp_path, base.replace(*edit), "edited.toml"))
    assert got.resolved_dict() == want.resolved_dict()
    assert got.scenario_hash() == want.scenario_hash()


@pytest.mark.parametrize("text, field", [
    ("kernel.policy=fastest", "kernel.policy"),
    ("shape.colour=1", "shape.colour"),
    ("shape.nk=one", "shape.nk"),
    ("kernel.buffer_num=[1", "kernel.buffer_num"),
    ("workload.lengths=[8, -3]", "workload.lengths[1]"),
    ("workload.distribution.sigma=-1.0", "workload.distribution.sigma"),
    ("hardware.profile=atlas-9000", "hardware.profile"),
    ("shape.nk=3", "shape.nv"),  # the consequence names its field and the override behind it
    ("kernelpolicy", "--set"),
    ("kernel..policy=1", "--set"),
])
def test_cli_errors_name_the_dotted_path(tmp_path, text, field):
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(write(tmp_path, LOGNORMAL)), "--out", str(out), "--set", text])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: got "), result.stderr
    assert "Traceback" not in result.output
    if field == "shape.nv":
        assert "after setting shape.nk=3" in lines[0]


def test_compare_takes_set_too(tmp_path):
    result = CliRunner().invoke(main, ["compare", str(write(tmp_path, TINY)), "--buffer-num", "1", "2",
                                       "--out", str(tmp_path / "o"), "--set", "shape.dk=twelve"])
    assert result.exit_code == 2 and result.stderr.startswith("error: shape.dk: got 'twelve'")


def test_run_applies_set_and_seed(tmp_path):
    """The written scenario is the overridden one: policy and seed changed, nothing else."""
    path = write(tmp_path, LOGNORMAL)
    out = tmp_path / "o"
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(out), "--set", "kernel.policy=round_robin",
                                       "--seed", "9"])
    assert result.exit_code == 0, result.output
    written = json.loads((out / "scenario.resolved.json").read_text())
    want = apply_overrides(load_scenario(path), [("kernel.policy", "round_robin"), ("workload.seed", 9)])
    assert written == want.resolved_dict()
    assert written["kernel"]["policy"] == "round_robin" and written["workload"]["seed"] == 9
    assert written != load_scenario(path).resolved_dict()


def test_no_overrides_is_the_same_scenario(tmp_path):
    sc = load_scenario(write(tmp_path, TINY))
    assert apply_overrides(sc, []) is sc


def test_a_table_where_a_value_is_expected_is_an_error(tmp_path):
    sc = load_scenario(write(tmp_path, TINY))
    with pytest.raises(InputError, match=r"^shape\.nk: got \{'x': 1\}"):
        apply_overrides(sc, [parse_set("shape.nk.x=1")])
