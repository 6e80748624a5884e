"""Host tiling against the documented table (docs/kernel.md §3) and formulas written out independently."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgdr_des.errors import InputError
from cgdr_des.kernel.tiling import compute_out_queue_bytes, compute_tiling, compute_tmp_buff_bytes

UB = 262144
MIB32 = 32 * 1024 * 1024


def up(x, a):
    return (x + a - 1) // a * a


def tbuf(vs, dv, dk, allow):
    """ComputeTmpBuffBytes as the notes' pseudocode writes it."""
    cs, av, sk, ak = 64, up(vs, 8), up(dk, 8), up(dk, 16)
    dot_e = max(sk, cs)
    delta_e = max(dot_e, av)
    fixed = 2 * cs * ak * 4 + cs * cs * 4 + cs * 4 + dot_e * 4 + cs * 4
    vpart = 2 * cs * av * 4 + delta_e * 4
    scores, state = cs * cs * 4, sk * av * 4
    return fixed + vpart + (max(scores, state) if (vs >= dv or allow) else scores + state)


def outq(vs, dk):
    return max(up(dk, 8) * up(vs, 8) * 2, 64 * up(vs, 8) * 2)


def tiling(b, h, t, dk, dv, ub=UB, aiv=8, **kw):
    return compute_tiling(t=b * t, hqk=h, dk=dk, hv=h, dv=dv, batch=b, ub_size=ub, aiv_num=aiv, **kw)


# (B, H, T, Dk, Dv) -> vStep, V-tiles, overlap, tbuf, outQ, restBytes, blockDim: docs/kernel.md §3.
TABLE = [
    ((1, 8, 64, 64, 64), 64, 1, True, 99328, 8192, 253952, 8),
    ((1, 16, 128, 128, 128), 128, 1, True, 214528, 32768, 229376, 8),
    ((1, 1, 128, 128, 256), 128, 2, True, 214528, 32768, 229376, 2),
    ((2, 8, 512, 128, 128), 128, 1, True, 214528, 32768, 229376, 8),
    ((1, 16, 1024, 128, 128), 128, 1, True, 214528, 32768, 229376, 8),
    ((1, 16, 2048, 128, 128), 128, 1, True, 214528, 32768, 229376, 8),
]


@pytest.mark.parametrize("shape, vstep, tiles, overlap, tb, oq, rest, block_dim", TABLE)
def test_documented_table(shape, vstep, tiles, overlap, tb, oq, rest, block_dim):
    t = tiling(*shape)
    assert (t.v_step, t.v_tile_count, t.overlap_scores_state) == (vstep, tiles, overlap)
    assert (t.tmp_buff_bytes, t.out_queue_bytes, t.ub_rest_bytes, t.block_dim) == (tb, oq, rest, block_dim)
    assert t.ub_rest_bytes == UB - t.out_queue_bytes
    assert t.workspace_bytes == MIB32  # every performance shape falls under the 32 MiB floor (§7.1)


def test_worked_example_bytes():
    """dk=128, vStep=128: 214 528 + 32 768 = 247 296 B with overlap, 263 680 B without (§3).

    "Without" needs vStep < dv (dv=256 here), since vStep >= dv always overlaps.
    """
    assert compute_tmp_buff_bytes(128, 256, 128, True) + compute_out_queue_bytes(128, 128) == 247296
    assert compute_tmp_buff_bytes(128, 256, 128, False) + compute_out_queue_bytes(128, 128) == 263680
    assert compute_tmp_buff_bytes(128, 128, 128, False) == 214528  # vStep >= dv overlaps anyway
    t = tiling(1, 16, 128, 128, 128)
    assert t.tmp_buff_bytes + t.out_queue_bytes == 247296


def test_fixed_part_is_82944_for_dk128():
    """The vStep-independent sizes total 82 944 B for dk=128 (doc): subtract the V-dependent part."""
    for vs in (16, 64, 128):
        av = up(vs, 8)
        v_dependent = 2 * 64 * av * 4 + max(128, av) * 4 + max(64 * 64 * 4, 128 * av * 4)
        assert compute_tmp_buff_bytes(vs, 256, 128, True) - v_dependent == 82944


def test_192k_ub_drops_to_two_v_tiles_without_overlap():
    t = tiling(1, 16, 128, 128, 128, ub=196608)
    assert (t.v_step, t.v_tile_count, t.overlap_scores_state, t.block_dim) == (64, 2, False, 8)
    assert t.work_items == 16  # hv >= aivNum: V-tiles are not split into work items
    assert t.tmp_buff_bytes + t.out_queue_bytes <= 196608
    assert tbuf(80, 128, 128, False) + outq(80, 128) > 196608


