"""The vector idioms of the kernel as whole-chunk numpy operations, with the kernel's rounding.

Each helper computes, for every row at once, what the kernel computes one instruction at a time, and
for every lane of a leading axis at once (one lane per head: numpy's stacked matmul makes the same BLAS
call per lane as a 2-D product, so a lane's numbers do not depend on how many lanes run beside it),
keeping the precision structure that matters: DotFp32's 64-wide partial sums accumulated by the
scalar unit in fp32, Axpy chains accumulated in the working dtype (fp32 in ``kernel`` numerics). The
order of additions inside one partial sum or one product is numpy's (see launch.py), with one rule
for the products over a V-tile's columns (:func:`v_matmul`): they run 16 columns at a time, so a
column's value does not depend on the tile width.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

REDUCE_WIDTH = 64  # kReduceRepeatElements
V_BLOCK = 16  # columns per V-product call: every vStep is a multiple, so tiles start on block edges
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
    a = tril(buf[..., :chunk_len, :chunk_len], -1)
    for i in range(2, chunk_len):
        a[..., i, :i - 1] += (a[..., i:i + 1, 1:i] @ a[..., 1:i, :i - 1])[..., 0, :]
    np.copyto(buf[..., :chunk_len, :chunk_len], a, where=tril_mask(chunk_len, -1))


def v_matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``a @ b`` for a ``b`` whose columns are a V-tile's: ``[..., m, k] x [..., k, n] -> [..., m, n]``,
    one BLAS call per ``V_BLOCK`` columns (into ``out`` if given: any view with unit column stride).

    The kernel computes every output column the same way whatever the tile width; one BLAS call need
    not: OpenBLAS's sgemm (Haswell kernels) gives a product's first 8 and last 8 + n % 8 columns
    other bits than the columns between them, and on more than one thread it splits a product with
    m·n·k > 262144 between threads, which moves those edges again. In calls of 16 columns a column
    always sits at the same place of a call of the same shape (tiles start on multiples of 16), so
    its bits depend on its data only, whatever the tile width or the operands' alignment; and for
    m·k <= 64·256 (every dk <= 256) the calls stay on one thread, whatever the thread count.
    A trailing block narrower than 16 runs padded with zero columns.
    """
    *lead, k, n = b.shape
    pad = -n % V_BLOCK
    if pad:
        wide = v_matmul(a, np.concatenate([b, np.zeros((*lead, k, pad), dtype=b.dtype)], axis=-1))
        if out is None:
            return wide[..., :n]
        out[...] = wide[..., :n]
        return out
    if out is None:
        lanes = np.broadcast_shapes(a.shape[:-2], tuple(lead))
        out = np.empty((*lanes, a.shape[-2], n), dtype=np.result_type(a, b))
    np.matmul(a[..., None, :, :], _column_blocks(b), out=_column_blocks(out))
    return out


def _column_blocks(x: np.ndarray) -> np.ndarray:
    """``[..., r, n]`` seen as ``[..., n / V_BLOCK, r, V_BLOCK]`` (a view, no copy: writes land in ``x``)."""
    *lead, r, n = x.shape
    return np.reshape(x, (*lead, r, n // V_BLOCK, V_BLOCK), copy=False).swapaxes(-3, -2)


def tril(a: np.ndarray, k: int = 0) -> np.ndarray:
    """``np.tril(a, k)`` (the same bits: a where of a zero), with a square ``[..., n, n]``'s mask
    cached; np.tril builds the mask at every call, which the per-chunk products felt."""
    m, n = a.shape[-2:]
    if m != n:
        return np.tril(a, k)
    return np.where(tril_mask(n, k), a, a.dtype.type(0))


def tril_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``sum_{k<=i} a[i,k] b[k]``: a chain of Axpy rows from a zeroed row (a's upper part unread)."""
    return tril(a) @ b


@lru_cache(maxsize=256)
def tril_mask(n: int, k: int) -> np.ndarray:
    """``[n, n]`` bool, True on and below diagonal ``k``: the elements a lower-triangular loop writes
    (computed once per (n, k): every chunk asks for the same few)."""
    mask = np.tri(n, n, k, dtype=bool)
    mask.flags.writeable = False
    return mask
