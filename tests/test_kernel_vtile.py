"""Steps 1-7 of ProcessOneVTile (kernel/vtile.py), one function at a time.

Numbers: each step's UB buffers, the workspace and the outputs against the float64 chunked form
(docs/math.md §2) from the fp16 inputs. Records: GM and UB addresses, DMA parameters, the scalar
state paths, ScalarExp's arguments and the branches the count tests do not reach (scalar V load,
per-row CopyToGm, CopyToGm's overrun diagnostic).
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_steps import buf, one_chunk, reference
from test_kernel_phases import run_phases

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.isa import (
    AllocTensor,
    DataCopyExtParams,
    DataCopyParams,
    DeQue,
    Dma,
    EnQue,
    FreeTensor,
    PipeBarrier,
    Scalar,
    ScalarGm,
    VecOp,
)
from cgdr_des.kernel import vtile
from cgdr_des.kernel.functional import make_launch
from cgdr_des.kernel.launch import CHUNK_SIZE as CS
from cgdr_des.kernel.launch import CoreState, Shape
from cgdr_des.kernel.program import ChunkInfo

STEPS = ("S1", "S2", "S3", "S4", "S5", "S6", "S6b", "S7")


def run_steps(c, v_i=0, cv=None, upto="S7") -> dict[str, list]:
    """Phases 1-5, then the V-tile steps of the tile at column ``v_i`` up to ``upto``."""
    core, ch = c.core, c.ch
    cv = min(core.v_step, c.launch.shape.dv - v_i) if cv is None else cv
    run_phases(c)
    fns = {
        "S1": lambda o: vtile.load_v_beta(core, ch, v_i, cv, o),
        "S2": lambda o: vtile.compute_value_new(core, ch, o),
        "S3": lambda o: vtile.load_state_tile(core, ch, v_i, cv, o),
        "S4": lambda o: vtile.compute_v_new(core, ch, o),
        "S5": lambda o: vtile.compute_attn_inter(core, ch, o),
        "S6": lambda o: vtile.accum_output(core, ch, o),
        "S6b": lambda o: vtile.write_attn_tile_to_gm(core, ch, v_i, cv, o),
        "S7": lambda o: vtile.update_and_write_state(core, ch, v_i, cv, o),
    }
    emitted = {}
    for name in STEPS:
        emitted[name] = []
        fns[name](emitted[name])
        if name == upto:
            break
    return emitted


def state_before(c, v_i, cv) -> np.ndarray:
    """S_prev [dk, cv] in float64: initial_state transposed (chunk 0) or the workspace tile."""
    ch = c.ch
    if ch.c == 0:
        return c.x.initial_state[ch.b, ch.head, v_i:v_i + cv, :].astype(np.float64).T
    return c.launch.workspace[ch.b, ch.head, :, v_i:v_i + cv].astype(np.float64)


def seeded_workspace(c, seed=3):
    """A later chunk's input state: fill the workspace as the previous chunk would have."""
    ws = c.launch.workspace
    ws[...] = np.random.default_rng(seed).standard_normal(ws.shape) * 0.1


CASES = {  # (lengths, nk, nv, dk, dv, head, chunk, v_i)
    "first_chunk_from_initial_state": ([100], 1, 1, 64, 64, 0, 0, 0),
    "middle_chunk_from_workspace": ([150], 2, 2, 128, 128, 1, 1, 0),
    "last_short_chunk_second_tile": ([70], 1, 1, 128, 256, 0, 1, 128),
    "gqa": ([64, 64], 1, 2, 64, 32, 1, 0, 0),
}


def case(name, numerics="exact"):
    lengths, nk, nv, dk, dv, head, chunk, v_i = CASES[name]
    b = 1 if name == "gqa" else 0
    c = one_chunk(lengths, nk, nv, dk, dv, numerics=numerics, b=b, head=head, chunk=chunk, seed=21)
    if chunk > 0:
        seeded_workspace(c)
    return c, v_i, min(c.core.v_step, dv - v_i)


