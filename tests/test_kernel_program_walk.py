"""The device program's walk (kernel/program.py) read back from the Tags it emits.

Every core replays ComputeAvgload and the greedy scan itself; the items each core then processes must
be exactly those ``dispatch.assign_items`` gives it, whatever the policy (or the ``assigned`` sets of
a host-side policy). Within an item, the chunks come in order, ``ceil(n / 64)`` of them, each running
phases 1-5 then steps 1-7 of every V-tile it covers; every core reads every sequence length twice
(ComputeAvgload, then the Process loop). Checked for a launch that keeps V-tiles together and one
that splits them across cores.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from kernel_cases import args, inputs

from cgdr_des.integers import ceil_div
from cgdr_des.isa import ScalarGm, Tag
from cgdr_des.kernel.dispatch import assign_items
from cgdr_des.kernel.functional import build_launch, core_assignments
from cgdr_des.kernel.launch import CHUNK_SIZE, should_split
from cgdr_des.kernel.program import CHUNK_PHASES, VTILE_STEPS, core_program

LAUNCHES = {  # lengths, nk, nv, dk, dv, ub_size
    "tiles_together": ([20, 3, 0, 70], 1, 3, 16, 16, 262144),
    "tiles_split": ([10, 0, 66], 1, 1, 128, 256, 196608),
}
CHUNK_LABELS = {p.label for p in CHUNK_PHASES}
STEP_LABELS = [p.label for p in VTILE_STEPS]


def launch_of(name: str):
    lengths, nk, nv, dk, dv, ub = LAUNCHES[name]
    x = inputs(lengths, nk, nv, dk, dv, seed=0)
    return build_launch(*args(x), numerics="off", ub_size=ub, aiv_num=8)


def walk(launch, core: int, assigned=None, on_item=None, emit=False) -> tuple[list[Tag], list]:
    """The Tags of core ``core``'s program and its records (numbers off; with ``emit`` False the
    program yields its Tags only, which is all the walk needs)."""
    records = list(core_program(launch, core, emit=emit, assigned=assigned, on_item=on_item))
    return [r for r in records if type(r) is Tag], records


def items_walked(tags: list[Tag], split: bool) -> list[tuple[int, int, int]]:
    """(batch, head, vtile) of each item, in the order its first chunk phase appears."""
    seen: list = []
    for t in tags:
        if t.phase == "P1_LoadChunkKey" and t.chunk == 0:
            seen.append((t.batch, t.head, t.vtile if split else -1))
    return seen


@pytest.mark.parametrize("name", LAUNCHES)
def test_the_split_case_is_what_the_launch_says(name):
    launch = launch_of(name)
    assert should_split(launch) == (name == "tiles_split")
    tiles = launch.tiling.v_tile_count
    assert tiles == ceil_div(launch.shape.dv, launch.tiling.v_step) and (tiles > 1) == (name == "tiles_split")


@pytest.mark.parametrize("policy", ["greedy", "round_robin", "longest_first"])
@pytest.mark.parametrize("name", LAUNCHES)
def test_each_core_walks_exactly_the_items_dispatch_gives_it(name, policy):
    launch = launch_of(name)
    sh, split = launch.shape, should_split(launch)
    cores = assign_items(launch.lengths, sh.nv, sh.dv, launch.tiling.v_step, launch.block_dim, policy)
    assigned = core_assignments(launch, policy)
    walked = 0
    for core in range(launch.block_dim):
        tags, _ = walk(launch, core, assigned=assigned[core])
        want = [(it.batch, it.head, it.vtile) for it in cores[core]]
        assert items_walked(tags, split) == want, core
        walked += len(want)
    per_head = launch.tiling.v_tile_count if split else 1
    assert walked == sum(n > 0 for n in launch.lengths) * sh.nv * per_head  # every item, once


@pytest.mark.parametrize("name", LAUNCHES)
def test_each_item_runs_its_chunks_in_order_each_with_every_phase_then_every_tile(name):
    launch = launch_of(name)
    split, n_tiles = should_split(launch), ceil_div(launch.shape.dv, launch.tiling.v_step)
    for core in range(launch.block_dim):
        tags, _ = walk(launch, core)
        per_item = defaultdict(list)
        for t in tags:
            if t.phase in CHUNK_LABELS or t.phase in STEP_LABELS:
                per_item[(t.batch, t.head, t.vtile if split else -1)].append(t)
        for (b, _head, vt), item_tags in per_item.items():
            n = int(launch.lengths[b])
            chunks = [t.chunk for t in item_tags if t.phase == "P1_LoadChunkKey"]
            assert chunks == list(range(ceil_div(n, CHUNK_SIZE)))
            tiles = [vt] if split else list(range(n_tiles))
            for c in chunks:
                in_chunk = [t for t in item_tags if t.chunk == c]
                k = sum(t.phase in CHUNK_LABELS for t in in_chunk)
                assert all(t.phase in CHUNK_LABELS for t in in_chunk[:k])  # phases 1-5 first
                steps = [(t.vtile, t.phase) for t in in_chunk[k:]]
                assert steps == [(v, s) for v in tiles for s in STEP_LABELS]
                assert all(t.vtile == (vt if split else -1) for t in in_chunk[:k])


@pytest.mark.slow
@pytest.mark.parametrize("name", LAUNCHES)
def test_every_core_reads_every_length_twice(name):
    launch = launch_of(name)
    base = launch.gm.addr("actual_seq_lengths", 0)
    for core in range(launch.block_dim):
        _, records = walk(launch, core, emit=True)
        reads = [(r.addr - base) // 4 for r in records if type(r) is ScalarGm and not r.store
                 and base <= r.addr < base + 4 * launch.shape.batch]
        batch = launch.shape.batch
        assert reads == list(range(batch)) + list(range(batch))


def test_on_item_is_called_once_per_item_as_it_starts():
    launch = launch_of("tiles_together")
    for core in range(launch.block_dim):
        started: list = []
        tags, _ = walk(launch, core, on_item=started.append)
        assert started == items_walked(tags, split=False)


def test_a_core_assigned_nothing_only_initialises_and_scans():
    launch = launch_of("tiles_together")
    tags, _ = walk(launch, 0, assigned=set())
    assert {t.phase for t in tags} == {"Init", "Process"}
