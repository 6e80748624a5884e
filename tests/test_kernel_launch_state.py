"""A launch's arrays and a core's Init members (kernel/launch.py) against the formulas of
docs/kernel.md §4: the Init strides, the output, state and workspace arrays per numerics mode, the
UB views at InitLocalBuffers' offsets (disjoint but for the documented scores/state overlap), and
the lanes a core computes for a chunk.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_cases import args, inputs

from cgdr_des.integers import ceil_align, ceil_div
from cgdr_des.kernel.functional import build_launch
from cgdr_des.kernel.launch import CoreState, Shape, should_split
from cgdr_des.kernel.program import ChunkInfo


@settings(max_examples=200, deadline=None, derandomize=True)
@given(a=st.integers(0, 10**6), b=st.integers(1, 4096))
def test_ceil_div_and_align(a, b):
    q = ceil_div(a, b)
    assert (q - 1) * b < a <= q * b or (a == 0 and q == 0)
    assert ceil_align(a, b) == q * b and ceil_align(a, b) % b == 0 and 0 <= ceil_align(a, b) - a < b


@settings(max_examples=100, deadline=None, derandomize=True)
@given(nk=st.integers(1, 8), mult=st.integers(1, 8), dk=st.integers(1, 600), dv=st.integers(1, 600))
def test_init_strides(nk, mult, dk, dv):
    sh = Shape(batch=1, t=1, nk=nk, nv=nk * mult, dk=dk, dv=dv, scale=1.0, has_gamma=True)
    assert sh.nv_per_nk == mult
    assert sh.align_k == -(-dk // 16) * 16 and sh.state_stride_k == -(-dk // 8) * 8
    assert sh.ws_stride_v == -(-dv // 8) * 8


def launch_of(numerics: str, lengths=(70, 0, 5), nk=1, nv=2, dk=48, dv=40):
    x = inputs(list(lengths), nk, nv, dk, dv, seed=3)
    return x, build_launch(*args(x), numerics=numerics, ub_size=262144, aiv_num=8)


@pytest.mark.parametrize("numerics, out_dtype, work_dtype", [("kernel", np.float16, np.float32),
                                                             ("exact", np.float64, np.float64)])
def test_a_launch_allocates_its_outputs_state_and_workspace(numerics, out_dtype, work_dtype):
    x, launch = launch_of(numerics)
    sh = launch.shape
    assert launch.out.shape == (sum((70, 0, 5)), sh.nv, sh.dv) and launch.out.dtype == out_dtype
    assert not launch.out.any()
    np.testing.assert_array_equal(launch.final_state, x.initial_state.astype(out_dtype))
    assert not np.shares_memory(launch.final_state, x.initial_state)
    assert launch.workspace.shape == (3, sh.nv, sh.dk, -(-sh.dv // 8) * 8)
    assert launch.workspace.dtype == work_dtype and launch.ft is work_dtype
    for name in ("query", "key", "value", "beta", "initial_state", "g"):
        np.testing.assert_array_equal(launch.wide[name], getattr(x, name).astype(work_dtype))


def test_numerics_off_allocates_nothing():
    _, launch = launch_of("off")
    assert (launch.out, launch.final_state, launch.workspace, launch.wide) == (None, None, None, {})
    assert CoreState(launch, 0).views == {}


@pytest.mark.parametrize("all_heads", [False, True])
def test_ub_views_sit_at_their_layout_offsets(all_heads):
    _, launch = launch_of("kernel")
    core = CoreState(launch, 0, all_heads=all_heads)
    lanes = launch.shape.nv if all_heads else 1
    base = core.layout.tmp_buff_offset
    for name, buf in core.layout.buffers.items():
        view = core.views[name]
        assert view.shape == (lanes, buf.elements) and view.dtype == launch.ft
        start = (view.__array_interface__["data"][0] - core.flat.__array_interface__["data"][0])
        assert start == (buf.offset - base) // 4 * view.itemsize  # 4-byte elements, row 0
        assert core.ub(name) == buf.offset and core.ub(name, 10) == buf.offset + 40


def test_ub_views_are_disjoint_except_scores_and_state_when_they_overlap():
    _, launch = launch_of("kernel")
    core = CoreState(launch, 0)
    names = list(core.views)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            shared = np.shares_memory(core.views[a], core.views[b])
            allowed = {a, b} == {"chunkScoresFp32", "stateInFp32"} and core.layout.overlap
            assert shared == allowed, (a, b)


def test_a_core_computes_its_chunk_s_head_or_every_head_with_gqa_gather():
    _, launch = launch_of("kernel", nk=2, nv=6)
    ch = ChunkInfo(0, 4, 4 // 3, 0, 64, 0, False, -1)
    one, every = CoreState(launch, 0), CoreState(launch, 0, all_heads=True)
    v, qk = one.lanes(ch)
    heads = np.arange(6)
    assert heads[v].tolist() == [4] and np.arange(2)[qk].tolist() == [4 // 3]
    v_all, qk_all = every.lanes(ch)
    assert heads[v_all].tolist() == list(range(6))
    assert list(qk_all) == [h // 3 for h in range(6)]  # value head h reads q/k head h // (Nv/Nk)


def test_split_follows_should_split_v_tiles_with_the_launch_block_dim():
    _, launch = launch_of("off", lengths=(10,), nk=1, nv=1, dk=128, dv=256)
    t = launch.tiling
    assert should_split(launch) == (launch.shape.dv > t.v_step and launch.block_dim > launch.shape.nv)
