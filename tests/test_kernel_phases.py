"""Phases 1-5 of ProcessChunk (kernel/phases.py), one function at a time.

Numbers: each phase's UB buffers against the float64 chunked form (docs/math.md §2) re-derived from
the fp16 inputs. Records: the GM addresses, UB addresses and DMA parameters each phase emits, and the
branches (slow K load, uncached Q) the count tests do not reach. The per-phase counts of the fast
paths are in test_kernel_counts.py.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from kernel_steps import buf, one_chunk, reference

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.isa import DataCopyParams, Dma, PipeBarrier, Scalar, ScalarGm, SetFlag, VecOp, WaitFlag
from cgdr_des.kernel import phases
from cgdr_des.kernel.launch import CHUNK_SIZE as CS
from cgdr_des.kernel.program import CHUNK_PHASES

SHAPES = {  # (lengths, nk, nv, dk, dv, chunk)
    "full_chunk_dk64": ([64], 1, 1, 64, 64, 0),
    "short_last_chunk_dk128": ([101], 1, 1, 128, 128, 1),
    "gqa_head3_dk96": ([70], 1, 4, 96, 64, 0),
    "dk_tail_97": ([40], 1, 2, 97, 32, 0),
}


def run_phases(c, upto: str | None = None, emit: bool = True) -> dict[str, list | None]:
    """Run phases 1-5 in program order (skipping 3.5 when Q is not cached); records per phase
    (``emit`` False: the phases get no record list, as the program builds numbers only, and map to None)."""
    emitted = {}
    for info in CHUNK_PHASES:
        name = info.label
        if name == "P3.5_QCache" and not phases.can_cache_attn_query(c.core, c.ch.L):
            continue
        emitted[name] = [] if emit else None
        info.run(c.core, c.ch, None, emitted[name])
        if name == upto:
            break
    return emitted


def chunk_for(name, numerics="exact", **kw):
    lengths, nk, nv, dk, dv, chunk = SHAPES[name]
    head = nv - 1
    return one_chunk(lengths, nk, nv, dk, dv, numerics=numerics, head=head, chunk=chunk, seed=11, **kw)


@pytest.mark.parametrize("name", list(SHAPES))
def test_phases_1_to_3_load_k_cumsum_g_scale_by_beta_and_build_the_decay(name):
    c = chunk_for(name)
    ref, sh, L = reference(c), c.launch.shape, c.ch.L
    aK = sh.align_k
    run_phases(c, upto="P1_LoadChunkKey")
    np.testing.assert_array_equal(buf(c.core, "chunkKFp32", aK, L)[:, :sh.dk], ref.k)
    run_phases(c, upto="P1b_GCumsum")
    np.testing.assert_allclose(c.core.views["gCumsumFp32"][0, :L], ref.G, rtol=1e-14, atol=1e-14)
    run_phases(c, upto="P2_KBeta")
    np.testing.assert_allclose(buf(c.core, "kCumdecayFp32", aK, L)[:, :sh.dk], ref.beta[:, None] * ref.k,
                               rtol=1e-14)
    run_phases(c, upto="P3_DecayExp")
    np.testing.assert_allclose(c.core.views["expGCumFp32"][0, :L], np.exp(ref.G), rtol=1e-13)
    lower = np.tri(L, dtype=bool)
    np.testing.assert_allclose(buf(c.core, "decayMaskFp32", CS, L)[:, :L][lower], ref.D[lower], rtol=1e-13)


@pytest.mark.parametrize("name", list(SHAPES))
def test_phases_4_and_5_give_the_wy_matrix_the_masked_scores_and_k_cumdecay(name):
    c = chunk_for(name)
    ref, sh, L = reference(c), c.launch.shape, c.ch.L
    run_phases(c)
    scores = buf(c.core, "chunkScoresFp32", CS, L)[:, :L]
    lower = np.tri(L, dtype=bool)
    np.testing.assert_allclose(scores[lower], ref.A[lower], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(buf(c.core, "decayMaskFp32", CS, L)[:, :L][lower], ref.M[lower],
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(buf(c.core, "chunkKFp32", sh.align_k, L)[:, :sh.dk], ref.kcd, rtol=1e-10,
                               atol=1e-12)


def test_phase_4a_writes_minus_beta_k_k_times_decay_strictly_below_the_diagonal():
    c = chunk_for("full_chunk_dk64")
    ref, L = reference(c), c.ch.L
    run_phases(c, upto="P4a_DotFp32")
    b = buf(c.core, "chunkScoresFp32", CS, L)[:, :L]
    want = -(ref.beta[:, None] * ref.k) @ ref.k.T * ref.D
    strict = np.tri(L, k=-1, dtype=bool)
    np.testing.assert_allclose(b[strict], want[strict], rtol=1e-12, atol=1e-14)
    assert np.all(b[~strict] == 0)  # the diagonal and above are written only by 4b


def test_kernel_numerics_stay_within_fp32_of_the_chunked_form():
    c = chunk_for("short_last_chunk_dk128", numerics="kernel")
    ref, sh, L = reference(c), c.launch.shape, c.ch.L
    run_phases(c)
    assert c.core.views["chunkKFp32"].dtype == np.float32
    lower = np.tri(L, dtype=bool)
    np.testing.assert_allclose(buf(c.core, "chunkScoresFp32", CS, L)[:, :L][lower], ref.A[lower], atol=2e-5)
    np.testing.assert_allclose(buf(c.core, "decayMaskFp32", CS, L)[:, :L][lower], ref.M[lower], atol=2e-5)
    np.testing.assert_allclose(buf(c.core, "chunkKFp32", sh.align_k, L)[:, :sh.dk], ref.kcd, atol=2e-5)


def test_without_g_the_cumsum_is_zero_and_every_decay_is_one():
    c = one_chunk([50], 1, 1, 64, 64, has_gamma=False)
    emitted = run_phases(c, upto="P3_DecayExp")
    np.testing.assert_array_equal(c.core.views["gCumsumFp32"][0, :50], 0)
    np.testing.assert_array_equal(c.core.views["expGCumFp32"][0, :CS], 1)
    np.testing.assert_array_equal(buf(c.core, "decayMaskFp32", CS, 50), 1)
    assert not any(type(r) is ScalarGm for r in emitted["P1b_GCumsum"])  # LoadG returns 0, reads nothing


def gm_loads(records) -> list[int]:
    return [r.addr for r in records if type(r) is ScalarGm and not r.store]


def test_k_dma_fast_path_parameters_and_addresses():
    c = one_chunk([100], 2, 4, 64, 64, head=3, chunk=1)  # qk head 1, rows 64..99
    sh, gm = c.launch.shape, c.launch.gm
    recs = run_phases(c, upto="P1_LoadChunkKey")["P1_LoadChunkKey"]
    (dma,) = [r for r in recs if type(r) is Dma]
    assert dma.direction == "GM2UB" and dma.nbytes == 36 * 64 * 2
    assert dma.params == DataCopyParams(36, 64 * 2 // 32, (2 - 1) * 64 * 2 // 32, 0)
    assert dma.gm_addr == gm.addr("key", (64 * sh.nk + 1) * sh.dk)
    assert dma.ub_addr == c.core.ub("chunkVFp32")
    cast = [r for r in recs if type(r) is VecOp]
    assert [(v.op, v.n, v.dst[0], v.srcs[0][0]) for v in cast] == [
        ("Cast", 36 * 64, c.core.ub("chunkKFp32"), c.core.ub("chunkVFp32"))]
    events = [r.event for r in recs if type(r) in (SetFlag, WaitFlag)]
    assert events == ["S_MTE2", "S_MTE2", "V_MTE2", "V_MTE2", "MTE2_V", "MTE2_V"]


def test_k_slow_path_when_dk_is_not_a_multiple_of_16():
    """alignK != dk: L*dk scalar GM reads in row order, one batch of dk UB stores per row, no DMA."""
    c = one_chunk([10], 1, 1, 63, 32)
    sh, gm = c.launch.shape, c.launch.gm
    assert not phases.qk_dma_fast(c.core, 10)
    recs = run_phases(c, upto="P1_LoadChunkKey")["P1_LoadChunkKey"]
    assert not any(type(r) is Dma for r in recs)
    assert gm_loads(recs) == [gm.addr("key", t * sh.dk + d) for t in range(10) for d in range(63)]
    assert [r for r in recs if type(r) is Scalar] == [Scalar("ub_store", 63)] * 10
    # numbers are the same either way
    np.testing.assert_array_equal(buf(c.core, "chunkKFp32", sh.align_k, 10)[:, :63],
                                  c.x.key[:10, 0].astype(np.float64))


def test_g_and_beta_are_read_at_their_gm_addresses():
    c = one_chunk([30, 80], 1, 3, 64, 64, b=1, head=2, chunk=1)  # tokens 94..109, value head 2
    gm, t0 = c.launch.gm, c.ch.t_start
    emitted = run_phases(c, upto="P2_KBeta")
    assert t0 == 94 and c.ch.L == 16
    assert gm_loads(emitted["P1b_GCumsum"]) == [gm.addr("g", (t0 + i) * 3 + 2) for i in range(16)]
    assert gm_loads(emitted["P2_KBeta"]) == [gm.addr("beta", (t0 + i) * 3 + 2) for i in range(16)]
    muls = [r for r in emitted["P2_KBeta"] if type(r) is VecOp]
    aK, kb0, k0 = 64, c.core.ub("kCumdecayFp32"), c.core.ub("chunkKFp32")
    assert [(m.op, m.dst[0], m.srcs[0][0]) for m in muls] == [
        ("Muls", kb0 + 4 * i * aK, k0 + 4 * i * aK) for i in range(16)]


def test_decay_rows_are_written_one_exp_per_row():
    c = one_chunk([20], 1, 1, 64, 64)
    recs = run_phases(c, upto="P3_DecayExp")["P3_DecayExp"]
    dm0 = c.core.ub("decayMaskFp32")
    exps = [r for r in recs if type(r) is VecOp and r.op == "Exp"]
    assert exps[0].dst[0] == c.core.ub("expGCumFp32")
    assert [e.dst for e in exps[1:]] == [(dm0 + 4 * i * CS, 4 * CS) for i in range(20)]
    assert all(e.n == CS for e in exps)  # the whole row, j > i included


def test_q_is_not_cached_when_it_does_not_fit_the_attn_out_buffer():
    """dk 128 with a 192 KiB UB, where vStep drops below 128: L*dk > cs*V, so Phase 3.5 is skipped and 4c reads
    Q by scalar GM reads, row by row, into deltaFp32 -- with the same numbers."""
    c = one_chunk([64], 1, 1, 128, 128, ub_size=196608)
    assert c.core.v_aligned < 128  # vStep 80 here
    assert phases.qk_dma_fast(c.core, 64) and not phases.can_cache_attn_query(c.core, 64)
    emitted = run_phases(c)
    assert "P3.5_QCache" not in emitted
    gm = c.launch.gm
    assert gm_loads(emitted["P4c_DotFp32"]) == [gm.addr("query", t * 128 + d) for t in range(64) for d in range(128)]
    muls = [r for r in emitted["P4c_DotFp32"] if type(r) is VecOp and r.op == "Mul"]
    assert {m.srcs[0][0] for m in muls} == {c.core.ub("deltaFp32")}
    ref = reference(c)
    lower = np.tri(64, dtype=bool)
    np.testing.assert_allclose(buf(c.core, "decayMaskFp32", CS, 64)[lower], ref.M[lower], rtol=1e-10, atol=1e-12)


def test_cached_q_is_scaled_q_with_rows_of_stride_dk():
    c = one_chunk([64], 1, 1, 64, 64)
    ref = reference(c)
    run_phases(c, upto="P3.5_QCache")
    np.testing.assert_allclose(buf(c.core, "chunkAttnOutFp32", 64, 64), ref.q, rtol=1e-15)


@pytest.mark.parametrize("dk, full, tail", [(32, 0, 32), (64, 1, 0), (97, 1, 33), (128, 2, 0), (200, 3, 8)])
def test_dot_fp32_records(dk, full, tail):
    """Mul on dk, WholeReduceSum over the full repeats only (none below 64), the V->S round trip, then
    one scalar UB read and one add per partial and per tail product."""
    core = SimpleNamespace(shape=SimpleNamespace(dk=dk), ub=lambda name: {"dotProductFp32": 9000}[name],
                           launch=SimpleNamespace(raw_interlock=False))
    out: list = []
    phases.dot_fp32_records(core, 100, 200, out)
    vec = [r for r in out if type(r) is VecOp]
    assert (vec[0].op, vec[0].n, vec[0].dst[0], [s[0] for s in vec[0].srcs]) == ("Mul", dk, 9000, [100, 200])
    assert [(v.op, v.n) for v in vec[1:]] == ([("WholeReduceSum", 64 * full)] if full else [])
    assert [(r.event, r.id) for r in out if type(r) in (SetFlag, WaitFlag)] == [("V_S", 0), ("V_S", 0)]
    assert [r for r in out if type(r) is Scalar] == [Scalar("ub_load", full + tail), Scalar("alu", full + tail)]
    assert not any(type(r) is PipeBarrier for r in out)  # no PB_V between Mul and the reduce
    core.launch.raw_interlock = True  # the profile says the reduce waits for the Mul: one PB_V right after it
    out = []
    phases.dot_fp32_records(core, 100, 200, out)
    assert type(out[1]) is PipeBarrier and out[1].pipe == "V" and [type(r) for r in out].count(PipeBarrier) == 1


def test_dot_limit_is_a_diagnostic():
    phases.check_dot_limit(SimpleNamespace(shape=SimpleNamespace(dk=512)))
    with pytest.raises(KernelDiagnostic, match="dk=513"):
        phases.check_dot_limit(SimpleNamespace(shape=SimpleNamespace(dk=513)))


def fake_core(nk, dk, v_aligned):
    return SimpleNamespace(shape=SimpleNamespace(nk=nk, dk=dk, align_k=-(-dk // 16) * 16), v_aligned=v_aligned)


@pytest.mark.parametrize("nk, dk, L, v_aligned, fast, cached", [
    (16, 128, 64, 128, True, True),
    (16, 128, 64, 64, True, False),     # Q does not fit cs*V
    (16, 128, 32, 64, True, True),      # a short chunk does
    (16, 120, 64, 128, False, False),   # alignK 128 != dk
    (16, 8, 64, 128, False, False),     # dk*2 = 16 B is not a whole 32-B block (alignK 16 != 8 too)
    (8192, 128, 64, 128, True, True),   # source gap 8191*256/32 = 65528 blocks fits uint16
    (8193, 128, 64, 128, False, False),  # 65536 blocks does not
    (1, 64, 64, 16, False, False),      # L*dk > 2*cs*V: no room in the fp16 staging
])
def test_q_k_dma_and_cache_conditions(nk, dk, L, v_aligned, fast, cached):
    core = fake_core(nk, dk, v_aligned)
    assert phases.qk_dma_fast(core, L) is fast
    assert phases.can_cache_attn_query(core, L) is cached


def test_recursion_records_copy_each_row_then_prefix_axpys():
    c = one_chunk([6], 1, 1, 64, 64)
    recs = run_phases(c, upto="P4b_Recursion")["P4b_Recursion"]
    s0 = c.core.ub("chunkScoresFp32")
    axpy = [(r.n, r.dst[0], r.srcs[0][0]) for r in recs if type(r) is VecOp]
    want = [(k, s0 + 4 * i * CS, s0 + 4 * k * CS) for i in range(1, 6) for k in range(1, i)]
    assert axpy == want  # row i += delta[k] * row k over its first k elements
    assert recs[-1] == Scalar("ub_store", 6)  # the unit diagonal, by scalar stores


def test_k_cumdecay_rows_accumulate_from_k_beta():
    c = one_chunk([5], 1, 1, 64, 64)
    recs = run_phases(c)["P5_KCumdecay"]
    k0, kb0 = c.core.ub("chunkKFp32"), c.core.ub("kCumdecayFp32")
    axpy = [(r.dst[0], r.srcs[0][0]) for r in recs if type(r) is VecOp and r.op == "Axpy"]
    assert axpy == [(k0 + 4 * i * 64, kb0 + 4 * k * 64) for i in range(5) for k in range(i + 1)]


def test_off_numerics_emit_the_same_records_and_compute_nothing():
    on, off = one_chunk([70], 1, 2, 64, 64, chunk=1), one_chunk([70], 1, 2, 64, 64, chunk=1, numerics="off")
    assert off.core.views == {}
    def shown(emitted):  # fetched event handles are fresh objects each run: compare them by value
        return {name: [repr(r) for r in recs] for name, recs in emitted.items()}

    assert shown(run_phases(on)) == shown(run_phases(off))


def test_no_emit_computes_the_same_numbers_and_no_records():
    loud, quiet = one_chunk([64], 1, 1, 64, 64), one_chunk([64], 1, 1, 64, 64)
    assert all(recs is None for recs in run_phases(quiet, emit=False).values())
    run_phases(loud)
    for name in ("chunkKFp32", "chunkScoresFp32", "decayMaskFp32"):
        np.testing.assert_array_equal(quiet.core.views[name], loud.core.views[name])
