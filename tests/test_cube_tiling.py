"""Cube-era host tiling against docs/kernel-cube.md §2: buckets and keys, alignK, the tmpBuff and
out-queue formulas (checked against the carved layout and the published worked sizes), SolveVStep's
preference and its greedy fallback, the work split and the workspace with its stage slots."""

from __future__ import annotations

import numpy as np
import pytest

from cgdr_des.errors import InputError
from cgdr_des.kernel.cube import tiling as ct
from cgdr_des.kernel.cube.launch import make_cube_launch
from cgdr_des.kernel.cube.layout import cube_layout
from cgdr_des.kernel.cube.program import assign_items
from cgdr_des.kernel.launch import Shape

MIB = 1024 * 1024


@pytest.mark.parametrize(("dk", "bucket", "key", "align_k"), [
    (1, 64, 0, 64), (63, 64, 0, 64), (64, 64, 0, 64), (65, 80, 1, 80), (80, 80, 1, 80), (81, 96, 2, 96),
    (96, 96, 2, 96), (97, 128, 3, 128), (127, 128, 3, 128), (128, 128, 3, 128), (129, 96, 2, 144),
    (200, 96, 2, 208)])
def test_buckets_keys_and_align_k(dk, bucket, key, align_k):
    t = ct.compute_cube_tiling(t=64, hqk=1, dk=dk, hv=1, dv=64, batch=1, ub_size=262144, aiv_num=8)
    assert (t.bucket, t.tiling_key, t.align_k) == (bucket, key, align_k)
    assert t.cube_dk == (0 if dk > 128 else bucket)


