"""The Cube-era chunk, phase by phase, as instruction records (docs/kernel-cube.md §3.1; anchors are
lines of chunk_gated_delta_rule.h at 048d0427).

Each function appends the records of one kernel function to ``out``; ``core`` is a
:class:`~cgdr_des.kernel.cube.layout.CubeCore`, ``ch`` a :class:`cgdr_des.kernel.program.ChunkInfo`
and ``tile`` the V-tile ``(v_i, cv)``. Phases 1-5 and 8a, 8d run on both paths; 6a-8e here are the
Cube fast path (the vector fallback is :mod:`cgdr_des.kernel.cube.fallback`). Stage-slot layouts
(byte offsets in slot 0): attention A_hi @0, Kᵀ @16 KiB, A_lo @32 KiB; KCumdecay A @0, B @8 KiB,
A_lo @24 KiB; ValueAndVNew and Output A @0, B @16 KiB, A_lo @48 KiB; state update A @0, B @16 KiB,
A_lo @32 KiB.
"""

from __future__ import annotations

from cgdr_des.integers import ceil_align, ceil_div
from cgdr_des.isa import AllocTensor, DataCopyParams, FreeTensor
from cgdr_des.kernel.cube import blocks as bk
from cgdr_des.kernel.emit import PB_ALL, PB_V, S_V, UB_LOAD, V_S, dma_in, fetch_sync, gm_load, scalar, vec
from cgdr_des.kernel.tiling import CHUNK_SIZE as CS
from cgdr_des.kernel.tiling import FP32_BYTES

KIB = 1024
OUT_QUEUE = bk.OUT_QUEUE


def load_chunk_key(core, ch, out: list) -> None:
    """LoadChunkKey (.h:771-790): K rows -> chunkK through LoadPaddedRows (staging in chunkV)."""
    sh = core.shape
    bk.load_padded_rows(core, out, ch.L, core.row_addr("key", ch.t_start, ch.qk_head), sh.nk * sh.dk,
                        core.ub["chunkK"], core.ub["chunkV"])


def _slab_ok(core, L: int, elem_bytes: int) -> bool:
    """The coefficient-slab DMA's conditions: L·Nv <= 64·vStep and a whole number of 32-B blocks."""
    n = L * core.shape.nv
    return n <= CS * core.tiling.v_step and n * elem_bytes % 32 == 0


def load_chunk_coefficients(core, ch, out: list) -> None:
    """LoadChunkCoefficients (.h:824-877): β and g slabs [L, Nv] by DMA, the head's column gathered,
    then g's prefix sum as a Hillis-Steele scan (log2 L steps of Muls + Add)."""
    sh, L, ub = core.shape, ch.L, core.ub
    _slab(core, ch, out, "beta", 2, ub["attnOut"])
    out += [vec("Cast", L * sh.nv, ub["chunkV"], ub["attnOut"], src_bytes=2), PB_V,
            vec("CreateVecIndex", CS, ub["delta"]), PB_V, vec("Muls", CS, ub["delta"], ub["delta"]), PB_V,
            vec("Gather", CS, ub["beta"], ub["chunkV"]), PB_V]
    if not sh.has_gamma:
        out += [vec("Duplicate", CS, ub["gCumsum"]), PB_V]
        return
    _slab(core, ch, out, "g", 4, ub["chunkV"])
    out += [vec("Gather", CS, ub["gCumsum"], ub["chunkV"]), PB_V]
    step = 1
    while step < L:
        out += [vec("Muls", CS, ub["delta"], ub["gCumsum"]), PB_V,
                vec("Add", CS - step, ub["gCumsum"] + FP32_BYTES * step, ub["delta"],
                    ub["delta"] + FP32_BYTES * step), PB_V]
        step *= 2


