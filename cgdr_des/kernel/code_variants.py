"""The code-change variants' records: six edits of the source's instructions (docs/kernel.md §5.y).

None of them exists in the source (chunk_gated_delta_rule.h at 00e39ab5); each is what a kernel
engineer would write in its place, as data over the same program (``[kernel]`` fields, default the
source's code). Only records change: the numbers of every phase are computed by the same code as the
baseline's, and each edit moves or computes the very same values (argued per variant below), so out
and final_state are the baseline's bit for bit (tests/test_code_variants.py). None adds UB: each reuses
a block the baseline carves and leaves idle at that moment (:func:`cgdr_des.kernel.tiling.code_variant_ub`).

``sub = true`` (ComputeVNew): ``Sub(row, U_row, row, V)`` replaces ``Muls(row, row, -1, V); PipeBarrier<V>;
Add(row, row, U_row, V)``: one vector call and one PipeBarrier<V> fewer per row. U - x and (-x) + U
are the same IEEE operation (negation is exact), so the bits are equal.

``state_rows = "2d"`` (LoadStateTile c > 0, UpdateAndWriteState not last, and the state double
buffer's write-back and read-back): the dk single-row ``DataCopy(.., {1, cv8/8, 0, 0})`` calls become
one ``DataCopy(.., DataCopyParams(dk, cv8/8, srcGap, dstGap))`` each way, the gaps in 32-byte blocks
between rows: ``(ws_stride_v - cv8)/8`` on the workspace side and ``(V - cv8)/8`` on the UB side (fp32
rows of a multiple of 8 elements are whole blocks, so the gaps always are). The same bytes move; the
flags and PipeBarrier<ALL> around them stay. A field beyond its range (blockCount > 4095, a gap
> 65535) is a KernelDiagnostic.

``state_load = "dma"`` (LoadStateTile c == 0): the tile's cv rows of dk fp16 of ``initial_state``
(layout [B, Nv, dv, dk]: the rows v_i .. v_i+cv of one head are contiguous) come in by one
``DataCopy(stage, init[...], {1, cv*dk*2/32, 0, 0})`` into the out-queue buffer: ``stateOutQueue_``
(``max(sK*V, cs*V)`` fp16, which holds the cv*dk staged values) is idle from WriteAttnTileToGm's
FreeTensor to its next AllocTensor, so LoadStateTile takes it with AllocTensor (whose MTE3_V wait
orders the DMA after the last MTE3 read of the buffer) and frees it afterwards. Flags as the other
staged loads: FetchEventID S_MTE2 and V_MTE2 before, MTE2_V after. Then the transposition into
stateInFp32 [dk, V] fp32:

- dk a multiple of 16 and at most 2*cs = 128 (the fp16 tile [dk, V] fits the idle chunkVFp32,
  whose v_beta ComputeValueNew has consumed): cv/16 ``TransDataTo5HD`` calls (each dk/16 repeats of
  one 16x16 fp16 block: 16 source rows at column block j to 16 destination rows at column block i,
  srcRepStride 1 block, dstRepStride V blocks), preceded by a ``Duplicate(chunkV as fp16, 0, dk*V)``
  when cv < V so the padding columns stay zero, then ``PipeBarrier<V>`` and one
  ``Cast(stateInFp32, chunkV as fp16, sK*V)``: the Cast writes the whole tile, so the source's zeroing
  Duplicate of stateInFp32 goes. The Cube-era kernel (!1135) loads its first state tile this way.
- otherwise (dk = 256 needs a [256, V] fp16 tile, twice chunkVFp32) the source's zeroing Duplicate,
  a V->S pair (S waits for V, which waited for the DMA), and the transposition by dk*cv scalar UB
  reads and stores, then S->V: the same loop as the source but on UB instead of GM.

fp16 -> fp32 is exact whichever unit converts, so the tile equals the source's.

``query_rows = "ub"`` (ComputeAttnInter): the chunk's q rows (fp16, [L, dk] compact) come in by one
``DataCopy(kCumdecayFp32 as fp16, query[...], {L, dk*2/32, (Nk-1)*dk*2/32, 0})`` at the end of
ComputeKCumdecay, the last reader of kCumdecayFp32 (k_beta * e^G) in the chunk; nothing of Phase 6
uses that block, which holds cs*aK fp32 = twice the staged bytes. Flags: S_MTE2 (the previous chunk's
scalar reads of it), V_MTE2 (Phase 5's Axpy reads of it), then MTE2_S (the scalar unit waits for the
rows it is about to read). ComputeAttnInter then reads q_i[d] by a scalar UB load instead of a scalar
GM read and multiplies by scale and e^{G_i} exactly as before, per V-tile: the same values, the same
scalar arithmetic. Needs LoadChunkKey's DMA conditions (dk a multiple of 16, the gap within uint16);
a shape without them is a KernelDiagnostic.

``state_store = "dma"`` (UpdateAndWriteState at a head's last chunk; found by the per-phase profile of
a short item, where this store is half the time): the source casts the tile into the out-queue and
writes final_state ([B, Nv, dv, dk]) transposed by dk*cv scalar UB reads and scalar GM stores. Instead:
``Cast(chunkV as fp16, stateInFp32, sK*V)`` (chunkVFp32 is idle once the update's Axpy calls have read
v_new), AllocTensor, cv/16 ``TransDataTo5HD`` (each dk/16 repeats: 16 tile rows d at column block j
to 16 queue rows v at column block i, srcRepStride V blocks, dstRepStride 1) into the out-queue buffer
as [cv, dk] fp16, EnQue/DeQue (V_MTE3) and one ``DataCopy(finalState[...], queue, {1, cv*dk*2/32, 0,
0})``: the rows v_i .. v_i+cv of the head are contiguous in GM. The V->S pair and every scalar
access go; the fp16 values are the same Cast's. Like ``state_load``, it needs dk a multiple of 16 and
at most 2*cs = 128 (the fp16 tile in chunkVFp32); other shapes keep the source's scalar store (no idle
block holds a wider fp16 tile, and the store is then a fallback, not an error: the docs say so).

``attn_dots = "row"`` (ComputeAttnMatrix, Phases 4a and 4c): the source calls DotFp32 once per score,
each a Mul, a WholeReduceSum and a V->S round trip (4096 at L = 64). Instead, per score row i, the n
dot products of the row (n = i below the diagonal, i + 1 with it) are multiplied into the idle
chunkVFp32 (its fp16 staging is done with, v_beta not yet loaded), ``Mul(chunkV[k*dk], lhs_i, rhs_j,
dk)`` for each, then one ``WholeReduceSum(dotProductFp32, chunkV, 64, k*dk/64, 1, 1, 8)`` (dense
results) and one V->S round trip, and the scalar unit adds each product's dk/64 partials in order and
stores the score as before. The partials are the same 64-element sums and are added in the same
order, so every score has the source's bits. A batch holds at most cs*V/dk products (chunkVFp32's
size; all of a row when V >= dk); its cs*V/64 <= V partials fit dotProductFp32 because k*dk/64 <= dk.
Needs dk a multiple of 64 (rows of whole repeats; the source's tail products would fall inside the
next product's repeat): other dk are a KernelDiagnostic. The raw_interlock barrier between Mul and
reduce stays where the profile asks for it, as in DotFp32.
"""

