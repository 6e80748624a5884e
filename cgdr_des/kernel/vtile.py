"""ProcessOneVTile: steps 1-7 on one V-tile of one chunk (docs/kernel.md §5, Phase 6).

``v_i`` is the tile's first value column, ``cv`` its width (curV). Buffers: chunkVFp32 holds v_beta
then v_new; chunkAttnOutFp32 holds U, then attn_inter, then out; stateInFp32 [sK, V] the state tile
(aliasing chunkScoresFp32 when the layout overlaps them, which is why Step 3 follows Step 2).
"""

from __future__ import annotations

import numpy as np

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.integers import ceil_align
from cgdr_des.isa import AllocTensor, DataCopyExtParams, DataCopyParams, DeQue, EnQue, FreeTensor, GmRows
from cgdr_des.kernel import chunk_math as cm
from cgdr_des.kernel import code_variants as code
from cgdr_des.kernel import overlap
from cgdr_des.kernel.emit import (
    ALU,
    PB_ALL,
    PB_MTE3,
    PB_V,
    S_V,
    UB_LOAD,
    V_S,
    axpy_row,
    dma_in,
    dma_out,
    fetch_sync,
    gm_load,
    gm_store,
    loop,
    scalar,
    scalar_exp_calls,
    vec,
)
from cgdr_des.kernel.fast_paths import UINT16_MAX
from cgdr_des.kernel.launch import CHUNK_SIZE as CS
from cgdr_des.kernel.phases import rows, ub_matrix
from cgdr_des.kernel.tiling import FP32_BYTES
from cgdr_des.numerics.scalar_exp import scalar_exp_array

OUT_QUEUE = "stateOutQueue_"


