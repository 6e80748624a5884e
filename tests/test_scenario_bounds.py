"""The scenario package's bounds, error paths and copies (cgdr_des/scenario/), below the file format.

Every upper bound is tried at its value (accepted) and one past it (refused, naming the field); the
allowed-keys list of every table is checked against the JSON schema pydantic publishes; the location
to dotted-path conversion, the value abbreviation, the core-id check at blockDim, and deep-merged copies.
"""

from __future__ import annotations

import copy

import pytest

import cgdr_des.scenario as scen
from cgdr_des.errors import InputError
from cgdr_des.scenario import Scenario
from cgdr_des.scenario import messages as msg
from cgdr_des.workload.lengths import DISTRIBUTIONS

BASE = {"name": "t", "shape": {"nk": 1, "nv": 2, "dk": 64, "dv": 64}, "workload": {"lengths": [64, 30]}}


def with_value(path: str, value) -> dict:
    data = copy.deepcopy(BASE)
    *parents, leaf = path.split(".")
    node = data
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = value
    return data


# (dotted field, largest allowed value, a value just past it)
UPPER = [
    ("shape.nk", scen.MAX_HEADS, scen.MAX_HEADS + 1),
    ("shape.dk", scen.MAX_HEAD_DIM, scen.MAX_HEAD_DIM + 1),
    ("shape.dv", scen.MAX_HEAD_DIM, scen.MAX_HEAD_DIM + 1),
    ("shape.scale_value", scen.MAX_SCALE, scen.MAX_SCALE * 1.0001),
    ("workload.seed", scen.MAX_SEED, scen.MAX_SEED + 1),
    ("sim.max_trace_events", scen.MAX_TRACE_EVENTS, scen.MAX_TRACE_EVENTS + 1),
    ("sim.trace_window", [0, scen.MAX_CYCLE], [0, scen.MAX_CYCLE + 1]),
    ("output.gantt_window", [scen.MAX_CYCLE - 1, scen.MAX_CYCLE], [scen.MAX_CYCLE, scen.MAX_CYCLE + 1]),
    ("study.batches", 1_000_000, 1_000_001),
    ("study.check_batches", 50, 51),
    ("study.bootstrap", 10_000, 10_001),
]


@pytest.mark.parametrize("field, top, past", UPPER, ids=[u[0] for u in UPPER])
def test_every_upper_bound_is_inclusive_and_one_past_it_is_refused(field, top, past):
    if field == "shape.nk":  # nv must stay a multiple of nk
        ok, bad = with_value(field, top), with_value(field, past)
        ok["shape"]["nv"], bad["shape"]["nv"] = top, past
    else:
        ok, bad = with_value(field, top), with_value(field, past)
    Scenario.from_dict(ok, check_tiling=False)
    with pytest.raises(InputError) as info:
        Scenario.from_dict(bad, check_tiling=False)
    assert info.value.field.split("[")[0] == field


def test_scale_value_bound_is_symmetric_and_refuses_nan_and_inf():
    Scenario.from_dict(with_value("shape.scale_value", -scen.MAX_SCALE), check_tiling=False)
    for bad in (-scen.MAX_SCALE * 1.0001, float("nan"), float("inf")):
        with pytest.raises(InputError) as info:
            Scenario.from_dict(with_value("shape.scale_value", bad), check_tiling=False)
        assert info.value.field == "shape.scale_value"


def test_batch_bound_is_the_workload_layer_s():
    data = with_value("workload", {"distribution": {"kind": "fixed", "length": 1}, "batch": scen.MAX_BATCH + 1})
    with pytest.raises(InputError) as info:
        Scenario.from_dict(data, check_tiling=False)
    assert info.value.field == "workload.batch"


def table_keys(schema: dict, ref: dict) -> list[str]:
    name = ref["$ref"].rsplit("/", 1)[1]
    return list(schema["$defs"][name]["properties"])


def test_allowed_keys_of_every_table_are_the_schema_s_properties():
    schema = Scenario.model_json_schema()
    assert msg._allowed_keys(()) == ", ".join(schema["properties"])
    for section, prop in schema["properties"].items():
        if "$ref" in prop:
            assert msg._allowed_keys((section,)) == ", ".join(table_keys(schema, prop)), section
    tensors = schema["$defs"]["Workload"]["properties"]["tensors"]
    assert msg._allowed_keys(("workload", "tensors")) == ", ".join(table_keys(schema, tensors))


VALID = {"fixed": {"length": 4}, "uniform": {"min": 1, "max": 9}, "lognormal": {"median": 9, "sigma": 0.5},
         "zipf": {"theta": 1.5, "min": 1, "max": 9}, "pareto": {"alpha": 1.5, "min": 1, "max": 9},
         "bimodal": {"long": 9, "short": 1}}


@pytest.mark.parametrize("kind", sorted(DISTRIBUTIONS))
def test_allowed_keys_of_a_distribution_are_its_own_fields(kind):
    want = ", ".join(DISTRIBUTIONS[kind].model_fields)
    assert msg._allowed_keys(("workload", "distribution", kind)) == want
    dist = {"kind": kind, **VALID[kind]}
    Scenario.from_dict(with_value("workload", {"distribution": dist, "batch": 2}), check_tiling=False)
    data = with_value("workload", {"distribution": {**dist, "nope": 1}, "batch": 2})
    with pytest.raises(InputError) as info:
        Scenario.from_dict(data, check_tiling=False)
    assert info.value.field == "workload.distribution.nope" and want in str(info.value)


