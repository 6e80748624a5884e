"""cgdr_des.chunk_gated_delta_rule: the op's interface and its input validation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from kernel_cases import assert_kernel_bounds, inputs, oracle

import cgdr_des
from cgdr_des.errors import InputError


def kwargs(x, **changes):
    return {**x.kwargs(), **changes}


def test_functional_op_returns_fp16_outputs_within_bounds():
    x = inputs([64, 30], 2, 4, 64, 32, seed=11)
    r = cgdr_des.chunk_gated_delta_rule(**x.kwargs())
    assert r.out.dtype == np.float16 and r.out.shape == x.value.shape
    assert r.final_state.dtype == np.float16 and r.final_state.shape == x.initial_state.shape
    assert_kernel_bounds(r, *oracle(x))


def test_exact_numerics_are_float64():
    x = inputs([40], 1, 1, 64, 64, seed=12)
    r = cgdr_des.chunk_gated_delta_rule(**x.kwargs(), numerics="exact")
    assert r.out.dtype == np.float64 and r.final_state.dtype == np.float64


def test_numerics_off_returns_no_outputs_but_counts():
    x = inputs([40], 1, 1, 64, 64, seed=12)
    r = cgdr_des.chunk_gated_delta_rule(**x.kwargs(), numerics="off", fidelity="functional")
    assert r.out is None and r.final_state is None
    assert r.counts[("P4b_Recursion", "vec")] == (40 - 1) * (40 - 2) // 2


@pytest.mark.parametrize("field, change", [
    ("query.dtype", lambda x: {"query": x.query.astype(np.float32)}),
    ("key.shape", lambda x: {"key": x.key[:, :, :-1]}),
    ("value.shape[1] (Nv)", lambda x: {"value": np.zeros((x.value.shape[0], 3, 32), np.float16)}),
    ("beta.shape", lambda x: {"beta": x.beta[:-1]}),
    ("initial_state.shape", lambda x: {"initial_state": np.swapaxes(x.initial_state, 2, 3)[..., :16]}),
    ("actual_seq_lengths", lambda x: {"actual_seq_lengths": np.array([64, 29], np.int32)}),
    ("actual_seq_lengths", lambda x: {"actual_seq_lengths": np.array([-1, 95], np.int32)}),
    ("actual_seq_lengths.dtype", lambda x: {"actual_seq_lengths": x.actual_seq_lengths.astype(np.float64)}),
    ("actual_seq_lengths.dtype", lambda x: {"actual_seq_lengths": [64.0, 30.0]}),
    ("actual_seq_lengths.dtype", lambda x: {"actual_seq_lengths": np.array([True, False])}),
    ("actual_seq_lengths", lambda x: {"actual_seq_lengths": np.array([64 + 2**32, 30], np.int64)}),  # wraps to 64
    ("actual_seq_lengths", lambda x: {"actual_seq_lengths": "64,30"}),
    ("g.dtype", lambda x: {"g": x.g.astype(np.float16)}),
    ("g.shape", lambda x: {"g": x.g[:, :1].copy()}),
    ("query", lambda x: {"query": np.where(np.arange(64) == 3, np.nan, x.query).astype(np.float16)}),
    ("key", lambda x: {"key": np.where(np.arange(64) == 63, -np.inf, x.key).astype(np.float16)}),
    ("value", lambda x: {"value": np.where(np.arange(32) == 0, np.inf, x.value).astype(np.float16)[::-1]}),
    ("g", lambda x: {"g": np.where(np.arange(4) == 1, np.nan, x.g).astype(np.float32)}),
    ("scale_value", lambda x: {"scale_value": float("inf")}),
])
def test_bad_inputs_name_the_field(field, change):
    x = inputs([64, 30], 2, 4, 64, 32, seed=13)
    with pytest.raises(InputError) as err:
        cgdr_des.chunk_gated_delta_rule(**kwargs(x, **change(x)))
    assert str(err.value).startswith(field + ":")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("lengths", [[40, 24], np.array([40, 24]), np.array([40, 24], np.uint16)])
def test_any_integer_lengths_that_fit_int32_are_the_int32_ones(lengths):
    x = inputs([40, 24], 1, 2, 32, 32, seed=15)
    want = cgdr_des.chunk_gated_delta_rule(**x.kwargs(), fidelity="functional")
    got = cgdr_des.chunk_gated_delta_rule(**kwargs(x, actual_seq_lengths=lengths), fidelity="functional")
    np.testing.assert_array_equal(got.out, want.out)
    np.testing.assert_array_equal(got.final_state, want.final_state)


def test_make_inputs_draws_a_scenarios_numbers():
    """cgdr_des.make_inputs with a scenario's shape and seed gives the op the inputs that scenario
    simulates: the op's outputs equal the scenario run's, bit for bit."""
    sc = cgdr_des.load_scenario(Path(__file__).parents[1] / "scenarios" / "small.toml").with_changes(
        {"shape": {"nk": 1, "nv": 2, "dk": 32, "dv": 32}, "workload": {"lengths": [40, 24], "seed": 7},
         "sim": {"fidelity": "phase", "trace": False}, "output": {"plots": False}})
    ran = cgdr_des.simulate(sc)
    x = cgdr_des.make_inputs([40, 24], 1, 2, 32, 32, seed=7)
    assert x.scale_value == sc.shape.resolved_scale()
    r = cgdr_des.chunk_gated_delta_rule(**x.kwargs(), fidelity="functional")
    np.testing.assert_array_equal(r.out, ran.outputs["out"])
    np.testing.assert_array_equal(r.final_state, ran.outputs["final_state"])


def test_functional_and_phase_compute_the_same_outputs():
    x = inputs([50, 20], 1, 2, 64, 64, seed=14)
    a = cgdr_des.chunk_gated_delta_rule(**x.kwargs(), fidelity="functional")
    b = cgdr_des.chunk_gated_delta_rule(**x.kwargs())
    assert a.result is None and b.result is not None
    np.testing.assert_array_equal(a.out, b.out)
    np.testing.assert_array_equal(a.final_state, b.final_state)


def test_unknown_fidelity_is_an_input_error():
    x = inputs([16], 1, 1, 16, 16)
    with pytest.raises(InputError, match="fidelity"):
        cgdr_des.chunk_gated_delta_rule(**x.kwargs(), fidelity="fast")


def test_unknown_numerics_is_an_input_error():
    x = inputs([16], 1, 1, 16, 16)
    with pytest.raises(InputError, match="numerics"):
        cgdr_des.chunk_gated_delta_rule(**x.kwargs(), numerics="fast")


def test_the_fp16_finiteness_check_matches_numpy_on_every_bit_pattern():
    from cgdr_des.numerics.finite import first_nonfinite, nonfinite
    from cgdr_des.op import _all_finite

    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = np.isfinite(every)
    assert finite.sum() == (1 << 16) - 2 * 1024          # 2 x 1024 patterns with exponent all ones
    assert np.array_equal(nonfinite(every), ~finite)
    grid = every.reshape(256, 256)[:, ::-1]               # a strided view, as outputs' slices are
    assert first_nonfinite(grid) == tuple(int(i) for i in np.argwhere(~np.isfinite(grid))[0])
    assert _all_finite(every[finite]) and _all_finite(every[finite][::-3])
    assert not any(_all_finite(every[[0, i]]) for i in np.flatnonzero(~finite))
