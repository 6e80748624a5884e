"""``--set`` semantics (overrides.py) one rule at a time.

Values: whatever the profile writer prints as TOML reads back as the same value (a property over
nested values), bare words are strings, broken structured text is refused. Paths: the dotted form.
Rules: the three length sources exclude each other, a distribution of another kind replaces the
table while the same kind merges, later overrides win, and an error in a field that was not set says
which overrides led to it.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_timing_tables import values  # nested TOML-able values

from cgdr_des.errors import InputError
from cgdr_des.overrides import apply_overrides, check_path, parse_set, parse_value
from cgdr_des.scenario import Scenario
from cgdr_des.timing.profile_toml import toml_value


@pytest.mark.slow
@settings(max_examples=150, deadline=None, derandomize=True)
@given(v=values)
def test_a_toml_value_reads_back_as_itself(v):
    assert parse_value("x.y", toml_value(v)) == v


@pytest.mark.parametrize("word", ["round_robin", "greedy", "atlas-300i-duo", "some.profile.toml"])
def test_a_bare_word_is_a_string(word):
    assert parse_value("kernel.policy", word) == word
    assert parse_set(f"kernel.policy={word}") == ("kernel.policy", word)


@pytest.mark.parametrize("text", ["[1, 2", "{kind = ", '"open', "'open", "", "   "])
def test_broken_structured_or_empty_text_is_refused_naming_the_path(text):
    with pytest.raises(InputError) as info:
        parse_value("shape.nv", text)
    assert info.value.field == "shape.nv" and "a TOML value" in str(info.value)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(parts=st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,5}", fullmatch=True), min_size=1, max_size=4))
def test_dotted_identifiers_are_paths(parts):
    path = ".".join(parts)
    assert check_path(path) == path


@pytest.mark.parametrize("bad", ["", ".a", "a.", "a..b", "1a.b", "a b", "a=b", "a.[0]", None, 3])
def test_anything_else_is_not_a_path(bad):
    with pytest.raises(InputError) as info:
        check_path(bad, field="F")
    assert info.value.field == "F"


BASE = {"name": "t", "shape": {"nk": 1, "nv": 2, "dk": 64, "dv": 64},
        "workload": {"distribution": {"kind": "lognormal", "median": 100, "sigma": 0.5, "max": 400}, "batch": 5,
                     "seed": 3}}


def base() -> Scenario:
    return Scenario.from_dict(BASE)


def test_explicit_lengths_drop_the_distribution_and_its_batch():
    sc = apply_overrides(base(), [("workload.lengths", [7, 9])])
    assert sc.workload.distribution is None and sc.workload.batch is None
    assert sc.lengths().tolist() == [7, 9] and sc.workload.seed == 3


def test_explicit_lengths_keep_a_batch_set_with_them():
    sc = apply_overrides(base(), [("workload.lengths", [7, 9]), ("workload.batch", 2)])
    assert sc.workload.batch == 2
    with pytest.raises(InputError) as info:
        apply_overrides(base(), [("workload.lengths", [7, 9]), ("workload.batch", 3)])
    assert info.value.field == "workload.batch"


def test_a_distribution_replaces_explicit_lengths():
    sc = apply_overrides(base(), [("workload.lengths", [7, 9])])
    back = apply_overrides(sc, [("workload.distribution", {"kind": "fixed", "length": 11}), ("workload.batch", 4)])
    assert back.workload.lengths is None and back.lengths().tolist() == [11] * 4


def test_the_same_kind_merges_and_another_kind_replaces():
    merged = apply_overrides(base(), {"workload.distribution": {"sigma": 0.9}})
    d = merged.workload.distribution
    assert (d.kind, d.median, d.sigma, d.max) == ("lognormal", 100, 0.9, 400)
    switched = apply_overrides(base(), {"workload.distribution": {"kind": "uniform", "min": 3, "max": 8}})
    u = switched.workload.distribution
    assert (u.kind, u.min, u.max) == ("uniform", 3, 8)  # no lognormal field left behind to refuse
    assert all(3 <= n <= 8 for n in switched.lengths())


def test_a_single_field_of_the_distribution_by_its_path():
    sc = apply_overrides(base(), [("workload.distribution.median", 250)])
    assert sc.workload.distribution.median == 250 and sc.workload.distribution.sigma == 0.5


def test_later_overrides_win_and_a_mapping_is_the_same_as_pairs():
    pairs = [("kernel.policy", "round_robin"), ("shape.dv", 128), ("kernel.policy", "cost_lpt")]
    sc = apply_overrides(base(), pairs)
    assert (sc.kernel.policy, sc.shape.dv) == ("cost_lpt", 128)
    assert apply_overrides(base(), dict(pairs)).model_dump() == sc.model_dump()
    unchanged = base()
    assert apply_overrides(unchanged, []) is unchanged  # nothing to apply: the same object


def test_an_error_in_a_field_not_set_names_the_overrides_that_led_to_it():
    with pytest.raises(InputError) as info:
        apply_overrides(base(), [("shape.nk", 3)])
    assert info.value.field == "shape.nv" and "after setting shape.nk=3" in str(info.value)


def test_an_error_in_the_field_set_is_reported_as_is():
    with pytest.raises(InputError) as info:
        apply_overrides(base(), [("kernel.buffer_num", 4)])
    assert info.value.field == "kernel.buffer_num" and "after setting" not in str(info.value)


def test_a_value_where_a_table_is_needed_names_the_table_unless_a_field_of_it_follows():
    with pytest.raises(InputError) as info:
        apply_overrides(base(), [("sim", 3)])
    assert info.value.field == "sim"
    # a later field of the table makes it a table again, holding only that field
    sc = apply_overrides(base(), [("sim", 3), ("sim.trace", False)])
    assert sc.sim.trace is False and sc.sim.fidelity == Scenario.model_fields["sim"].default_factory().fidelity


def test_the_original_scenario_is_unchanged():
    sc = base()
    before = sc.model_dump()
    apply_overrides(sc, [("workload.lengths", [1]), ("shape.dv", 128)])
    assert sc.model_dump() == before
