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

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain

from cgdr_des.isa import AllocEventID, Dma, FetchEventID, Record, ReleaseEventID, Scalar, ScalarGm, Tag
from cgdr_des.kernel import phases, vtile
from cgdr_des.kernel.dispatch import BlockScan, compute_avgload
from cgdr_des.kernel.emit import ALU, gm_load, scalar
from cgdr_des.kernel.launch import CHUNK_SIZE, CoreState, Launch, ceil_div


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


CHUNK_PHASES = (
    ("P1_LoadChunkKey", phases.load_chunk_key),
    ("P1b_GCumsum", phases.compute_g_cumsum),
    ("P2_KBeta", phases.compute_k_beta),
    ("P3_DecayExp", phases.prepare_decay_and_exp),
    ("P3.5_QCache", phases.prepare_attn_query_cache),
    ("P4a_DotFp32", phases.attn_matrix_lower),
    ("P4b_Recursion", phases.compute_recursive_attn),
    ("P4c_DotFp32", phases.attn_matrix_query),
    ("P5_KCumdecay", phases.compute_k_cumdecay),
)


def _phase_records(core: CoreState, name: str, run, sig: tuple) -> list:
    """One phase's records after its numbers are computed.

    A phase's record structure depends on nothing but its signature, its GM addresses and (Step 7)
    the arguments of ScalarExp. At ``instr`` fidelity a phase whose records carry none of those
    (no ScalarGm, DMA or fetched event: the UB-only phases 3, 4, 5 and steps 2, 4, 6) is built once
    per signature and reused exactly; the others are built afresh. At ``phase`` fidelity the first
    occurrence of a signature is built and handed to the compiler (which times its scalar+vector
    runs once and replaces them by Macro records) and later occurrences reuse the compiled list:
    what that loses is the exact GM addresses (DMA alignment, data-cache lines) and the ScalarExp
    arguments of later occurrences.
    """
    if not core.emit:
        run([])
        return []
    key = (name, *sig)
    cached = core.launch.phase_cache.get(key)
    if cached is not None:
        if core.numerics != "off":
            core.emit = False
            run([])
            core.emit = True
        return cached
    out: list = []
    run(out)
    compiler = core.launch.compiler
    if compiler is not None:
        out = core.launch.phase_cache[key] = compiler.compile(out)
    elif _reusable(out):
        core.launch.phase_cache[key] = out
    return out


#: Records that differ between occurrences of one signature (addresses, run-time event ids).
_PER_OCCURRENCE = frozenset((ScalarGm, Dma, FetchEventID, AllocEventID, ReleaseEventID))


def _reusable(records: list) -> bool:
    """No GM address, fetched event or data-dependent ScalarExp cost among ``records``."""
    return not any(type(r) in _PER_OCCURRENCE or (type(r) is Scalar and r.kind == "exp") for r in records)


def _chunk_phases(core: CoreState, ch: ChunkInfo) -> Iterator[list]:
    """Phases 1-5 (ProcessChunk / ProcessChunkVTile before the V-tile loop): their records depend
    on the chunk length only (their signature). Yields record lists (see core_program)."""
    sig = (ch.L,)
    for name, fn in CHUNK_PHASES:
        if name == "P3.5_QCache" and not phases.can_cache_attn_query(core, ch.L):
            continue
        yield [Tag(name, ch.b, ch.head, ch.vt, ch.c)]
        yield _phase_records(core, name, lambda out, fn=fn: fn(core, ch, out), sig)


def _one_vtile(core: CoreState, ch: ChunkInfo, vt: int) -> Iterator[list]:
    """ProcessOneVTile: steps 1-7 for the tile starting at column vt * vStep."""
    v_i = vt * core.v_step
    cv = min(core.v_step, core.shape.dv - v_i)
    steps = (
        ("S1_LoadVBeta", lambda o: vtile.load_v_beta(core, ch, v_i, cv, o)),
        ("S2_ValueNew", lambda o: vtile.compute_value_new(core, ch, o)),
        ("S3_LoadState", lambda o: vtile.load_state_tile(core, ch, v_i, cv, o)),
        ("S4_VNew", lambda o: vtile.compute_v_new(core, ch, o)),
        ("S5_AttnInter", lambda o: vtile.compute_attn_inter(core, ch, o)),
        ("S6_AccumOutput", lambda o: vtile.accum_output(core, ch, o)),
        ("S6b_WriteOut", lambda o: vtile.write_attn_tile_to_gm(core, ch, v_i, cv, o)),
        ("S7_UpdateState", lambda o: vtile.update_and_write_state(core, ch, v_i, cv, o)),
    )
    for name, fn in steps:
        yield [Tag(name, ch.b, ch.head, vt, ch.c)]
        yield _phase_records(core, name, fn, _step_signature(name, ch, v_i, cv))


def _step_signature(name: str, ch: ChunkInfo, v_i: int, cv: int) -> tuple:
    """What a V-tile step's records depend on: the chunk length and the tile, plus whether the state
    comes from initial_state (Step 3 at c == 0) or goes to final_state (Step 7 at the last chunk)."""
    if name == "S3_LoadState":
        return (ch.L, v_i, cv, ch.c == 0)
    if name == "S7_UpdateState":
        return (ch.L, v_i, cv, ch.is_last)
    return (ch.L, v_i, cv)


def process_item(core: CoreState, b: int, h: int, seq0: int, seq1: int, vt: int | None) -> Iterator[list]:
    """ProcessHead (vt is None: every V-tile of every chunk) or ProcessHeadVTile (one tile)."""
    qk_head = h // core.shape.nv_per_nk
    num_c = ceil_div(seq1 - seq0, CHUNK_SIZE)
    n_tiles = ceil_div(core.shape.dv, core.v_step)
    for c in range(num_c):
        t_start = seq0 + c * CHUNK_SIZE
        L = min(CHUNK_SIZE, seq1 - t_start)
        label = -1 if vt is None else vt
        ch = ChunkInfo(b, h, qk_head, t_start, L, c, c + 1 == num_c, label)
        yield from _chunk_phases(core, ch)
        for tile in (range(n_tiles) if vt is None else (vt,)):
            yield from _one_vtile(core, ch, tile)


def core_program(launch: Launch, block_idx: int, *, emit: bool = True, numbers: bool = True,
                 assigned: set | None = None, on_item=None) -> Iterator[Record]:
    """The whole program of core ``block_idx``: Init, ComputeAvgload, Process, record by record.

    ``assigned``: the (batch, head, vtile) items of this core under a non-greedy policy (None: the
    source's greedy scan). ``on_item(item_key)`` is called as each item starts (progress reports).
    ``numbers`` False: records only, the launch's numbers being computed elsewhere (batched.py).
    The functions below yield one list per phase and ``chain`` flattens them in C: a record then
    costs no generator hop, which matters at ~150 000 records per chunk.
    """
    core = CoreState(launch, block_idx, emit=emit, numbers=numbers)
    return chain.from_iterable(_program_lists(core, assigned, on_item))


def _program_lists(core: CoreState, assigned, on_item) -> Iterator[list]:
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
                        yield from process_item(core, b, h, seq0, seq1, vt)
                        yield [Tag("Process")]
        seq0 = seq1
