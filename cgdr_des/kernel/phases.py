"""Per-chunk phases 1-5 of ProcessChunk: everything that depends on K, Q, beta and g but not on V.

Each function mirrors one kernel function (chunk_gated_delta_rule.h at 00e39ab5; anchors from the
docs/design-notes.md and docs/kernel.md §5). It (a) computes its numbers on the core's UB views unless
numerics is ``off`` and (b) appends its instruction records to ``out`` when the core emits. The UB
views carry a leading *lane* axis (one lane on a core of the program, one per head in the
head-batched numbers of batched.py), so every numeric line below indexes ``[:, rows, cols]``.
``ch`` is the ChunkInfo of program.py. Row strides: chunkK/kCumdecay aK, decayMask/scores cs,
chunkV/attnOut V (vStepAligned_), stateIn V.
"""

from __future__ import annotations

import numpy as np

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.isa import DataCopyParams
from cgdr_des.kernel import chunk_math as cm
from cgdr_des.kernel import code_variants, overlap
from cgdr_des.kernel.emit import (
    ALU,
    PB_V,
    S_V,
    UB_LOAD,
    UB_STORE,
    V_S,
    dma_in,
    fetch_sync,
    gm_load,
    loop,
    scalar,
    vec,
)
from cgdr_des.kernel.fast_paths import can_cache_attn_query, qk_dma_fast
from cgdr_des.kernel.launch import CHUNK_SIZE as CS
from cgdr_des.kernel.tiling import FP32_BYTES


