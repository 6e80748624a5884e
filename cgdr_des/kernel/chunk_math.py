"""The vector idioms of the kernel as whole-chunk numpy operations, with the kernel's rounding.

Each helper computes, for every row at once, what the kernel computes one instruction at a time, and
for every lane of a leading axis at once (one lane per head: numpy's stacked matmul makes the same BLAS
call per lane as a 2-D product, so a lane's numbers do not depend on how many lanes run beside it),
keeping the precision structure that matters: DotFp32's 64-wide partial sums accumulated by the
scalar unit in fp32, Axpy chains accumulated in the working dtype (fp32 in ``kernel`` numerics). The
order of additions inside one partial sum or one product is numpy's (see launch.py).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

REDUCE_WIDTH = 64  # kReduceRepeatElements
DOT_INPLACE_LIMIT = 512  # partial sums land at 8r < 64: fullRepeats <= 8 (docs/design-notes.md §6)


def dot_fp32(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``DotFp32(lhs_i, rhs_j, count)`` for every pair: ``[..., n, count] x [..., m, count] -> [..., n, m]``.

    Mul, then WholeReduceSum over each full 64-element repeat (one partial per repeat), then the
    scalar unit adds the partials in order and the tail products one by one, all in lhs.dtype.
    """
    ft = lhs.dtype.type
    count = lhs.shape[-1]
    full = count // REDUCE_WIDTH
    rhs_t = np.swapaxes(rhs, -1, -2)
    if ft is np.float64:
        return lhs @ rhs_t
    acc = np.zeros((*lhs.shape[:-1], rhs.shape[-2]), dtype=ft)
    for r in range(full):
        sl = slice(r * REDUCE_WIDTH, (r + 1) * REDUCE_WIDTH)
        acc += lhs[..., sl] @ rhs_t[..., sl, :]
    for i in range(full * REDUCE_WIDTH, count):
        acc += lhs[..., :, i, None] * rhs[..., None, :, i]
    return acc


def recursive_attn(buf: np.ndarray, chunk_len: int) -> None:
    """ComputeRecursiveAttn in place on ``buf[..., :L, :L]`` (strictly lower B -> strictly lower A).

    Row i: ``A_ij = B_ij + sum_{k=j+1}^{i-1} B_ik A_kj`` with the coefficients B_ik of the row as it
    was before its update (the kernel's deltaFp32 copy) and rows k < i already final. Works on a copy
    whose upper triangle is zero, so the terms with k <= j (which the prefix Axpy never touches) add
    exact zeros; only the strictly lower part of ``buf`` is written back, as the kernel writes
    nothing else. The sum over k is one vector-matrix product (numpy's order of additions).
    """
    a = np.tril(buf[..., :chunk_len, :chunk_len], -1)
    for i in range(2, chunk_len):
        a[..., i, :i - 1] += (a[..., i:i + 1, 1:i] @ a[..., 1:i, :i - 1])[..., 0, :]
    np.copyto(buf[..., :chunk_len, :chunk_len], a, where=tril_mask(chunk_len, -1))


def tril_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``sum_{k<=i} a[i,k] b[k]``: a chain of Axpy rows from a zeroed row (a's upper part unread)."""
    return np.tril(a) @ b


@lru_cache(maxsize=256)
def tril_mask(n: int, k: int) -> np.ndarray:
    """``[n, n]`` bool, True on and below diagonal ``k``: the elements a lower-triangular loop writes
    (computed once per (n, k): every chunk asks for the same few)."""
    mask = np.tri(n, n, k, dtype=bool)
    mask.flags.writeable = False
    return mask
