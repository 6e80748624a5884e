"""Scenario files: validation errors name the field, lengths resolve, hashes are stable, shipped files load."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import SCENARIOS
from pydantic import ValidationError

import cgdr_des.scenario as scen
from cgdr_des.errors import InputError
from cgdr_des.scenario import Scenario, load_scenario

BASE = {
    "name": "t",
    "description": "test",
    "shape": {"nk": 2, "nv": 4, "dk": 64, "dv": 64},
    "workload": {"lengths": [64, 0, 130]},
}


def make(**changes):
    data = copy.deepcopy(BASE)
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        node = data
        for p in parents:
            node = node.setdefault(p, {})
        if value is _DROP:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return data


_DROP = object()


def error_of(data, **kw) -> InputError:
    with pytest.raises(InputError) as e:
        Scenario.from_dict(data, **kw)
    return e.value


def write(tmp_path: Path, text: str, name="s.toml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# ---------------------------------------------------------------- valid input


def test_minimal_scenario_defaults_and_lengths():
    sc = Scenario.from_dict(BASE)
    assert sc.hardware.profile == "atlas-300i-duo"
    assert (sc.kernel.buffer_num, sc.kernel.policy) == (1, "greedy")
    assert (sc.sim.fidelity, sc.sim.numerics, sc.sim.trace, sc.sim.max_trace_events) == ("phase", "kernel",
                                                                                          True, 200_000)
    assert sc.output.plots and not sc.output.csv
    lengths = sc.lengths()
    assert lengths.dtype == np.int32 and lengths.tolist() == [64, 0, 130]
    assert sc.shape.resolved_scale() == pytest.approx(1 / math.sqrt(64))


def test_scenario_is_frozen():
    sc = Scenario.from_dict(BASE)
    with pytest.raises(ValidationError):
        sc.name = "other"
    with pytest.raises(ValidationError):
        sc.shape.nk = 3


def test_lengths_returns_a_copy():
    sc = Scenario.from_dict(BASE)
    sc.lengths()[0] = 999
    assert sc.lengths()[0] == 64


def test_lengths_follow_a_model_copy_with_a_new_workload():
    sc = Scenario.from_dict(BASE)
    sc.lengths()
    other = sc.model_copy(update={"workload": sc.workload.model_copy(update={"lengths": [5, 6]})})
    assert other.lengths().tolist() == [5, 6] and sc.lengths().tolist() == [64, 0, 130]


def test_distribution_is_seeded_and_batch_sized():
    data = make(workload={"distribution": {"kind": "uniform", "min": 1, "max": 1000}, "batch": 50, "seed": 3})
    a, b = Scenario.from_dict(data).lengths(), Scenario.from_dict(data).lengths()
    np.testing.assert_array_equal(a, b)
    assert a.size == 50
    data["workload"]["seed"] = 4
    assert not np.array_equal(a, Scenario.from_dict(data).lengths())


def test_csv_with_length_header_and_batch_prefix(tmp_path):
    (tmp_path / "l.csv").write_text("id,length\n0,5\n1,7\n2,9\n")
    sc = Scenario.from_dict(make(workload={"lengths_csv": "l.csv", "batch": 2}), base_dir=tmp_path)
    assert sc.lengths().tolist() == [5, 7]


def test_csv_single_column_without_header(tmp_path):
    (tmp_path / "l.csv").write_text("5\n7\n\n9\n")
    sc = Scenario.from_dict(make(workload={"lengths_csv": "l.csv"}), base_dir=tmp_path)
    assert sc.lengths().tolist() == [5, 7, 9]


def test_csv_path_is_relative_to_the_scenario_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "l.csv").write_text("tokens\n12\n")
    p = write(tmp_path / "sub", 'name = "x"\n[shape]\nnk=1\nnv=1\ndk=16\ndv=16\n'
              '[workload]\nlengths_csv = "l.csv"\n')
    assert load_scenario(p).lengths().tolist() == [12]


def test_resolved_dict_fills_defaults_and_reloads_to_same_hash():
    data = make(workload={"distribution": {"kind": "lognormal", "median": 300, "sigma": 0.5}, "batch": 6})
    sc = Scenario.from_dict(data)
    resolved = sc.resolved_dict()
    json.dumps(resolved)  # JSON-able
    assert resolved["workload"]["lengths"] == sc.lengths().tolist()
    assert resolved["shape"]["scale_value"] == pytest.approx(1 / 8)
    again = Scenario.from_dict(resolved)
    assert again.scenario_hash() == sc.scenario_hash()
    np.testing.assert_array_equal(again.lengths(), sc.lengths())


def test_hash_is_stable_short_hex_and_sensitive():
    h = Scenario.from_dict(BASE).scenario_hash()
    assert re.fullmatch(r"[0-9a-f]{12}", h)
    assert Scenario.from_dict(copy.deepcopy(BASE)).scenario_hash() == h
    # an explicit default is the same launch
    assert Scenario.from_dict(make(shape__scale_value=0.125)).scenario_hash() == h
    assert Scenario.from_dict(make(kernel={"buffer_num": 2})).scenario_hash() != h
    assert Scenario.from_dict(make(workload__lengths=[64, 0, 131])).scenario_hash() != h


def test_with_changes_revalidates():
    sc = Scenario.from_dict(BASE)
    assert sc.with_changes({"kernel": {"buffer_num": 2}}).kernel.buffer_num == 2
    assert sc.kernel.buffer_num == 1
    with pytest.raises(InputError) as e:
        sc.with_changes({"kernel": {"buffer_num": 3}})
    assert e.value.field == "kernel.buffer_num"


def test_json_schema_names_every_section():
    schema = Scenario.model_json_schema()
    assert {"name", "description", "hardware", "shape", "workload", "kernel", "sim", "output"} <= set(
        schema["properties"])
    json.dumps(schema)


# ---------------------------------------------------------------- invalid input

BAD = [
    ("unknown top key", make(colour="red"), "colour"),
    ("unknown section key", make(shape__nkk=3), "shape.nkk"),
    ("unknown distribution key", make(workload={"batch": 2, "distribution": {"kind": "fixed", "length": 4,
                                                                              "lenght": 5}}),
     "workload.distribution.lenght"),
    ("string for int", make(shape__nk="2"), "shape.nk"),
    ("bool for int", make(shape__dk=True), "shape.dk"),
    ("int for bool", make(shape__has_gamma=1), "shape.has_gamma"),
    ("zero head dim", make(shape__dv=0), "shape.dv"),
    ("missing shape field", make(shape__dk=_DROP), "shape.dk"),
    ("negative length", make(workload__lengths=[4, -1]), "workload.lengths[1]"),
    ("all lengths zero", make(workload__lengths=[0, 0]), "workload.lengths"),
    ("nv not a multiple of nk", make(shape__nv=3), "shape.nv"),
    ("two length sources", make(workload={"lengths": [1], "distribution": {"kind": "fixed", "length": 1},
                                          "batch": 1}), "workload.lengths"),
    ("no length source", make(workload={"seed": 1}), "workload.lengths"),
    ("distribution without batch", make(workload={"distribution": {"kind": "fixed", "length": 4}}),
     "workload.batch"),
    ("batch disagrees with lengths", make(workload__batch=7), "workload.batch"),
    ("negative sigma", make(workload={"batch": 2, "distribution": {"kind": "lognormal", "median": 9,
                                                                   "sigma": -1.0}}),
     "workload.distribution.sigma"),
    ("max below min", make(workload={"batch": 2, "distribution": {"kind": "uniform", "min": 9, "max": 3}}),
     "workload.distribution.max"),
    ("unknown kind", make(workload={"batch": 2, "distribution": {"kind": "gamma"}}),
     "workload.distribution.kind"),
    ("kind missing", make(workload={"batch": 2, "distribution": {"length": 4}}), "workload.distribution.kind"),
    ("n_long above batch", make(workload={"batch": 2, "distribution": {"kind": "bimodal", "long": 9,
                                                                       "short": 1, "n_long": 3}}),
     "workload.distribution.n_long"),
    ("bad tensors choice", make(workload__tensors={"beta": "ones"}), "workload.tensors.beta"),
    ("bad buffer_num", make(kernel={"buffer_num": 3}), "kernel.buffer_num"),
    ("bad policy", make(kernel={"policy": "random"}), "kernel.policy"),
    ("bad fidelity", make(sim={"fidelity": "cycle"}), "sim.fidelity"),
    ("bad numerics", make(sim={"numerics": "fp8"}), "sim.numerics"),
    ("empty trace window", make(sim={"trace_window": [50, 50]}), "sim.trace_window"),
    ("window of three", make(sim={"trace_window": [1, 2, 3]}), "sim.trace_window"),
    ("negative trace core", make(sim={"trace_cores": [0, -1]}), "sim.trace_cores[1]"),
    ("zero max events", make(sim={"max_trace_events": 0}), "sim.max_trace_events"),
    ("negative gantt core", make(output={"gantt_core": -2}), "output.gantt_core"),
    ("csv as string", make(output={"csv": "yes"}), "output.csv"),
]


@pytest.mark.parametrize("case,data,field", BAD, ids=[b[0] for b in BAD])
def test_bad_input_names_the_field_in_one_line(case, data, field):
    err = error_of(data)
    assert err.field == field
    msg = str(err)
    assert msg.startswith(f"{field}: got ") and "\n" not in msg


def test_unknown_key_message_lists_allowed_keys():
    msg = str(error_of(make(kernel={"bufer_num": 2})))
    assert "unknown key" in msg and "buffer_num" in msg and "policy" in msg


def test_long_values_are_abbreviated_in_messages():
    err = error_of(make(workload__lengths=list(range(1000)) + [-5]))
    assert len(str(err)) < 200


def test_unknown_profile_is_input_error(monkeypatch):
    monkeypatch.setattr(scen, "known_profiles", lambda: ["atlas-300i-duo", "atlas-a2-910b2"])
    err = error_of(make(hardware={"profile": "atlas-9000"}))
    assert err.field == "hardware.profile" and "atlas-a2-910b2" in str(err)


def test_unknown_profile_with_the_real_hw_layer():
    list_profiles = pytest.importorskip("cgdr_des.hw").__dict__.get("list_profiles")
    if list_profiles is None:
        pytest.skip("cgdr_des.hw.list_profiles not written yet")
    assert error_of(make(hardware={"profile": "atlas-9000"})).field == "hardware.profile"


def test_missing_lengths_file(tmp_path):
    err = error_of(make(workload={"lengths_csv": "nope.csv"}), base_dir=tmp_path)
    assert err.field == "workload.lengths_csv" and "nope.csv" in str(err)


@pytest.mark.parametrize("text,field", [
    ("length\n5\n-2\n", "workload.lengths_csv"),
    ("length\n5\nabc\n", "workload.lengths_csv"),
    ("a,b\n1,2\n", "workload.lengths_csv"),
    ("", "workload.lengths_csv"),
])
def test_bad_lengths_csv(tmp_path, text, field):
    (tmp_path / "l.csv").write_text(text)
    assert error_of(make(workload={"lengths_csv": "l.csv"}), base_dir=tmp_path).field == field


def test_csv_batch_larger_than_file(tmp_path):
    (tmp_path / "l.csv").write_text("1\n2\n")
    err = error_of(make(workload={"lengths_csv": "l.csv", "batch": 3}), base_dir=tmp_path)
    assert err.field == "workload.batch"


def test_bad_toml_and_missing_file(tmp_path):
    with pytest.raises(InputError) as e:
        load_scenario(write(tmp_path, "name = \n[shape"))
    assert e.value.field == "scenario" and "TOML" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(InputError) as e:
        load_scenario(tmp_path / "absent.toml")
    assert e.value.field == "scenario"


def test_tiling_is_checked_at_load():
    pytest.importorskip("cgdr_des.kernel.tiling")
    hw = pytest.importorskip("cgdr_des.hw")
    if not hasattr(hw, "load_profile"):
        pytest.skip("cgdr_des.hw.load_profile not written yet")
    # dk = dv = 4096: the fixed part of tmpBuff alone (2*64*4096*4 B) exceeds any UB.
    with pytest.raises(InputError):
        Scenario.from_dict(make(shape={"nk": 1, "nv": 1, "dk": 4096, "dv": 4096}))


# ---------------------------------------------------------------- shipped scenarios

SHIPPED = sorted(SCENARIOS.glob("*.toml"))


def test_the_shipped_scenarios_are_there():
    names = {p.stem for p in SHIPPED}
    assert {"small", "representative", "low_head_dv256", "long_t512_batch2", "long_t1024",
            "long_t2048"} <= names
    assert len(SHIPPED) >= 9


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_scenario_validates_and_says_its_question(path):
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# Question:")
    sc = load_scenario(path)
    assert sc.name == path.stem and sc.description
    assert sc.lengths().sum() > 0


def test_performance_shapes_match_the_kernel_notes():
    # (B, H, T, Dk, Dv) of PERFORMANCE_CASES_300IDUO (docs/kernel.md §7.1), nk = nv = H
    shapes = {"small": (1, 8, 64, 64, 64), "representative": (1, 16, 128, 128, 128),
              "low_head_dv256": (1, 1, 128, 128, 256), "long_t512_batch2": (2, 8, 1024, 128, 128),
              "long_t1024": (1, 16, 1024, 128, 128), "long_t2048": (1, 16, 2048, 128, 128)}
    for name, (b, h, t, dk, dv) in shapes.items():
        sc = load_scenario(SCENARIOS / f"{name}.toml")
        s, lengths = sc.shape, sc.lengths()
        assert (lengths.size, s.nk, s.nv, int(lengths.sum()), s.dk, s.dv) == (b, h, h, t, dk, dv), name
        assert sc.hardware.profile == "atlas-300i-duo"