@pytest.mark.parametrize("name", list(CASES))
def test_steps_follow_the_chunked_form(name):
    c, v_i, cv = case(name)
    ref, sh, L, V = reference(c), c.launch.shape, c.ch.L, c.core.v_aligned
    s_prev = state_before(c, v_i, cv)
    v = ref.v[:, v_i:v_i + cv]
    run_steps(c, v_i, cv, upto="S1")
    np.testing.assert_allclose(buf(c.core, "chunkVFp32", V, L)[:, :cv], ref.beta[:, None] * v, rtol=1e-15)
    run_steps(c, v_i, cv, upto="S2")
    u = ref.A @ (ref.beta[:, None] * v)
    np.testing.assert_allclose(buf(c.core, "chunkAttnOutFp32", V, L)[:, :cv], u, rtol=1e-10, atol=1e-12)
    run_steps(c, v_i, cv, upto="S3")
    np.testing.assert_allclose(buf(c.core, "stateInFp32", V, sh.dk)[:, :cv], s_prev, rtol=1e-15)
    run_steps(c, v_i, cv, upto="S4")
    v_new = u - ref.kcd @ s_prev
    np.testing.assert_allclose(buf(c.core, "chunkVFp32", V, L)[:, :cv], v_new, rtol=1e-10, atol=1e-12)
    run_steps(c, v_i, cv, upto="S5")
    o1 = (ref.q * np.exp(ref.G)[:, None]) @ s_prev
    np.testing.assert_allclose(buf(c.core, "chunkAttnOutFp32", V, L)[:, :cv], o1, rtol=1e-10, atol=1e-12)
    run_steps(c, v_i, cv, upto="S6b")
    out = o1 + ref.M @ v_new
    np.testing.assert_allclose(c.launch.out[c.ch.t_start:c.ch.t_start + L, c.ch.head, v_i:v_i + cv], out,
                               rtol=1e-10, atol=1e-12)
    run_steps(c, v_i, cv)
    decay = np.exp(ref.G[-1] - ref.G)
    s_new = np.exp(ref.G[-1]) * s_prev + ref.k.T @ (decay[:, None] * v_new)
    np.testing.assert_allclose(buf(c.core, "stateInFp32", V, sh.dk)[:, :cv], s_new, rtol=1e-10, atol=1e-12)
    if c.ch.is_last:
        got = c.launch.final_state[c.ch.b, c.ch.head, v_i:v_i + cv, :]
        np.testing.assert_allclose(got, s_new.T, rtol=1e-10, atol=1e-12)
    else:
        got = c.launch.workspace[c.ch.b, c.ch.head, :, v_i:v_i + cv]
        np.testing.assert_allclose(got, s_new, rtol=1e-10, atol=1e-12)


def test_kernel_numerics_round_out_and_final_state_to_fp16():
    c, v_i, cv = case("last_short_chunk_second_tile", numerics="kernel")
    run_steps(c, v_i, cv)
    out = c.launch.out[c.ch.t_start:c.ch.t_start + c.ch.L, 0, v_i:v_i + cv]
    state = c.launch.final_state[0, 0, v_i:v_i + cv, :]
    assert out.dtype == np.float16 and state.dtype == np.float16
    fp32_state = buf(c.core, "stateInFp32", c.core.v_aligned, 128)[:, :cv]
    np.testing.assert_array_equal(state, fp32_state.T.astype(np.float16))
    exact, _, _ = case("last_short_chunk_second_tile")
    run_steps(exact, v_i, cv)
    want = exact.launch.out[c.ch.t_start:c.ch.t_start + c.ch.L, 0, v_i:v_i + cv]
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=0, atol=5e-3)


def test_state_decay_uses_scalar_exp_of_g_last_minus_g_i():
    """Step 7's records carry ScalarExp's arguments G_{L-1} - G_i from the fp32 cumulative sum, and the
    kernel numerics multiply k_i by ScalarExp of exactly those (no numbers: derived from g alike)."""
    c = one_chunk([64], 1, 1, 64, 64, numerics="kernel", seed=4)
    recs = run_steps(c)["S7"]
    args = np.array([r.arg for r in recs if type(r) is Scalar and r.kind == "exp"], dtype=np.float32)
    G = np.cumsum(c.x.g[:64, 0], dtype=np.float32)
    np.testing.assert_array_equal(args, G[-1] - G)
    assert np.all(args <= 0)  # g < 0: the decay from token i to the chunk's end is at most 1
    off = one_chunk([64], 1, 1, 64, 64, numerics="off", seed=4)
    off_args = [r.arg for r in run_steps(off)["S7"] if type(r) is Scalar and r.kind == "exp"]
    np.testing.assert_array_equal(off_args, args)


def gm(recs, store=False) -> list[int]:
    return [r.addr for r in recs if type(r) is ScalarGm and r.store is store]


