"""The device's Unified Buffer layout, as ``InitLocalBuffers`` carves it (docs/kernel.md §4.2).

Order of allocation (``chunk_gated_delta_rule.h`` InitLocalBuffers):

1. ``pipe.InitBuffer(stateOutQueue_, BUFFER_NUM, outQueueBytes)``: ``buffer_num`` fp16 staging buffers
   of ``max(sK*V, cs*V) * 2`` bytes each, from UB offset 0;
2. ``pipe.InitBuffer(tmpBuff, ubRestBytes)``: one TBuf right above the queue, carved by a running
   byte offset into FP32 blocks (element counts, ``V = CeilAlign(vStep, 8)``, ``sK = CeilAlign(dk, 8)``,
   ``aK = CeilAlign(dk, 16)``, ``cs = 64``):

   ====================  ===============================  ===========================================
   chunkKFp32            cs * aK
   kCumdecayFp32         cs * aK
   decayMaskFp32         cs * cs
   chunkVFp32            cs * V
   chunkScoresFp32       overlap: max(cs*cs, sK*V) at the  else: cs * cs, then stateInFp32 sK * V
   / stateInFp32         same offset for both
   chunkAttnOutFp32      cs * V
   gCumsumFp32           cs
   deltaFp32             max(sK, cs, V)
   dotProductFp32        max(sK, cs)
   expGCumFp32           cs
   ====================  ===============================  ===========================================

The double-buffering variants (docs/double-buffering.md §1) add, with ``prefetch``, a third call
``pipe.InitBuffer(inQueue_, 2, inQueueBytes)`` between the two (a ``TQue<VECIN, 2>`` staging the
next chunk's fp16 K, Q and V), and, with ``state_double_buffer``, a last tmpBuff block
``stateNextFp32`` [sK, V] (the second state tile).

All offsets here are absolute UB byte offsets (queue bytes + offset within tmpBuff), ready for the
``UB_RANGE`` fields of :mod:`cgdr_des.isa`. The overlap flag is the device's own decision,
``vStep >= dv or ShouldSplitVTiles()``; it is a parameter because the device evaluates it with its
``GetBlockNum()``, which the host tiling only predicts.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgdr_des.isa import InitBuffer
from cgdr_des.kernel.dispatch import should_split_v_tiles
from cgdr_des.kernel.tiling import FP32_BYTES, Tiling

OUT_QUEUE = "stateOutQueue_"
IN_QUEUE = "inQueue_"
TMP_BUFF = "tmpBuff"


@dataclass(frozen=True)
class UbBuffer:
    """One named UB region: absolute byte ``offset``, byte size ``nbytes``, ``elements`` of ``dtype``."""

    name: str
    offset: int
    nbytes: int
    elements: int
    dtype: str

    @property
    def range(self) -> tuple[int, int]:
        """``(offset, nbytes)``, the :data:`cgdr_des.isa.UB_RANGE` of the whole buffer."""
        return (self.offset, self.nbytes)

    def sub(self, start: int, count: int) -> tuple[int, int]:
        """UB range of ``count`` elements starting at element ``start`` (e.g. one row of a tile)."""
        size = 4 if self.dtype == "fp32" else 2
        return (self.offset + start * size, count * size)


@dataclass(frozen=True)
class UbLayout:
    """Every UB buffer of one core. Lifecycle: fixed at ``Init``, valid for the whole launch.

    ``out_queue``: the ``buffer_num`` out-queue buffers; ``buffers``: tmpBuff blocks by kernel name
    (insertion order = carving order); ``tmp_buff_offset``: where tmpBuff starts; ``tmp_used_bytes``:
    bytes of tmpBuff the blocks use (equals the host's ``tmp_buff_bytes`` when the overlap decisions
    agree); ``used_bytes``: absolute end of the last block; ``allocated_bytes``: what the two
    InitBuffer calls reserve (queue buffers + the whole ``ub_rest_bytes`` TBuf).
    """

    out_queue: tuple[UbBuffer, ...]
    buffers: dict[str, UbBuffer]
    overlap: bool
    tmp_buff_offset: int
    tmp_buff_bytes: int
    tmp_used_bytes: int
    ub_size: int
    #: the prefetch variant's ``inQueue_`` buffers (empty without prefetch)
    in_queue: tuple[UbBuffer, ...] = ()

    @property
    def used_bytes(self) -> int:
        """Absolute UB byte offset where the last tmpBuff block ends."""
        return self.tmp_buff_offset + self.tmp_used_bytes

    @property
    def allocated_bytes(self) -> int:
        """UB bytes the two InitBuffer calls reserve (queue buffers + the whole tmpBuff TBuf)."""
        return self.tmp_buff_offset + self.tmp_buff_bytes

    @property
    def fits(self) -> bool:
        """False when the allocation exceeds UB (buffer_num=2 with the host's one-buffer deduction)."""
        return self.allocated_bytes <= self.ub_size

    def __getitem__(self, name: str) -> UbBuffer:
        return self.buffers[name]

    def init_records(self) -> list[InitBuffer]:
        """The two ``InitBuffer`` records the kernel issues, in order."""
        first = self.out_queue[0]
        records = [InitBuffer(OUT_QUEUE, "VECOUT", len(self.out_queue), first.nbytes)]
        if self.in_queue:
            records.append(InitBuffer(IN_QUEUE, "VECIN", len(self.in_queue), self.in_queue[0].nbytes))
        return [*records, InitBuffer(TMP_BUFF, "VECCALC", 1, self.tmp_buff_bytes)]


def device_overlap(tiling: Tiling, block_num: int | None = None) -> bool:
    """The device's ``vStep_ >= realV_ || ShouldSplitVTiles()`` with ``GetBlockNum() == block_num``
    (default: the host's ``block_dim``)."""
    blocks = tiling.block_dim if block_num is None else block_num
    return tiling.v_step >= tiling.dv or should_split_v_tiles(tiling.dv, tiling.v_step, blocks, tiling.hv)


def _tmp_blocks(tiling: Tiling, overlap: bool) -> list[tuple[str, int, int]]:
    """(name, elements, bytes the running offset advances) in carving order."""
    cs, a_k = tiling.chunk_size, tiling.align_k
    v, s_k = tiling.v_step_aligned, tiling.state_stride_k
    dot = max(s_k, cs)
    blocks = [("chunkKFp32", cs * a_k, cs * a_k), ("kCumdecayFp32", cs * a_k, cs * a_k),
              ("decayMaskFp32", cs * cs, cs * cs), ("chunkVFp32", cs * v, cs * v)]
    if overlap:
        both = max(cs * cs, s_k * v)
        blocks += [("chunkScoresFp32", both, 0), ("stateInFp32", s_k * v, both)]
    else:
        blocks += [("chunkScoresFp32", cs * cs, cs * cs), ("stateInFp32", s_k * v, s_k * v)]
    blocks += [("chunkAttnOutFp32", cs * v, cs * v), ("gCumsumFp32", cs, cs),
               ("deltaFp32", max(dot, v), max(dot, v)), ("dotProductFp32", dot, dot), ("expGCumFp32", cs, cs)]
    if tiling.state_double_buffer:
        blocks.append(("stateNextFp32", s_k * v, s_k * v))
    return [(name, elems, advance * FP32_BYTES) for name, elems, advance in blocks]


def init_local_buffers(tiling: Tiling, overlap: bool | None = None) -> UbLayout:
    """``InitLocalBuffers`` for ``tiling``.

    ``overlap`` is the device's scores/state decision; None means :func:`device_overlap` with the
    host's block_dim.
    """
    if overlap is None:
        overlap = device_overlap(tiling)
    queue = tuple(UbBuffer(f"{OUT_QUEUE}[{i}]", i * tiling.out_queue_bytes, tiling.out_queue_bytes,
                           tiling.out_queue_bytes // 2, "fp16") for i in range(tiling.buffer_num))
    base = tiling.buffer_num * tiling.out_queue_bytes
    in_queue = tuple(UbBuffer(f"{IN_QUEUE}[{i}]", base + i * tiling.in_queue_bytes, tiling.in_queue_bytes,
                              tiling.in_queue_bytes // 2, "fp16") for i in range(tiling.in_queue_buffers))
    base += tiling.in_queue_buffers * tiling.in_queue_bytes
    off = 0
    buffers: dict[str, UbBuffer] = {}
    for name, elems, advance in _tmp_blocks(tiling, overlap):
        buffers[name] = UbBuffer(name, base + off, elems * FP32_BYTES, elems, "fp32")
        off += advance
    return UbLayout(out_queue=queue, buffers=buffers, overlap=overlap, tmp_buff_offset=base,
                    tmp_buff_bytes=tiling.ub_rest_bytes, tmp_used_bytes=off, ub_size=tiling.ub_size,
                    in_queue=in_queue)
