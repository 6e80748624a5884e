"""Work distribution: greedy scan vs an independent cumulative-sum model, policy invariants, §4.3 examples."""

import heapq

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgdr_des.errors import InputError
from cgdr_des.kernel.dispatch import (
    POLICIES,
    BlockScan,
    assign_items,
    compute_avgload,
    should_split_v_tiles,
    work_items,
)
from cgdr_des.kernel.policies import OPTIMAL_MAX_ITEMS
from cgdr_des.kernel.tiling import compute_tiling

cases = st.fixed_dictionaries({
    "lengths": st.lists(st.one_of(st.just(0), st.integers(1, 300)), min_size=1, max_size=6),
    "nv": st.integers(1, 8),
    "dv": st.sampled_from([32, 64, 100, 128, 256]),
    "v_step": st.sampled_from([16, 64, 128]),
    "block_dim": st.integers(1, 10),
})


def toy_cost(seqlen, vtile):
    """A stand-in item cost with the shape of the real one: fixed work plus a per-token part."""
    return 20_000 + 300 * seqlen + 7 * (vtile + 1)


def keys(items):
    return [(it.batch, it.head, it.vtile) for it in items]


def expected_items(c):
    """Every (batch, head[, vtile]) with a positive length, in visiting order."""
    split = c["dv"] > c["v_step"] and c["block_dim"] > c["nv"]
    tiles = range(-(-c["dv"] // c["v_step"])) if split else [-1]
    return [(b, h, vt) for b, n in enumerate(c["lengths"]) if n > 0 for h in range(c["nv"]) for vt in tiles]


def cumsum_bins(weights, avgload):
    """Independent model of the greedy scan: a bin closes at the first item whose cumulative load
    since the previous closure reaches avgload (found with searchsorted); the closing item stays."""
    csum = np.cumsum(weights)
    bins = np.empty(len(weights), dtype=int)
    start, base, b = 0, 0, 0
    while start < len(weights):
        end = int(np.searchsorted(csum, base + avgload, side="left"))  # first index reaching the share
        bins[start:end + 1] = b
        if end >= len(weights):
            break
        base, start, b = csum[end], end + 1, b + 1
    return bins


@settings(max_examples=200, deadline=None, derandomize=True)
@given(c=cases, policy=st.sampled_from(sorted(POLICIES)))
def test_every_item_claimed_exactly_once(c, policy):
    if policy == "optimal" and len(expected_items(c)) > OPTIMAL_MAX_ITEMS:
        with pytest.raises(InputError, match="optimal"):
            assign_items(**c, policy=policy, item_cost=toy_cost)
        return
    cores = assign_items(**c, policy=policy, item_cost=toy_cost)
    assert len(cores) == c["block_dim"]
    claimed = sorted(k for core in cores for k in keys(core))
    assert claimed == sorted(expected_items(c))
    for core in cores:  # each core walks its items in visiting order
        order = keys(core)
        assert order == sorted(order)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(c=cases)
def test_greedy_matches_cumulative_sum_model(c):
    cores = assign_items(**c, policy="greedy")
    items = [it for core in cores for it in core]
    items.sort(key=lambda it: (it.batch, it.head, it.vtile))
    if not items:
        return
    split = items[0].vtile >= 0
    per_head = -(-c["dv"] // c["v_step"]) if split else 1
    avgload = -(-sum(c["lengths"]) * c["nv"] * per_head // c["block_dim"])
    bins = cumsum_bins([it.seqlen for it in items], avgload)
    assert bins.max() < c["block_dim"]  # the scan never needs more bins than cores
    owner = {(it.batch, it.head, it.vtile): core for core, lst in enumerate(cores) for it in lst}
    assert [owner[k] for k in keys(items)] == bins.tolist()
    last = max(i for i, lst in enumerate(cores) if lst)
    for core in cores[:last]:  # every filled bin ends with the item that crossed avgload
        loads = [it.seqlen for it in core]
        assert loads and sum(loads) >= avgload > sum(loads[:-1])


def test_block_scan_mirrors_is_current_block():
    scan = BlockScan(block_idx=1, avgload=10)
    answers = [scan.is_current_block(w) for w in (6, 5, 4, 7, 3)]
    # loads 6 -> 11 closes bin 0 on the 2nd item; 4 -> 11 closes bin 1 on the 4th; bin 2 gets the rest.
    assert answers == [False, False, True, True, False]
    assert (scan.usedblk, scan.load) == (2, 3)


def test_compute_avgload_ignores_negative_lengths():
    assert compute_avgload([5, -3, 4], nv=2, work_items_per_head=1, block_num=4) == -(-(9 * 2) // 4)
    assert compute_avgload([7], nv=1, work_items_per_head=2, block_num=3) == 5


def test_should_split_v_tiles():
    assert should_split_v_tiles(256, 128, 2, 1)
    assert not should_split_v_tiles(128, 128, 8, 1)
    assert not should_split_v_tiles(256, 128, 8, 8)


def test_work_items_visiting_order_and_seq0():
    items = work_items([3, 0, 5], nv=2, v_tiles=2, split=True)
    assert keys(items) == [(b, h, vt) for b in (0, 2) for h in (0, 1) for vt in (0, 1)]
    assert {it.seq0 for it in items if it.batch == 2} == {3}
    assert all(it.vtile == -1 for it in work_items([4], nv=3, v_tiles=2, split=False))


def test_example_one_batch_sixteen_heads():
    til = compute_tiling(t=128, hqk=16, dk=128, hv=16, dv=128, batch=1, ub_size=262144, aiv_num=8)
    cores = assign_items([128], 16, 128, til.v_step, til.block_dim)
    assert [[it.head for it in core] for core in cores] == [[2 * c, 2 * c + 1] for c in range(8)]


def test_example_two_batches_eight_heads():
    cores = assign_items([512, 512], nv=8, dv=128, v_step=128, block_dim=8)
    assert keys(cores[0]) == [(0, 0, -1), (0, 1, -1)]
    assert keys(cores[4]) == [(1, 0, -1), (1, 1, -1)]


def test_example_split_mode():
    til = compute_tiling(t=128, hqk=1, dk=128, hv=1, dv=256, batch=1, ub_size=262144, aiv_num=8)
    cores = assign_items([128], 1, 256, til.v_step, til.block_dim)
    assert keys(cores[0]) == [(0, 0, 0)] and keys(cores[1]) == [(0, 0, 1)]


def test_round_robin_is_modulo():
    cores = assign_items([10, 20, 30], nv=2, dv=64, v_step=64, block_dim=4, policy="round_robin")
    flat = work_items([10, 20, 30], 2, 1, False)
    for k, it in enumerate(flat):
        assert it in cores[k % 4]


def lpt_reference(weights, m):
    """LPT with a heap of (load, core): heaviest first, stable among equal weights."""
    heap = [(0, c) for c in range(m)]
    owner = {}
    for k in sorted(range(len(weights)), key=lambda k: (-weights[k], k)):
        load, core = heapq.heappop(heap)
        owner[k] = core
        heapq.heappush(heap, (load + weights[k], core))
    return owner


@settings(max_examples=150, deadline=None, derandomize=True)
@given(c=cases)
def test_longest_first_matches_heap_lpt(c):
    cores = assign_items(**c, policy="longest_first")
    items = sorted((it for core in cores for it in core), key=lambda it: (it.batch, it.head, it.vtile))
    if not items:
        return
    owner = lpt_reference([it.seqlen for it in items], c["block_dim"])
    where = {id(it): core for core, lst in enumerate(cores) for it in lst}
    assert [where[id(it)] for it in items] == [owner[k] for k in range(len(items))]
    loads = [sum(it.seqlen for it in core) for core in cores]
    total, biggest = sum(loads), max(it.seqlen for it in items)
    assert max(loads) <= total / c["block_dim"] + biggest  # list-scheduling bound


@settings(max_examples=150, deadline=None, derandomize=True)
@given(c=cases)
def test_float_share_is_contiguous_and_near_fair(c):
    cores = assign_items(**c, policy="float_share")
    items = [it for core in cores for it in core]
    assert keys(items) == sorted(keys(items))  # contiguous runs, cores in order
    if not items:
        return
    total, biggest = sum(it.seqlen for it in items), max(it.seqlen for it in items)
    for core in cores:
        assert sum(it.seqlen for it in core) <= total / c["block_dim"] + biggest


def test_unknown_policy_lists_allowed_names():
    allowed = "greedy, round_robin, float_share, longest_first"
    with pytest.raises(InputError, match=f"policy: got 'fifo'.*{allowed}"):
        assign_items([4], 1, 64, 64, 2, policy="fifo")


def test_bad_arguments():
    with pytest.raises(InputError, match="actual_seq_lengths"):
        assign_items([4, -1], 1, 64, 64, 2)
    with pytest.raises(InputError, match="block_dim"):
        assign_items([4], 1, 64, 64, 0)
    with pytest.raises(InputError, match="policy: got 'cost_lpt'.*item_cost"):
        assign_items([4], 1, 64, 64, 2, policy="cost_lpt")


def test_all_empty_gives_empty_cores():
    assert assign_items([0, 0], 4, 64, 64, 3) == [[], [], []]