@pytest.mark.parametrize("loc, path", [
    (("shape", "nk"), "shape.nk"),
    (("sim", "trace_cores", 3), "sim.trace_cores[3]"),
    (("workload", "lengths", 0), "workload.lengths[0]"),
    (("workload", "distribution", "lognormal", "sigma"), "workload.distribution.sigma"),
    (("workload", "distribution", "sigma"), "workload.distribution.sigma"),
    (("name",), "name"),
])
def test_location_becomes_the_path_the_user_wrote(loc, path):
    assert msg._path(loc) == path


def test_a_kind_name_outside_a_distribution_is_kept():
    kind = sorted(DISTRIBUTIONS)[0]
    assert msg._path(("study", kind)) == f"study.{kind}"


def test_brief_keeps_short_values_and_abbreviates_long_or_multiline_ones():
    assert msg.brief([1, 2, 3]) == [1, 2, 3]
    assert msg.brief("x" * 78) == "x" * 78  # its repr is 80 characters: still shown whole
    long = list(range(500))
    shown = msg.brief(long)
    assert isinstance(shown, msg.Shown) and len(repr(shown)) < 80 and repr(shown).startswith("[0, 1, 2")
    assert isinstance(msg.brief("a\nb"), str)  # a str's repr escapes the newline: one line already
    assert isinstance(msg.brief(MultiLine()), msg.Shown)


class MultiLine:
    def __repr__(self) -> str:
        return "first\nsecond"


def test_missing_is_shown_as_nothing():
    err = InputError("shape.dk", msg.MISSING, "required")
    assert str(err) == "shape.dk: got nothing; required"


def block_dim_of(data) -> int:
    return scen.validate_tiling(Scenario.from_dict(data, check_tiling=False)).block_dim


@pytest.mark.parametrize("field", ["output.gantt_core", "sim.trace_cores"])
def test_core_ids_must_be_below_block_dim(field):
    block_dim = block_dim_of(BASE)
    for core, ok in ((block_dim - 1, True), (block_dim, False)):
        value = [0, core] if field == "sim.trace_cores" else core
        data = with_value(field, value)
        if ok:
            Scenario.from_dict(data)
            continue
        with pytest.raises(InputError) as info:
            Scenario.from_dict(data)
        want = f"{field}[1]" if field == "sim.trace_cores" else field
        assert info.value.field == want and f"blockDim {block_dim}" in str(info.value)


def test_another_layer_s_error_is_prefixed_with_its_section_once():
    with pytest.raises(InputError) as info, scen.tiling_check._prefixed("tiling"):
        raise InputError("dk", 9, "x")
    assert info.value.field == "tiling.dk"
    with pytest.raises(InputError) as info, scen.tiling_check._prefixed("hardware"):
        raise InputError("hardware.clock_mhz", 0, "x")
    assert info.value.field == "hardware.clock_mhz"


def test_with_changes_merges_deeply_and_keeps_the_siblings():
    sc = Scenario.from_dict(with_value("sim", {"fidelity": "instr", "trace": False}))
    changed = sc.with_changes({"sim": {"trace": True}, "shape": {"dv": 128}})
    assert (changed.sim.fidelity, changed.sim.trace) == ("instr", True)
    assert (changed.shape.nk, changed.shape.nv, changed.shape.dk, changed.shape.dv) == (1, 2, 64, 128)
    assert (sc.sim.trace, sc.shape.dv) == (False, 64)  # the original is untouched
    replaced = sc.with_changes({"workload": {"lengths": [5]}})
    assert replaced.lengths().tolist() == [5]


def test_study_dict_keeps_the_distribution_and_reloads():
    data = with_value("workload", {"distribution": {"kind": "uniform", "min": 10, "max": 90}, "batch": 4,
                                   "seed": 7})
    data["study"] = {"batches": 12}
    sc = Scenario.from_dict(data)
    d = sc.study_dict()
    assert d["workload"]["distribution"]["kind"] == "uniform" and "lengths" not in d["workload"]
    assert d["study"]["batches"] == 12 and d["shape"]["scale_value"] == sc.shape.resolved_scale()
    again = Scenario.from_dict(d)
    assert again.lengths().tolist() == sc.lengths().tolist() and again.study == sc.study


def test_every_public_name_is_importable_from_the_package():
    for name in scen.__all__:
        assert getattr(scen, name) is not None, name
    assert scen.Scenario.__module__ == "cgdr_des.scenario.model"
    assert scen.Kernel.__module__ == "cgdr_des.scenario.sections"


def test_scenarios_compare_by_their_fields_and_folder(tmp_path):
    many = with_value("workload.lengths", [64, 30, 7])  # more than one length: a cached array
    a, b = Scenario.from_dict(many), Scenario.from_dict(copy.deepcopy(many))
    a.lengths()  # one has its lengths cached, the other not yet
    assert a == b and not (a != b)
    assert a != a.with_changes({"kernel": {"buffer_num": 2}})
    assert a != Scenario.from_dict(many, base_dir=tmp_path)  # a relative lengths_csv would resolve elsewhere
    assert a != many
    with pytest.raises(TypeError):
        hash(a)
