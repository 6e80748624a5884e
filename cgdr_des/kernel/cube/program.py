"""The Cube-era device program of one core: Init, ComputeAvgload, Process, chunk by chunk.

The same structure as the vector kernel's :mod:`cgdr_des.kernel.program` (and its stages: a phase
is handed over unbuilt as a :class:`~cgdr_des.kernel.program.Phase`, keyed by its label and what its
records depend on), with the Cube era's work distribution: batch x head x V-tile items, V-tiles split
whenever dv > vStep, one tile per item then (ProcessChunkVTile, .h:747-768). Which phases a chunk
runs follows the §3.3 gates (docs/kernel-cube.md): the Cube fast path for a full chunk whose vStep
equals the bucket, the vector path for the rest. The numbers are computed apart
(:func:`cgdr_des.kernel.cube.numerics.compute_outputs`); these programs only emit records.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from itertools import chain

import numpy as np

from cgdr_des.errors import InputError
from cgdr_des.integers import ceil_div
from cgdr_des.isa import Tag
from cgdr_des.kernel.cube import fallback as fb
from cgdr_des.kernel.cube import phases as ph
from cgdr_des.kernel.cube import tiling as ct
from cgdr_des.kernel.cube import vtile as vt
from cgdr_des.kernel.cube.layout import CubeCore, init_records
from cgdr_des.kernel.dispatch import BlockScan, compute_avgload, work_items
from cgdr_des.kernel.emit import ALU, gm_load, scalar
from cgdr_des.kernel.policies import COST_POLICIES, POLICIES, owners
from cgdr_des.kernel.program import ChunkInfo, Phase, PhaseInfo, ReuseStage
from cgdr_des.kernel.tiling import CHUNK_SIZE


def _c(fn):
    return lambda core, ch, tile, out: fn(core, ch, out)


def _t(fn):
    return lambda core, ch, tile, out: fn(core, ch, *tile, out)


#: (gate, phase) per chunk step: the gate names the §3.3 predicate the step obeys (None: always)
CHUNK_STEPS = (
    (None, PhaseInfo("C1_LoadChunkKey", "LoadChunkKey", ":771-790", _c(ph.load_chunk_key))),
    (None, PhaseInfo("C2_LoadCoefficients", "LoadChunkCoefficients", ":824-877", _c(ph.load_chunk_coefficients))),
    (None, PhaseInfo("C3_KBeta", "ComputeKBeta", ":882-912", _c(ph.compute_k_beta))),
    (None, PhaseInfo("C4_DecayExp", "PrepareDecayAndExp", ":916-953", _c(ph.prepare_decay_and_exp))),
    (None, PhaseInfo("C5_QCache", "PrepareAttnQueryCache", ":965-974", _c(ph.prepare_attn_query_cache))),
    ("attn", PhaseInfo("C6a_AttnCube", "ComputeAttnProductsCube<D>", ":1035-1172", _c(ph.attn_products_cube))),
    ("!attn", PhaseInfo("C6a_AttnVector", "ComputeAttnMatrix (DotFp32)", ":991-1026", _c(fb.attn_matrix_vector))),
    ("inverse", PhaseInfo("C6b_InverseBlocked", "ComputeRecursiveAttnBlocked64", ":605-634", _c(ph.inverse_blocked))),
    ("!inverse", PhaseInfo("C6b_InverseRecursion", "ComputeRecursiveAttn (Axpy)", ":645-662",
                           _c(fb.inverse_recursion))),
    (None, PhaseInfo("C6c_UnitDiagonal", "unit diagonal", ":985-987", _c(ph.unit_diagonal))),
    ("k_cumdecay", PhaseInfo("C7_KCumdecayCube", "ComputeKCumdecayCube<D>", ":1195-1307", _c(ph.k_cumdecay_cube))),
    ("!k_cumdecay", PhaseInfo("C7_KCumdecayVector", "ComputeKCumdecay (Axpy)", ":1195-1209",
                              _c(fb.k_cumdecay_vector))),
)
#: per V-tile steps, (gate, phase), in program order
TILE_STEPS = (
    (None, PhaseInfo("C8a_LoadVBeta", "LoadVBeta", ":1345-1407", _t(vt.load_v_beta))),
    ("fast", PhaseInfo("C8b_ValueVNewCube", "ComputeValueAndVNewCube<D,D>", ":1617-1744",
                       _t(vt.value_and_v_new_cube))),
    ("fast", PhaseInfo("C8c_OutputCube", "ComputeOutputCube<D,D>", ":1938-2068", _t(vt.output_cube))),
    ("!fast", PhaseInfo("C8b_ValueNew", "ComputeValueNew", "", _t(fb.value_new_vector))),
    ("!fast", PhaseInfo("C8b_LoadState", "LoadStateTile", ":1443-1528", _t(vt.load_state_tile))),
    ("!fast", PhaseInfo("C8b_VNew", "ComputeVNew", "", _t(fb.v_new_vector))),
    ("!fast", PhaseInfo("C8c_AttnInter", "ComputeAttnInter", "", _t(fb.attn_inter_vector))),
    ("!fast", PhaseInfo("C8c_AccumOutput", "AccumOutput", "", _t(fb.accum_output_vector))),
    (None, PhaseInfo("C8d_WriteOut", "WriteAttnTileToGm", ":665-696", _t(vt.write_attn_tile_to_gm))),
    ("fast", PhaseInfo("C8e_StateUpdateCube", "UpdateAndWriteState -> ComputeStateUpdateCube<D,D>", ":2114-2358",
                       _t(vt.state_update_cube))),
    ("!fast", PhaseInfo("C8e_StateUpdate", "UpdateAndWriteState (vector, ScalarExp)", ":2305-2358",
                        _t(fb.update_and_write_state))),
)
#: every label a Cube-era program's Tags carry
PHASES = (PhaseInfo("Init", "Init", ":105-114"), PhaseInfo("Process", "ComputeAvgload, Process", ":217-256"),
          *(p for _, p in CHUNK_STEPS), *(p for _, p in TILE_STEPS))


def gates(tiling, L: int) -> dict[str, bool]:
    """The §3.3 gates of a chunk of ``L`` tokens, by the names the step tables use."""
    return {"attn": ct.attn_matrix_cube(tiling, L), "inverse": ct.blocked_inverse_cube(tiling, L),
            "k_cumdecay": ct.k_cumdecay_cube(tiling, L), "fast": ct.is_cube_fast_path(tiling, L)}


def _runs(gate: str | None, g: dict[str, bool]) -> bool:
    if gate is None:
        return True
    return not g[gate[1:]] if gate.startswith("!") else g[gate]


def _build(info: PhaseInfo, core, ch, tile, out) -> None:
    if out is not None:
        info.run(core, ch, tile, out)


def process_item(core: CubeCore, b: int, h: int, seq0: int, seq1: int, tile: int | None) -> Iterator[list | Phase]:
    """ProcessHead / ProcessHeadVTile: every chunk of the sequence, phases 1-7 then the tile steps."""
    sh, t = core.shape, core.tiling
    qk_head = h // sh.nv_per_nk
    num_c = ceil_div(seq1 - seq0, CHUNK_SIZE)
    for c in range(num_c):
        t0 = seq0 + c * CHUNK_SIZE
        L = min(CHUNK_SIZE, seq1 - t0)
        ch = ChunkInfo(b, h, qk_head, t0, L, c, c + 1 == num_c, -1 if tile is None else tile)
        g = gates(t, L)
        for gate, info in CHUNK_STEPS:
            if _runs(gate, g):
                yield [Tag(info.label, b, h, ch.vt, c)]
                yield Phase((info.label, L), partial(_build, info, core, ch, None), False)
        for v in (range(t.v_tile_count) if tile is None else (tile,)):
            v_i = v * t.v_step
            cv = min(t.v_step, sh.dv - v_i)
            for gate, info in TILE_STEPS:
                if _runs(gate, g):
                    yield [Tag(info.label, b, h, v, c)]
                    key = (info.label, L, v_i, cv, c == 0, ch.is_last)
                    yield Phase(key, partial(_build, info, core, ch, (v_i, cv)), False)


def program_items(core: CubeCore, assigned: set | None, on_item) -> Iterator[list | Phase]:
    """Init, ComputeAvgload and Process's scan over (batch, head[, V-tile]), as in the vector kernel."""
    t, gm = core.tiling, core.gm
    lengths = [int(n) for n in core.launch.lengths]
    yield [Tag("Init"), *init_records(t)]
    per_head = t.v_tile_count if t.split else 1
    scan = BlockScan(core.block_idx, compute_avgload(lengths, t.hv, per_head, core.launch.block_dim))
    yield [Tag("Process"), *(gm_load(gm.addr("actual_seq_lengths", b), 4) for b in range(t.batch)),
           scalar("alu", t.batch + 4)]
    seq0 = 0
    for b, n in enumerate(lengths):
        yield [gm_load(gm.addr("actual_seq_lengths", b), 4), ALU]
        if n > 0:
            for h in range(t.hv):
                for tile in (range(t.v_tile_count) if t.split else (None,)):
                    mine = scan.is_current_block(n)
                    key = (b, h, -1 if tile is None else tile)
                    if assigned is not None:
                        mine = key in assigned
                    yield [scalar("alu", 3)]
                    if mine:
                        if on_item is not None:
                            on_item(key)
                        yield from process_item(core, b, h, seq0, seq0 + n, tile)
                        yield [Tag("Process")]
        seq0 += n


