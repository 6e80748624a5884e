"""The device program of one AIV: Init, ComputeAvgload, Process and the per-item/per-chunk drivers.

``core_program`` is a generator of isa records in program order (chunk_gated_delta_rule.h:
Init :95-130, ComputeAvgload :203-207, Process :212-235, ProcessHead/ProcessHeadVTile, ProcessChunk,
ProcessChunkVTile, ProcessOneVTile). The numbers of each phase are computed when the consumer pulls
the generator up to that phase, so a functional run, the machine and a timing-only run share it.

Work distribution: the source's greedy scan is replayed by every core (``BlockScan``), exactly as the
kernel does; any other policy (cgdr_des.kernel.dispatch.POLICIES) replaces IsCurrentBlock by a
membership test of the host-computed assignment at the same scalar cost, keeping the visiting order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from itertools import chain
from typing import NamedTuple

from cgdr_des.integers import ceil_div
from cgdr_des.isa import AllocEventID, Dma, FetchEventID, Record, ReleaseEventID, Scalar, ScalarGm, Tag
from cgdr_des.kernel import phases, vtile
from cgdr_des.kernel.dispatch import BlockScan, compute_avgload
from cgdr_des.kernel.emit import ALU, gm_load, scalar
from cgdr_des.kernel.launch import CHUNK_SIZE, CoreState, Launch
from cgdr_des.kernel.overlap import ChunkPrefetch, InLoad, StateOverlap


@dataclass(frozen=True)
class ChunkInfo:
    """One chunk of one (batch, head[, vTile]) item: tokens [t_start, t_start + L), chunk index c."""

    b: int
    head: int
    qk_head: int
    t_start: int
    L: int
    c: int
    is_last: bool
    vt: int  # V-tile label (-1 while phases 1-5 run in ProcessChunk, where no tile is chosen yet)
    #: the prefetch variant's loads around this chunk (None: the source's synchronous loads)
    prefetch: ChunkPrefetch | None = None


class PhaseInfo(NamedTuple):
    """One labelled part of the program: its trace label (the Tag phase), the AscendC function it
    models and that function's lines in chunk_gated_delta_rule.h (docs/kernel.md §1), and how
    it runs: ``run(core, ch, tile, out)`` with ``tile`` = (first V column, width) for a V-tile step."""

    label: str
    function: str
    anchor: str
    run: Callable | None = None


def _chunk(fn: Callable) -> Callable:
    return lambda core, ch, tile, out: fn(core, ch, out)


def _tiled(fn: Callable) -> Callable:
    return lambda core, ch, tile, out: fn(core, ch, tile[0], tile[1], out, *tile[2:])


#: Phases 1-5 (ProcessChunk), in program order; P3.5 only when CanCacheAttnQuery holds.
CHUNK_PHASES = (
    PhaseInfo("P1_LoadChunkKey", "LoadChunkKey", ":447-483", _chunk(phases.load_chunk_key)),
    PhaseInfo("P1b_GCumsum", "ComputeGCumsum (LoadG :251-257)", ":486-492", _chunk(phases.compute_g_cumsum)),
    PhaseInfo("P2_KBeta", "ComputeKBeta (LoadBeta :258-262)", ":495-511", _chunk(phases.compute_k_beta)),
    PhaseInfo("P3_DecayExp", "PrepareDecayAndExp", ":514-532", _chunk(phases.prepare_decay_and_exp)),
    PhaseInfo("P3.5_QCache", "PrepareAttnQueryCache (CanCacheAttnQuery :534-543)", ":548-572",
              _chunk(phases.prepare_attn_query_cache)),
    PhaseInfo("P4a_DotFp32", "ComputeAttnMatrix (A rows; DotFp32 :289-312)", ":578-583",
              _chunk(phases.attn_matrix_lower)),
    PhaseInfo("P4b_Recursion", "ComputeRecursiveAttn (unit diagonal :585-587)", ":317-340",
              _chunk(phases.compute_recursive_attn)),
    PhaseInfo("P4c_DotFp32", "ComputeAttnMatrix (M rows; DotFp32 :289-312)", ":588-613",
              _chunk(phases.attn_matrix_query)),
    PhaseInfo("P5_KCumdecay", "ComputeKCumdecay", ":617-645", _chunk(phases.compute_k_cumdecay)),
)
#: Steps 1-7 of ProcessOneVTile, in program order.
VTILE_STEPS = (
    PhaseInfo("S1_LoadVBeta", "LoadVBeta", ":674-729", _tiled(vtile.load_v_beta)),
    PhaseInfo("S2_ValueNew", "ComputeValueNew", ":732-747", _chunk(vtile.compute_value_new)),
    PhaseInfo("S3_LoadState", "LoadStateTile", ":750-786", _tiled(vtile.load_state_tile)),
    PhaseInfo("S4_VNew", "ComputeVNew", ":789-808", _chunk(vtile.compute_v_new)),
    PhaseInfo("S5_AttnInter", "ComputeAttnInter", ":811-829", _chunk(vtile.compute_attn_inter)),
    PhaseInfo("S6_AccumOutput", "AccumOutput", ":832-846", _chunk(vtile.accum_output)),
    PhaseInfo("S6b_WriteOut", "WriteAttnTileToGm", ":341-372", _tiled(vtile.write_attn_tile_to_gm)),
    PhaseInfo("S7_UpdateState", "UpdateAndWriteState (ScalarExp :263-284, called at :864)", ":849-915",
              _tiled(vtile.update_and_write_state)),
)
#: Every label a program's Tags carry, in program order: the one table of the kernel's parts (for
#: the programs, the traces and the documentation).
PHASES = (PhaseInfo("Init", "Init", ":95-130"), PhaseInfo("Process", "ComputeAvgload, Process", ":203-235"),
          *CHUNK_PHASES, *VTILE_STEPS)


class Phase(NamedTuple):
    """One occurrence of a phase in the program, handed to the consumer unbuilt: ``key`` is its label
    and the signature its records depend on; ``build(out)`` computes its numbers (if the core
    computes any: ``numbers``) and appends its records to ``out`` (None: numbers only). A stage
    (:class:`ReuseStage`, or the simulation's compile-and-cache stage) decides whether to build it
    or to reuse the records of an earlier occurrence with the same key."""

    key: tuple
    build: Callable[[list | None], None]
    numbers: bool


class ReuseStage:
    """Turns program items into record lists, building every phase, except that a phase whose
    records carry no GM address, fetched event id or ScalarExp argument (the UB-only phases 3, 4, 5
    and steps 2, 4, 6) is built once per key and its records reused exactly. ``emit`` False: the
    numbers only, no records."""

    #: loops stay expanded: no consumer of these records takes isa.Repeat
    repeats = False

    def __init__(self, emit: bool = True) -> None:
        self.emit = emit
        self.cache: dict[tuple, list] = {}

    def __call__(self, item: list | Phase) -> list:
        if type(item) is list:
            return item
        if not self.emit:
            item.build(None)
            return []
        cached = self.cache.get(item.key)
        if cached is not None:
            if item.numbers:
                item.build(None)
            return cached
        out: list = []
        item.build(out)
        return self.first(item.key, out)

    def first(self, key: tuple, records: list) -> list:
        """The records of a key's first occurrence, cached when later occurrences may reuse them
        (a subclass may transform them first: the simulation's compile stage)."""
        if reusable(records):
            self.cache[key] = records
        return records


#: Records that differ between occurrences of one signature (addresses, run-time event ids).
_PER_OCCURRENCE = frozenset((ScalarGm, Dma, FetchEventID, AllocEventID, ReleaseEventID))


def reusable(records: list) -> bool:
    """No GM address, fetched event or data-dependent ScalarExp cost among ``records``."""
    return not any(type(r) in _PER_OCCURRENCE or (type(r) is Scalar and r.kind == "exp") for r in records)


def _chunk_phases(core: CoreState, ch: ChunkInfo) -> Iterator[list | Phase]:
    """Phases 1-5 (ProcessChunk / ProcessChunkVTile before the V-tile loop): their records depend
    on the chunk length only (their signature)."""
    for info in CHUNK_PHASES:
        if info.label == "P3.5_QCache" and not phases.can_cache_attn_query(core, ch.L):
            continue
        yield [Tag(info.label, ch.b, ch.head, ch.vt, ch.c)]
        key = (info.label, ch.L)
        if ch.prefetch is not None and info.label in ("P1_LoadChunkKey", "P3.5_QCache"):
            key += ch.prefetch.signature()
        yield Phase(key, partial(info.run, core, ch, None), core.numerics != "off")


def _one_vtile(core: CoreState, ch: ChunkInfo, vt: int, state: StateOverlap | None = None) -> Iterator[list | Phase]:
    """ProcessOneVTile: steps 1-7 for the tile starting at column vt * vStep (``state``: the state
    double buffer's part of this tile, None without it)."""
    v_i = vt * core.v_step
    cv = min(core.v_step, core.shape.dv - v_i)
    for info in VTILE_STEPS:
        yield [Tag(info.label, ch.b, ch.head, vt, ch.c)]
        key = (info.label, *_step_signature(info.label, ch, v_i, cv))
        tile = (v_i, cv)
        if info.label == "S7_UpdateState" and state is not None:
            key, tile = key + (state,), tile + (state,)
        yield Phase(key, partial(info.run, core, ch, tile), core.numerics != "off")


def _step_signature(name: str, ch: ChunkInfo, v_i: int, cv: int) -> tuple:
    """What a V-tile step's records depend on: the chunk length and the tile, plus whether the state
    comes from initial_state (Step 3 at c == 0) or goes to final_state (Step 7 at the last chunk),
    and under prefetch whether Step 1 takes the staged rows."""
    if name == "S3_LoadState":
        return (ch.L, v_i, cv, ch.c == 0, ch.prefetch is not None and ch.prefetch.v_i == v_i)
    if name == "S7_UpdateState":
        return (ch.L, v_i, cv, ch.is_last)
    if name == "S1_LoadVBeta" and ch.prefetch is not None:
        return (ch.L, v_i, cv, ch.prefetch.v_i == v_i, ch.c == 0)  # at c == 0 LoadStateTile frees the buffer
    return (ch.L, v_i, cv)


def process_item(core: CoreState, b: int, h: int, seq0: int, seq1: int,
                 vt: int | None, next_item: tuple | None = None) -> Iterator[list | Phase]:
    """ProcessHead (vt is None: every V-tile of every chunk) or ProcessHeadVTile (one tile).

    ``next_item``: the core's next item as (b, h, seq0, seq1, vt), which the prefetch variant
    stages the first chunk of while this item's last chunk computes (None: this is the last)."""
    qk_head = h // core.shape.nv_per_nk
    num_c = ceil_div(seq1 - seq0, CHUNK_SIZE)
    n_tiles = ceil_div(core.shape.dv, core.v_step)
    tiles = range(n_tiles) if vt is None else (vt,)
    for c in range(num_c):
        t_start = seq0 + c * CHUNK_SIZE
        L = min(CHUNK_SIZE, seq1 - t_start)
        label = -1 if vt is None else vt
        # the chunk the prefetch stages next, and whether it is its item's first (its state is staged too)
        nxt = ((b, h, t_start + CHUNK_SIZE, seq1, vt), False) if c + 1 < num_c else (next_item, True)
        ch = ChunkInfo(b, h, qk_head, t_start, L, c, c + 1 == num_c, label,
                       _chunk_prefetch(core, (b, h, t_start, seq1, vt), c == 0, *nxt))
        yield from _chunk_phases(core, ch)
        for k, tile in enumerate(tiles):
            yield from _one_vtile(core, ch, tile, _state_overlap(core, ch, tiles, k))


def _first_load(core: CoreState, item: tuple, first_chunk: bool) -> InLoad:
    """The staged load of the chunk of ``item`` = (b, h, t_start, seq1, vt) starting at t_start (with
    the first tile's initial state when it is the item's ``first_chunk``)."""
    b, h, t_start, seq1, vt = item
    v_i = (0 if vt is None else vt) * core.v_step
    return InLoad(t_start, min(CHUNK_SIZE, seq1 - t_start), h, h // core.shape.nv_per_nk, v_i,
                  min(core.v_step, core.shape.dv - v_i), b, first_chunk)


def _chunk_prefetch(core: CoreState, this: tuple, first: bool, nxt: tuple | None,
                    nxt_first: bool) -> ChunkPrefetch | None:
    """The prefetch part of chunk ``this`` (its item's ``first`` chunk or not): the core's n-th chunk
    uses inQueue_ buffer n % 2, stages itself only if it is the core's first, and stages ``nxt``
    (None at the core's last chunk), with its state tile when ``nxt_first``."""
    if not (core.emit and core.tiling.prefetch):
        return None
    n = core.overlap_counts["chunks"]
    core.overlap_counts["chunks"] = n + 1
    now = _first_load(core, this, first)
    later = None if nxt is None else _first_load(core, nxt, nxt_first)
    return ChunkPrefetch(n % 2, now if n == 0 else None, later, now.v_i)


def _state_overlap(core: CoreState, ch: ChunkInfo, tiles, k: int) -> StateOverlap | None:
    """The state double buffer's part of tile ``tiles[k]``: the next LoadStateTile on this core is the
    next tile of this chunk or the first tile of the next chunk; it is prefetched when it reads the
    workspace (its chunk > 0). Every write-back but the core's first waits for the previous one."""
    if not (core.emit and core.tiling.state_double_buffer):
        return None
    if k + 1 < len(tiles):
        nxt_chunk, nxt_tile = ch.c, tiles[k + 1]
    else:
        nxt_chunk, nxt_tile = (None, None) if ch.is_last else (ch.c + 1, tiles[0])
    next_tile = None
    if nxt_chunk:  # None (no next step in this item) or 0 (initial_state, by scalar reads): nothing to read
        v_i = nxt_tile * core.v_step
        next_tile = (v_i, min(core.v_step, core.shape.dv - v_i))
    n = core.overlap_counts["writebacks"]
    if not ch.is_last:
        core.overlap_counts["writebacks"] = n + 1
    return StateOverlap(n > 0, next_tile)


def core_program(launch: Launch, block_idx: int, *, emit: bool = True, numbers: bool = True,
                 assigned: set | None = None, on_item=None, stage=None) -> Iterator[Record]:
    """The whole program of core ``block_idx``: Init, ComputeAvgload, Process, record by record.

    ``assigned``: the (batch, head, vtile) items of this core under a non-greedy policy (None: the
    source's greedy scan). ``on_item(item_key)`` is called as each item starts (progress reports).
    ``numbers`` False: records only, the launch's numbers being computed elsewhere (batched.py).
    ``stage`` turns each item (a record list or a :class:`Phase`) into records; one stage may serve
    every core of a launch (default: a :class:`ReuseStage` of this program's own). Its ``repeats``
    says whether loops of like iterations may stay isa.Repeat records.
    The items are lists and ``chain`` flattens them in C: a record then costs no generator hop,
    which matters at ~150 000 records per chunk.
    """
    stage = ReuseStage(emit) if stage is None else stage
    core = CoreState(launch, block_idx, emit=emit, numbers=numbers, repeats=stage.repeats)
    return chain.from_iterable(map(stage, program_items(core, assigned, on_item)))


def program_items(core: CoreState, assigned, on_item) -> Iterator[list | Phase]:
    """The program as record lists (Init, the scan, Tags) and unbuilt :class:`Phase` items."""
    launch, block_idx, emit = core.launch, core.block_idx, core.emit
    sh, gm = core.shape, launch.gm
    lengths = [int(n) for n in launch.lengths]
    yield [Tag("Init"), *(core.layout.init_records() if emit else ())]
    n_tiles = ceil_div(sh.dv, core.v_step)
    per_head = n_tiles if core.split else 1
    scan = BlockScan(block_idx, compute_avgload(lengths, sh.nv, per_head, launch.block_dim))
    yield [Tag("Process")]
    if emit:  # ComputeAvgload: every core reads every length
        yield [*(gm_load(gm.addr("actual_seq_lengths", b), 4) for b in range(sh.batch)),
               scalar("alu", sh.batch + 4)]
    ahead = _lookahead(core, assigned, lengths, n_tiles, per_head) if core.tiling.prefetch else None
    seq0 = 0
    for b, seq_len in enumerate(lengths):
        if emit:
            yield [gm_load(gm.addr("actual_seq_lengths", b), 4), ALU]
        seq1 = seq0 + seq_len
        if seq_len > 0:
            for h in range(sh.nv):
                for vt in (range(n_tiles) if core.split else (None,)):
                    mine = scan.is_current_block(seq_len)
                    if assigned is not None:
                        mine = (b, h, -1 if vt is None else vt) in assigned
                    if emit:
                        yield [scalar("alu", 3)]
                    if mine:
                        if on_item is not None:
                            on_item((b, h, -1 if vt is None else vt))
                        nxt = ahead.get((b, h, vt)) if ahead else None
                        yield from process_item(core, b, h, seq0, seq1, vt, nxt)
                        yield [Tag("Process")]
        seq0 = seq1


def _lookahead(core: CoreState, assigned, lengths: list[int], n_tiles: int, per_head: int) -> dict:
    """For the prefetch variant: each of the core's items -> its next item (b, h, seq0, seq1, vt), from
    a replay of the same scan (the kernel would compute it the same way: the scan is deterministic)."""
    launch = core.launch
    scan = BlockScan(core.block_idx, compute_avgload(lengths, core.shape.nv, per_head, launch.block_dim))
    mine, seq0 = [], 0
    for b, seq_len in enumerate(lengths):
        for h in range(core.shape.nv) if seq_len > 0 else ():
            for vt in (range(n_tiles) if core.split else (None,)):
                hit = scan.is_current_block(seq_len)
                if (hit if assigned is None else (b, h, -1 if vt is None else vt) in assigned):
                    mine.append((b, h, seq0, seq0 + seq_len, vt))
        seq0 += seq_len
    return {(b, h, vt): nxt for (b, h, _s0, _s1, vt), nxt in zip(mine, mine[1:], strict=False)}
