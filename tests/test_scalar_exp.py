"""ScalarExp emulation: accuracy against exp within the error analysis in docs/design-notes.md §5,
exactness, step count."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.numerics.scalar_exp import (
    EXP_ALU_PER_HALVING,
    EXP_ALU_PER_SQUARING,
    scalar_exp,
    scalar_exp_array,
    scalar_exp_steps,
    scalar_exp_work,
    scalar_exp_work_array,
)

U32 = 2.0**-24  # float32 unit roundoff
EPS32 = 2.0**-23


def independent_steps(x: float) -> int:
    """Smallest k >= 0 with |x| <= 2**k, by exact float64 comparison."""
    a, k = abs(float(np.float32(x))), 0
    while a > math.ldexp(1.0, k):
        k += 1
    return k


def error_bound(k: int) -> float:
    """Relative error bound of ScalarExp with k halvings (docs/design-notes.md §5 analysis, made explicit).

    Taylor stage on r <= 1: each term_i carries <= 2i roundings, weighted by r^i/i! / e^r they add
    <= 2u; the 12 additions of positive terms add <= 12u; truncation r^13/13! / e^r <= 1/13!.
    So e0 <= 14u + 1/13!. A squaring maps e to 2e + e^2 + u, so after k squarings
    e_k <= 2^k (e0 + u) (+ second order, covered by rounding 15u up to 16u); the final reciprocal
    adds one more rounding u.
    """
    return 2.0**k * (16 * U32 + 1 / math.factorial(13)) + U32


def rel_error(x32: np.ndarray) -> np.ndarray:
    ref = np.exp(x32.astype(np.float64))  # exact input: float32 x, evaluated in float64
    return np.abs(scalar_exp_array(x32).astype(np.float64) - ref) / ref


def test_zero_is_exactly_one():
    assert scalar_exp(0.0) == np.float32(1.0)
    assert scalar_exp(-0.0) == np.float32(1.0)
    assert scalar_exp_array(np.zeros(5))[0] == np.float32(1.0)
    assert scalar_exp_steps(0.0) == 0


def test_matches_exp_within_bound_on_kernel_domain():
    x = np.linspace(-20.0, 20.0, 40001).astype(np.float32)
    bounds = np.array([error_bound(independent_steps(v)) for v in x])
    assert np.all(rel_error(x) <= bounds)


def test_scalar_and_array_are_bit_identical():
    rng = np.random.default_rng(7)
    special = [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 64.0, -64.0, 200.0, -200.0]
    x = np.concatenate([rng.uniform(-90, 90, 3000), special])
    x32 = x.astype(np.float32)
    scalars = np.array([scalar_exp(v) for v in x32], dtype=np.float32)
    np.testing.assert_array_equal(scalars.view(np.uint32), scalar_exp_array(x32).view(np.uint32))


@settings(derandomize=True, deadline=None)
@given(st.floats(min_value=-80, max_value=80, width=32))
def test_bit_identical_property(x):
    vectorised = scalar_exp_array(np.array([x], dtype=np.float32))[0]
    assert scalar_exp(x).view(np.uint32) == vectorised.view(np.uint32)


def test_error_doubles_with_each_halving():
    """Accuracy loss for large |x|: each halving adds a squaring, which doubles the relative error.

    Bands (2^(k-1), 2^k] all reduce to r in (0.5, 1], so their Taylor errors share one distribution
    and the median error of band k should be 2^(k-1) times band 1's. |x| ~ 1000 (the design notes'
    example) cannot be shown in float32: exp overflows beyond ~88.7, so bands stop at k = 6.
    """
    rng = np.random.default_rng(3)
    medians = {}
    for k in range(1, 7):
        xs = rng.uniform(2.0 ** (k - 1), 2.0**k, 4000).astype(np.float32)
        xs = xs[xs > 2.0 ** (k - 1)]
        medians[k] = np.median(np.concatenate([rel_error(xs), rel_error(-xs)]))
    for k in range(2, 7):
        ratio = medians[k] / medians[1]
        assert 2.0 ** (k - 2) <= ratio <= 2.0**k, (k, ratio)
    assert medians[6] > 8 * EPS32  # well above float32 precision


def test_overflow_follows_float32():
    big = math.log(float(np.finfo(np.float32).max)) + 1.0
    assert np.isinf(scalar_exp(big))
    assert scalar_exp(-big) == 0.0  # 1 / inf


@pytest.mark.parametrize("x", [0.0, 0.3, 1.0, np.nextafter(np.float32(1), np.float32(2)), 2.0, 3.0, 4.0,
                               -4.0, 1000.0, 2.0**20, 2.0**20 + 1, 1e-30])
def test_steps_match_independent_count(x):
    assert scalar_exp_steps(x) == independent_steps(x)


@settings(derandomize=True, deadline=None)
@given(st.floats(min_value=-1e6, max_value=1e6, width=32))
def test_steps_property(x):
    assert scalar_exp_steps(x) == independent_steps(x)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_is_a_kernel_diagnostic(bad):
    with pytest.raises(KernelDiagnostic):
        scalar_exp(bad)
    with pytest.raises(KernelDiagnostic):
        scalar_exp_steps(bad)
    with pytest.raises(KernelDiagnostic):
        scalar_exp_array(np.array([0.0, bad]))
    with pytest.raises(KernelDiagnostic, match="not finite"):
        scalar_exp_work_array(np.array([0.5, -1.0, bad]))


@settings(derandomize=True, deadline=None)
@given(st.lists(st.floats(min_value=-1e6, max_value=1e6, width=32), min_size=1, max_size=40))
def test_the_work_of_a_row_of_calls_is_each_call_s(xs):
    """A chunk's calls counted at once (the kernel layer's ``scalar_exp_calls``): per element, the
    independent halving count's ALU work, and one division more for a negative argument."""
    alu, div = scalar_exp_work_array(np.array(xs))
    ks = np.array([independent_steps(x) for x in xs])
    assert (np.diff(alu - (EXP_ALU_PER_HALVING + EXP_ALU_PER_SQUARING) * ks) == 0).all()
    assert (div - np.array([x < 0 for x in xs]) == div[0] - (xs[0] < 0)).all()
    assert list(zip(alu.tolist(), div.tolist(), strict=True)) == [scalar_exp_work(x) for x in xs]
