"""Record builders of the Cube-era kernel's recurring blocks (docs/kernel-cube.md §3.0).

- :func:`shwr` / :func:`sh`: ``StageHalfWithResidual`` / ``StageHalf`` (.h:1569-1602): an fp32 UB
  operand cast to fp16 (hi, and lo = fp16(x - hi)) through the depth-1 VECOUT queue and written to a
  GM stage slot by MTE3;
- :func:`pair`: the two-term product (e.g. .h:1265-1293): Nd2Nz GM -> L1, LoadData L1 -> L0A/L0B,
  Mmad of hi then lo into one L0C, under the literal-id events MTE2_MTE1, MTE1_M, M_MTE1;
- :func:`drain`: ``CopyL0CToUb`` (.h:116-126) and the NZ -> ND row copies, bracketed by PIPE_ALL;
  the final kernel (!1174) waits M_V before and sets V_M after the L0C read, the pre-!1174 variant
  does neither (the L0C race the machine reports);
- :func:`mbfc`: ``MatmulBlockFp32Compensated<k>`` (.h:466-520), four Mmads;
- :func:`load_padded_rows`: ``LoadPaddedRows`` (.h:284-352), the zero-padded K/Q loads.
"""

from __future__ import annotations

from cgdr_des.integers import ceil_align
from cgdr_des.isa import (
    AllocEventID,
    AllocTensor,
    DataCopyExtParams,
    DataCopyParams,
    DeQue,
    Dma,
    EnQue,
    EventHandle,
    FreeTensor,
    L0cToUb,
    LoadData,
    Mmad,
    Nd2NzParams,
    ReleaseEventID,
    SetFlag,
    UbCopy,
    WaitFlag,
)
from cgdr_des.kernel.emit import PB_ALL, PB_V, S_V, V_S, dma_in, dma_out, fetch_sync, gm_load, scalar, vec
from cgdr_des.kernel.tiling import FP32_BYTES

OUT_QUEUE = "stateOutQueue_"
#: SHWR re-enqueues the tensor it dequeued (legal AscendC; the source does it 19 times a chunk), and
#: the machine's TQue passes a dequeued buffer on again. True emits that second hand-over as the flags
#: TPipe's EnQue/DeQue insert instead (AllocEventID, SetFlag/WaitFlag<V_MTE3>, ReleaseEventID): the
#: same synchronisation in other record kinds (kept to compare the two forms).
REENQUE_AS_EVENTS = False
FRACTAL = 16
FRACTAL_BYTES = 512


def literal_sync(out: list, event: str) -> None:
    """``SetFlag/WaitFlag<event>(0)``: the Cube-side events use the literal id 0."""
    out.append(SetFlag(event, 0))
    out.append(WaitFlag(event, 0))


