"""Host tiling of the Cube-era kernel (final four-bucket tiling of merge request !1174, docs/kernel-cube.md §2).

What the host decides before launch:

- the compiled bucket ``D = SelectCubeDk(dk)``: 64, 80, 96 or 128 (0 for dk > 128, which runs in the
  96 instance with ``alignK = CeilAlign(dk, 16)``), and its ``tilingKey`` (0, 1, 2, 3; key 2 is the
  default and takes both 96 and dk > 128);
- ``alignK``: the bucket width (every K/Q row is zero-padded to it), or ``CeilAlign(dk, 16)``;
- ``SolveVStep``: the preferred width ``D`` if ``tmpBuff + outQueue`` fits UB (never clamped to dv),
  else the greedy walk ``CeilAlign(dv, 16), -16, ..., 16``;
- ``blockDim = min(B * Nv * vTiles, aivNum)``: batch, heads and V-tiles are all work items;
- the workspace: the fp32 state region ``B * Nv * dk * CeilAlign(dv, 8) * 4`` followed by two 64 KiB
  stage slots per core, ``max(32 MiB, state + blockDim * 128 KiB)``.

Units: bytes for every ``*_bytes`` field, elements for the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgdr_des.errors import InputError
from cgdr_des.integers import ceil_align, ceil_div
from cgdr_des.kernel.tiling import (
    CHUNK_SIZE,
    FP16_BYTES,
    FP16_NUM_PER_BLOCK,
    FP32_BYTES,
    FP32_NUM_PER_BLOCK,
    INT32_MAX,
    WORKSPACE_FLOOR_BYTES,
)

#: (largest dk, bucket width D, tilingKey) of the compiled instances, smallest first
BUCKETS = ((64, 64, 0), (80, 80, 1), (96, 96, 2), (128, 128, 3))
#: the default key: the 96 instance, which also runs every dk > 128 (cubeDk = 0)
DEFAULT_KEY = 2
GENERIC_BUCKET = 96
STAGE_SLOT_BYTES = 64 * 1024  # the device's literal 64*1024 (.h:38)
STAGE_SLOTS_PER_CORE = 2
CUBE_KERNEL_VERSIONS = ("cube", "cube-pre1174")


def select_cube_dk(dk: int) -> int:
    """``SelectCubeDk``: the bucket width of ``dk`` (64, 80, 96, 128), or 0 when dk > 128."""
    for top, width, _ in BUCKETS:
        if dk <= top:
            return width
    return 0


def tiling_key(cube_dk: int) -> int:
    """``TILING_KEY``: 0 <-> 64, 1 <-> 80, 3 <-> 128, and the default 2 for 96 and for cubeDk = 0."""
    for _, width, key in BUCKETS:
        if cube_dk == width:
            return key
    return DEFAULT_KEY


def instance_width(cube_dk: int) -> int:
    """``kSpecializedDk`` of the instance the key selects (dk > 128 runs in the 96 instance)."""
    return cube_dk or GENERIC_BUCKET


def align_k(dk: int, cube_dk: int) -> int:
    """``alignK = (cubeDk == 0) ? CeilAlign(dk, 16) : cubeDk``."""
    return ceil_align(dk, FP16_NUM_PER_BLOCK) if cube_dk == 0 else cube_dk


def tmp_buff_bytes(v_step: int, a_k: int, chunk_size: int = CHUNK_SIZE) -> int:
    """tmpBuff bytes for a candidate vStep: chunkK + kCumdecay (cs*aK each), decayMask (cs^2), chunkV
    + attnOut (cs*aV each), gCumsum, delta max(sK, cs, aV), dotProduct max(sK, cs), expGCum, beta, and
    the scores/state pair always overlapped, max(cs^2, sK*aV)."""
    cs, a_v, s_k = chunk_size, ceil_align(v_step, FP32_NUM_PER_BLOCK), a_k
    elems = (2 * cs * a_k + cs * cs + 2 * cs * a_v + cs + max(s_k, cs, a_v) + max(s_k, cs)
             + cs + cs + max(cs * cs, s_k * a_v))
    return elems * FP32_BYTES


def out_queue_bytes(v_step: int, a_k: int, chunk_size: int = CHUNK_SIZE) -> int:
    """``stateOutQueue_``: the fp16 staging of the largest UB->GM write, max(sK*aV, cs*aV) * 2."""
    a_v = ceil_align(v_step, FP32_NUM_PER_BLOCK)
    return max(a_k * a_v, chunk_size * a_v) * FP16_BYTES


def ub_need_bytes(v_step: int, a_k: int) -> int:
    """What one vStep needs of UB: tmpBuff plus the out-queue."""
    return tmp_buff_bytes(v_step, a_k) + out_queue_bytes(v_step, a_k)


def solve_v_step(dv: int, a_k: int, cube_dk: int, ub_size: int) -> int | None:
    """``SolveVStep``: ``cubeDk`` when it fits (not clamped to dv), else the greedy walk from
    ``CeilAlign(dv, 16)`` down by 16; None when not even 16 fits."""
    if cube_dk and ub_need_bytes(cube_dk, a_k) <= ub_size:
        return cube_dk
    for vs in range(ceil_align(dv, FP16_NUM_PER_BLOCK), 0, -FP16_NUM_PER_BLOCK):
        if ub_need_bytes(vs, a_k) <= ub_size:
            return vs
    return None


def state_region_bytes(batch: int, hv: int, dk: int, dv: int) -> int:
    """The fp32 chunk-to-chunk state at the start of the workspace (real dk, not alignK)."""
    return batch * hv * dk * ceil_align(dv, FP32_NUM_PER_BLOCK) * FP32_BYTES


def stage_slot_offset(state_bytes: int, block_idx: int, slot: int) -> int:
    """Workspace byte offset of stage slot ``slot`` (0 or 1) of core ``block_idx`` (.h:261-267)."""
    return state_bytes + (block_idx * STAGE_SLOTS_PER_CORE + slot) * STAGE_SLOT_BYTES


@dataclass(frozen=True)
class CubeTiling:
    """The host's decision for the Cube-era kernel. Field names follow the vector kernel's
    :class:`cgdr_des.kernel.tiling.Tiling` where the meaning is the same."""

    t: int
    hqk: int
    dk: int
    hv: int
    dv: int
    batch: int
    ub_size: int
    aiv_num: int
    has_gamma: bool
    cube_dk: int
    bucket: int
    tiling_key: int
    align_k: int
    v_step: int
    v_tile_count: int
    tmp_buff_bytes: int
    out_queue_bytes: int
    ub_rest_bytes: int
    work_items: int
    block_dim: int
    state_region_bytes: int
    workspace_bytes: int
    chunk_size: int = CHUNK_SIZE
    buffer_num: int = 1
    kernel_version: str = "cube"

    @property
    def v_step_aligned(self) -> int:
        """``vStepAligned_ = CeilAlign(vStep, 8)`` (the device's avFp32 too)."""
        return ceil_align(self.v_step, FP32_NUM_PER_BLOCK)

    @property
    def split(self) -> bool:
        """``ShouldSplitVTiles``: dv > vStep (no core-count condition in the Cube era)."""
        return self.dv > self.v_step

    @property
    def num_chunks(self) -> int:
        return ceil_div(self.t, self.chunk_size)

    def slot_offset(self, block_idx: int, slot: int) -> int:
        """Workspace offset of one core's stage slot."""
        return stage_slot_offset(self.state_region_bytes, block_idx, slot)


def compute_cube_tiling(*, t: int, hqk: int, dk: int, hv: int, dv: int, batch: int, ub_size: int,
                        aiv_num: int, has_gamma: bool = True, kernel_version: str = "cube") -> CubeTiling:
    """The Cube-era host tiling for one launch; InputError when no vStep fits UB."""
    for name, value, low in (("t", t, 0), ("hqk", hqk, 1), ("dk", dk, 1), ("hv", hv, 1), ("dv", dv, 1),
                             ("batch", batch, 1), ("ub_size", ub_size, 1), ("aiv_num", aiv_num, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InputError(name, value, f"an integer >= {low}")
    if t > INT32_MAX:
        raise InputError("t", t, f"at most {INT32_MAX} tokens (int32 on the device)")
    if kernel_version not in CUBE_KERNEL_VERSIONS:
        raise InputError("kernel_version", kernel_version, f"one of {', '.join(CUBE_KERNEL_VERSIONS)}")
    cube_dk = select_cube_dk(dk)
    a_k = align_k(dk, cube_dk)
    v_step = solve_v_step(dv, a_k, cube_dk, ub_size)
    if v_step is None:
        raise InputError("ub_size", ub_size, f"no vStep fits the Cube-era layout for dk={dk}, dv={dv}: "
                                             f"even vStep=16 needs {ub_need_bytes(16, a_k)} bytes")
    tiles = ceil_div(dv, v_step)
    items = batch * hv * tiles
    block_dim = max(1, min(items, aiv_num))
    state = state_region_bytes(batch, hv, dk, dv)
    oq = out_queue_bytes(v_step, a_k)
    return CubeTiling(
        t=t, hqk=hqk, dk=dk, hv=hv, dv=dv, batch=batch, ub_size=ub_size, aiv_num=aiv_num,
        has_gamma=bool(has_gamma), cube_dk=cube_dk, bucket=instance_width(cube_dk),
        tiling_key=tiling_key(cube_dk), align_k=a_k, v_step=v_step, v_tile_count=tiles,
        tmp_buff_bytes=tmp_buff_bytes(v_step, a_k), out_queue_bytes=oq, ub_rest_bytes=ub_size - oq,
        work_items=items, block_dim=block_dim, state_region_bytes=state,
        workspace_bytes=max(WORKSPACE_FLOOR_BYTES, state + block_dim * STAGE_SLOTS_PER_CORE * STAGE_SLOT_BYTES),
        kernel_version=kernel_version)


def is_cube_fast_path(tiling: CubeTiling, L: int) -> bool:
    """``IsCubeFastPath`` (.h:269-274): dk <= D, a full chunk, vStepAligned == D (= avFp32)."""
    return tiling.dk <= tiling.bucket and L == CHUNK_SIZE and tiling.v_step_aligned == tiling.bucket


def attn_matrix_cube(tiling: CubeTiling, L: int) -> bool:
    """The Cube attention products' gate (.h:981-982)."""
    va = tiling.v_step_aligned
    return tiling.dk <= tiling.bucket and L == CHUNK_SIZE and va >= tiling.bucket and tiling.align_k <= va


def blocked_inverse_cube(tiling: CubeTiling, L: int) -> bool:
    """The blocked Cube inverse's gate (.h:640-641): it does not test dk."""
    return L == CHUNK_SIZE and tiling.v_step_aligned >= tiling.bucket


def k_cumdecay_cube(tiling: CubeTiling, L: int) -> bool:
    """The Cube K_cd product's gate (.h:1205)."""
    return tiling.dk <= tiling.bucket and L == CHUNK_SIZE and tiling.v_step_aligned >= tiling.bucket
