"""The double-buffering variants' records: prefetch through ``inQueue_`` and the second state tile.

Neither variant exists in the source (``BUFFER_NUM = 1``, docs/kernel.md §6, §7.4); they are the
what-ifs of docs/double-buffering.md, written as an AscendC kernel would write them. Only records
change: the numbers of every phase are computed by the same code as the baseline's, so out and
final_state are the baseline's bit for bit (tests/test_variants.py).

``prefetch`` (``[kernel] prefetch = true``): a ``TQue<VECIN, 2> inQueue_`` whose buffers stage the
fp16 K, Q (when Phase 3.5 caches Q) and first-tile V rows of one chunk, and for a head's first chunk
the first tile's initial state rows (fp16, [cv, dk] as in GM). LoadChunkKey of chunk n
issues the loads of chunk n + 1 (the next chunk of the head, or the first chunk of the core's next
item) into the other buffer before it DeQues its own, so they run on MTE2 while chunk n computes.
The TQue's own events (MTE2_V on EnQue/DeQue, V_MTE2 on FreeTensor/AllocTensor) replace the
``FetchEventID`` S_MTE2/V_MTE2/MTE2_V pairs that guarded the staging in chunkVFp32 and
chunkAttnOutFp32; LoadVBeta frees the buffer once its V rows are cast, or, when it holds a state
tile, LoadStateTile once it has transposed the rows into stateInFp32 by scalar UB reads and writes
(instead of dk*cv scalar GM reads through the data cache).

``state_double_buffer``: a second FP32 state tile, ``stateNextFp32``. UpdateAndWriteState copies the
updated tile there with one vector Muls(x1) (exact) and writes it back from there, then reads the
state the next LoadStateTile needs into it; LoadStateTile copies it into stateInFp32. The four
``PipeBarrier<PIPE_ALL>`` of the workspace round trip become event pairs on the fixed id
:data:`STATE_EVENT_ID` (V_MTE3 before the write-back, MTE3_V before the next copy overwrites the
tile, V_MTE2 and MTE3_MTE2 before the read, MTE2_V before LoadStateTile's copy), so the scalar unit
never waits for these DMAs.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.isa import AllocTensor, DataCopyParams, DeQue, Dma, EnQue, FreeTensor, SetFlag, WaitFlag
from cgdr_des.kernel.code_variants import workspace_rows
from cgdr_des.kernel.emit import PB_V, S_V, V_S, dma_in, gm_load, loop, scalar, vec
from cgdr_des.kernel.fast_paths import UINT16_MAX, can_cache_attn_query, qk_dma_fast
from cgdr_des.kernel.layout import IN_QUEUE
from cgdr_des.kernel.tiling import FP32_BYTES

#: event id of the state double buffer's pairs: above the ids TPipe hands out first (FetchEventID and
#: AllocEventID take the lowest free id), below the reserved 6 and 7 (docs/hardware.md row 23)
STATE_EVENT_ID = 5


@dataclass(frozen=True)
class InLoad:
    """What one ``inQueue_`` buffer stages: tokens [t_start, t_start + L) of head ``head`` (q/k head
    ``qk_head``), V columns [v_i, v_i + cv) of the chunk's first tile, and with ``state`` (the
    chunk is its item's first) that tile's initial state of batch ``b``."""

    t_start: int
    L: int
    head: int
    qk_head: int
    v_i: int
    cv: int
    b: int = 0
    state: bool = False


@dataclass(frozen=True)
class ChunkPrefetch:
    """A chunk's part of the prefetch: its ``inQueue_`` buffer ``slot``, the load to issue for itself
    (``now``: only when no earlier chunk staged it) and the next chunk's (``next``: None at the core's
    last chunk); ``v_i``: the first column of the V-tile whose rows are staged."""

    slot: int
    now: InLoad | None
    next: InLoad | None
    v_i: int

    def signature(self) -> tuple:
        """What the records' timing depends on: the lengths and widths loaded. The slot only moves UB
        addresses, which no timing rule reads; keeping it out of the key keeps one compiled phase
        per signature, as the baseline has (a second compile would see another data-cache state)."""
        return tuple((ld.L, ld.cv, ld.state) if ld else None for ld in (self.now, self.next))


@dataclass(frozen=True)
class StateOverlap:
    """A V-tile's part of the state double buffer: whether its write-back waits for the previous one
    (``wait_previous``) and the (v_i, cv) of the workspace tile the next LoadStateTile reads, which
    UpdateAndWriteState prefetches (None: the next LoadStateTile reads initial_state, or none follows)."""

    wait_previous: bool
    next_tile: tuple[int, int] | None


def _pair(event: str) -> tuple[SetFlag, WaitFlag]:
    return SetFlag(event, STATE_EVENT_ID), WaitFlag(event, STATE_EVENT_ID)


def in_slot(core, slot: int) -> int:
    """UB byte address of ``inQueue_`` buffer ``slot``; K at +0, Q at +cs*aK*2, V at +2*cs*aK*2,
    the state rows after V's cs*V*2 bytes."""
    return core.layout.in_queue[slot].offset