def test_nothing_fits_names_shape_and_ub():
    with pytest.raises(InputError, match=r"ub_size: got 120000.*dk=128, dv=128"):
        tiling(1, 16, 64, 128, 128, ub=120000)


@pytest.mark.parametrize("field", ["hqk", "dk", "hv", "dv", "batch", "ub_size", "aiv_num"])
@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_non_positive_or_non_integer_dims(field, bad):
    args = dict(t=64, hqk=2, dk=64, hv=2, dv=64, batch=1, ub_size=UB, aiv_num=8)
    args[field] = bad
    with pytest.raises(InputError, match=field):
        compute_tiling(**args)


def test_negative_t_and_bad_buffer_num():
    with pytest.raises(InputError, match="t: got -1"):
        tiling(1, 2, -1, 64, 64)
    with pytest.raises(InputError, match="buffer_num"):
        tiling(1, 2, 64, 64, 64, buffer_num=3)


def test_pad_and_num_chunks():
    assert (tiling(1, 2, 100, 64, 64).pad_size, tiling(1, 2, 100, 64, 64).num_chunks) == (28, 2)
    assert (tiling(1, 2, 128, 64, 64).pad_size, tiling(1, 2, 128, 64, 64).num_chunks) == (0, 2)
    assert (tiling(1, 2, 0, 64, 64).pad_size, tiling(1, 2, 0, 64, 64).num_chunks) == (0, 0)


def test_workspace_above_floor():
    t = tiling(64, 32, 64, 128, 100)
    assert t.workspace_bytes == 64 * 32 * 128 * up(100, 8) * 4 > MIB32


def test_buffer_num_two_with_only_the_device_flipped_overflows_ub():
    """docs/kernel.md §7.4: BUFFER_NUM=2 on the device, host still deducting one out-queue buffer."""
    one = tiling(1, 16, 128, 128, 128)
    two = tiling(1, 16, 128, 128, 128, buffer_num=2, host_queue_buffers=1)
    assert two.ub_rest_bytes == one.ub_rest_bytes == UB - one.out_queue_bytes
    assert one.device_ub_bytes == UB and one.ub_overflow_bytes == 0
    assert two.device_ub_bytes == UB + two.out_queue_bytes
    assert two.ub_overflow_bytes == two.out_queue_bytes


def test_buffer_num_two_with_its_host_accounting_fits():
    two = tiling(1, 16, 128, 128, 128, buffer_num=2)
    need = tbuf(two.v_step, 128, 128, False) + 2 * outq(two.v_step, 128)
    assert need <= UB < tbuf(two.v_step + 16, 128, 128, False) + 2 * outq(two.v_step + 16, 128)
    assert two.ub_rest_bytes == UB - 2 * two.out_queue_bytes
    assert two.device_ub_bytes == UB and two.ub_overflow_bytes == 0


def test_dv_not_multiple_of_16_takes_the_rounded_step():
    t = tiling(1, 4, 64, 64, 100)
    assert t.v_step == 112 and t.v_tile_count == 1 and t.overlap_scores_state


@settings(max_examples=150, deadline=None, derandomize=True)
@given(dk=st.integers(1, 256), dv=st.integers(1, 512), hv=st.integers(1, 40), aiv=st.integers(1, 40),
       ub=st.integers(100_000, 400_000))
def test_v_step_is_largest_fitting(dk, dv, hv, aiv, ub):
    allow = hv < aiv
    candidates = [vs for vs in range(16, up(dv, 16) + 1, 16) if tbuf(vs, dv, dk, allow) + outq(vs, dk) <= ub]
    if not candidates:
        with pytest.raises(InputError):
            compute_tiling(t=64, hqk=1, dk=dk, hv=hv, dv=dv, batch=1, ub_size=ub, aiv_num=aiv)
        return
    t = compute_tiling(t=64, hqk=1, dk=dk, hv=hv, dv=dv, batch=1, ub_size=ub, aiv_num=aiv)
    assert t.v_step == max(candidates)
    assert t.tmp_buff_bytes == tbuf(t.v_step, dv, dk, allow)
    tiles = -(-dv // t.v_step)
    items = hv * tiles if (hv < aiv and tiles > 1) else hv
    assert (t.v_tile_count, t.work_items, t.block_dim) == (tiles, items, min(items, aiv))
    assert t.overlap_scores_state == (t.v_step >= dv or hv < aiv)