def _tbuf_from_definition(vs: int, a_k: int) -> int:
    """tmpBuff written term by term from the kernel's buffer list (cs = 64, aV = ceil8(vs), sK = aK)."""
    cs, a_v = 64, -(-vs // 8) * 8
    terms = [2 * cs * a_k, cs * cs, 2 * cs * a_v, cs, max(a_k, cs, a_v), max(a_k, cs), cs, cs,
             max(cs * cs, a_k * a_v)]
    return 4 * sum(terms)


@pytest.mark.parametrize("d", [64, 80, 96, 128])
def test_tmp_buff_matches_definition_and_layout(d):
    assert ct.tmp_buff_bytes(d, d) == _tbuf_from_definition(d, d)
    t = ct.compute_cube_tiling(t=64, hqk=1, dk=d, hv=1, dv=d, batch=1, ub_size=262144, aiv_num=8)
    ub = cube_layout(t)
    assert ub["end"] - t.out_queue_bytes == t.tmp_buff_bytes
    assert ub["stateIn"] == ub["scores"]


@pytest.mark.parametrize(("d", "tbuf", "queue"), [(64, 99_584, 8_192), (80, 125_312, 12_800),
                                                  (96, 153_088, 18_432), (128, 214_784, 32_768)])
def test_worked_sizes(d, tbuf, queue):
    """The worked table of the notes; D = 80's tbuf is the real device's CGDR_DEBUG_LOG line."""
    assert (ct.tmp_buff_bytes(d, d), ct.out_queue_bytes(d, d)) == (tbuf, queue)


def _greedy(dv: int, a_k: int, ub: int) -> int | None:
    fits = [vs for vs in range(16, -(-dv // 16) * 16 + 1, 16) if ct.ub_need_bytes(vs, a_k) <= ub]
    return max(fits) if fits else None


@pytest.mark.parametrize("ub", [262_144, 253_952, 247_552, 247_551, 240 * 1024, 200_000])
@pytest.mark.parametrize(("dk", "dv"), [(128, 128), (128, 256), (128, 64), (64, 64), (96, 200)])
def test_solve_v_step(ub, dk, dv):
    """The bucket width when it fits (not clamped to dv), else the largest 16-multiple <= ceil16(dv)."""
    t = ct.compute_cube_tiling(t=64, hqk=1, dk=dk, hv=1, dv=dv, batch=1, ub_size=ub, aiv_num=8)
    d = t.bucket
    want = d if ct.ub_need_bytes(d, d) <= ub else _greedy(dv, d, ub)
    assert t.v_step == want
    assert ct.ub_need_bytes(t.v_step, d) <= ub


def test_fast_path_needs_247552_bytes_at_128():
    """The 128 bucket's fast path needs 247 552 B of UB; one byte less puts it on the vector path."""
    for ub, fast in ((247_552, True), (247_551, False)):
        t = ct.compute_cube_tiling(t=64, hqk=1, dk=128, hv=1, dv=128, batch=1, ub_size=ub, aiv_num=8)
        assert ct.is_cube_fast_path(t, 64) is fast
        assert ct.attn_matrix_cube(t, 64) is fast and ct.blocked_inverse_cube(t, 64) is fast
    assert not ct.is_cube_fast_path(t, 63)


def test_gates_beyond_the_buckets():
    """dk > 128 runs in the 96 instance: only the blocked inverse can use the Cube."""
    t = ct.compute_cube_tiling(t=64, hqk=1, dk=144, hv=1, dv=96, batch=1, ub_size=262144, aiv_num=8)
    assert t.bucket == 96 and t.v_step_aligned >= 96
    assert ct.blocked_inverse_cube(t, 64)
    assert not (ct.is_cube_fast_path(t, 64) or ct.attn_matrix_cube(t, 64) or ct.k_cumdecay_cube(t, 64))


def test_workspace_and_stage_slots():
    small = ct.compute_cube_tiling(t=128, hqk=16, dk=128, hv=16, dv=128, batch=1, ub_size=253952, aiv_num=8)
    assert small.workspace_bytes == 32 * MIB
    big = ct.compute_cube_tiling(t=4096, hqk=64, dk=128, hv=64, dv=100, batch=8, ub_size=253952, aiv_num=8)
    state = 8 * 64 * 128 * 104 * 4
    assert big.state_region_bytes == state
    assert big.workspace_bytes == max(32 * MIB, state + big.block_dim * 2 * 64 * 1024)
    offsets = sorted(big.slot_offset(c, s) for c in range(big.block_dim) for s in (0, 1))
    assert offsets[0] == state and offsets[-1] + 64 * 1024 == state + big.block_dim * 128 * 1024
    assert np.all(np.diff(offsets) == 64 * 1024)


#: (B, H, T, dk, dv) -> blockDim, items per core, chunks per core (notes §2.4, aivNum = 8)
PERF = {(1, 8, 64, 64, 64): (8, 1, 1), (1, 16, 128, 128, 128): (8, 2, 4), (1, 1, 128, 128, 256): (2, 1, 2),
        (2, 8, 512, 128, 128): (8, 2, 16), (1, 16, 1024, 128, 128): (8, 2, 32),
        (1, 16, 2048, 128, 128): (8, 2, 64)}


@pytest.mark.parametrize("shape", list(PERF))
def test_work_split_of_the_perf_shapes(shape):
    b, h, t, dk, dv = shape
    launch = make_cube_launch(Shape(b, b * t, h, h, dk, dv, 1.0, True), np.full(b, t), None, None, numerics="off",
                              ub_size=253952, aiv_num=8)
    cores = assign_items(launch)
    chunks = [sum(-(-it.seqlen // 64) for it in items) for items in cores]
    assert (launch.block_dim, max(map(len, cores)), max(chunks)) == PERF[shape]
    assert min(map(len, cores)) == max(map(len, cores))


@pytest.mark.parametrize(("field", "kwargs"), [("dk", {"dk": 0}), ("ub_size", {"ub_size": 1000}),
                                               ("kernel_version", {"kernel_version": "tensor"})])
def test_bad_input_names_the_field(field, kwargs):
    args = dict(t=64, hqk=1, dk=64, hv=1, dv=64, batch=1, ub_size=262144, aiv_num=8) | kwargs
    with pytest.raises(InputError, match=f"^{field}"):
        ct.compute_cube_tiling(**args)
