"""Host tiling of the vector-only kernel, as ``op_host/chunk_gated_delta_rule_tiling.cpp`` (commit 00e39ab5).

What the host decides before launch (docs/kernel.md §3):

- ``SolveVStep``: the largest V-tile width ``vStep`` (from ``CeilAlign(dv, 16)`` down to 16, step 16)
  whose ``ComputeTmpBuffBytes + ComputeOutQueueBytes`` fits in UB;
- ``allowScoresStateOverlap = hv < aivNum``: with spare cores each core owns one V-tile, so the
  attention-score block and the state tile may share UB;
- ``workItems = hv * vTileCount`` if ``hv < aivNum and vTileCount > 1`` else ``hv`` (batch not
  included in !1108); ``blockDim = max(1, min(workItems, aivNum))``;
- ``ubRestBytes = ubSize - outQueueBytes``: every UB byte not used by the out-queue goes to tmpBuff;
- workspace ``max(B * hv * dk * CeilAlign(dv, 8) * 4, 32 MiB)``.

Units: bytes for every ``*_bytes`` field, elements for the rest.

``buffer_num``: the source has ``BUFFER_NUM = 1``. A double-buffered variant (``buffer_num = 2``)
allocates two out-queue buffers on the device, so its host must deduct two: by default the host
accounting goes with the variant (``host_queue_buffers = buffer_num``: SolveVStep checks
``tmp + buffer_num * outQueue <= ubSize`` and ``ubRestBytes = ubSize - buffer_num * outQueue``).
``host_queue_buffers = 1`` with ``buffer_num = 2`` reproduces what flipping only the device constant
would do (docs/kernel.md §7.4): the host still deducts one buffer, :attr:`Tiling.device_ub_bytes`
exceeds UB, and the machine reports the UB over-allocation instead of simulating it.

Double-buffering variants (docs/double-buffering.md §1): ``prefetch`` adds a ``TQue<VECIN, 2>``
(``inQueue_``) whose buffers stage the fp16 K, Q and V of the next chunk; ``state_double_buffer``
adds a second FP32 state tile (``stateNextFp32``, a tmpBuff block). By default the host deducts
what a variant adds before SolveVStep, so vStep may drop; ``keep_tiling`` keeps the baseline's
vStep (SolveVStep with one out-queue buffer and no variant) and, when the variant's buffers then
exceed UB, :func:`static_diagnostics` reports by how many bytes instead of simulating it.

Code-change variants (docs/kernel.md §5.y, :data:`CODE_FIELDS`): ``sub``, ``state_rows``,
``state_load``, ``query_rows``, ``state_store``, ``attn_dots`` change instructions, not buffers. Each
reuses UB the baseline already carves and leaves idle at that moment, so the host deducts nothing for
them and vStep is the baseline's; :func:`code_variant_ub` says which block each reuses and the host
checks that what it puts there fits. A shape on which a variant's DMA cannot be written (a field out
of its hardware range, a row not a whole number of 32-byte blocks) is a KernelDiagnostic from
:func:`static_diagnostics`, not a silent fallback to the source's code.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

from cgdr_des.errors import InputError, KernelDiagnostic
from cgdr_des.integers import ceil_align, ceil_div

FP16_NUM_PER_BLOCK = 16  # fp16 elements per 32-byte block; also the vStep search step
FP32_NUM_PER_BLOCK = 8
CHUNK_SIZE = 64  # kDefaultChunkSize: fixed in v1, not an attribute
WORKSPACE_FLOOR_BYTES = 32 * 1024 * 1024  # kWorkspaceBytes
DOT_INPLACE_LIMIT = 512  # DotFp32's partial sums land at 8r < 64, so at most 8 full repeats of 64
INT32_MAX = 2**31 - 1    # t, lengths and token offsets are int32 on the device
UINT16_MAX = 65535       # DataCopyParams' blockLen and stride fields
MAX_BLOCK_COUNT = 4095   # DataCopyParams' blockCount

#: the code-change variants' ``[kernel]`` fields: (the source's value, the variant's value)
CODE_FIELDS = {"sub": (False, True), "state_rows": ("rows", "2d"), "state_load": ("scalar", "dma"),
               "query_rows": ("gm", "ub"), "state_store": ("scalar", "dma"), "attn_dots": ("each", "row")}
MAX_GM_BYTES = 2**48     # a 48-bit device address space: no workspace past it can be allocated
FP32_BYTES = 4
FP16_BYTES = 2


def compute_tmp_buff_bytes(v_step: int, dv: int, dk: int, allow_overlap: bool,
                           chunk_size: int = CHUNK_SIZE) -> int:
    """``ComputeTmpBuffBytes``: bytes of the FP32 tmpBuff blocks for a candidate ``v_step``.

    chunkK + kCumdecay (cs * alignK each), decayMask (cs * cs), chunkV + chunkAttnOut (cs * av each),
    gCumsum and expGCum (cs each), delta (max(sK, cs, av)), dotProduct (max(sK, cs)), and the scores
    (cs * cs) / state (sK * av) pair, overlapped to their max when ``v_step >= dv or allow_overlap``.
    """
    cs = chunk_size
    av = ceil_align(v_step, FP32_NUM_PER_BLOCK)
    align_k = ceil_align(dk, FP16_NUM_PER_BLOCK)
    s_k = ceil_align(dk, FP32_NUM_PER_BLOCK)
    dot_elems = max(s_k, cs)
    delta_elems = max(dot_elems, av)
    fixed = 2 * cs * align_k + cs * cs + cs + dot_elems + cs
    v_part = 2 * cs * av + delta_elems
    scores, state = cs * cs, s_k * av
    pair = max(scores, state) if (v_step >= dv or allow_overlap) else scores + state
    return (fixed + v_part + pair) * FP32_BYTES


def compute_out_queue_bytes(v_step: int, dk: int, chunk_size: int = CHUNK_SIZE) -> int:
    """``ComputeOutQueueBytes``: the fp16 staging of a state tile [sK, av] or an output tile [cs, av]."""
    av = ceil_align(v_step, FP32_NUM_PER_BLOCK)
    s_k = ceil_align(dk, FP32_NUM_PER_BLOCK)
    return max(s_k * av, chunk_size * av) * FP16_BYTES


def compute_in_queue_bytes(v_step: int, dk: int, chunk_size: int = CHUNK_SIZE) -> int:
    """One ``inQueue_`` buffer of the prefetch variant: the fp16 K and Q rows of a chunk
    (``cs * alignK`` each), the fp16 V rows of its first tile (``cs * av``) and, for a head's first
    chunk, that tile's initial state as it lies in GM (``av`` rows of ``alignK``)."""
    av, a_k = ceil_align(v_step, FP32_NUM_PER_BLOCK), ceil_align(dk, FP16_NUM_PER_BLOCK)
    return (2 * chunk_size * a_k + chunk_size * av + av * a_k) * FP16_BYTES