def _state_offset(core) -> int:
    return 2 * _q_offset(core) + 64 * core.v_aligned * 2


def _q_offset(core) -> int:
    return 64 * core.shape.align_k * 2


def check_prefetch_paths(core, load: InLoad) -> None:
    """The prefetch stages with 2-D DMAs only: the DMA fast paths of Phase 1 and Step 1 must hold."""
    sh = core.shape
    gap = (sh.nv * sh.dv - load.cv) * 2
    if not (qk_dma_fast(core, load.L) and load.cv * 2 % 32 == 0 and gap % 32 == 0 and gap // 32 <= UINT16_MAX):
        raise KernelDiagnostic(
            f"prefetch stages K, Q and V with 2-D DMAs, but shape dk={sh.dk}, nk={sh.nk}, dv={sh.dv}, "
            f"curV={load.cv} takes the scalar slow path of LoadChunkKey or LoadVBeta")


def issue_in_load(core, load: InLoad, slot: int, cache_q: bool, out: list) -> None:
    """AllocTensor, the K (Q) (V) DataCopy calls into buffer ``slot``, EnQue."""
    check_prefetch_paths(core, load)
    sh, gm, base = core.shape, core.launch.gm, in_slot(core, slot)
    out.append(AllocTensor(IN_QUEUE))
    qk = DataCopyParams(load.L, sh.dk * 2 // 32, (sh.nk - 1) * sh.dk * 2 // 32, 0)
    row = (load.t_start * sh.nk + load.qk_head) * sh.dk
    out.append(dma_in(load.L * sh.dk * 2, qk, gm.addr("key", row), base))
    if cache_q:
        out.append(dma_in(load.L * sh.dk * 2, qk, gm.addr("query", row), base + _q_offset(core)))
    gap = (sh.nv * sh.dv - load.cv) * 2
    src = gm.addr("value", (load.t_start * sh.nv + load.head) * sh.dv + load.v_i)
    vp = DataCopyParams(load.L, load.cv * 2 // 32, gap // 32, 0)
    out.append(dma_in(load.L * load.cv * 2, vp, src, base + 2 * _q_offset(core)))
    if load.state:  # rows v_i .. v_i+cv of the head's [dv, dk] initial state are contiguous in GM
        nbytes = load.cv * sh.dk * 2
        first = gm.addr("initial_state", ((load.b * sh.nv + load.head) * sh.dv + load.v_i) * sh.dk)
        out.append(dma_in(nbytes, DataCopyParams(1, nbytes // 32, 0, 0), first, base + _state_offset(core)))
    out.append(EnQue(IN_QUEUE))


def chunk_key_records(core, ch, out: list) -> None:
    """LoadChunkKey with prefetch: stage this chunk if nothing did (the core's first chunk), issue the
    next chunk's loads, DeQue this chunk's buffer and cast K from it."""
    sh, pf = core.shape, ch.prefetch
    if pf.now is not None:
        issue_in_load(core, pf.now, pf.slot, can_cache_attn_query(core, pf.now.L), out)
    if pf.next is not None:
        issue_in_load(core, pf.next, 1 - pf.slot, can_cache_attn_query(core, pf.next.L), out)
    out += [DeQue(IN_QUEUE),
            vec("Cast", ch.L * sh.dk, core.ub("chunkKFp32"), in_slot(core, pf.slot), src_bytes=2), PB_V]


def query_cache_records(core, ch, out: list) -> None:
    """PrepareAttnQueryCache with prefetch: Cast and scale Q from the staged rows (no DMA, no flag)."""
    sh, a0 = core.shape, core.ub("chunkAttnOutFp32")
    src = in_slot(core, ch.prefetch.slot) + _q_offset(core)
    out += [vec("Cast", ch.L * sh.dk, a0, src, src_bytes=2), PB_V, vec("Muls", ch.L * sh.dk, a0, a0), PB_V]


def v_beta_records(core, ch, cv: int, out: list) -> None:
    """LoadVBeta of the staged tile: per row Cast from inQueue_ and Muls by beta, then FreeTensor."""
    sh, L, V = core.shape, ch.L, core.v_aligned
    v0, gm = core.ub("chunkVFp32"), core.launch.gm
    staged = in_slot(core, ch.prefetch.slot) + 2 * _q_offset(core)
    out += [vec("Duplicate", L * V, v0), PB_V]
    for i in range(L):
        out.append(gm_load(gm.addr("beta", (ch.t_start + i) * sh.nv + ch.head), 2))
        out += [*S_V, vec("Cast", cv, v0 + FP32_BYTES * i * V, staged + 2 * i * cv, src_bytes=2), PB_V,
                vec("Muls", cv, v0 + FP32_BYTES * i * V, v0 + FP32_BYTES * i * V), PB_V]
    out.extend(V_S)
    if ch.c > 0:  # at a head's first chunk the buffer also holds the state tile: LoadStateTile frees it
        out.append(FreeTensor(IN_QUEUE))


def state_from_staging_records(core, cv: int, out: list) -> None:
    """LoadStateTile (c == 0) from the staged rows: Duplicate, V->S (the scalar writes follow the
    Duplicate and the DeQue'd DMA), cv rows of dk scalar UB reads and writes (the transposition),
    S->V, FreeTensor."""
    sh, sK, V = core.shape, core.shape.state_stride_k, core.v_aligned
    out += [vec("Duplicate", sK * V, core.ub("stateInFp32")), PB_V, *V_S]
    loop(core, out, cv, lambda v: [scalar("ub_load", sh.dk), scalar("ub_store", sh.dk)])
    out += [*S_V, FreeTensor(IN_QUEUE)]


def _ws_rows(core, ch, v_i: int, cv: int, direction: str) -> list[Dma]:
    """The dk row DataCopy calls between stateNextFp32 and the workspace tile at column ``v_i`` (one
    2-D DataCopy with ``state_rows = "2d"``)."""
    return workspace_rows(core, ch, v_i, cv, direction, core.ub("stateNextFp32"))


def state_writeback_records(core, ch, v_i: int, cv: int, wait_previous: bool, out: list) -> None:
    """The write-back from the second tile: [MTE3_V wait], copy stateIn -> stateNext, V_MTE3, the dk
    row DMAs, MTE3_V set (the next copy's wait). No PIPE_ALL: the scalar unit goes straight on."""
    n = core.shape.state_stride_k * core.v_aligned
    s0, n0 = core.ub("stateInFp32"), core.ub("stateNextFp32")
    set_v3, wait_v3 = _pair("V_MTE3")
    set_3v, wait_3v = _pair("MTE3_V")
    if wait_previous:
        out.append(wait_3v)
    out += [vec("Muls", n, n0, s0), set_v3, wait_v3, *_ws_rows(core, ch, v_i, cv, "UB2GM"), set_3v]


def state_prefetch_records(core, ch, v_i: int, cv: int, out: list) -> None:
    """Read the workspace tile the next LoadStateTile needs into stateNextFp32, after V has copied the
    tile out (V_MTE2) and MTE3 has written it back (MTE3_MTE2); MTE2_V tells LoadStateTile."""
    set_v2, wait_v2 = _pair("V_MTE2")
    set_32, wait_32 = _pair("MTE3_MTE2")
    out += [set_v2, wait_v2, set_32, wait_32, *_ws_rows(core, ch, v_i, cv, "GM2UB"), _pair("MTE2_V")[0]]


def state_take_records(core, out: list) -> None:
    """LoadStateTile (c > 0) with the second tile: wait for the prefetch, copy the whole tile in (the
    copy writes every element, so the baseline's zeroing Duplicate has nothing left to do)."""
    n = core.shape.state_stride_k * core.v_aligned
    s0, n0 = core.ub("stateInFp32"), core.ub("stateNextFp32")
    out += [_pair("MTE2_V")[1], vec("Muls", n, s0, n0), PB_V]
