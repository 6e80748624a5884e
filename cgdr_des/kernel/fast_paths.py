"""The DMA fast-path predicates that Phase 1, PrepareAttnQueryCache and the prefetch's staging share
(chunk_gated_delta_rule.h LoadChunkKey, CanCacheAttnQuery): one module both ``phases.py`` and
``overlap.py`` import, so neither imports the other for them."""

from __future__ import annotations

from cgdr_des.kernel.launch import CHUNK_SIZE as CS

#: DataCopyParams' blockCount, blockLen and stride fields are uint16
UINT16_MAX = 65535


def qk_dma_fast(core, L: int) -> bool:
    """Phase 1's fast-path conditions (also the first half of CanCacheAttnQuery). Under prefetch the
    rows are staged in inQueue_, sized for them, so the staging-fits-chunkVFp32 condition drops."""
    sh = core.shape
    gap_bytes = (sh.nk * sh.dk - sh.dk) * 2
    staging_fits = L * sh.dk <= 2 * CS * core.v_aligned or getattr(getattr(core, "tiling", None), "prefetch", False)
    return (L <= UINT16_MAX and staging_fits and sh.align_k == sh.dk
            and sh.dk * 2 % 32 == 0 and gap_bytes % 32 == 0 and gap_bytes // 32 <= UINT16_MAX)


def can_cache_attn_query(core, L: int) -> bool:
    """CanCacheAttnQuery: Phase 1's DMA conditions and L*dk <= cs*V (Q fits chunkAttnOutFp32)."""
    return qk_dma_fast(core, L) and L * core.shape.dk <= CS * core.v_aligned
