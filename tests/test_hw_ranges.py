"""Ranged profile fields (hw/ranges.py): parsing each form of ``range``, and moving a parameter.

The three forms (a number pair, a list of alternatives, a per-op table) each give the parameters the
module docstring promises; every malformed range is one InputError on the dotted path of the range;
``set_param`` moves a per-dtype table's fp16 entry by the fp32 entry's delta (never below 0), and
``merge_overrides`` folds several parameters' overrides into one.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cgdr_des.errors import InputError
from cgdr_des.hw import ranges as rg


def as_int(v):
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError("an integer >= 0")
    return v


def as_number(v):
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ValueError("a number")
    return float(v)


def as_choice(v):
    if v not in ("counter", "stall", "diagnostic", True, False):
        raise ValueError("a known choice")
    return v


def test_a_number_pair_is_one_parameter_with_both_ends():
    (p,) = rg.parse_range("flag_cycles", {"range": [2, 9], "range_reason": "why"}, 4, as_int, "f")
    assert (p.name, p.low, p.high, p.reason, p.choices, p.integer) == ("flag_cycles", 2, 9, "why", (), True)
    assert p.field == "flag_cycles"


def test_a_float_field_gives_a_non_integer_parameter():
    (p,) = rg.parse_range("gm_bandwidth_gbps", {"range": [50, 200], "range_reason": "r"}, 100.0, as_number, "f")
    assert (p.low, p.high, p.integer) == (50.0, 200.0, False)


def test_a_list_of_alternatives_is_a_choice_parameter():
    entry = {"range": ["counter", "stall"], "range_reason": "r"}
    (p,) = rg.parse_range("flag_double_set", entry, "counter", as_choice, "f")
    assert p.choices == ("counter", "stall") and p.low is None and p.high is None
    (b,) = rg.parse_range("raw_interlock", {"range": [False, True], "range_reason": "r"}, True, as_choice, "f")
    assert b.choices == (False, True)


def test_a_per_op_table_gives_one_parameter_per_ranged_op_over_its_fp32_entry():
    value = {"Axpy": {"fp32": 8, "fp16": 6}, "Exp": {"fp32": 12, "fp16": 10}, "Mul": {"fp32": 8, "fp16": 6}}
    entry = {"range": {"Axpy": [4, 14], "Exp": [6, 24]}, "range_reason": "r"}
    ps = rg.parse_range("vec_delay_cycles", entry, value, as_int, "profile.vec_delay_cycles")
    assert [(p.name, p.low, p.high, p.field) for p in ps] == [
        ("vec_delay_cycles.Axpy", 4, 14, "vec_delay_cycles"), ("vec_delay_cycles.Exp", 6, 24, "vec_delay_cycles")]


def test_a_field_without_a_range_has_no_parameter():
    assert rg.parse_range("clock_mhz", {"value": 1000}, 1000, as_int, "f") == []


BAD = [
    ({"range": [2, 9]}, 4, as_int, "f.range", "range_reason"),
    ({"range": [2, 9], "range_reason": "  "}, 4, as_int, "f.range", "range_reason"),
    ({"range_reason": "r"}, 4, as_int, "f.range", "range_reason"),
    ({"range": [2], "range_reason": "r"}, 4, as_int, "f.range", "two numbers"),
    ({"range": [2, 9, 11], "range_reason": "r"}, 4, as_int, "f.range", "two numbers"),
    ({"range": [True, 9], "range_reason": "r"}, 4, as_int, "f.range", "two numbers"),
    ({"range": [-1, 9], "range_reason": "r"}, 4, as_int, "f.range", "two valid values"),
    ({"range": [5, 9], "range_reason": "r"}, 4, as_int, "f.range", "low <= value (4) <= high"),
    ({"range": [1, 3], "range_reason": "r"}, 4, as_int, "f.range", "low <= value (4) <= high"),
    ({"range": ["stall", "diagnostic"], "range_reason": "r"}, "counter", as_choice, "f.range", "including 'counter'"),
    ({"range": ["counter"], "range_reason": "r"}, "counter", as_choice, "f.range", "at least two"),
    ({"range": {"Div": [1, 2]}, "range_reason": "r"}, {"Axpy": 8}, as_int, "f.range", "over ops of the field"),
    ({"range": {"Axpy": [9, 12]}, "range_reason": "r"}, {"Axpy": 8}, as_int, "f.range.Axpy", "low <= value (8)"),
    ({"range": [4, 14], "range_reason": "r"}, {"Axpy": 8}, as_int, "f.range", "a table op"),
]


@pytest.mark.parametrize("entry, value, check, field, why", BAD)
def test_malformed_ranges_are_one_line_errors_on_the_range_path(entry, value, check, field, why):
    with pytest.raises(InputError) as info:
        rg.parse_range("x", entry, value, check, "f")
    assert info.value.field == field and why in str(info.value) and "\n" not in str(info.value)


PROFILE = SimpleNamespace(flag_cycles=4, vec_delay_cycles={"Axpy": {"fp32": 8, "fp16": 6}, "Exp": {"fp32": 12,
                                                                                                  "fp16": 3}},
                          dma_cost={"GM2UB": 40})


def test_get_param_reads_a_field_or_an_op_s_fp32_entry():
    assert rg.get_param(PROFILE, "flag_cycles") == 4
    assert rg.get_param(PROFILE, "vec_delay_cycles.Exp") == 12
    assert rg.get_param(PROFILE, "dma_cost.GM2UB") == 40


@pytest.mark.parametrize("x", [0, 5, 8, 20])
def test_set_param_moves_both_dtypes_by_the_fp32_delta_never_below_zero(x):
    override = rg.set_param(PROFILE, "vec_delay_cycles.Exp", x)
    delta = x - PROFILE.vec_delay_cycles["Exp"]["fp32"]
    want = {dt: max(0, v + delta) for dt, v in PROFILE.vec_delay_cycles["Exp"].items()}
    assert override == {"vec_delay_cycles": {"Exp": want}}
    assert override["vec_delay_cycles"]["Exp"]["fp32"] == x  # the parameter itself lands exactly


def test_set_param_of_a_plain_field_and_of_a_dtype_free_table():
    assert rg.set_param(PROFILE, "flag_cycles", 7) == {"flag_cycles": 7}
    assert rg.set_param(PROFILE, "dma_cost.GM2UB", 55) == {"dma_cost": {"GM2UB": 55}}


def test_merge_overrides_folds_ops_of_one_table_and_later_plain_values_win():
    axpy, exp = rg.set_param(PROFILE, "vec_delay_cycles.Axpy", 10), rg.set_param(PROFILE, "vec_delay_cycles.Exp", 14)
    merged = rg.merge_overrides([axpy, exp, {"flag_cycles": 5}, {"flag_cycles": 6}])
    tables = {**axpy["vec_delay_cycles"], **exp["vec_delay_cycles"]}
    assert merged == {"vec_delay_cycles": tables, "flag_cycles": 6}
    assert set(tables) == {"Axpy", "Exp"}


def test_table_nominal():
    assert rg.table_nominal({"fp32": 3, "fp16": 1}) == 3
    assert rg.table_nominal(9) == 9