def test_v_beta_dma_reads_the_tile_columns_with_a_row_gap():
    c = one_chunk([40, 90], 1, 3, 64, 256, b=1, head=2, chunk=1)  # tokens 104..129, 2 tiles of 128
    sh, g, L = c.launch.shape, c.launch.gm, c.ch.L
    recs = run_steps(c, v_i=128, upto="S1")["S1"]
    (dma,) = [r for r in recs if type(r) is Dma]
    gap = (3 * 256 - 128) * 2
    assert dma.params == DataCopyParams(L, 128 * 2 // 32, gap // 32, 0)
    assert dma.gm_addr == g.addr("value", (104 * sh.nv + 2) * 256 + 128)
    assert dma.ub_addr == c.core.ub("chunkAttnOutFp32") and dma.nbytes == L * 128 * 2
    assert gm(recs) == [g.addr("beta", (104 + i) * 3 + 2) for i in range(L)]


def test_v_beta_scalar_path_when_the_tile_is_not_whole_32_byte_blocks():
    """cv = 24 fp16 = 48 B: beta then the cv values of each row by scalar GM reads, no DMA."""
    c = one_chunk([5], 1, 1, 64, 24)
    recs = run_steps(c, upto="S1")["S1"]
    g = c.launch.gm
    assert not any(type(r) is Dma for r in recs)
    want = []
    for t in range(5):
        want += [g.addr("beta", t)] + [g.addr("value", t * 24 + v) for v in range(24)]
    assert gm(recs) == want
    ref = reference(c)
    np.testing.assert_allclose(buf(c.core, "chunkVFp32", c.core.v_aligned, 5)[:, :24], ref.beta[:, None] * ref.v,
                               rtol=1e-15)


def test_write_out_with_a_tile_not_a_multiple_of_16_is_a_diagnostic():
    c = one_chunk([5], 1, 1, 64, 24)
    with pytest.raises(KernelDiagnostic, match="curV=24"):
        run_steps(c, upto="S6b")


def test_write_out_is_one_2d_dma_through_the_out_queue():
    c = one_chunk([100], 1, 2, 64, 64, head=1, chunk=1)
    recs = run_steps(c, upto="S6b")["S6b"]
    V, L, g = c.core.v_aligned, c.ch.L, c.launch.gm
    kinds = [type(r) for r in recs if type(r) in (AllocTensor, EnQue, DeQue, FreeTensor, Dma)]
    assert kinds == [AllocTensor, EnQue, DeQue, Dma, FreeTensor]
    (dma,) = [r for r in recs if type(r) is Dma]
    assert dma.direction == "UB2GM" and dma.nbytes == L * 64 * 2
    assert dma.params == DataCopyParams(L, 64 // 16, (V - 64) // 16, (2 * 64 - 64) // 16)
    assert dma.gm_addr == g.addr("out", (64 * 2 + 1) * 64) and dma.ub_addr == c.core.out_queue_offset
    cast = [r for r in recs if type(r) is VecOp and r.op == "Cast"]
    assert cast[0].dst == (c.core.out_queue_offset, 2 * L * V)  # fp16 into the queue buffer


def test_write_out_per_row_when_the_gm_row_gap_exceeds_uint16():
    """Nv*dv - cv >= 16 * 65536 elements: one CopyToGm (DataCopyPad) per row, each behind a
    PipeBarrier<MTE3>. Timing only (numerics off) keeps the huge head count cheap."""
    nv, dv = 8200, 128
    shape = Shape(batch=1, t=3, nk=1, nv=nv, dk=64, dv=dv, scale=1.0, has_gamma=False)
    launch = make_launch(shape, [3], None, None, numerics="off")
    core = CoreState(launch, 0)
    ch = ChunkInfo(0, 5, 0, 0, 3, 0, True, -1)
    out: list = []
    vtile.write_attn_tile_to_gm(core, ch, 0, 128, out)
    dmas = [r for r in out if type(r) is Dma]
    assert [d.params for d in dmas] == [DataCopyExtParams(1, 256, 0, 0)] * 3
    assert [d.gm_addr for d in dmas] == [launch.gm.addr("out", (t * nv + 5) * dv) for t in range(3)]
    assert [d.ub_addr for d in dmas] == [core.out_queue_offset + 2 * t * core.v_aligned for t in range(3)]
    after = [out[out.index(d) + 1] for d in dmas]
    assert after == [PipeBarrier("MTE3")] * 3


def test_state_tile_from_the_workspace_is_dk_row_dmas_between_full_barriers():
    c = one_chunk([150], 1, 2, 64, 64, head=1, chunk=2)
    recs = run_steps(c, upto="S3")["S3"]
    sh, g, V = c.launch.shape, c.launch.gm, c.core.v_aligned
    dmas = [r for r in recs if type(r) is Dma]
    assert len(dmas) == 64 and all(d.direction == "GM2UB" and d.nbytes == 64 * 4 for d in dmas)
    assert all(d.params == DataCopyParams(1, 64 // 8, 0, 0) for d in dmas)
    ws0 = (0 * sh.nv + 1) * sh.dk * sh.ws_stride_v
    assert [d.gm_addr for d in dmas] == [g.addr("workspace", ws0 + d * sh.ws_stride_v) for d in range(64)]
    assert [d.ub_addr for d in dmas] == [c.core.ub("stateInFp32") + 4 * d * V for d in range(64)]
    barriers = [r.pipe for r in recs if type(r) is PipeBarrier]
    assert barriers == ["V", "ALL", "ALL"]


def test_state_tile_of_the_first_chunk_is_read_transposed_by_scalar():
    c = one_chunk([10], 1, 2, 64, 32, head=1)
    recs = run_steps(c, upto="S3")["S3"]
    g = c.launch.gm
    base = 1 * 32 * 64
    assert gm(recs) == [g.addr("initial_state", base + v * 64 + d) for v in range(32) for d in range(64)]


def test_workspace_write_of_a_middle_chunk():
    c = one_chunk([130], 1, 1, 64, 64, chunk=0)
    recs = run_steps(c)["S7"]
    sh, g = c.launch.shape, c.launch.gm
    dmas = [r for r in recs if type(r) is Dma]
    assert [d.direction for d in dmas] == ["UB2GM"] * 64
    assert [d.gm_addr for d in dmas] == [g.addr("workspace", d * sh.ws_stride_v) for d in range(64)]
    assert not gm(recs, store=True)


def test_final_state_of_the_last_chunk_is_stored_transposed_by_scalar():
    c = one_chunk([10], 1, 2, 64, 32, head=1)
    recs = run_steps(c)["S7"]
    g = c.launch.gm
    base = 1 * 32 * 64
    assert gm(recs, store=True) == [g.addr("final_state", base + v * 64 + d) for v in range(32) for d in range(64)]
    assert not any(type(r) is Dma for r in recs)
    kinds = [type(r) for r in recs if type(r) in (AllocTensor, EnQue, DeQue, FreeTensor)]
    assert kinds == [AllocTensor, EnQue, DeQue, FreeTensor]


def test_triangle_steps_read_a_and_m_row_prefixes():
    """Steps 2 and 6: row i of the output accumulates rows k <= i of chunkVFp32."""
    c = one_chunk([4], 1, 1, 64, 64)
    emitted = run_steps(c, upto="S6")
    a0, v0, V = c.core.ub("chunkAttnOutFp32"), c.core.ub("chunkVFp32"), c.core.v_aligned
    want = [(a0 + 4 * i * V, v0 + 4 * k * V) for i in range(4) for k in range(i + 1)]
    for step in ("S2", "S6"):
        axpy = [(r.dst[0], r.srcs[0][0]) for r in emitted[step] if type(r) is VecOp and r.op == "Axpy"]
        assert axpy == want, step
    assert gm(emitted["S5"]) == [c.launch.gm.addr("query", t * 64 + d) for t in range(4) for d in range(64)]


def test_scores_and_state_alias_when_the_layout_overlaps_them():
    """Step 3 zeroes stateInFp32, which is chunkScoresFp32's memory: A is gone afterwards."""
    c = one_chunk([64], 1, 1, 64, 64)
    assert c.core.layout.overlap
    assert c.core.ub("stateInFp32") == c.core.ub("chunkScoresFp32")
    run_steps(c, upto="S2")
    assert np.any(buf(c.core, "chunkScoresFp32", CS, 64) != 0)
    run_steps(c, upto="S3")
    scores = c.core.views["chunkScoresFp32"][0]
    state = c.core.views["stateInFp32"][0]
    assert np.shares_memory(scores, state)
    np.testing.assert_array_equal(scores[:64 * 64], state[:64 * 64])