def compute_state_next_bytes(v_step: int, dk: int) -> int:
    """``stateNextFp32`` of the state double buffer: a second FP32 state tile [sK, av]."""
    return ceil_align(dk, FP32_NUM_PER_BLOCK) * ceil_align(v_step, FP32_NUM_PER_BLOCK) * FP32_BYTES


def variant_extra_bytes(v_step: int, dk: int, prefetch: bool, state_double_buffer: bool) -> int:
    """UB the prefetch queue (two buffers) and the second state tile add to the baseline's."""
    return ((2 * compute_in_queue_bytes(v_step, dk) if prefetch else 0)
            + (compute_state_next_bytes(v_step, dk) if state_double_buffer else 0))


def solve_v_step(dv: int, dk: int, ub_size: int, allow_overlap: bool,
                 chunk_size: int = CHUNK_SIZE, queue_buffers: int = 1, prefetch: bool = False,
                 state_double_buffer: bool = False) -> int | None:
    """``SolveVStep``: the largest 16-multiple ``vs <= CeilAlign(dv, 16)`` that fits, or None.

    The source's trailing ``if (vStep > dv) vStep = CeilAlign(dv, 16)`` is dead code (the search
    starts at that value), so it is not repeated here.

    The source walks down from ``CeilAlign(dv, 16)``; chunkV and chunkAttnOut alone take
    ``2 * chunk_size * vStep * 4`` bytes, so no width above ``ub_size / (8 * chunk_size)`` can fit
    and the walk starts at most there: the same answer in at most ``ub_size / 8 / chunk_size / 16``
    steps, whatever dv is.
    """
    top = ceil_align(dv, FP16_NUM_PER_BLOCK)
    start = min(top, ceil_align(ub_size // (2 * chunk_size * FP32_BYTES) + 1, FP16_NUM_PER_BLOCK))
    for vs in range(start, 0, -FP16_NUM_PER_BLOCK):
        need = (compute_tmp_buff_bytes(vs, dv, dk, allow_overlap, chunk_size)
                + queue_buffers * compute_out_queue_bytes(vs, dk, chunk_size)
                + variant_extra_bytes(vs, dk, prefetch, state_double_buffer))
        if need <= ub_size:
            return vs
    return None


@dataclass(frozen=True)
class Tiling:
    """The host's tiling decision (``ChunkGatedDeltaRuleTilingData`` plus blockDim and workspace).

    Shape fields echo the inputs: ``t`` (total tokens), ``hqk``, ``dk``, ``hv``, ``dv``, ``batch``.
    ``tmp_buff_bytes`` is the tmpBuff size the chosen vStep needs (the debug log's ``tbuf``; with
    ``state_double_buffer`` it includes ``stateNextFp32``), while ``ub_rest_bytes`` is what the
    device actually gives tmpBuff (all UB left after the out-queue and, with ``prefetch``, the
    in-queue). ``in_queue_bytes`` is one in-queue buffer (0 without prefetch).
    """

    t: int
    hqk: int
    dk: int
    hv: int
    dv: int
    batch: int
    ub_size: int
    aiv_num: int
    has_gamma: bool
    buffer_num: int
    chunk_size: int
    num_chunks: int
    pad_size: int
    align_k: int
    v_step: int
    v_tile_count: int
    allow_scores_state_overlap: bool
    overlap_scores_state: bool
    tmp_buff_bytes: int
    out_queue_bytes: int
    ub_rest_bytes: int
    work_items: int
    block_dim: int
    workspace_bytes: int
    keep_tiling: bool = False
    prefetch: bool = False
    state_double_buffer: bool = False
    in_queue_bytes: int = 0
    #: code-change variants (docs/kernel.md §5.y): no UB of their own, see :func:`code_variant_ub`
    sub: bool = False
    state_rows: str = "rows"
    state_load: str = "scalar"
    query_rows: str = "gm"
    state_store: str = "scalar"
    attn_dots: str = "each"

    @property
    def state_stride_k(self) -> int:
        """``stateStrideK_ = CeilAlign(dk, 8)``: row count of the state tile in UB."""
        return ceil_align(self.dk, FP32_NUM_PER_BLOCK)

    @property
    def v_step_aligned(self) -> int:
        """``vStepAligned_ = CeilAlign(vStep, 8)``: UB row stride of every V-wide FP32 block."""
        return ceil_align(self.v_step, FP32_NUM_PER_BLOCK)

    @property
    def device_ub_bytes(self) -> int:
        """UB the device allocates: ``buffer_num`` out-queue buffers plus the ``ub_rest_bytes`` TBuf."""
        return self.buffer_num * self.out_queue_bytes + self.in_queue_buffers * self.in_queue_bytes + self.ub_rest_bytes

    @property
    def in_queue_buffers(self) -> int:
        """Buffers of the prefetch in-queue (``TQue<VECIN, 2>``; 0 without prefetch)."""
        return 2 if self.prefetch else 0

    @property
    def ub_needed_bytes(self) -> int:
        """UB the device's buffers need: the out- and in-queue buffers plus the tmpBuff blocks."""
        return (self.buffer_num * self.out_queue_bytes + self.in_queue_buffers * self.in_queue_bytes
                + self.tmp_buff_bytes)

    @property
    def ub_shortfall_bytes(self) -> int:
        """How many bytes ``ub_needed_bytes`` exceeds ``ub_size`` by (0 when the variant fits)."""
        return max(0, self.ub_needed_bytes - self.ub_size)

    @property
    def ub_overflow_bytes(self) -> int:
        """How far ``device_ub_bytes`` exceeds ``ub_size`` (0 when it fits; > 0 with buffer_num=2)."""
        return max(0, self.device_ub_bytes - self.ub_size)


def _positive(name: str, value: object, minimum: int = 1) -> int:
    try:
        number = operator.index(value)
    except TypeError:
        raise InputError(name, value, f"an integer >= {minimum}") from None
    if isinstance(value, bool) or number < minimum:
        raise InputError(name, value, f"an integer >= {minimum}")
    return number


def compute_tiling(*, t: int, hqk: int, dk: int, hv: int, dv: int, batch: int, ub_size: int, aiv_num: int,
                   has_gamma: bool = True, buffer_num: int = 1, host_queue_buffers: int | None = None,
                   keep_tiling: bool = False, prefetch: bool = False,
                   state_double_buffer: bool = False, sub: bool = False, state_rows: str = "rows",
                   state_load: str = "scalar", query_rows: str = "gm", state_store: str = "scalar",
                   attn_dots: str = "each") -> Tiling:
    """``ChunkGatedDeltaRuleTilingFunc``: the tiling for one launch. Raises InputError on bad input.

    ``t`` may be 0 (every sequence empty); the other dims, ``ub_size`` and ``aiv_num`` must be
    positive; ``buffer_num`` is 1 (the source) or 2. When no vStep fits UB the host returns
    GRAPH_FAILED; here that is an InputError naming the shape and ``ub_size``. ``keep_tiling``,
    ``prefetch``, ``state_double_buffer``: the double-buffering variants; ``sub``, ``state_rows``,
    ``state_load``, ``query_rows``, ``state_store``, ``attn_dots``: the code-change variants (module
    docstring).
    """
    t = _positive("t", t, minimum=0)
    if t > INT32_MAX:
        raise InputError("t", t, f"at most {INT32_MAX} tokens (int32 on the device)")
    hqk, dk, hv, dv, batch = (_positive(n, v) for n, v in
                              (("hqk", hqk), ("dk", dk), ("hv", hv), ("dv", dv), ("batch", batch)))
    ub_size, aiv_num = _positive("ub_size", ub_size), _positive("aiv_num", aiv_num)
    if buffer_num not in (1, 2) or isinstance(buffer_num, bool):
        raise InputError("buffer_num", buffer_num, "1 (the source) or 2")
    host_q = buffer_num if host_queue_buffers is None else host_queue_buffers
    if host_q not in (1, 2) or isinstance(host_q, bool):
        raise InputError("host_queue_buffers", host_queue_buffers, "1 or 2 (default: buffer_num)")
    shape = {"t": t, "hqk": hqk, "dk": dk, "hv": hv, "dv": dv, "batch": batch}
    variant = {"keep_tiling": bool(keep_tiling), "prefetch": bool(prefetch),
               "state_double_buffer": bool(state_double_buffer)}
    code = {"sub": sub, "state_rows": state_rows, "state_load": state_load, "query_rows": query_rows,
            "state_store": state_store, "attn_dots": attn_dots}
    for name, value in code.items():
        allowed = CODE_FIELDS[name]
        if value not in allowed or type(value) is not type(allowed[0]):
            raise InputError(name, value, " or ".join(str(a).lower() for a in allowed))
    return _build(shape, ub_size, aiv_num, bool(has_gamma), buffer_num, host_q, variant, code)


def _solve(dk: int, hv: int, dv: int, ub_size: int, allow_overlap: bool, queue_buffers: int,
           prefetch: bool = False, state_double_buffer: bool = False) -> int:
    v_step = solve_v_step(dv, dk, ub_size, allow_overlap, queue_buffers=queue_buffers, prefetch=prefetch,
                          state_double_buffer=state_double_buffer)
    if v_step is None:
        smallest = (compute_tmp_buff_bytes(FP16_NUM_PER_BLOCK, dv, dk, allow_overlap)
                    + queue_buffers * compute_out_queue_bytes(FP16_NUM_PER_BLOCK, dk)
                    + variant_extra_bytes(FP16_NUM_PER_BLOCK, dk, prefetch, state_double_buffer))
        raise InputError("ub_size", ub_size, f"no vStep fits shape dk={dk}, dv={dv}, hv={hv}: "
                                             f"even vStep=16 needs {smallest} bytes of UB")
    return v_step


def _build(shape: dict[str, int], ub_size: int, aiv_num: int, has_gamma: bool, buffer_num: int,
           host_queue_buffers: int, variant: dict[str, bool], code: dict | None = None) -> Tiling:
    t, dk, hv, dv, batch = (shape[n] for n in ("t", "dk", "hv", "dv", "batch"))
    allow_overlap = hv < aiv_num
    pf, sdb = variant["prefetch"], variant["state_double_buffer"]
    if variant["keep_tiling"]:  # the baseline's vStep, whatever the variant adds
        v_step = _solve(dk, hv, dv, ub_size, allow_overlap, 1)
    else:
        v_step = _solve(dk, hv, dv, ub_size, allow_overlap, host_queue_buffers, pf, sdb)
    pad_size = (CHUNK_SIZE - t % CHUNK_SIZE) % CHUNK_SIZE
    v_tile_count = ceil_div(dv, v_step)
    work_items = hv * v_tile_count if (hv < aiv_num and v_tile_count > 1) else hv
    out_queue = compute_out_queue_bytes(v_step, dk)
    in_queue = compute_in_queue_bytes(v_step, dk) if pf else 0
    state_ws = batch * hv * dk * ceil_align(dv, FP32_NUM_PER_BLOCK) * FP32_BYTES
    return Tiling(
        **shape, ub_size=ub_size, aiv_num=aiv_num,
        has_gamma=has_gamma, buffer_num=buffer_num, chunk_size=CHUNK_SIZE,
        num_chunks=(t + pad_size) // CHUNK_SIZE, pad_size=pad_size,
        align_k=ceil_align(dk, FP16_NUM_PER_BLOCK), v_step=v_step, v_tile_count=v_tile_count,
        allow_scores_state_overlap=allow_overlap, overlap_scores_state=v_step >= dv or allow_overlap,
        tmp_buff_bytes=(compute_tmp_buff_bytes(v_step, dv, dk, allow_overlap)
                        + (compute_state_next_bytes(v_step, dk) if sdb else 0)),
        out_queue_bytes=out_queue, ub_rest_bytes=ub_size - host_queue_buffers * out_queue - 2 * in_queue,
        work_items=work_items, block_dim=max(1, min(work_items, aiv_num)),
        workspace_bytes=max(state_ws, WORKSPACE_FLOOR_BYTES), in_queue_bytes=in_queue, **variant, **(code or {}),
    )


def static_diagnostics(tiling: Tiling) -> None:
    """Raise the KernelDiagnostic the device program would raise for this tiling, without running it
    (and an InputError for a workspace no device could allocate).

    Both follow from the tiling alone: DotFp32 (every chunk's attention matrix) takes dk as its
    count, and its in-place partial sums overwrite unread products past ``DOT_INPLACE_LIMIT``;
    the last V-tile of every chunk is ``dv - (vTileCount - 1) * vStep`` wide (vStep is a multiple
    of 16), and a width that is not a multiple of 16 fp16 elements sends WriteAttnTileToGm to
    CopyToGm's per-row fallback, which writes whole 32-byte blocks past the row into the next
    head's output. ``t == 0`` runs no chunk and so neither.
    """
    if tiling.workspace_bytes > MAX_GM_BYTES:
        raise InputError("workspace_bytes", tiling.workspace_bytes,
                         f"at most {MAX_GM_BYTES} (2^48: the GM a chip can address); shrink batch, hv, dk or dv")
    if tiling.keep_tiling and tiling.ub_shortfall_bytes:
        raise KernelDiagnostic(ub_shortfall_message(tiling))
    if tiling.t == 0:
        return
    if tiling.dk > DOT_INPLACE_LIMIT:
        raise KernelDiagnostic(
            f"DotFp32 count dk={tiling.dk} exceeds its in-place limit of {DOT_INPLACE_LIMIT}: "
            "partial sums would overwrite unread products")
    last = tiling.dv - (tiling.v_tile_count - 1) * tiling.v_step
    if last % FP16_NUM_PER_BLOCK:
        raise KernelDiagnostic(
            f"WriteAttnTileToGm: curV={last} is not a multiple of 16 fp16 elements, so CopyToGm's "
            f"unaligned fallback writes {ceil_align(last, 16)} per row and overruns into the next "
            f"head's output; shape dv={tiling.dv}, vStep={tiling.v_step}")
    code_variant_diagnostics(tiling, (tiling.v_step, last))


def code_variant_ub(tiling: Tiling) -> list[tuple[str, str, int, int]]:
    """What the code-change variants place in UB blocks the baseline carves and leaves idle at that
    moment: ``(field, block, bytes placed, bytes of the block)`` per placement (none adds UB).

    ``state_load = "dma"`` stages cv rows of dk fp16 in ``stateOutQueue_`` and, when it transposes
    on V, the fp16 tile [dk, V] in chunkVFp32; ``query_rows = "ub"`` stages L <= cs rows of dk fp16
    in kCumdecayFp32; ``state_store = "dma"`` (when it transposes on V, else the source's store) casts
    the tile into chunkVFp32 as fp16 [dk, V] and transposes it into ``stateOutQueue_`` as [cv, dk];
    ``attn_dots = "row"`` multiplies up to cs*V/dk products of dk fp32 into chunkVFp32 and reduces them
    into dotProductFp32 (dk/64 partials each)."""
    from cgdr_des.kernel.code_variants import vector_transpose

    cs, dk, av = tiling.chunk_size, tiling.dk, tiling.v_step_aligned
    used = []
    if tiling.state_load == "dma":
        used.append(("state_load", "stateOutQueue_", min(tiling.v_step, tiling.dv) * dk * FP16_BYTES,
                     tiling.out_queue_bytes))
        if vector_transpose(dk):
            used.append(("state_load", "chunkVFp32", dk * av * FP16_BYTES, cs * av * FP32_BYTES))
    if tiling.query_rows == "ub":
        used.append(("query_rows", "kCumdecayFp32", cs * dk * FP16_BYTES, cs * tiling.align_k * FP32_BYTES))
    if tiling.attn_dots == "row":  # a batch of products, and its partial sums
        batch = min(cs, max(1, cs * av // dk))
        used += [("attn_dots", "chunkVFp32", batch * dk * FP32_BYTES, cs * av * FP32_BYTES),
                 ("attn_dots", "dotProductFp32", batch * (dk // 64) * FP32_BYTES,
                  max(tiling.state_stride_k, cs) * FP32_BYTES)]
    if tiling.state_store == "dma" and vector_transpose(dk):
        used += [("state_store", "chunkVFp32", tiling.state_stride_k * av * FP16_BYTES, cs * av * FP32_BYTES),
                 ("state_store", "stateOutQueue_", min(tiling.v_step, tiling.dv) * dk * FP16_BYTES,
                  tiling.out_queue_bytes)]
    return used


def code_variant_diagnostics(tiling: Tiling, widths: tuple[int, ...]) -> None:
    """The code-change variants' checks on the host: what they stage fits the block they reuse, and
    their DataCopy calls can be written for every tile width in ``widths`` (KernelDiagnostic, one line)."""
    from cgdr_des.kernel import code_variants as code

    for field, block, placed, size in code_variant_ub(tiling):
        if placed > size:
            raise KernelDiagnostic(f"UB overflow: {field}={getattr(tiling, field)} stages {placed} bytes in "
                                   f"{block}, which holds {size} bytes; shape dk={tiling.dk}, vStep={tiling.v_step}")
    checks = []
    for cv in set(widths):
        if tiling.state_rows == "2d":
            checks.append(("state_rows = \"2d\"", code.state_rows_problem(
                tiling.dk, cv, ceil_align(tiling.dv, FP32_NUM_PER_BLOCK), tiling.v_step_aligned)))
        if tiling.state_load == "dma":
            checks.append(("state_load = \"dma\"", code.state_load_problem(tiling.dk, cv)))
        if tiling.state_store == "dma" and code.vector_transpose(tiling.dk):
            checks.append(("state_store = \"dma\"", code.state_load_problem(tiling.dk, cv)))
    if tiling.query_rows == "ub":
        checks.append(("query_rows = \"ub\"", code.query_rows_problem(tiling.dk, tiling.hqk)))
    if tiling.attn_dots == "row":
        checks.append(("attn_dots = \"row\"", code.attn_dots_problem(tiling.dk)))
    for name, why in checks:
        if why:
            raise KernelDiagnostic(f"{name}: its DataCopy cannot be written on shape dk={tiling.dk}, "
                                   f"dv={tiling.dv}, vStep={tiling.v_step}: {why}")


def ub_shortfall_message(tiling: Tiling) -> str:
    """One line: the variant kept at the baseline's vStep, what its buffers need and the overflow."""
    parts = [f"out-queue {tiling.buffer_num}x{tiling.out_queue_bytes}"]
    if tiling.prefetch:
        parts.append(f"in-queue 2x{tiling.in_queue_bytes}")
    parts.append(f"tmpBuff {tiling.tmp_buff_bytes}")
    flags = [f"buffer_num={tiling.buffer_num}"] + [n for n in ("prefetch", "state_double_buffer") if getattr(tiling, n)]
    return (f"UB overflow: {', '.join(flags)} at the baseline's vStep={tiling.v_step} (keep_tiling) needs "
            f"{tiling.ub_needed_bytes} bytes of UB ({' + '.join(parts)}), {tiling.ub_shortfall_bytes} bytes "
            f"more than the {tiling.ub_size} the host tiles against")