def _slab(core, ch, out: list, tensor: str, elem_bytes: int, dst: int) -> None:
    """One coefficient slab: a contiguous DMA when allowed, else a scalar GM loop (L reads)."""
    sh, L = core.shape, ch.L
    base = core.gm.addr(tensor, ch.t_start * sh.nv)
    if _slab_ok(core, L, elem_bytes):
        fetch_sync(out, "V_MTE2")
        n = L * sh.nv * elem_bytes
        out.append(dma_in(n, DataCopyParams(1, n // 32, 0, 0), base, dst))
        fetch_sync(out, "MTE2_V")
        return
    out.extend(V_S)
    out.extend(gm_load(core.gm.addr(tensor, (ch.t_start + i) * sh.nv + ch.head), elem_bytes) for i in range(L))
    out += [scalar("ub_store", L), *S_V]


def compute_k_beta(core, ch, out: list) -> None:
    """ComputeKBeta (.h:882-912): kβ = β ⊙ K rows -> kCumdecay (Brcb of β, one Mul per 64 columns)."""
    L, a_k, ub = ch.L, core.tiling.align_k, core.ub
    out += [*S_V, vec("Brcb", 8 * L, ub["delta"], ub["beta"]), PB_V,
            vec("Duplicate", L * a_k, ub["kCumdecay"]), PB_V]
    out += [vec("Mul", L * 64, ub["kCumdecay"] + 256 * j, ub["chunkK"] + 256 * j, ub["delta"])
            for j in range(ceil_div(core.shape.dk, 64))]
    out += [PB_V, *V_S]


def prepare_decay_and_exp(core, ch, out: list) -> None:
    """PrepareDecayAndExp (.h:916-953): e^G, the decay mask exp(G_i - G_j) with its strict upper
    triangle set to 0 before the Exp (so it reads exp(0) = 1 there)."""
    L, ub = ch.L, core.ub
    g, e, d = ub["gCumsum"], ub["expGCum"], ub["decayMask"]
    out += [vec("Muls", CS, g, g), PB_V, vec("Exp", CS, e, g), PB_V, vec("Muls", L * CS, d, g), PB_V,
            vec("Brcb", 8 * CS, ub["delta"], g), PB_V, vec("Add", L * CS, d, d, ub["delta"]), PB_V]
    out += [vec("Duplicate", L - 1 - i, d + FP32_BYTES * (i * CS + i + 1)) for i in range(L - 1)]
    out += [PB_V, vec("Exp", L * CS, d, d), PB_V, *V_S]


def prepare_attn_query_cache(core, ch, out: list) -> None:
    """PrepareAttnQueryCache (.h:965-974): Q rows -> attnOut, then ×scale."""
    sh, ub = core.shape, core.ub
    bk.load_padded_rows(core, out, ch.L, core.row_addr("query", ch.t_start, ch.qk_head), sh.nk * sh.dk,
                        ub["attnOut"], ub["chunkV"])
    n = ch.L * core.tiling.align_k
    out += [vec("Muls", n, ub["attnOut"], ub["attnOut"]), PB_V]


def transpose_k(core, out: list, src: int) -> None:
    """Cast to fp16 in the queue buffer, then 4 TransDataTo5HD (D/16 repeats of 16x16 blocks)."""
    D, q0 = core.tiling.bucket, core.out_queue
    out += [vec("Cast", CS * D, q0, src, dst_bytes=2), PB_V]
    out += [vec("TransDataTo5HD", 16 * D, core.ub["chunkV"], q0, dtype="fp16", dst_bytes=2, src_bytes=2)] * 4
    out.append(PB_V)


def attn_products_cube(core, ch, out: list) -> None:
    """ComputeAttnProductsCube<D> (.h:1035-1172): Kᵀ staged once, kβ·Kᵀ and (Q·scale)·Kᵀ as two-term
    products (Kᵀ resident in L0B for the second), each drained; then B = -(kβKᵀ ⊙ D), M = QKᵀ ⊙ D
    and their upper triangles cleared."""
    D, ub, s0, s1 = core.tiling.bucket, core.ub, core.slot(0), core.slot(1)
    out.append(AllocTensor(OUT_QUEUE))
    transpose_k(core, out, ub["chunkK"])
    fetch_sync(out, "V_MTE3")
    out += [bk.stage_dma(D * CS, s0 + 16 * KIB, ub["chunkV"]), FreeTensor(OUT_QUEUE)]
    bk.shwr(core, out, CS * D, ub["kCumdecay"], s0, s0 + 32 * KIB)
    out.append(PB_ALL)
    bk.pair(out, CS, CS, D, s0, s0 + 32 * KIB, s0 + 16 * KIB, close=False)
    bk.shwr(core, out, CS * D, ub["attnOut"], s1, s1 + 32 * KIB)  # overlaps Mmad #2
    bk.literal_sync(out, "M_MTE1")
    bk.drain(core, out, CS, CS, ub["scores"], ub["chunkV"])
    fetch_sync(out, "MTE3_MTE2")
    bk.pair(out, CS, CS, D, s1, s1 + 32 * KIB, None)
    bk.drain(core, out, CS, CS, ub["attnOut"], ub["chunkV"])
    sc, dm = ub["scores"], ub["decayMask"]
    out += [vec("Mul", CS * CS, sc, sc, dm), PB_V, vec("Muls", CS * CS, sc, sc),
            vec("Mul", CS * CS, dm, ub["attnOut"], dm), PB_V]
    out += [vec("Duplicate", CS - i, sc + FP32_BYTES * (i * CS + i)) for i in range(CS)]
    out += [vec("Duplicate", CS - 1 - i, dm + FP32_BYTES * (i * CS + i + 1)) for i in range(CS - 1)]
    out.extend(V_S)


def _diagonal_block(core, out: list, buf: int) -> None:
    """DiagonalBlock (.h:531-567): (I - B)^-1 of one 16x16 block by 15 Gather/Brcb/MulAddDst steps."""
    inv = core.ub["chunkV"]
    out += [vec("Duplicate", 256, inv), *V_S, scalar("ub_store", 32), *S_V]
    for k in range(15):
        n = 15 - k
        out += [vec("Gather", n, core.ub["delta"], buf + FP32_BYTES * (k * CS + k)), PB_V,
                vec("Brcb", ceil_align(n, 8), core.ub["dotProduct"], core.ub["delta"]), PB_V,
                vec("MulAddDst", 16 * n, inv + 64 * (k + 1), core.ub["dotProduct"], inv + 64 * k), PB_V]
    out += [vec("Muls", 16, buf + FP32_BYTES * r * CS, inv + 64 * r) for r in range(16)]
    out.append(PB_V)


def _block_copy(core, out: list, rows: int, per_row: int, buf: int) -> None:
    """The V copies between the scores buffer and the MBFC operands (``rows * per_row`` Muls)."""
    src = core.ub["chunkV"] + 1024
    out += [vec("Muls", rows, src + FP32_BYTES * j * rows, buf + FP32_BYTES * j * CS) for j in range(rows * per_row)]
    out.append(PB_V)


def _blocked(core, out: list, size: int, buf: int) -> None:
    """ComputeRecursiveAttnBlocked<size>: the two diagonal halves, then U10 = U11·(B10·U00) by two
    compensated products, each operand copied out and the result copied back."""
    h = size // 2
    for half in (buf, buf + FP32_BYTES * (h * CS + h)):
        if h == 16:
            _diagonal_block(core, out, half)
        else:
            _blocked(core, out, h, half)
    a, b, prod = (core.ub["chunkV"] + j * FP32_BYTES * h * h for j in (0, 1, 4))
    _block_copy(core, out, h, 2, buf)
    bk.mbfc(core, out, h, a, b, prod)
    _block_copy(core, out, h, 1, buf)
    bk.mbfc(core, out, h, a, prod, prod)
    _block_copy(core, out, h, 1, buf)


def inverse_blocked(core, ch, out: list) -> None:
    """ComputeRecursiveAttnBlocked64 (.h:605-634): T = (I - B)^-1 in place in the scores buffer."""
    _blocked(core, out, CS, core.ub["scores"])


def unit_diagonal(core, ch, out: list) -> None:
    """The diagonal T_ii = 1 (.h:985-987): L scalar UB writes (no V -> S before them)."""
    out.append(scalar("ub_store", ch.L))


def scale_k_beta_rows(core, ch, out: list) -> None:
    """kβ_i ×= e^{G_i}: one scalar read and one Muls per row, no barrier between them; then V -> S."""
    dk, a_k, kb = core.shape.dk, core.tiling.align_k, core.ub["kCumdecay"]
    for i in range(ch.L):
        out += [UB_LOAD, vec("Muls", dk, kb + FP32_BYTES * i * a_k, kb + FP32_BYTES * i * a_k)]
    out.extend(V_S)


def copy_lower(core, out: list, dst: int, src: int) -> None:
    """Copy a 64x64 matrix and clear its strict upper triangle (Muls, then 63 Dup)."""
    out += [vec("Muls", CS * CS, dst, src), PB_V]
    out += [vec("Duplicate", CS - 1 - i, dst + FP32_BYTES * (i * CS + i + 1)) for i in range(CS - 1)]
    out.append(PB_V)


def k_cumdecay_cube(core, ch, out: list) -> None:
    """ComputeKCumdecay -> ComputeKCumdecayCube<D> (.h:1195-1307): K_cd = T·(kβ ⊙ e^G), T hi/lo and
    the B side fp16 hi only."""
    D, ub, s0 = core.tiling.bucket, core.ub, core.slot(0)
    scale_k_beta_rows(core, ch, out)
    out.extend(S_V)
    copy_lower(core, out, ub["attnOut"], ub["scores"])
    bk.shwr(core, out, CS * CS, ub["attnOut"], s0, s0 + 24 * KIB)
    bk.sh(core, out, CS * D, ub["kCumdecay"], s0 + 8 * KIB)
    out.append(PB_ALL)
    bk.pair(out, CS, D, CS, s0, s0 + 24 * KIB, s0 + 8 * KIB)
    bk.drain(core, out, CS, D, ub["chunkK"], ub["chunkV"])
