"""UB layout and per-core context of the Cube-era kernel (src .h:144-215, docs/kernel-cube.md §1.2).

UB: ``stateOutQueue_`` (VECOUT, one buffer) from offset 0, then the ``tmpBuff`` TBuf carved into 12
fp32 views in this order (elements; cs = 64, aK = alignK, aV = CeilAlign(vStep, 8), sK = aK):
chunkK cs·aK, kCumdecay cs·aK, decayMask cs², chunkV cs·aV, scores / stateIn max(cs², sK·aV) (always
overlapped), attnOut cs·aV, gCumsum cs, delta max(sK, cs, aV), dotProduct max(sK, cs), expGCum cs,
beta cs. L1 / L0 are not TPipe buffers: each Cube function allocates them from offset 0.
"""

from __future__ import annotations

from cgdr_des.integers import ceil_align
from cgdr_des.isa import InitBuffer
from cgdr_des.kernel.tiling import CHUNK_SIZE, FP32_BYTES

OUT_QUEUE = "stateOutQueue_"
TMP_BUFF = "tmpBuff"


def tmp_views(tiling) -> list[tuple[str, int]]:
    """``(name, elements)`` of the tmpBuff views in carving order; stateIn shares scores' offset."""
    cs, a_k = CHUNK_SIZE, tiling.align_k
    a_v = ceil_align(tiling.v_step, 8)
    return [("chunkK", cs * a_k), ("kCumdecay", cs * a_k), ("decayMask", cs * cs), ("chunkV", cs * a_v),
            ("scores", max(cs * cs, a_k * a_v)), ("attnOut", cs * a_v), ("gCumsum", cs),
            ("delta", max(a_k, cs, a_v)), ("dotProduct", max(a_k, cs)), ("expGCum", cs), ("beta", cs)]


def cube_layout(tiling) -> dict[str, int]:
    """Absolute UB byte offset of every view (``stateIn`` = ``scores``; ``end`` = tmpBuff bytes used
    + the queue; ``residual`` = the scratch the hi/lo staging casts through, chunkV)."""
    off = tiling.out_queue_bytes
    ub: dict[str, int] = {}
    for name, elems in tmp_views(tiling):
        ub[name] = off
        off += elems * FP32_BYTES
    ub["stateIn"] = ub["scores"]
    ub["residual"] = ub["chunkV"]
    ub["end"] = off
    return ub


def init_records(tiling) -> list[InitBuffer]:
    """The two InitBuffer calls of InitLocalBuffers."""
    return [InitBuffer(OUT_QUEUE, "VECOUT", 1, tiling.out_queue_bytes),
            InitBuffer(TMP_BUFF, "VECCALC", 1, tiling.ub_rest_bytes)]


class CubeCore:
    """One core's program context: the launch, its tiling, UB offsets, the stage slots' GM addresses,
    whether loops may stay isa.Repeat records (``compress``) and the kernel variant (``pre1174``)."""

    def __init__(self, launch, block_idx: int, *, compress: bool = False, emit: bool = True) -> None:
        self.launch, self.tiling, self.shape = launch, launch.tiling, launch.shape
        self.block_idx, self.compress, self.emit = block_idx, compress, emit
        self.pre1174 = launch.tiling.kernel_version == "cube-pre1174"
        self.ub = cube_layout(launch.tiling)
        self.out_queue = 0
        self.gm = launch.gm
        self.numerics = "off"  # the numbers are computed apart (numerics.compute_outputs)

    def slot(self, s: int) -> int:
        """GM byte address of this core's stage slot ``s``."""
        return self.gm.base["workspace"] + self.tiling.slot_offset(self.block_idx, s)

    def row_addr(self, tensor: str, t: int, head: int) -> int:
        """GM byte address of token ``t``'s row of ``tensor`` for ``head`` (q/k: its q/k head)."""
        sh = self.shape
        heads, width = (sh.nk, sh.dk) if tensor in ("query", "key") else (sh.nv, sh.dv)
        return self.gm.addr(tensor, (t * heads + head) * width)