def ub_matrix(core, name: str, cols: int) -> np.ndarray:
    """``[lanes, rows, cols]`` view of a UB buffer with row stride ``cols`` (never a copy: writes land)."""
    flat = core.views[name]
    n = (flat.shape[-1] // cols) * cols
    view = flat[:, :n].view()
    view.shape = (flat.shape[0], n // cols, cols)
    return view


def rows(core, ch, tensor: str, cols=slice(None)) -> np.ndarray:
    """Tokens [t_start, t_start + L) of input ``tensor`` (widened) for the core's lanes: ``[lanes, L, ...]``
    (q and k through the lanes' q/k heads)."""
    hv, hk = core.lanes(ch)
    heads = hk if tensor in ("query", "key") else hv
    x = core.launch.wide[tensor]
    x = x[ch.t_start:ch.t_start + ch.L, heads] if x.ndim == 2 else x[ch.t_start:ch.t_start + ch.L, heads, cols]
    return np.moveaxis(x, 1, 0)


def _qk_dma(core, ch, tensor: str, out: list) -> None:
    """Fetch-event DMA of L rows of Q or K (fp16) into the chunkVFp32 staging area."""
    sh = core.shape
    fetch_sync(out, "S_MTE2")
    fetch_sync(out, "V_MTE2")
    params = DataCopyParams(ch.L, sh.dk * 2 // 32, (sh.nk - 1) * sh.dk * 2 // 32, 0)
    gm = core.launch.gm.addr(tensor, (ch.t_start * sh.nk + ch.qk_head) * sh.dk)
    out.append(dma_in(ch.L * sh.dk * 2, params, gm, core.ub("chunkVFp32")))
    fetch_sync(out, "MTE2_V")


def load_chunk_key(core, ch, out: list) -> None:
    """LoadChunkKey: K rows of the chunk -> chunkKFp32 [L, aK] fp32 (2-D DMA + Cast, or scalar)."""
    sh, L = core.shape, ch.L
    if core.numerics != "off":
        ub_matrix(core, "chunkKFp32", sh.align_k)[:, :L, :sh.dk] = rows(core, ch, "key")
    if out is None:
        return
    if ch.prefetch is not None:
        overlap.chunk_key_records(core, ch, out)
        return
    if qk_dma_fast(core, L):
        _qk_dma(core, ch, "key", out)
        out.append(vec("Cast", L * sh.dk, core.ub("chunkKFp32"), core.ub("chunkVFp32"), src_bytes=2))
        out.append(PB_V)
        return
    gm = core.launch.gm
    for i in range(L):
        row = ((ch.t_start + i) * sh.nk + ch.qk_head) * sh.dk
        out.extend(gm_load(gm.addr("key", row + d), 2) for d in range(sh.dk))
        out.append(scalar("ub_store", sh.dk))


def compute_g_cumsum(core, ch, out: list) -> None:
    """ComputeGCumsum: G_i = sum_{s<=i} g (restarting every chunk), scalar, into gCumsumFp32."""
    L, h = ch.L, ch.head
    if core.numerics != "off":
        gc = core.views["gCumsumFp32"]
        g = core.launch.wide["g"]
        if g is None:
            gc[:, :L] = 0
        else:
            gc[:, :L] = np.cumsum(rows(core, ch, "g"), axis=1, dtype=g.dtype)
    if out is None:
        return
    gm, nv = core.launch.gm, core.shape.nv
    for i in range(L):
        if core.shape.has_gamma:
            out.append(gm_load(gm.addr("g", (ch.t_start + i) * nv + h), 4))
        out.append(ALU)
        out.append(UB_STORE)


def compute_k_beta(core, ch, out: list) -> None:
    """ComputeKBeta: k_beta_i = beta_i * K_i -> kCumdecayFp32 (LoadBeta is a scalar GM read)."""
    sh, L = core.shape, ch.L
    if core.numerics != "off":
        k = ub_matrix(core, "chunkKFp32", sh.align_k)
        kb = ub_matrix(core, "kCumdecayFp32", sh.align_k)
        kb[:, :L, :sh.dk] = k[:, :L, :sh.dk] * rows(core, ch, "beta")[:, :, None]
    if out is None:
        return
    out.extend(S_V)
    gm, aK = core.launch.gm, sh.align_k
    k0, kb0 = core.ub("chunkKFp32"), core.ub("kCumdecayFp32")
    for i in range(L):
        out.append(gm_load(gm.addr("beta", (ch.t_start + i) * sh.nv + ch.head), 2))
        out.extend(S_V)
        out.append(vec("Muls", sh.dk, kb0 + FP32_BYTES * i * aK, k0 + FP32_BYTES * i * aK))
    out.extend(V_S)


def prepare_decay_and_exp(core, ch, out: list) -> None:
    """PrepareDecayAndExp: expGCum = exp(G); D[i, :] = exp(G_i - G) for every row i < L.

    The whole row is computed, j > i included (where it may overflow; that part is never read).
    """
    L = ch.L
    if core.numerics != "off":
        gc = core.views["gCumsumFp32"][:, :CS]
        with np.errstate(over="ignore", invalid="ignore"):
            core.views["expGCumFp32"][:, :CS] = np.exp(gc)
            ub_matrix(core, "decayMaskFp32", CS)[:, :L, :] = np.exp(gc[:, :L, None] - gc[:, None, :])
    if out is None:
        return
    gc0, e0, d0, dm0 = (core.ub(n) for n in ("gCumsumFp32", "expGCumFp32", "deltaFp32", "decayMaskFp32"))
    out += [vec("Muls", CS, gc0, gc0), PB_V, vec("Exp", CS, e0, gc0), PB_V, *V_S]
    for i in range(L):
        out += [UB_LOAD, vec("Duplicate", CS, d0), PB_V, vec("Sub", CS, d0, d0, gc0), PB_V,
                vec("Exp", CS, dm0 + FP32_BYTES * i * CS, d0), PB_V]


def prepare_attn_query_cache(core, ch, out: list) -> None:
    """PrepareAttnQueryCache: scale*Q -> chunkAttnOutFp32, rows compact with stride dk."""
    sh, L = core.shape, ch.L
    if core.numerics != "off":
        q = rows(core, ch, "query")
        core.views["chunkAttnOutFp32"][:, :L * sh.dk] = (q * core.launch.ft(sh.scale)).reshape(q.shape[0], -1)
    if out is None:
        return
    if ch.prefetch is not None:
        overlap.query_cache_records(core, ch, out)
        return
    _qk_dma(core, ch, "query", out)
    a0 = core.ub("chunkAttnOutFp32")
    out += [vec("Cast", L * sh.dk, a0, core.ub("chunkVFp32"), src_bytes=2), PB_V,
            vec("Muls", L * sh.dk, a0, a0), PB_V]


def dot_fp32_records(core, lhs: int, rhs: int, out: list) -> None:
    """DotFp32 (chunk_gated_delta_rule.h:289-312): Mul, WholeReduceSum, V->S, scalar partial sums."""
    count = core.shape.dk
    full, tail = divmod(count, cm.REDUCE_WIDTH)
    dp = core.ub("dotProductFp32")
    out.append(vec("Mul", count, dp, lhs, rhs))
    if core.launch.raw_interlock:  # the source has no barrier here: the profile says if the reduce waits
        out.append(PB_V)
    if full:
        out.append(vec("WholeReduceSum", full * cm.REDUCE_WIDTH, dp, dp))
    out.extend(V_S)
    out.append(scalar("ub_load", full + tail))
    out.append(scalar("alu", full + tail))


def check_dot_limit(core) -> None:
    """DotFp32 reduces dk products in place: a dk beyond its limit is a diagnostic, not a run."""
    if core.shape.dk > cm.DOT_INPLACE_LIMIT:
        raise KernelDiagnostic(
            f"DotFp32 count dk={core.shape.dk} exceeds its in-place limit of {cm.DOT_INPLACE_LIMIT}: "
            "partial sums would overwrite unread products (docs/design-notes.md §6)")


def attn_matrix_lower(core, ch, out: list) -> None:
    """ComputeAttnMatrix 4a: B_ij = -(k_beta_i . k_j) * D_ij for j < i, into chunkScoresFp32."""
    sh, L, aK = core.shape, ch.L, core.shape.align_k
    check_dot_limit(core)
    if core.numerics != "off":
        dots = cm.dot_fp32(ub_matrix(core, "kCumdecayFp32", aK)[:, :L, :sh.dk],
                           ub_matrix(core, "chunkKFp32", aK)[:, :L, :sh.dk])
        decay = ub_matrix(core, "decayMaskFp32", CS)[:, :L, :L]
        with np.errstate(over="ignore", invalid="ignore"):  # above the diagonal D may be inf: never kept
            np.copyto(ub_matrix(core, "chunkScoresFp32", CS)[:, :L, :L], (-dots) * decay, where=cm.tril_mask(L, -1))
    if out is None:
        return
    k0, kb0 = core.ub("chunkKFp32"), core.ub("kCumdecayFp32")
    for i in range(1, L):
        if core.tiling.attn_dots == "row":
            code_variants.dot_row_records(core, kb0 + FP32_BYTES * i * aK, k0, FP32_BYTES * aK, i, _STORE, out)
            continue
        loop(core, out, i, lambda j, lhs=kb0 + FP32_BYTES * i * aK: _dot_store(core, lhs, k0 + FP32_BYTES * j * aK))


#: after each dot product: read the decay, multiply, store the score
_STORE = [UB_LOAD, ALU, UB_STORE]


def _dot_store(core, lhs: int, rhs: int) -> list:
    """One DotFp32 and the scalar store of its result into the score row."""
    out: list = []
    dot_fp32_records(core, lhs, rhs, out)
    out += _STORE
    return out


def compute_recursive_attn(core, ch, out: list) -> None:
    """ComputeRecursiveAttn (:317-340) in place, then the scalar diagonal A_ii = 1 (:585-587)."""
    L = ch.L
    if core.numerics != "off":
        scores = ub_matrix(core, "chunkScoresFp32", CS)
        cm.recursive_attn(scores, L)
        diag = np.arange(L)
        scores[:, diag, diag] = 1.0
    if out is None:
        return
    s0 = core.ub("chunkScoresFp32")
    for i in range(1, L):
        out += [scalar("ub_load", i), scalar("ub_store", i), *S_V]
        row = s0 + FP32_BYTES * i * CS
        for k in range(1, i):
            out += [UB_LOAD, vec("Axpy", k, row, s0 + FP32_BYTES * k * CS), PB_V]
    out.extend(V_S)
    out.append(scalar("ub_store", L))


def attn_matrix_query(core, ch, out: list) -> None:
    """ComputeAttnMatrix 4c: M_ij = (scale q_i . k_j) * D_ij for j <= i, in place in decayMaskFp32."""
    sh, L, aK = core.shape, ch.L, core.shape.align_k
    cached = can_cache_attn_query(core, L)
    if core.numerics != "off":
        if cached:
            q = ub_matrix(core, "chunkAttnOutFp32", sh.dk)[:, :L]
        else:
            q = rows(core, ch, "query") * core.launch.ft(sh.scale)
        dots = cm.dot_fp32(q, ub_matrix(core, "chunkKFp32", aK)[:, :L, :sh.dk])
        decay = ub_matrix(core, "decayMaskFp32", CS)[:, :L, :L]
        with np.errstate(over="ignore", invalid="ignore"):
            np.copyto(decay, dots * decay, where=cm.tril_mask(L, 0))
    if out is not None:
        _attn_matrix_query_records(core, ch, cached, out)


def _attn_matrix_query_records(core, ch, cached: bool, out: list) -> None:
    sh, L, aK = core.shape, ch.L, core.shape.align_k
    k0, a0, d0 = core.ub("chunkKFp32"), core.ub("chunkAttnOutFp32"), core.ub("deltaFp32")
    gm = core.launch.gm
    for i in range(L):
        if cached:
            lhs = a0 + FP32_BYTES * i * sh.dk
        else:
            row = ((ch.t_start + i) * sh.nk + ch.qk_head) * sh.dk
            out.extend(gm_load(gm.addr("query", row + d), 2) for d in range(sh.dk))
            out += [scalar("alu", sh.dk), scalar("ub_store", sh.dk), *S_V]
            lhs = d0
        if core.tiling.attn_dots == "row":
            code_variants.dot_row_records(core, lhs, k0, FP32_BYTES * aK, i + 1, _STORE, out)
            continue
        loop(core, out, i + 1, lambda j, lhs=lhs: _dot_store(core, lhs, k0 + FP32_BYTES * j * aK))


def compute_k_cumdecay(core, ch, out: list) -> None:
    """ComputeKCumdecay: K_cd = A (k_beta * e^G) -> chunkKFp32 (raw K is gone afterwards); with
    ``query_rows = "ub"`` it then stages the chunk's q rows in the now idle kCumdecayFp32."""
    sh, L, aK = core.shape, ch.L, core.shape.align_k
    if core.numerics != "off":
        kb = ub_matrix(core, "kCumdecayFp32", aK)
        kb[:, :L, :sh.dk] *= core.views["expGCumFp32"][:, :L, None]
        a = ub_matrix(core, "chunkScoresFp32", CS)[:, :L, :L]
        ub_matrix(core, "chunkKFp32", aK)[:, :L, :sh.dk] = cm.tril_matmul(a, kb[:, :L, :sh.dk])
    if out is None:
        return
    k0, kb0 = core.ub("chunkKFp32"), core.ub("kCumdecayFp32")
    loop(core, out, L, lambda i: [UB_LOAD, *S_V, vec("Muls", sh.dk, kb0 + FP32_BYTES * i * aK,
                                                     kb0 + FP32_BYTES * i * aK)])
    out.extend(V_S)
    for i in range(L):
        row = k0 + FP32_BYTES * i * aK
        out += [vec("Duplicate", sh.dk, row), PB_V]
        loop(core, out, i + 1, lambda k, row=row: [UB_LOAD, *S_V, vec("Axpy", sh.dk, row,
                                                                      kb0 + FP32_BYTES * k * aK), PB_V])
    out.extend(V_S)
    if core.tiling.query_rows == "ub":
        code_variants.query_rows_dma(core, ch, out)