def stage_dma(n: int, gm_addr: int, ub_addr: int) -> Dma:
    """One contiguous MTE3 write of ``n`` fp16 elements into a stage slot."""
    return dma_out(2 * n, DataCopyParams(1, 2 * n // 32, 0, 0), gm_addr, ub_addr)


def sh(core, out: list, n: int, src: int, gm_addr: int) -> None:
    """``StageHalf(n)``: Q.A; Cast fp32 -> fp16; PB; Q.E/D; MTE3; Q.F."""
    q0 = core.out_queue
    out += [AllocTensor(OUT_QUEUE), vec("Cast", n, q0, src, dst_bytes=2), PB_V, EnQue(OUT_QUEUE),
            DeQue(OUT_QUEUE), stage_dma(n, gm_addr, q0), FreeTensor(OUT_QUEUE)]


def shwr(core, out: list, n: int, src: int, gm_hi: int, gm_lo: int) -> None:
    """``StageHalfWithResidual(n)``: hi staged, then lo = fp16(x - fp32(hi)) staged: 4 V, 4 PB,
    2 MTE3 DMAs, one fetched MTE3_V between them (the queue buffer is reused for lo)."""
    q0, scratch = core.out_queue, core.ub["residual"]
    out += [AllocTensor(OUT_QUEUE), vec("Cast", n, q0, src, dst_bytes=2), PB_V, EnQue(OUT_QUEUE),
            DeQue(OUT_QUEUE), stage_dma(n, gm_hi, q0)]
    fetch_sync(out, "MTE3_V")
    out += [vec("Cast", n, scratch, q0, src_bytes=2), PB_V, vec("Sub", n, scratch, src, scratch), PB_V,
            vec("Cast", n, q0, scratch, dst_bytes=2), PB_V]
    reenqueue(out)
    out += [stage_dma(n, gm_lo, q0), FreeTensor(OUT_QUEUE)]


def reenqueue(out: list) -> None:
    """EnQue/DeQue of the tensor already dequeued once (see :data:`REENQUE_AS_EVENTS`)."""
    if not REENQUE_AS_EVENTS:
        out += [EnQue(OUT_QUEUE), DeQue(OUT_QUEUE)]
        return
    h = EventHandle()
    out += [AllocEventID("V_MTE3", h), SetFlag("V_MTE3", h), WaitFlag("V_MTE3", h), ReleaseEventID("V_MTE3", h)]


def nd2nz(rows: int, cols: int, gm_addr: int, l1_addr: int) -> Dma:
    """GM -> L1 Nd2Nz copy of a ``rows x cols`` fp16 matrix (MTE2)."""
    params = Nd2NzParams(1, rows, cols, cols, ceil_align(rows, FRACTAL))
    return Dma("GM2L1", rows * cols * 2, params, gm_addr, l1_addr)


def load_a(out: list, m: int, k: int) -> None:
    """m/16 ``LoadData`` into L0A, k/16 fractals each."""
    rec = LoadData(k // FRACTAL, k // FRACTAL * FRACTAL_BYTES, "L0A", False, ("L1:0",), ("L0A:0",))
    out.extend([rec] * (m // FRACTAL))


def load_b(out: list, k: int, n: int) -> None:
    """k/16 transposing ``LoadData`` into L0B, n/16 fractals each."""
    rec = LoadData(n // FRACTAL, n // FRACTAL * FRACTAL_BYTES, "L0B", True, ("L1:0",), ("L0B:0",))
    out.extend([rec] * (k // FRACTAL))


def mmad(out: list, m: int, n: int, k: int, init: bool) -> None:
    """``MmadMatmulBlock``: ev MTE1_M; Mmad; ev M_MTE1."""
    literal_sync(out, "MTE1_M")
    out.append(Mmad(m, n, k, init))
    literal_sync(out, "M_MTE1")


def load_b_once(out: list, k: int, n: int, gm_b: int) -> None:
    """A B operand loaded once and kept resident in L0B: Nd2Nz; ev MTE2_MTE1; LoadData."""
    out.append(nd2nz(k, n, gm_b, 1 << 19))
    literal_sync(out, "MTE2_MTE1")
    load_b(out, k, n)


def pair(out: list, m: int, n: int, k: int, gm_hi: int, gm_lo: int, gm_b: int | None, init: bool = True,
         close: bool = True) -> None:
    """Two-term product ``C (+)= A_hi·B + A_lo·B``: A_hi [+ B] to L1, LoadData, Mmad (init or acc),
    then A_lo to L1 (no MTE1 -> MTE2 event guards that overwrite), LoadData, Mmad (acc). ``gm_b`` None:
    B is resident in L0B already. ``close`` False leaves out the last ev M_MTE1 (the caller places it)."""
    out.append(nd2nz(m, k, gm_hi, 0))
    if gm_b is not None:
        out.append(nd2nz(k, n, gm_b, 1 << 19))
    literal_sync(out, "MTE2_MTE1")
    load_a(out, m, k)
    if gm_b is not None:
        load_b(out, k, n)
    mmad(out, m, n, k, init)
    out.append(nd2nz(m, k, gm_lo, 0))
    literal_sync(out, "MTE2_MTE1")
    load_a(out, m, k)
    literal_sync(out, "MTE1_M")
    out.append(Mmad(m, n, k, False))
    if close:
        literal_sync(out, "M_MTE1")


def drain_read(core, out: list, m: int, n: int, cnz: int) -> None:
    """The L0C -> UB DataCopy, with !1174's M_V / V_M (none before !1174), then PIPE_ALL."""
    if not core.pre1174:
        fetch_sync(out, "M_V")
    out.append(L0cToUb(m, n, m * n * FP32_BYTES, cnz))
    if not core.pre1174:
        fetch_sync(out, "V_M")
    out.append(PB_ALL)


def drain(core, out: list, m: int, n: int, dst: int, cnz: int) -> None:
    """``CopyL0CToUb`` of an ``m x n`` fp32 result into ``cnz``, then m NZ -> ND row copies (n/16
    bursts of 64 B each) into ``dst``, then PIPE_ALL."""
    drain_read(core, out, m, n, cnz)
    out.extend(UbCopy(n * FP32_BYTES, n // FRACTAL, dst + FP32_BYTES * r * n, cnz + 64 * r) for r in range(m))
    out.append(PB_ALL)


def mbfc(core, out: list, k: int, a: int, b: int, dst: int) -> None:
    """``MatmulBlockFp32Compensated<k>``: A and B staged hi/lo into slot 0 (aHi, bHi, aLo, bLo at 0,
    2k², 4k², 6k² bytes), PA, four Mmads hi·hi, lo·hi, hi·lo, lo·lo, then the drain."""
    s = core.slot(0)
    a_hi, b_hi, a_lo, b_lo = (s + j * 2 * k * k for j in range(4))
    n = k * k
    shwr(core, out, n, a, a_hi, a_lo)
    shwr(core, out, n, b, b_hi, b_lo)
    out.append(PB_ALL)
    for j, (ga, gb) in enumerate(((a_hi, b_hi), (a_lo, None), (a_hi, b_lo), (a_lo, None))):
        out.append(nd2nz(k, k, ga, 0))
        literal_sync(out, "MTE2_MTE1")
        load_a(out, k, k)
        if gb is not None:
            out.append(nd2nz(k, k, gb, 1 << 19))
            literal_sync(out, "MTE2_MTE1")
            load_b(out, k, k)
        mmad(out, k, k, k, j == 0)
    drain(core, out, k, k, dst, core.ub["residual"])


def load_padded_rows(core, out: list, rows: int, gm_row0: int, row_stride: int, dst: int, staging: int) -> None:
    """``LoadPaddedRows``: ``rows`` rows of dk fp16 elements (GM rows ``row_stride`` elements apart,
    first at byte ``gm_row0``) into an fp16 staging copy ``[rows, alignK]`` zero-filled first, then
    Cast to fp32 at ``dst``. dk % 16 == 0: one 2-D DMA; otherwise the strided (or per-row) DMA of the
    whole 16-element blocks and the tail through the scalar unit (docs/kernel-cube.md §2.2)."""
    dk, a_k = core.shape.dk, core.tiling.align_k
    full, tail = divmod(dk, FRACTAL)
    out += [vec("Duplicate", rows * a_k, staging, dtype="fp16", dst_bytes=2), PB_V]
    fetch_sync(out, "V_MTE2")
    gap = row_stride * 2 - full * 32
    if full and gap % 32 == 0:
        params = DataCopyParams(rows, full, gap // 32, (a_k - full * FRACTAL) * 2 // 32)
        out.append(dma_in(rows * full * 32, params, gm_row0, staging))
    elif full:
        params = DataCopyParams(1, full, 0, 0)
        out.extend(dma_in(full * 32, params, gm_row0 + 2 * r * row_stride, staging + 2 * r * a_k)
                   for r in range(rows))
    fetch_sync(out, "MTE2_V")
    if tail:
        _padded_tail(core, out, rows, gm_row0 + 2 * full * FRACTAL, row_stride, staging, tail)
    out += [vec("Cast", rows * a_k, dst, staging, src_bytes=2), PB_V]


def _padded_tail(core, out: list, rows: int, gm_tail0: int, row_stride: int, staging: int, tail: int) -> None:
    """The last dk % 16 elements of each row: tail > 8 over-reads one 32-B block per row (rows - 1
    rows) and the scalar unit zeroes what belongs to the next head, then reads the last row's tail;
    tail <= 8 reads every row's tail by scalar. Both end with S -> V."""
    out.extend(V_S)
    if tail > 8 and rows > 1:
        params = DataCopyExtParams(rows - 1, 32, row_stride * 2 - 32, 0)
        out.append(dma_in(32 * (rows - 1), params, gm_tail0, staging))
        fetch_sync(out, "MTE2_S")
        out.append(scalar("ub_store", (FRACTAL - tail) * (rows - 1)))
        last = [gm_tail0 + 2 * ((rows - 1) * row_stride + j) for j in range(tail)]
    else:
        last = [gm_tail0 + 2 * (r * row_stride + j) for r in range(rows) for j in range(tail)]
    out.extend(gm_load(a, 2) for a in last)
    out.append(scalar("ub_store", len(last)))
    out.extend(S_V)
