"""Steps 8a-8e of a Cube-era chunk, one V-tile ``(v_i, cv)``, as instruction records
(docs/kernel-cube.md §3.1, §3.2; anchors are lines of chunk_gated_delta_rule.h at 048d0427).

LoadVBeta, LoadStateTile, WriteAttnTileToGm and the state write-out run on both paths; the three
Cube products (ValueAndVNew, Output, StateUpdate) only on the fast path.
"""

from __future__ import annotations

from cgdr_des.integers import ceil_align, ceil_div
from cgdr_des.isa import AllocTensor, DataCopyParams, DeQue, EnQue, FreeTensor
from cgdr_des.kernel.cube import blocks as bk
from cgdr_des.kernel.cube.phases import KIB, copy_lower, transpose_k
from cgdr_des.kernel.emit import (
    PB_ALL,
    PB_V,
    S_V,
    UB_LOAD,
    V_S,
    dma_in,
    dma_out,
    fetch_sync,
    gm_load,
    gm_store,
    loop,
    scalar,
    vec,
)
from cgdr_des.kernel.tiling import CHUNK_SIZE as CS
from cgdr_des.kernel.tiling import FP32_BYTES

OUT_QUEUE = bk.OUT_QUEUE


def load_v_beta(core, ch, v_i: int, cv: int, out: list) -> None:
    """LoadVBeta (.h:1345-1407): V tile by one 2-D DMA into an fp16 staging, Cast, ×β (Brcb + Mul)."""
    sh, L, vs, ub = core.shape, ch.L, core.tiling.v_step, core.ub
    out += [vec("Duplicate", CS * vs, ub["attnOut"], dtype="fp16", dst_bytes=2), PB_V]
    gap = (sh.nv * sh.dv - cv) * 2
    if cv * 2 % 32 == 0 and gap % 32 == 0:
        fetch_sync(out, "S_MTE2")
        fetch_sync(out, "V_MTE2")
        params = DataCopyParams(L, cv * 2 // 32, gap // 32, (vs - cv) * 2 // 32)
        out.append(dma_in(L * cv * 2, params, core.row_addr("value", ch.t_start, ch.head) + 2 * v_i, ub["attnOut"]))
        fetch_sync(out, "MTE2_V")
    else:  # a tile not in whole 32-B blocks: the scalar loop of the vector kernel
        out.extend(V_S)
        for i in range(L):
            row = core.row_addr("value", ch.t_start + i, ch.head) + 2 * v_i
            out.extend(gm_load(row + 2 * v, 2) for v in range(cv))
        out += [scalar("ub_store", L * cv), *S_V]
    out += [vec("Cast", L * vs, ub["chunkV"], ub["attnOut"], src_bytes=2), PB_V,
            vec("Brcb", 8 * L, ub["delta"], ub["beta"]), PB_V]
    out += [vec("Mul", L * 64, ub["chunkV"] + 256 * j, ub["chunkV"] + 256 * j, ub["delta"])
            for j in range(ceil_div(vs, 64))]
    out += [PB_V, *V_S]


def load_state_tile(core, ch, v_i: int, cv: int, out: list) -> None:
    """LoadStateTile (.h:1443-1528): c > 0 one 2-D DMA of the fp32 workspace rows, bracketed by
    PIPE_ALL; c == 0 the contiguous fp16 initial_state slice, transposed on V (TransDataTo5HD) and
    widened; a dk that is not a multiple of 16 reads initial_state by scalar instead."""
    sh, t, ub = core.shape, core.tiling, core.ub
    s0, va = ub["stateIn"], t.v_step_aligned
    out += [vec("Duplicate", t.align_k * va, s0), PB_V]
    if ch.c > 0:
        cv8 = ceil_align(cv, 8)
        out.append(PB_ALL)
        fetch_sync(out, "V_MTE2")
        ws = core.gm.addr("workspace", ((ch.b * sh.nv + ch.head) * sh.dk) * sh.ws_stride_v + v_i)
        params = DataCopyParams(sh.dk, cv8 * FP32_BYTES // 32, (sh.ws_stride_v - cv8) * FP32_BYTES // 32,
                                (va - cv8) * FP32_BYTES // 32)
        out += [dma_in(sh.dk * cv8 * FP32_BYTES, params, ws, s0), PB_ALL]
        fetch_sync(out, "MTE2_V")
        return
    base = core.gm.addr("initial_state", ((ch.b * sh.nv + ch.head) * sh.dv + v_i) * sh.dk)
    if sh.dk % 16:
        out += [*V_S, *(gm_load(base + 2 * j, 2) for j in range(sh.dk * cv)), scalar("ub_store", sh.dk * cv), *S_V]
        return
    fetch_sync(out, "V_MTE2")
    out.append(dma_in(cv * sh.dk * 2, DataCopyParams(1, cv * sh.dk * 2 // 32, 0, 0), base, ub["kCumdecay"]))
    fetch_sync(out, "MTE2_V")
    out += [vec("TransDataTo5HD", 16 * sh.dk, ub["chunkV"], ub["kCumdecay"], dtype="fp16", dst_bytes=2,
                src_bytes=2)] * (t.v_step // 16)
    out += [PB_V, vec("Cast", t.align_k * va, s0, ub["chunkV"], src_bytes=2), PB_V]


def value_and_v_new_cube(core, ch, v_i: int, cv: int, out: list) -> None:
    """ComputeValueAndVNewCube<D,D> (.h:1617-1744): v_new = T·vβ - K_cd·S_prev in one L0C (T and
    -K_cd hi/lo; vβ and S_prev fp16), with LoadStateTile between the two products."""
    D, ub, s0 = core.tiling.bucket, core.ub, core.slot(0)
    copy_lower(core, out, ub["kCumdecay"], ub["scores"])
    bk.shwr(core, out, CS * CS, ub["kCumdecay"], s0, s0 + 48 * KIB)
    bk.sh(core, out, CS * D, ub["chunkV"], s0 + 16 * KIB)
    out.append(PB_ALL)
    bk.pair(out, CS, D, CS, s0, s0 + 48 * KIB, s0 + 16 * KIB)
    load_state_tile(core, ch, v_i, cv, out)
    out += [vec("Muls", CS * D, ub["chunkK"], ub["chunkK"]), PB_V]
    bk.shwr(core, out, CS * D, ub["chunkK"], s0, s0 + 48 * KIB)
    bk.sh(core, out, D * D, ub["stateIn"], s0 + 16 * KIB)
    out.append(PB_ALL)
    bk.pair(out, CS, D, D, s0, s0 + 48 * KIB, s0 + 16 * KIB, init=False)
    bk.drain(core, out, CS, D, ub["chunkV"], ub["chunkK"])


def output_cube(core, ch, v_i: int, cv: int, out: list) -> None:
    """ComputeOutputCube<D,D> (.h:1938-2068): out = Q'·S_prev + M·v_new, Q' = Q·scale·e^{G_r}; the
    S_prev fp16 staged by ValueAndVNew is re-read from slot 0, not re-staged."""
    sh, D, ub, s0 = core.shape, core.tiling.bucket, core.ub, core.slot(0)
    bk.load_padded_rows(core, out, CS, core.row_addr("query", ch.t_start, ch.qk_head), sh.nk * sh.dk,
                        ub["kCumdecay"], ub["chunkK"])
    for r in range(CS):
        out += [UB_LOAD, vec("Muls", D, ub["kCumdecay"] + FP32_BYTES * r * D, ub["kCumdecay"] + FP32_BYTES * r * D)]
    out.append(PB_V)
    bk.shwr(core, out, CS * D, ub["kCumdecay"], s0, s0 + 48 * KIB)
    out.append(PB_ALL)
    bk.pair(out, CS, D, D, s0, s0 + 48 * KIB, s0 + 16 * KIB)
    copy_lower(core, out, ub["kCumdecay"], ub["decayMask"])
    bk.shwr(core, out, CS * CS, ub["kCumdecay"], s0, s0 + 48 * KIB)
    bk.sh(core, out, CS * D, ub["chunkV"], s0 + 16 * KIB)
    out.append(PB_ALL)
    bk.pair(out, CS, D, CS, s0, s0 + 48 * KIB, s0 + 16 * KIB, init=False)
    bk.drain(core, out, CS, D, ub["attnOut"], ub["kCumdecay"])


def write_attn_tile_to_gm(core, ch, v_i: int, cv: int, out: list) -> None:
    """WriteAttnTileToGm (.h:665-696): touch, Cast to fp16 through the queue, one 2-D DMA (L bursts
    of cv·2 B; a tile not in whole 32-B blocks writes row by row)."""
    sh, L, vs, ub, q0 = core.shape, ch.L, core.tiling.v_step, core.ub, core.out_queue
    out += [vec("Muls", CS * vs, ub["attnOut"], ub["attnOut"]), PB_V, AllocTensor(OUT_QUEUE),
            vec("Cast", CS * vs, q0, ub["attnOut"], dst_bytes=2), PB_V, EnQue(OUT_QUEUE), DeQue(OUT_QUEUE)]
    dst = core.row_addr("out", ch.t_start, ch.head) + 2 * v_i
    gap = (sh.nv * sh.dv - cv) * 2
    if cv * 2 % 32 == 0 and gap % 32 == 0:
        params = DataCopyParams(L, cv * 2 // 32, (vs - cv) * 2 // 32, gap // 32)
        out.append(dma_out(L * cv * 2, params, dst, q0))
    else:
        from cgdr_des.isa import DataCopyExtParams

        params = DataCopyExtParams(1, cv * 2, 0, 0)
        out.extend(dma_out(cv * 2, params, dst + 2 * i * sh.nv * sh.dv, q0 + 2 * i * vs) for i in range(L))
    out.append(FreeTensor(OUT_QUEUE))


def state_update_cube(core, ch, v_i: int, cv: int, out: list) -> None:
    """UpdateAndWriteState -> ComputeStateUpdateCube<D,D> (.h:2114-2358): S = e^{G_L}·S +
    (K·e^{G_L - G})ᵀ·v_new, the transposed A staged hi/lo, v_new (B) loaded once, one or two M-tiles
    each drained and added into stateIn on V; then the state is written out."""
    sh, D, ub, s0 = core.shape, core.tiling.bucket, core.ub, core.slot(0)
    va = core.tiling.v_step_aligned
    out += [scalar("ub_load", 2), vec("Muls", D * va, ub["stateIn"], ub["stateIn"]),
            vec("Duplicate", CS, ub["delta"]), PB_V, vec("Sub", CS, ub["delta"], ub["delta"], ub["gCumsum"]), PB_V,
            vec("Exp", CS, ub["delta"], ub["delta"]), PB_V]
    bk.load_padded_rows(core, out, CS, core.row_addr("key", ch.t_start, ch.qk_head), sh.nk * sh.dk,
                        ub["attnOut"], ub["chunkK"])
    out.extend(V_S)
    for r in range(CS):
        out += [UB_LOAD, vec("Muls", D, ub["attnOut"] + FP32_BYTES * r * D, ub["attnOut"] + FP32_BYTES * r * D)]
    out.append(PB_V)
    _stage_transposed(core, out, s0)
    bk.sh(core, out, CS * D, ub["chunkV"], s0 + 16 * KIB)
    out.append(PB_ALL)
    bk.load_b_once(out, CS, D, s0 + 16 * KIB)
    bk.literal_sync(out, "MTE1_M")
    tile_m = 64 if D == 128 else D
    for m0 in range(0, D, tile_m):
        a_off = 2 * m0 * CS
        bk.pair(out, tile_m, D, CS, s0 + a_off, s0 + 32 * KIB + a_off, None)
        bk.drain_read(core, out, tile_m, D, ub["chunkK"])  # cNz: chunkK (D = 128), tmpBuff@0 (D <= 96): the same
        _accumulate_state(core, out, tile_m, D)
    write_state(core, ch, v_i, cv, out)


def _stage_transposed(core, out: list, s0: int) -> None:
    """The A operand (K·e^{G_L - G})ᵀ [D x 64]: hi cast and transposed, staged; lo likewise."""
    ub = core.ub
    out.append(AllocTensor(OUT_QUEUE))
    transpose_k(core, out, ub["attnOut"])
    fetch_sync(out, "V_MTE3")
    out.append(bk.stage_dma(CS * core.tiling.bucket, s0, ub["chunkV"]))
    fetch_sync(out, "MTE3_V")
    n = CS * core.tiling.bucket
    out += [vec("Cast", n, ub["residual"], core.out_queue, src_bytes=2), PB_V,
            vec("Sub", n, ub["residual"], ub["attnOut"], ub["residual"]), PB_V]
    transpose_k(core, out, ub["residual"])
    fetch_sync(out, "V_MTE3")
    out += [bk.stage_dma(n, s0 + 32 * KIB, ub["chunkV"]), FreeTensor(OUT_QUEUE)]


def _accumulate_state(core, out: list, tile_m: int, D: int) -> None:
    """Add the drained NZ tile into stateIn: D = 128 adds 16 elements at a time (tileM·D/16 Adds, no
    barrier between them); D <= 96 one strided Add per 16-column block, then PB."""
    s0, cnz = core.ub["stateIn"], core.ub["chunkK"]
    if D == 128:
        out.extend(vec("Add", 16, s0 + FP32_BYTES * j * 16, s0 + FP32_BYTES * j * 16,
                       cnz + 64 * j) for j in range(tile_m * D // 16))
    else:
        out.extend(vec("Add", 16 * D, s0 + 64 * j, s0 + 64 * j, cnz + 64 * j * D) for j in range(D // 16))
        out.append(PB_V)
    out.append(PB_V)


def write_state(core, ch, v_i: int, cv: int, out: list) -> None:
    """The state after the chunk (.h:2333-2408): not last, one 2-D DMA of the fp32 rows to the
    workspace between PIPE_ALLs; last, ×1, Cast to fp16, transposed (dk/16 TransDataTo5HD) and one
    contiguous DMA to final_state (a dk not a multiple of 16: scalar GM writes)."""
    sh, t, ub = core.shape, core.tiling, core.ub
    s0, va = ub["stateIn"], t.v_step_aligned
    if not ch.is_last:
        cv8 = ceil_align(cv, 8)
        out.append(PB_ALL)
        fetch_sync(out, "V_MTE3")
        ws = core.gm.addr("workspace", ((ch.b * sh.nv + ch.head) * sh.dk) * sh.ws_stride_v + v_i)
        params = DataCopyParams(sh.dk, cv8 * FP32_BYTES // 32, (va - cv8) * FP32_BYTES // 32,
                                (sh.ws_stride_v - cv8) * FP32_BYTES // 32)
        out += [dma_out(sh.dk * cv8 * FP32_BYTES, params, ws, s0), PB_ALL]
        fetch_sync(out, "MTE3_MTE2")
        return
    q0 = core.out_queue
    n = t.align_k * va
    out += [vec("Muls", n, s0, s0), PB_V, AllocTensor(OUT_QUEUE), vec("Cast", n, q0, s0, dst_bytes=2), PB_V,
            EnQue(OUT_QUEUE), DeQue(OUT_QUEUE)]
    base = core.gm.addr("final_state", ((ch.b * sh.nv + ch.head) * sh.dv + v_i) * sh.dk)
    if sh.dk % 16:
        out.extend(V_S)
        loop(core, out, cv, lambda v: [gm_store(base + 2 * (v * sh.dk + d), 2) for d in range(sh.dk)],
             gm=lambda v: tuple((base + 2 * (v * sh.dk + d), 2, True) for d in range(sh.dk)))
    else:
        out += [vec("TransDataTo5HD", 16 * (t.v_step // 16) * 16, ub["chunkV"], q0, dtype="fp16", dst_bytes=2,
                    src_bytes=2)] * (sh.dk // 16)
        out.append(PB_V)
        fetch_sync(out, "V_MTE3")
        out.append(dma_out(sh.dk * cv * 2, DataCopyParams(1, sh.dk * cv * 2 // 32, 0, 0), base, ub["chunkV"]))
    out.append(FreeTensor(OUT_QUEUE))
