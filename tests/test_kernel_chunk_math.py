"""The whole-chunk vector idioms (kernel/chunk_math.py) against numpy and linear algebra.

DotFp32 against np.dot with the kernel's 64-wide fp32 partial sums, the recursive inverse against
np.linalg.inv of (I - strictly lower B), the Axpy chains against an explicit loop.
"""

from __future__ import annotations

import numpy as np
import pytest

from cgdr_des.kernel import chunk_math as cm

RNG = np.random.default_rng(12)


def partial_sums_fp32(lhs: np.ndarray, rhs: np.ndarray) -> np.float32:
    """DotFp32 of two vectors as the kernel structures it: one fp32 sum per full 64-element repeat
    (np.dot in fp32), the partials then the tail products added one by one in fp32."""
    acc = np.float32(0)
    full = len(lhs) // 64
    for r in range(full):
        acc = np.float32(acc + np.dot(lhs[64 * r:64 * r + 64], rhs[64 * r:64 * r + 64]))
    for i in range(full * 64, len(lhs)):
        acc = np.float32(acc + np.float32(lhs[i] * rhs[i]))
    return acc


@pytest.mark.parametrize("count", [1, 17, 63, 64, 65, 96, 127, 128, 200, 512])
def test_dot_fp32_equals_64_wide_partial_sums(count):
    lhs = RNG.standard_normal((5, count)).astype(np.float32)
    rhs = RNG.standard_normal((7, count)).astype(np.float32)
    got = cm.dot_fp32(lhs, rhs)
    assert got.shape == (5, 7) and got.dtype == np.float32
    want = np.array([[partial_sums_fp32(a, b) for b in rhs] for a in lhs])
    # Within a partial the order of additions is numpy's, so allow a few fp32 ulps of the magnitudes.
    scale = np.abs(lhs) @ np.abs(rhs).T
    assert np.all(np.abs(got - want) <= 8 * np.finfo(np.float32).eps * scale)


def test_dot_fp32_is_exact_on_small_integers():
    """Every product and sum representable: the result is the true dot product, bit for bit."""
    lhs = RNG.integers(-8, 9, (4, 150)).astype(np.float32)
    rhs = RNG.integers(-8, 9, (6, 150)).astype(np.float32)
    want = lhs.astype(np.int64) @ rhs.astype(np.int64).T
    np.testing.assert_array_equal(cm.dot_fp32(lhs, rhs), want.astype(np.float32))


def test_dot_fp32_accumulates_the_tail_one_product_at_a_time_in_fp32():
    """Partial 2^24, then three tail products of 1: each fp32 add rounds back to 2^24 (ties to even),
    where one float64 sum (or adding the tail's sum at once) would give 2^24 + 3 -> 2^24 + 4."""
    lhs = np.zeros((1, 67), dtype=np.float32)
    rhs = np.zeros((1, 67), dtype=np.float32)
    lhs[0, 0], rhs[0, 0] = 4096.0, 4096.0  # partial of repeat 0: 2^24
    lhs[0, 64:], rhs[0, 64:] = 1.0, 1.0
    assert cm.dot_fp32(lhs, rhs)[0, 0] == np.float32(2 ** 24)
    assert np.float32(np.float32(2 ** 24) + np.float32(3)) == np.float32(2 ** 24 + 4)


def test_dot_fp32_adds_partials_in_fp32():
    """Two repeats whose partials are 2^24 and 1: the fp32 sum drops the 1."""
    lhs = np.zeros((1, 128), dtype=np.float32)
    rhs = np.zeros((1, 128), dtype=np.float32)
    lhs[0, 0], rhs[0, 0] = 4096.0, 4096.0
    lhs[0, 64], rhs[0, 64] = 1.0, 1.0
    assert cm.dot_fp32(lhs, rhs)[0, 0] == np.float32(2 ** 24)
    assert cm.dot_fp32(lhs.astype(np.float64), rhs.astype(np.float64))[0, 0] == 2 ** 24 + 1


def test_dot_fp32_in_float64_is_the_plain_product():
    lhs, rhs = RNG.standard_normal((3, 4, 97)), RNG.standard_normal((3, 6, 97))
    got = cm.dot_fp32(lhs, rhs)
    for lane in range(3):
        np.testing.assert_allclose(got[lane], np.dot(lhs[lane], rhs[lane].T), rtol=1e-13, atol=1e-13)


def test_dot_fp32_lanes_are_independent():
    """A lane's result does not depend on the lanes beside it (bit for bit)."""
    lhs = RNG.standard_normal((4, 9, 130)).astype(np.float32)
    rhs = RNG.standard_normal((4, 11, 130)).astype(np.float32)
    together = cm.dot_fp32(lhs, rhs)
    for lane in range(4):
        np.testing.assert_array_equal(together[lane], cm.dot_fp32(lhs[lane:lane + 1], rhs[lane:lane + 1])[0])


def test_dot_inplace_limit_is_where_partials_reach_the_products():
    """Partial r is written at element 8r: it stays below the 64 products of repeat 0 only while
    there are at most 8 repeats, i.e. count <= 512."""
    repeats = cm.DOT_INPLACE_LIMIT // cm.REDUCE_WIDTH
    assert cm.REDUCE_WIDTH == 64 and 8 * (repeats - 1) < cm.REDUCE_WIDTH <= 8 * repeats


