"""Synthetic inputs: shapes, dtypes, the test-suite distributions, determinism and mode switches."""

import numpy as np
import pytest

from cgdr_des.errors import InputError
from cgdr_des.workload.tensors import make_inputs


def test_shapes_and_dtypes():
    x = make_inputs([5, 0, 7], nk=2, nv=4, dk=16, dv=8)
    assert x.query.shape == x.key.shape == (12, 2, 16)
    assert x.value.shape == (12, 4, 8) and x.beta.shape == (12, 4)
    assert x.initial_state.shape == (3, 4, 8, 16)
    assert x.actual_seq_lengths.dtype == np.int32 and x.actual_seq_lengths.tolist() == [5, 0, 7]
    for arr in (x.query, x.key, x.value, x.beta, x.initial_state):
        assert arr.dtype == np.float16
    assert x.g.dtype == np.float32 and x.g.shape == (12, 4)
    assert x.scale_value == pytest.approx(16**-0.5)


def test_qk_are_unit_norm_per_token_and_head():
    x = make_inputs([64], nk=3, nv=3, dk=64, dv=8, seed=2)
    for arr in (x.query, x.key):
        norms = np.linalg.norm(arr.astype(np.float64), axis=-1)
        # fp16 rounding of 64 unit-vector entries moves the norm by well under 1e-3
        np.testing.assert_allclose(norms, 1.0, atol=1e-3)


def test_distributions_follow_the_kernel_test():
    x = make_inputs([4000], nk=1, nv=4, dk=8, dv=8, seed=3)
    beta = x.beta.astype(np.float64)
    assert np.all((beta > 0) & (beta < 1))
    assert abs(np.median(beta) - 0.5) < 0.02  # sigmoid of a zero-median normal
    g = x.g.astype(np.float64)
    assert np.all((g <= -0.01) & (g > -1.01 - 1e-6))
    assert abs(g.mean() - (-0.51)) < 0.02  # -(U(0,1) + 0.01) has mean -0.51
    s0 = x.initial_state.astype(np.float64)
    assert abs(s0.std() - 0.1) < 0.01
    assert abs(x.value.astype(np.float64).std() - 1.0) < 0.05


def test_deterministic_for_a_seed():
    a, b, c = (make_inputs([9, 3], 2, 2, 8, 8, seed=s) for s in (11, 11, 12))
    for name in ("query", "key", "value", "beta", "initial_state", "g"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert not np.array_equal(getattr(a, name), getattr(c, name))


def test_modes_do_not_disturb_other_tensors():
    base = make_inputs([10], 1, 2, 8, 8, seed=5)
    alt = make_inputs([10], 1, 2, 8, 8, seed=5, beta="zero", initial_state="zeros", has_gamma=False)
    assert not alt.beta.any() and not alt.initial_state.any() and alt.g is None
    for name in ("query", "key", "value"):
        np.testing.assert_array_equal(getattr(base, name), getattr(alt, name))


def test_dtype_option_and_kwargs():
    x = make_inputs([3], 1, 1, 4, 4, dtype=np.float32)
    assert x.query.dtype == np.float32 and x.g.dtype == np.float32
    assert set(x.kwargs()) == {"query", "key", "value", "beta", "initial_state", "actual_seq_lengths", "g",
                               "scale_value"}


@pytest.mark.parametrize("kwargs, field", [
    (dict(lengths=[3, -1]), "lengths"),
    (dict(lengths=[]), "lengths"),
    (dict(lengths=[2.5]), "lengths"),
    (dict(lengths=[2**32 + 4]), "lengths"),  # would wrap to 4 as int32
    (dict(dk=0), "dk"),
    (dict(beta="ones"), "beta"),
    (dict(initial_state="ones"), "initial_state"),
    (dict(dtype=np.int8), "dtype"),
])
def test_bad_input(kwargs, field):
    args = dict(lengths=[4], nk=1, nv=1, dk=4, dv=4) | kwargs
    with pytest.raises(InputError, match=field):
        make_inputs(**args)
