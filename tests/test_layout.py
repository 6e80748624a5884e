"""UB layout (InitLocalBuffers) against the documented offsets and the host's byte accounting."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgdr_des.kernel.dispatch import should_split_v_tiles
from cgdr_des.kernel.layout import device_overlap, init_local_buffers
from cgdr_des.kernel.tiling import compute_tiling

UB = 262144
ORDER = ["chunkKFp32", "kCumdecayFp32", "decayMaskFp32", "chunkVFp32", "chunkScoresFp32", "stateInFp32",
         "chunkAttnOutFp32", "gCumsumFp32", "deltaFp32", "dotProductFp32", "expGCumFp32"]


def tiling(b, h, t, dk, dv, ub=UB, aiv=8, **kw):
    return compute_tiling(t=b * t, hqk=h, dk=dk, hv=h, dv=dv, batch=b, ub_size=ub, aiv_num=aiv, **kw)


# Byte offsets within tmpBuff for dk=dv=128, vStep=128 (docs/kernel.md §4.2).
DOC_OFFSETS = {"chunkKFp32": 0, "kCumdecayFp32": 32768, "decayMaskFp32": 65536, "chunkVFp32": 81920,
               "chunkScoresFp32": 114688, "stateInFp32": 114688, "chunkAttnOutFp32": 180224,
               "gCumsumFp32": 212992, "deltaFp32": 213248, "dotProductFp32": 213760, "expGCumFp32": 214272}


def test_documented_offsets_dk_dv_128():
    layout = init_local_buffers(tiling(1, 16, 128, 128, 128))
    assert list(layout.buffers) == ORDER
    assert layout.tmp_buff_offset == 32768  # the out-queue sits below tmpBuff
    for name, offset in DOC_OFFSETS.items():
        assert layout[name].offset == 32768 + offset, name
    assert layout["stateInFp32"].nbytes == 65536
    assert layout.tmp_used_bytes == 214528 and layout.used_bytes == 32768 + 214528
    assert layout.out_queue[0].offset == 0 and layout.out_queue[0].nbytes == 32768


SHAPES = [(1, 8, 64, 64, 64, UB), (1, 16, 128, 128, 128, UB), (1, 1, 128, 128, 256, UB),
          (2, 8, 512, 128, 128, UB), (1, 16, 1024, 128, 128, UB), (1, 16, 128, 128, 128, 196608)]


@pytest.mark.parametrize("b, h, t, dk, dv, ub", SHAPES)
def test_tmp_usage_equals_host_accounting(b, h, t, dk, dv, ub):
    til = tiling(b, h, t, dk, dv, ub=ub)
    layout = init_local_buffers(til)
    assert layout.overlap == til.overlap_scores_state
    assert layout.tmp_used_bytes == til.tmp_buff_bytes
    assert layout.tmp_used_bytes <= til.ub_rest_bytes and layout.fits


def test_separate_scores_and_state_when_not_overlapped():
    layout = init_local_buffers(tiling(1, 16, 128, 128, 128, ub=196608))
    assert not layout.overlap
    scores, state = layout["chunkScoresFp32"], layout["stateInFp32"]
    assert scores.nbytes == 64 * 64 * 4
    assert state.offset == scores.offset + scores.nbytes
    assert state.nbytes == 128 * 64 * 4


@settings(max_examples=120, deadline=None, derandomize=True)
@given(dk=st.integers(1, 200), dv=st.integers(1, 300), hv=st.integers(1, 24), aiv=st.integers(1, 24))
def test_device_overlap_equals_host_and_blocks_are_disjoint(dk, dv, hv, aiv):
    til = compute_tiling(t=64, hqk=1, dk=dk, hv=hv, dv=dv, batch=1, ub_size=UB, aiv_num=aiv)
    device = til.v_step >= dv or should_split_v_tiles(dv, til.v_step, til.block_dim, hv)
    assert device == til.overlap_scores_state == device_overlap(til)
    layout = init_local_buffers(til)
    assert layout.tmp_used_bytes == til.tmp_buff_bytes
    blocks = sorted(layout.buffers.values(), key=lambda b: b.offset)
    for buf in blocks:
        assert buf.offset % 32 == 0 and buf.nbytes % 32 == 0
        assert layout.tmp_buff_offset <= buf.offset and buf.offset + buf.nbytes <= layout.used_bytes
    aliased = {"chunkScoresFp32", "stateInFp32"} if layout.overlap else set()
    for a, b in zip(blocks, blocks[1:], strict=False):
        if {a.name, b.name} != aliased:
            assert a.offset + a.nbytes <= b.offset, (a, b)


def test_buffer_num_two_with_one_buffer_deducted_overflows_ub():
    til = tiling(1, 16, 128, 128, 128, buffer_num=2, host_queue_buffers=1)
    layout = init_local_buffers(til)
    assert [q.offset for q in layout.out_queue] == [0, til.out_queue_bytes]
    assert layout.tmp_buff_offset == 2 * til.out_queue_bytes
    assert layout.allocated_bytes == UB + til.out_queue_bytes and not layout.fits


def test_init_records_follow_the_source_order():
    til = tiling(1, 8, 64, 64, 64)
    queue, tmp = init_local_buffers(til).init_records()
    assert (queue.name, queue.position, queue.num, queue.nbytes) == ("stateOutQueue_", "VECOUT", 1, 8192)
    assert (tmp.name, tmp.position, tmp.num, tmp.nbytes) == ("tmpBuff", "VECCALC", 1, til.ub_rest_bytes)


def test_explicit_device_overlap_overrides():
    til = tiling(1, 16, 128, 128, 128, ub=196608)
    forced = init_local_buffers(til, overlap=True)
    assert forced.overlap and forced["stateInFp32"].offset == forced["chunkScoresFp32"].offset
    assert forced.tmp_used_bytes < til.tmp_buff_bytes


def test_sub_ranges():
    layout = init_local_buffers(tiling(1, 16, 128, 128, 128))
    row = layout["chunkVFp32"].sub(3 * 128, 128)
    assert row == (layout["chunkVFp32"].offset + 3 * 128 * 4, 512)
