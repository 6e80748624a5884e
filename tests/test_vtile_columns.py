"""The products over a V-tile's columns give every column the same bits whatever the tile width, the
tile's place and the operands' memory alignment (chunk_math.v_matmul), as the kernel's Axpy rows do.

The operands below have the kernel's shapes and layouts (the lower-triangular A and M times v, K_cd
and the scaled Q times the state tile, the transposed decayed K times v_new), each tile is laid out as
the kernel lays it (a V-wide buffer, columns past the tile's width zero) and the operands and the
result sit at several offsets from a 64-byte boundary. The reference is the same product at the
full width dv = 128 in one call, so a column computed any other way than at its place in a
16-column block shows up as a bit difference.
"""

from __future__ import annotations

import numpy as np
import pytest

from cgdr_des.kernel import chunk_math as cm

DV = 128
LANES = 2
WIDTHS = range(16, DV + 1, 16)  # every vStep the host can pick for dv = 128
OFFSETS = [(0, 0, 0), (1, 3, 5), (4, 8, 12), (7, 13, 2), (15, 1, 9)]  # (lhs, rhs, out) in floats


def placed(x: np.ndarray, offset: int) -> np.ndarray:
    """A copy of ``x`` (C order) whose first element lies ``offset`` floats past a 64-byte boundary."""
    raw = np.empty(x.size + 32, dtype=x.dtype)
    start = (-raw.ctypes.data // x.itemsize) % (64 // x.itemsize) + offset
    view = raw[start:start + x.size].reshape(x.shape)
    view[...] = x
    return view


def operands(form: str, rows: int, dk: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(lhs, full-width rhs) of one of the V-tile products, in the kernel's layouts."""
    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    if form == "tril(A) v":  # ComputeValueNew, AccumOutput
        return np.tril(f32(LANES, rows, rows)), f32(LANES, rows, DV)
    if form == "K_cd S":  # ComputeVNew: K_cd rows of stride aK inside chunkKFp32
        return f32(LANES, rows, dk + 16)[:, :, :dk], f32(LANES, dk, DV)
    if form == "q S":  # ComputeAttnInter: q of the input's [T, heads, dk] layout, heads moved first
        return np.moveaxis(f32(rows, LANES, dk), 1, 0), f32(LANES, dk, DV)
    return np.swapaxes(f32(LANES, rows, dk), -1, -2), f32(LANES, rows, DV)  # UpdateAndWriteState


FORMS = ["tril(A) v", "K_cd S", "q S", "coeff^T v_new"]


def tiles_disagreeing(product, form: str, rows: int, dk: int) -> list:
    """Every (width, tile start, offsets) whose columns differ from the full-width product's."""
    lhs, rhs = operands(form, rows, dk, np.random.default_rng(rows * 1000 + dk))
    ref = product(lhs, rhs, None)
    bad, k = [], 0
    for width in WIDTHS:
        for v_i in range(0, DV, width):
            cv = min(width, DV - v_i)
            tile = np.zeros((*rhs.shape[:-1], width), dtype=rhs.dtype)  # the V-wide UB buffer
            tile[..., :cv] = rhs[..., v_i:v_i + cv]
            o_lhs, o_rhs, o_out = OFFSETS[k % len(OFFSETS)]
            k += 1
            out = placed(np.zeros((*ref.shape[:-1], width), dtype=ref.dtype), o_out)
            got = product(placed(lhs, o_lhs) if o_lhs else lhs, placed(tile, o_rhs), out)
            if not np.array_equal(got[..., :cv].view(np.uint32), ref[..., v_i:v_i + cv].view(np.uint32)):
                bad.append((width, v_i, (o_lhs, o_rhs, o_out)))
    return bad


def v_product(lhs, rhs, out):
    return cm.v_matmul(lhs, rhs, out=out)


def one_call(lhs, rhs, out):
    return np.matmul(lhs, rhs, out=out)


@pytest.mark.parametrize("rows, dk", [(64, 128), (64, 64), (6, 128), (1, 64), (64, 256)])
@pytest.mark.parametrize("form", FORMS)
def test_v_products_give_a_column_the_same_bits_at_every_width_place_and_alignment(form, rows, dk):
    assert tiles_disagreeing(v_product, form, rows, dk) == []


def test_the_check_sees_the_columns_one_wide_call_computes_differently():
    """The same check on plain ``a @ b`` (one BLAS call per lane over the whole tile): with OpenBLAS's
    sgemm some columns differ from the full-width call's, which is what v_matmul removes."""
    bad = tiles_disagreeing(one_call, "K_cd S", 64, 128)
    if not bad:
        pytest.skip("this BLAS gives every column of a product the same bits whatever its width")
    assert {w for w, _, _ in bad} - {DV}  # narrower tiles than dv among the disagreeing ones


def test_v_matmul_is_one_product_per_16_columns():
    """The rule written out independently: each 16-column block is its own ``a @ b`` call."""
    lhs, rhs = operands("K_cd S", 64, 128, np.random.default_rng(1))
    want = np.concatenate([lhs @ np.ascontiguousarray(rhs[..., j:j + 16]) for j in range(0, DV, 16)], axis=-1)
    np.testing.assert_array_equal(cm.v_matmul(lhs, rhs), want)
    np.testing.assert_allclose(cm.v_matmul(lhs, rhs), lhs.astype(np.float64) @ rhs, rtol=1e-4, atol=1e-4)


def test_a_width_off_the_16_grid_is_padded_not_recomputed():
    """A trailing block narrower than 16 columns gives its columns the bits of a full block."""
    lhs, rhs = operands("tril(A) v", 64, 128, np.random.default_rng(2))
    full = cm.v_matmul(lhs, rhs[..., :48])
    for n in (40, 41, 47):
        np.testing.assert_array_equal(cm.v_matmul(lhs, rhs[..., :n]), full[..., :n])
        out = np.empty((LANES, 64, n), dtype=np.float32)
        assert cm.v_matmul(lhs, rhs[..., :n], out=out) is out
        np.testing.assert_array_equal(out, full[..., :n])


def test_v_matmul_keeps_float64():
    lhs, rhs = (x.astype(np.float64) for x in operands("q S", 64, 128, np.random.default_rng(3)))
    got = cm.v_matmul(lhs, rhs)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, lhs @ rhs, rtol=1e-12, atol=1e-12)