def load_v_beta(core, ch, v_i: int, cv: int, out: list) -> None:
    """LoadVBeta: v_beta = beta * V[:, v_i:v_i+cv] -> chunkVFp32 (2-D DMA + Cast/Muls, or scalar)."""
    sh, L, V = core.shape, ch.L, core.v_aligned
    if core.numerics != "off":
        core.views["chunkVFp32"][:, :L * V] = 0
        vals = rows(core, ch, "value", slice(v_i, v_i + cv))
        ub_matrix(core, "chunkVFp32", V)[:, :L, :cv] = vals * rows(core, ch, "beta")[:, :, None]
    if out is None:
        return
    if ch.prefetch is not None and ch.prefetch.v_i == v_i:
        overlap.v_beta_records(core, ch, cv, out)
        return
    v0, a0 = core.ub("chunkVFp32"), core.ub("chunkAttnOutFp32")
    out += [vec("Duplicate", L * V, v0), PB_V]
    gm = core.launch.gm
    gap = (sh.nv * sh.dv - cv) * 2
    if cv * 2 % 32 == 0 and gap % 32 == 0 and gap // 32 <= UINT16_MAX:
        fetch_sync(out, "S_MTE2")
        fetch_sync(out, "V_MTE2")
        src = gm.addr("value", (ch.t_start * sh.nv + ch.head) * sh.dv + v_i)
        out.append(dma_in(L * cv * 2, DataCopyParams(L, cv * 2 // 32, gap // 32, 0), src, a0))
        fetch_sync(out, "MTE2_V")
        for i in range(L):
            out.append(gm_load(gm.addr("beta", (ch.t_start + i) * sh.nv + ch.head), 2))
            out += [*S_V, vec("Cast", cv, v0 + FP32_BYTES * i * V, a0 + 2 * i * cv, src_bytes=2), PB_V,
                    vec("Muls", cv, v0 + FP32_BYTES * i * V, v0 + FP32_BYTES * i * V), PB_V]
        out.extend(V_S)
        return
    for i in range(L):
        out.append(gm_load(gm.addr("beta", (ch.t_start + i) * sh.nv + ch.head), 2))
        row = ((ch.t_start + i) * sh.nv + ch.head) * sh.dv + v_i
        out.extend(gm_load(gm.addr("value", row + v), 2) for v in range(cv))
        out += [scalar("alu", cv), scalar("ub_store", cv)]


def compute_value_new(core, ch, out: list) -> None:
    """ComputeValueNew: U = A v_beta (A lower incl. its unit diagonal) -> chunkAttnOutFp32."""
    L, V = ch.L, core.v_aligned
    if core.numerics != "off":
        a = ub_matrix(core, "chunkScoresFp32", CS)[:, :L, :L]
        cm.v_matmul(cm.tril(a), ub_matrix(core, "chunkVFp32", V)[:, :L],
                    out=ub_matrix(core, "chunkAttnOutFp32", V)[:, :L])
    if out is None:
        return
    a0, v0 = core.ub("chunkAttnOutFp32"), core.ub("chunkVFp32")
    out += [vec("Duplicate", L * V, a0), PB_V]
    for i in range(L):
        row = a0 + FP32_BYTES * i * V
        loop(core, out, i + 1, lambda k, row=row: [UB_LOAD, *S_V, vec("Axpy", V, row, v0 + FP32_BYTES * k * V), PB_V])


def load_state_tile(core, ch, v_i: int, cv: int, out: list) -> None:
    """LoadStateTile: S_prev [dk, cv] -> stateInFp32, from the fp32 workspace (c > 0) or from the
    fp16 initial_state, transposed, by scalar reads (c == 0; ``state_load = "dma"``: one DataCopy and
    a transposition in UB, cgdr_des/kernel/code_variants.py)."""
    sh, V, sK = core.shape, core.v_aligned, core.shape.state_stride_k
    cv8 = ceil_align(cv, 8)
    if core.numerics != "off":
        core.views["stateInFp32"][:, :sK * V] = 0
        s = ub_matrix(core, "stateInFp32", V)
        heads = core.lanes(ch)[0]
        if ch.c > 0:
            s[:, :sh.dk, :cv8] = core.launch.workspace[ch.b, heads, :, v_i:v_i + cv8]
        else:
            s0 = core.launch.wide["initial_state"][ch.b, heads, v_i:v_i + cv, :]
            s[:, :sh.dk, :cv] = np.swapaxes(s0, -1, -2)
    if out is None:
        return
    if ch.c > 0 and core.tiling.state_double_buffer:  # the previous UpdateAndWriteState prefetched it
        overlap.state_take_records(core, out)
        return
    if ch.c == 0 and ch.prefetch is not None and ch.prefetch.v_i == v_i:  # staged with the chunk's loads
        overlap.state_from_staging_records(core, cv, out)
        return
    if ch.c == 0 and core.tiling.state_load == "dma":
        code.state_dma_records(core, ch, v_i, cv, out)
        return
    s0 = core.ub("stateInFp32")
    out += [vec("Duplicate", sK * V, s0), PB_V]
    gm = core.launch.gm
    if ch.c > 0:
        _workspace_rows(core, ch, v_i, cv, "GM2UB", out)
        return
    base = (ch.b * sh.nv + ch.head) * sh.dk * sh.dv

    def state_row(v: int) -> range:
        return gm.addrs("initial_state", base + (v_i + v) * sh.dk, sh.dk)

    loop(core, out, cv, lambda v: [*(gm_load(a, 2) for a in state_row(v)), scalar("ub_store", sh.dk)],
         gm=GmRows(state_row, 2, False))
    out.extend(S_V)


def compute_v_new(core, ch, out: list) -> None:
    """ComputeVNew: v_new = U - K_cd S -> chunkVFp32 (Axpy over d, Muls(-1), Add; ``sub``: one Sub)."""
    sh, L, V = core.shape, ch.L, core.v_aligned
    if core.numerics != "off":
        kcd = ub_matrix(core, "chunkKFp32", sh.align_k)[:, :L, :sh.dk]
        s = ub_matrix(core, "stateInFp32", V)[:, :sh.dk]
        u = ub_matrix(core, "chunkAttnOutFp32", V)[:, :L]
        v_new = cm.v_matmul(kcd, s, out=ub_matrix(core, "chunkVFp32", V)[:, :L])
        np.subtract(u, v_new, out=v_new)  # U - K_cd S: the same bits as -(K_cd S) + U
    if out is None:
        return
    v0, s0, a0 = core.ub("chunkVFp32"), core.ub("stateInFp32"), core.ub("chunkAttnOutFp32")
    sub = core.tiling.sub

    def one_row(i: int) -> list:
        row, u_row = v0 + FP32_BYTES * i * V, a0 + FP32_BYTES * i * V
        recs = [vec("Duplicate", V, row), PB_V]
        loop(core, recs, sh.dk, lambda d: [UB_LOAD, *S_V, vec("Axpy", V, row, s0 + FP32_BYTES * d * V), PB_V])
        if sub:  # Sub(row, U_row, row): U - x, the same IEEE result as (-x) + U
            return recs + [vec("Sub", V, row, u_row, row), PB_V]
        return recs + [vec("Muls", V, row, row), PB_V, vec("Add", V, row, row, u_row), PB_V]

    loop(core, out, L, one_row)


def compute_attn_inter(core, ch, out: list) -> None:
    """ComputeAttnInter: O1_i = (scale q_i e^{G_i}) S, Q re-read from GM by scalar reads
    (``query_rows = "ub"``: from the rows ComputeKCumdecay staged in kCumdecayFp32)."""
    sh, L, V = core.shape, ch.L, core.v_aligned
    if core.numerics != "off":
        q = rows(core, ch, "query") * core.launch.ft(sh.scale)
        q = q * core.views["expGCumFp32"][:, :L, None]
        cm.v_matmul(q, ub_matrix(core, "stateInFp32", V)[:, :sh.dk], out=ub_matrix(core, "chunkAttnOutFp32", V)[:, :L])
    if out is None:
        return
    a0, s0, gm = core.ub("chunkAttnOutFp32"), core.ub("stateInFp32"), core.launch.gm
    alu2 = scalar("alu", 2)

    def q_row(i: int) -> range:
        return gm.addrs("query", ((ch.t_start + i) * sh.nk + ch.qk_head) * sh.dk, sh.dk)

    def one_row(i: int) -> list:
        row = a0 + FP32_BYTES * i * V
        recs = [vec("Duplicate", V, row), PB_V, UB_LOAD]
        for a, axpy in zip(q_row(i), axpy_row(V, row, s0, 0, FP32_BYTES * V, sh.dk), strict=True):
            recs += [gm_load(a, 2), alu2, *S_V, axpy, PB_V]
        return recs

    if core.tiling.query_rows == "ub":
        def ub_row(i: int) -> list:
            row = a0 + FP32_BYTES * i * V
            recs = [vec("Duplicate", V, row), PB_V, UB_LOAD]
            for axpy in axpy_row(V, row, s0, 0, FP32_BYTES * V, sh.dk):
                recs += [UB_LOAD, alu2, *S_V, axpy, PB_V]
            return recs

        loop(core, out, L, ub_row)
        return
    loop(core, out, L, one_row, gm=GmRows(q_row, 2, False))


def accum_output(core, ch, out: list) -> None:
    """AccumOutput: out = O1 + M v_new (M lower incl. diagonal, in decayMaskFp32)."""
    L, V = ch.L, core.v_aligned
    if core.numerics != "off":
        m = ub_matrix(core, "decayMaskFp32", CS)[:, :L, :L]
        o = ub_matrix(core, "chunkAttnOutFp32", V)
        o[:, :L] += cm.v_matmul(cm.tril(m), ub_matrix(core, "chunkVFp32", V)[:, :L])
    if out is None:
        return
    a0, v0 = core.ub("chunkAttnOutFp32"), core.ub("chunkVFp32")
    for i in range(L):
        row = a0 + FP32_BYTES * i * V
        loop(core, out, i + 1, lambda j, row=row: [UB_LOAD, *S_V, vec("Axpy", V, row, v0 + FP32_BYTES * j * V), PB_V])


def write_attn_tile_to_gm(core, ch, v_i: int, cv: int, out: list) -> None:
    """WriteAttnTileToGm (:341-372): Muls(x1) touch, Cast to fp16 through the VECOUT queue, then one
    2-D DataCopy when the five conditions of docs/design-notes.md §8 hold, else a CopyToGm per row."""
    sh, L, V = core.shape, ch.L, core.v_aligned
    if cv % 16 and not _use_2d_store(core, cv):
        raise KernelDiagnostic(
            f"WriteAttnTileToGm: curV={cv} is not a multiple of 16 fp16 elements, so CopyToGm's "
            f"unaligned fallback writes {ceil_align(cv, 16)} per row and overruns into the next "
            f"head's output (docs/kernel.md §6); shape dv={sh.dv}, vStep={core.v_step}")
    if core.numerics != "off":
        o = ub_matrix(core, "chunkAttnOutFp32", V)[:, :L, :cv]
        core.launch.out[ch.t_start:ch.t_start + L, core.lanes(ch)[0], v_i:v_i + cv] = np.moveaxis(o, 0, 1)
    if out is not None:
        _write_attn_records(core, ch, v_i, cv, out)


def _use_2d_store(core, cv: int) -> bool:
    V, stride = core.v_aligned, core.shape.nv * core.shape.dv
    return (cv % 16 == 0 and V % 16 == 0 and stride % 16 == 0 and (V - cv) // 16 <= UINT16_MAX
            and (stride - cv) // 16 <= UINT16_MAX)


def _write_attn_records(core, ch, v_i: int, cv: int, out: list) -> None:
    sh, L, V = core.shape, ch.L, core.v_aligned
    a0, q0 = core.ub("chunkAttnOutFp32"), core.out_queue_offset
    n = ceil_align(L * V, 8)
    out += [vec("Muls", n, a0, a0), PB_V, AllocTensor(OUT_QUEUE),
            vec("Cast", n, q0, a0, dtype="fp32", dst_bytes=2), PB_V, EnQue(OUT_QUEUE), DeQue(OUT_QUEUE)]
    gm, stride = core.launch.gm, sh.nv * sh.dv
    if _use_2d_store(core, cv):
        params = DataCopyParams(L, cv // 16, (V - cv) // 16, (stride - cv) // 16)
        dst = gm.addr("out", (ch.t_start * sh.nv + ch.head) * sh.dv + v_i)
        out.append(dma_out(L * cv * 2, params, dst, q0))
    else:
        params = DataCopyExtParams(1, cv * 2, 0, 0)
        for i in range(L):
            dst = gm.addr("out", ((ch.t_start + i) * sh.nv + ch.head) * sh.dv + v_i)
            out += [dma_out(cv * 2, params, dst, q0 + 2 * i * V), PB_MTE3]
    out.append(FreeTensor(OUT_QUEUE))


def update_and_write_state(core, ch, v_i: int, cv: int, out: list, state=None) -> None:
    """UpdateAndWriteState: S <- e^{G_last} S + sum_i e^{G_last - G_i} k_i (x) v_new_i; then the fp32
    workspace write (not last) or the fp16, transposed final_state write (last chunk). ``state``
    (overlap.StateOverlap): the state double buffer's write-back and prefetch instead."""
    _update_state_numerics(core, ch, v_i, cv)
    if out is None:
        return
    _update_state_records(core, ch, out)
    if ch.is_last:
        _final_state_records(core, ch, v_i, cv, out)
    elif state is None:
        _workspace_rows(core, ch, v_i, cv, "UB2GM", out)
    else:
        overlap.state_writeback_records(core, ch, v_i, cv, state.wait_previous, out)
    if state is not None and state.next_tile is not None:
        overlap.state_prefetch_records(core, ch, *state.next_tile, out)


def _exp_args(core, ch) -> np.ndarray:
    """ScalarExp's arguments G_last - G_i, ``[lanes, L]``: from UB, or (no numbers) from g itself, since
    the cost of a ScalarExp call depends on its argument. Without numbers the cumulative sum is taken
    as ComputeGCumsum takes it (in the launch's working dtype), so the arguments are the same."""
    if core.numerics != "off":
        gc = core.views["gCumsumFp32"][:, :ch.L]
    elif core.launch.g is not None:
        g = core.launch.wide.get("g")
        g = core.launch.g if g is None else g
        gc = np.cumsum(g[ch.t_start:ch.t_start + ch.L, ch.head], dtype=g.dtype)[None]
    else:
        return np.zeros((1, ch.L), dtype=np.float32)
    return gc[:, -1:] - gc


def _decay_factors(core, ch) -> np.ndarray:
    diff = _exp_args(core, ch)
    if core.numerics == "exact":
        return np.exp(diff)
    return scalar_exp_array(diff.astype(np.float32))


def _update_state_numerics(core, ch, v_i: int, cv: int) -> None:
    if core.numerics == "off":
        return
    sh, L, V = core.shape, ch.L, core.v_aligned
    s = ub_matrix(core, "stateInFp32", V)
    s[:, :sh.dk] *= core.views["expGCumFp32"][:, L - 1, None, None]
    coeff = rows(core, ch, "key") * _decay_factors(core, ch)[:, :, None]
    s[:, :sh.dk] += cm.v_matmul(np.swapaxes(coeff, -1, -2), ub_matrix(core, "chunkVFp32", V)[:, :L])
    heads = core.lanes(ch)[0]
    if ch.is_last:
        core.launch.final_state[ch.b, heads, v_i:v_i + cv, :] = np.swapaxes(s[:, :sh.dk, :cv], -1, -2)
    else:
        cv8 = ceil_align(cv, 8)
        core.launch.workspace[ch.b, heads, :, v_i:v_i + cv8] = s[:, :sh.dk, :cv8]


def _update_state_records(core, ch, out: list) -> None:
    sh, L, V = core.shape, ch.L, core.v_aligned
    s0, v0, gm = core.ub("stateInFp32"), core.ub("chunkVFp32"), core.launch.gm
    out += [UB_LOAD, *S_V]
    for d in range(sh.dk):
        out += [vec("Muls", V, s0 + FP32_BYTES * d * V, s0 + FP32_BYTES * d * V), PB_V]
    exps = scalar_exp_calls(_exp_args(core, ch)[0])

    def k_row(i: int) -> range:
        return gm.addrs("key", ((ch.t_start + i) * sh.nk + ch.qk_head) * sh.dk, sh.dk)

    def one_token(i: int) -> list:
        recs = [scalar("ub_load", 2), exps[i]]
        for a, axpy in zip(k_row(i), axpy_row(V, s0, v0 + FP32_BYTES * i * V, FP32_BYTES * V, 0, sh.dk), strict=True):
            recs += [gm_load(a, 2), ALU, *S_V, axpy, PB_V]
        return recs

    loop(core, out, L, one_token, gm=GmRows(k_row, 2, False),
         exp=lambda i: ((exps[i].alu, exps[i].div),))


def _workspace_rows(core, ch, v_i: int, cv: int, direction: str, out: list) -> None:
    """The dk row DataCopy calls between stateInFp32 and the FP32 workspace, {1, ceil8(cv)/8, 0, 0}
    each (``state_rows = "2d"``: one 2-D DataCopy), bracketed by PipeBarrier<ALL> and the
    fetched-event flags: Step 3 reads them back (GM2UB, V->MTE2 then MTE2->V), Step 7 writes them
    (UB2GM, V->MTE3 then MTE3->MTE2 for the next read)."""
    before, after = ("V_MTE2", "MTE2_V") if direction == "GM2UB" else ("V_MTE3", "MTE3_MTE2")
    out.append(PB_ALL)
    fetch_sync(out, before)
    out += code.workspace_rows(core, ch, v_i, cv, direction, core.ub("stateInFp32"))
    out.append(PB_ALL)
    fetch_sync(out, after)


def _final_state_records(core, ch, v_i: int, cv: int, out: list) -> None:
    if core.tiling.state_store == "dma" and code.state_store_records(core, ch, v_i, cv, out):
        return
    sh, V, sK = core.shape, core.v_aligned, core.shape.state_stride_k
    s0, q0, gm = core.ub("stateInFp32"), core.out_queue_offset, core.launch.gm
    out += [vec("Muls", sK * V, s0, s0), PB_V, AllocTensor(OUT_QUEUE),
            vec("Cast", sK * V, q0, s0, dst_bytes=2), PB_V, EnQue(OUT_QUEUE), DeQue(OUT_QUEUE), *V_S]
    base = (ch.b * sh.nv + ch.head) * sh.dk * sh.dv

    def state_row(v: int) -> range:
        return gm.addrs("final_state", base + (v_i + v) * sh.dk, sh.dk)

    def stores(v: int) -> list:
        recs = []
        for a in state_row(v):
            recs += [UB_LOAD, gm_store(a, 2)]
        return recs

    loop(core, out, cv, stores, gm=GmRows(state_row, 2, True))
    out.append(FreeTensor(OUT_QUEUE))