def core_program(launch, block_idx: int, *, assigned: set | None = None, on_item=None, stage=None):
    """The records of core ``block_idx``'s program, through ``stage`` (default: a ReuseStage)."""
    stage = ReuseStage() if stage is None else stage
    core = CubeCore(launch, block_idx, compress=stage.repeats)
    return chain.from_iterable(map(stage, program_items(core, assigned, on_item)))


def assign_items(launch, policy: str = "greedy"):
    """Per core, the WorkItems it processes under a token policy, with the Cube era's items (batch x
    head x V-tile, split whenever dv > vStep) and avgload. Cost-weighted policies are not supported."""
    if policy not in POLICIES or policy in COST_POLICIES:
        allowed = ", ".join(p for p in POLICIES if p not in COST_POLICIES)
        raise InputError("kernel.policy", policy, f"with a Cube-era kernel one of {allowed}")
    t = launch.tiling
    per_head = t.v_tile_count if t.split else 1
    items = work_items(launch.lengths, t.hv, per_head, t.split)
    cores = [[] for _ in range(launch.block_dim)]
    if not items:
        return cores
    tokens = np.array([[it.seqlen for it in items]], np.int64)
    avgload = compute_avgload(launch.lengths, t.hv, per_head, launch.block_dim)
    owner = owners(policy, tokens, np.zeros_like(tokens), launch.block_dim, np.array([avgload]))[0]
    for it, core in zip(items, owner.tolist(), strict=True):
        cores[core].append(it)
    return cores


def core_assignments(launch, policy: str, assignment=None) -> list[set | None]:
    """Per core, the item keys a non-greedy policy gives it (None: the kernel's own greedy scan)."""
    if policy == "greedy":
        return [None] * launch.block_dim
    assignment = assign_items(launch, policy) if assignment is None else assignment
    return [{(it.batch, it.head, it.vtile) for it in items} for items in assignment]