def random_strict_lower(n: int, scale: float, dtype=np.float64, lanes: int = 1) -> np.ndarray:
    return np.tril(RNG.standard_normal((lanes, n, n)) * scale, -1).astype(dtype)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 17, 37, 64])
def test_recursive_attn_is_the_inverse_of_i_minus_b(n):
    """Forward substitution in place: strict lower part of (I - B)^-1, B the strictly lower input."""
    b = random_strict_lower(n, 0.3)
    buf = b.copy()
    cm.recursive_attn(buf, n)
    want = np.linalg.inv(np.eye(n) - b[0])
    np.testing.assert_allclose(np.tril(buf[0], -1) + np.eye(n), want, rtol=1e-10, atol=1e-12)


def test_recursive_attn_solves_the_triangular_system():
    """(I - B) A = I with A = I + strict lower result, checked by np.linalg.solve per column."""
    n = 48
    b = random_strict_lower(n, 0.2)
    buf = b.copy()
    cm.recursive_attn(buf, n)
    a = np.tril(buf[0], -1) + np.eye(n)
    np.testing.assert_allclose(a, np.linalg.solve(np.eye(n) - b[0], np.eye(n)), rtol=1e-10, atol=1e-12)


def test_recursive_attn_writes_only_the_strict_lower_part_of_the_chunk():
    """The kernel writes nothing on or above the diagonal, nor outside [L, L] of the [cs, cs] buffer."""
    cs, L = 64, 20
    buf = np.full((1, cs, cs), 7.0)
    buf[:, :L, :L] = random_strict_lower(L, 0.3) + np.triu(np.full((L, L), 7.0))
    before = buf.copy()
    cm.recursive_attn(buf, L)
    outside = ~np.pad(np.tri(L, L, -1, dtype=bool), ((0, cs - L), (0, cs - L)))
    np.testing.assert_array_equal(buf[0][outside], before[0][outside])
    assert not np.array_equal(buf[0, :L, :L], before[0, :L, :L])


def test_recursive_attn_ignores_what_is_above_the_diagonal():
    """The prefix Axpy never reads the upper triangle: garbage there changes nothing below."""
    n = 30
    b = random_strict_lower(n, 0.3)
    clean, dirty = b.copy(), b + np.triu(RNG.standard_normal((n, n)) * 1e6)
    cm.recursive_attn(clean, n)
    cm.recursive_attn(dirty, n)
    np.testing.assert_array_equal(np.tril(clean[0], -1), np.tril(dirty[0], -1))


def test_recursive_attn_per_lane_and_fp32():
    lanes, n = 3, 64
    b = random_strict_lower(n, 0.15, np.float32, lanes)
    buf = b.copy()
    cm.recursive_attn(buf, n)
    assert buf.dtype == np.float32
    for lane in range(lanes):
        one = b[lane:lane + 1].copy()
        cm.recursive_attn(one, n)
        np.testing.assert_array_equal(buf[lane], one[0])
        want = np.linalg.inv(np.eye(n) - b[lane].astype(np.float64))
        np.testing.assert_allclose(np.tril(buf[lane], -1) + np.eye(n), want, rtol=1e-4, atol=1e-5)


def test_recursive_attn_on_the_kernel_matrix():
    """With B = -tril(diag(beta) K K^T * D, -1) the result is (I + tril(diag(beta) K K^T * D, -1))^-1,
    the WY matrix of the chunked gated delta rule."""
    n, dk = 64, 32
    k = RNG.standard_normal((n, dk))
    k /= np.linalg.norm(k, axis=1, keepdims=True)
    beta = 1 / (1 + np.exp(-RNG.standard_normal(n)))
    g = np.cumsum(-(RNG.random(n) + 0.01))
    d = np.exp(np.minimum(g[:, None] - g[None, :], 0))
    lower = np.tril((beta[:, None] * k) @ k.T * d, -1)
    buf = (-lower)[None].copy()
    cm.recursive_attn(buf, n)
    np.testing.assert_allclose(np.tril(buf[0], -1) + np.eye(n), np.linalg.inv(np.eye(n) + lower),
                               rtol=1e-9, atol=1e-12)


def test_tril_matmul_is_the_axpy_chain():
    """Row i: a zeroed row, then one Axpy per k <= i with coefficient a[i, k]; a's upper part unread."""
    n, w = 13, 5
    a = RNG.standard_normal((n, n))
    b = RNG.standard_normal((n, w))
    want = np.zeros((n, w))
    for i in range(n):
        for k in range(i + 1):
            want[i] += a[i, k] * b[k]
    np.testing.assert_allclose(cm.tril_matmul(a, b), want, rtol=1e-12, atol=1e-12)
    garbage_above = a + np.triu(np.full((n, n), 1e9), 1)
    np.testing.assert_allclose(cm.tril_matmul(garbage_above, b), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n, k", [(1, 0), (5, -1), (5, 0), (64, -1), (64, 0), (7, 2)])
def test_tril_mask(n, k):
    mask = cm.tril_mask(n, k)
    np.testing.assert_array_equal(mask, np.tril(np.ones((n, n), dtype=bool), k))
    assert mask.dtype == bool and not mask.flags.writeable
    assert cm.tril_mask(n, k) is mask  # computed once per (n, k)