from __future__ import annotations

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.integers import ceil_align
from cgdr_des.isa import AllocTensor, DataCopyParams, DeQue, Dma, EnQue, FreeTensor
from cgdr_des.kernel.emit import PB_V, S_V, V_S, dma_in, dma_out, fetch_sync, loop, scalar, vec
from cgdr_des.kernel.tiling import FP32_BYTES, MAX_BLOCK_COUNT, UINT16_MAX

OUT_QUEUE = "stateOutQueue_"
CS = 64


def state_rows_params(dk: int, cv: int, ws_stride_v: int, v_aligned: int, direction: str) -> DataCopyParams:
    """The one 2-D DataCopyParams of ``state_rows = "2d"``: dk rows of ceil8(cv) fp32, the workspace
    gap on the GM side, the UB gap on the other (``direction`` GM2UB: GM is the source)."""
    cv8 = ceil_align(cv, 8)
    gm_gap, ub_gap = (ws_stride_v - cv8) // 8, (v_aligned - cv8) // 8
    src, dst = (gm_gap, ub_gap) if direction == "GM2UB" else (ub_gap, gm_gap)
    return DataCopyParams(dk, cv8 // 8, src, dst)


def state_rows_problem(dk: int, cv: int, ws_stride_v: int, v_aligned: int) -> str | None:
    """Why the 2-D state DMA cannot be written for this tile (None: it can)."""
    p = state_rows_params(dk, cv, ws_stride_v, v_aligned, "GM2UB")
    if p.block_count > MAX_BLOCK_COUNT:
        return f"blockCount dk={dk} exceeds {MAX_BLOCK_COUNT}"
    for name in ("block_len", "src_stride", "dst_stride"):
        if getattr(p, name) > UINT16_MAX:
            return f"{name} {getattr(p, name)} exceeds {UINT16_MAX} blocks (curV={cv}, dv stride {ws_stride_v})"
    return None


def workspace_rows(core, ch, v_i: int, cv: int, direction: str, ub_addr: int) -> list[Dma]:
    """The state tile's DataCopy calls between UB at ``ub_addr`` (row stride V) and the workspace:
    dk single rows (the source), or one 2-D copy with ``state_rows = "2d"``."""
    sh, V = core.shape, core.v_aligned
    cv8, gm = ceil_align(cv, 8), core.launch.gm
    ws = ((ch.b * sh.nv + ch.head) * sh.dk) * sh.ws_stride_v + v_i
    if core.tiling.state_rows == "2d":
        why = state_rows_problem(sh.dk, cv, sh.ws_stride_v, V)
        if why:
            raise KernelDiagnostic(f"state_rows = \"2d\": the 2-D state DataCopy cannot be written: {why}")
        params = state_rows_params(sh.dk, cv, sh.ws_stride_v, V, direction)
        return [Dma(direction, sh.dk * cv8 * FP32_BYTES, params, gm.addr("workspace", ws), ub_addr)]
    params = DataCopyParams(1, cv8 // 8, 0, 0)
    return [Dma(direction, cv8 * FP32_BYTES, params, gm.addr("workspace", ws + d * sh.ws_stride_v),
                ub_addr + FP32_BYTES * d * V)
            for d in range(sh.dk)]


def vector_transpose(dk: int) -> bool:
    """``state_load = "dma"`` transposes on V (TransDataTo5HD) when dk is whole 16x16 blocks and the
    fp16 tile [dk, V] fits chunkVFp32 (cs*V fp32, i.e. dk <= 2*cs); else by scalar UB reads."""
    return dk % 16 == 0 and dk <= 2 * CS


def state_load_problem(dk: int, cv: int) -> str | None:
    """Why the one contiguous DataCopy of the staged initial-state rows cannot be written (None: it can)."""
    nbytes = cv * dk * 2
    if nbytes % 32:
        return f"curV*dk*2 = {nbytes} bytes is not a whole number of 32-byte blocks"
    if nbytes // 32 > UINT16_MAX:
        return f"blockLen {nbytes // 32} exceeds {UINT16_MAX} blocks"
    return None


def state_dma_records(core, ch, v_i: int, cv: int, out: list) -> None:
    """LoadStateTile at c == 0 with ``state_load = "dma"`` (module docstring)."""
    sh, V, sK = core.shape, core.v_aligned, core.shape.state_stride_k
    why = state_load_problem(sh.dk, cv)
    if why:
        raise KernelDiagnostic(f"state_load = \"dma\": the initial-state DataCopy cannot be written: {why}")
    s0, q0, v0 = core.ub("stateInFp32"), core.out_queue_offset, core.ub("chunkVFp32")
    gm = core.launch.gm
    src = gm.addr("initial_state", ((ch.b * sh.nv + ch.head) * sh.dv + v_i) * sh.dk)
    nbytes = cv * sh.dk * 2
    out.append(AllocTensor(OUT_QUEUE))
    vector = vector_transpose(sh.dk)
    if not vector:
        out += [vec("Duplicate", sK * V, s0), PB_V]
    fetch_sync(out, "S_MTE2")
    fetch_sync(out, "V_MTE2")
    out.append(dma_in(nbytes, DataCopyParams(1, nbytes // 32, 0, 0), src, q0))
    fetch_sync(out, "MTE2_V")
    if vector:
        if cv < V:
            out += [vec("Duplicate", sh.dk * V, v0, dtype="fp16", dst_bytes=2), PB_V]
        out += [vec("TransDataTo5HD", 16 * sh.dk, v0 + 2 * 16 * i, q0 + 2 * 16 * i * sh.dk, dtype="fp16",
                    dst_bytes=2, src_bytes=2) for i in range(cv // 16)]
        out += [PB_V, vec("Cast", sK * V, s0, v0, src_bytes=2), PB_V]
    else:
        out.extend(V_S)
        loop(core, out, cv, lambda v: [scalar("ub_load", sh.dk), scalar("ub_store", sh.dk)])
        out.extend(S_V)
    out.append(FreeTensor(OUT_QUEUE))


def state_store_records(core, ch, v_i: int, cv: int, out: list) -> bool:
    """The final_state write with ``state_store = "dma"`` (module docstring); False (nothing appended)
    when the shape keeps the source's scalar store."""
    sh, V, sK = core.shape, core.v_aligned, core.shape.state_stride_k
    if not vector_transpose(sh.dk):
        return False
    why = state_load_problem(sh.dk, cv)  # the same contiguous cv rows of dk fp16, the other way
    if why:
        raise KernelDiagnostic(f"state_store = \"dma\": the final-state DataCopy cannot be written: {why}")
    s0, q0, v0 = core.ub("stateInFp32"), core.out_queue_offset, core.ub("chunkVFp32")
    nbytes = cv * sh.dk * 2
    dst = core.launch.gm.addr("final_state", ((ch.b * sh.nv + ch.head) * sh.dv + v_i) * sh.dk)
    out += [vec("Muls", sK * V, s0, s0), PB_V, vec("Cast", sK * V, v0, s0, dst_bytes=2), PB_V,
            AllocTensor(OUT_QUEUE)]
    out += [vec("TransDataTo5HD", 16 * sh.dk, q0 + 2 * 16 * j * sh.dk, v0 + 2 * 16 * j, dtype="fp16",
                dst_bytes=2, src_bytes=2) for j in range(cv // 16)]
    out += [EnQue(OUT_QUEUE), DeQue(OUT_QUEUE), dma_out(nbytes, DataCopyParams(1, nbytes // 32, 0, 0), dst, q0),
            FreeTensor(OUT_QUEUE)]
    return True


def attn_dots_problem(dk: int) -> str | None:
    """Why ``attn_dots = "row"`` cannot run on this dk (None: it can)."""
    if dk % 64:
        return f"dk={dk} is not a multiple of 64, so the products of one row are not whole reduce repeats"
    return None


def dot_row_records(core, lhs: int, rhs0: int, rhs_stride: int, n: int, tail: list, out: list) -> None:
    """The n dot products of one score row with ``attn_dots = "row"``: lhs (UB byte address) against
    rhs0 + j*rhs_stride, j < n, batched into chunkVFp32; ``tail``: the scalar records after each
    product's partial sums (its score's load, multiply and store)."""
    dk = core.shape.dk
    why = attn_dots_problem(dk)
    if why:
        raise KernelDiagnostic(f"attn_dots = \"row\": {why}")
    v0, dp = core.ub("chunkVFp32"), core.ub("dotProductFp32")
    per = dk // 64
    batch = max(1, CS * core.v_aligned // dk)
    for first in range(0, n, batch):
        k = min(batch, n - first)
        loop(core, out, k, lambda j, first=first: [vec("Mul", dk, v0 + FP32_BYTES * j * dk, lhs,
                                                          rhs0 + (first + j) * rhs_stride)])
        if core.launch.raw_interlock:
            out.append(PB_V)
        out += [vec("WholeReduceSum", k * dk, dp, v0), *V_S]
        loop(core, out, k, lambda j: [scalar("ub_load", per), scalar("alu", per), *tail])


def query_rows_problem(dk: int, nk: int, L: int = CS) -> str | None:
    """Why the q rows' 2-D DataCopy of ``query_rows = "ub"`` cannot be written (None: it can)."""
    gap = (nk - 1) * dk * 2
    if dk % 16:
        return f"dk={dk} rows are not whole 32-byte blocks (dk must be a multiple of 16)"
    if gap // 32 > UINT16_MAX:
        return f"the source gap of {gap // 32} blocks (nk={nk}) exceeds {UINT16_MAX}"
    if L > MAX_BLOCK_COUNT:
        return f"blockCount L={L} exceeds {MAX_BLOCK_COUNT}"
    return None


def query_rows_dma(core, ch, out: list) -> None:
    """End of ComputeKCumdecay with ``query_rows = "ub"``: the chunk's q rows (fp16) into the idle
    kCumdecayFp32, and the scalar unit waits for them (MTE2_S)."""
    sh = core.shape
    why = query_rows_problem(sh.dk, sh.nk, ch.L)
    if why:
        raise KernelDiagnostic(f"query_rows = \"ub\": the q rows' DataCopy cannot be written: {why}")
    fetch_sync(out, "S_MTE2")
    fetch_sync(out, "V_MTE2")
    params = DataCopyParams(ch.L, sh.dk * 2 // 32, (sh.nk - 1) * sh.dk * 2 // 32, 0)
    src = core.launch.gm.addr("query", (ch.t_start * sh.nk + ch.qk_head) * sh.dk)
    out.append(dma_in(ch.L * sh.dk * 2, params, src, core.ub("kCumdecayFp32")))
    fetch_sync(out, "MTE2_S")

