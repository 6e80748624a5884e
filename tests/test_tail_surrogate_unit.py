"""The tail surrogate's arithmetic (item_costs.py ItemCosts, tail/surrogate.py) on made-up costs.

No simulation: the costs are synthetic tables, so each expected number is computed here by a loop
over chunks, items and cores. An item of n tokens costs its sole chunk when n <= 64, else the
two-chunk cost of its tail plus one middle per further chunk; a core finishes at the launch's
overhead plus its own items; the lower bound is what no assignment beats.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgdr_des.item_costs import ItemCosts
from cgdr_des.kernel.policies import POLICIES, owners
from cgdr_des.tail.surrogate import estimate, item_arrays

CS = 64


def costs(*, nv=2, block_dim=3, v_tiles=1, split=False) -> ItemCosts:
    slots = v_tiles if split else 1
    sole = np.array([[1000 + 17 * L + 5 * v for L in range(CS + 1)] for v in range(slots)], np.int64)
    two = np.array([[3000 + 13 * L + 5 * v for L in range(CS + 1)] for v in range(slots)], np.int64)
    middle = np.array([2000 + 5 * v for v in range(slots)], np.int64)
    return ItemCosts(sole=sole, two=two, middle=middle, pre=500, per_item=7, per_batch=11.5, nv=nv, dv=128,
                     v_step=128 // v_tiles, v_tiles=v_tiles, split=split, block_dim=block_dim, clock_mhz=1000.0,
                     profile="synthetic")


def item_by_loop(c: ItemCosts, n: int, v: int) -> int:
    """Walk the chunks of an n-token item: one sole chunk, or the two-chunk pair plus middles."""
    if n <= 0:
        return 0
    chunks = -(-n // CS)
    if chunks == 1:
        return int(c.sole[v, n])
    tail = n - CS * (chunks - 1)
    return int(c.two[v, tail]) + (chunks - 2) * int(c.middle[v])


@pytest.mark.parametrize("n", [0, 1, 17, 63, 64, 65, 100, 128, 129, 192, 640, 641, 4096])
def test_item_cycles_walk_the_chunks(n):
    c = costs(split=True, v_tiles=2)
    for v in (0, 1):
        assert c.item_cycles(n, v) == item_by_loop(c, n, v)
    assert costs().item_cycles(n, -1) == item_by_loop(costs(), n, 0)  # -1: an unsplit item, slot 0


def test_item_cycles_of_an_array_are_each_element_s():
    c = costs()
    lengths = np.array([[0, 5, 64], [65, 300, 1]])
    got = c.item_cycles(lengths, np.full(lengths.shape, -1))
    assert got.dtype == np.int64
    assert got.tolist() == [[item_by_loop(c, int(n), 0) for n in row] for row in lengths]


def test_overhead_is_pre_plus_per_item_plus_per_batch_rounded():
    c = costs()
    got = c.overhead(np.array([3, 4]), np.array([10, 0]))
    assert got.tolist() == [round(500 + 10 * 7 + 3 * 11.5), round(500 + 0 + 4 * 11.5)]


def test_items_are_in_visiting_order_batch_then_head_then_tile():
    c = costs(nv=2, split=True, v_tiles=2)
    tokens, cycles = item_arrays(c, np.array([[70, 0, 5]]))
    want_tokens = [n for n in (70, 0, 5) for _head in range(2) for _tile in range(2)]
    assert tokens[0].tolist() == want_tokens
    tiles = [t for _ in range(3 * 2) for t in range(2)]
    assert cycles[0].tolist() == [item_by_loop(c, n, v) for n, v in zip(want_tokens, tiles, strict=True)]


def finish_by_loop(c: ItemCosts, lengths: list[int], policy: str) -> tuple[list[int], list[int], list[int]]:
    """Per core: items, tokens and finish, summing each owned item's cost in a Python loop."""
    tokens = [n for n in lengths for _ in range(c.nv)]
    cost = [item_by_loop(c, n, 0) for n in tokens]
    m = c.block_dim
    avgload = -(-sum(tokens) // m)
    owner = owners(policy, np.array([tokens]), np.array([cost]), m, np.array([avgload]))[0]
    items, toks, busy = [0] * m, [0] * m, [0] * m
    for k, o in enumerate(owner):
        if o >= 0:
            items[o] += 1
            toks[o] += tokens[k]
            busy[o] += cost[k]
    real = sum(1 for n in tokens if n > 0)
    overhead = round(c.pre + real * c.per_item + len(lengths) * c.per_batch)
    return items, toks, [overhead + b for b in busy]


lengths_st = st.lists(st.integers(0, 700), min_size=1, max_size=6).filter(lambda xs: sum(xs) > 0)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(lengths=lengths_st, policy=st.sampled_from(sorted(set(POLICIES) - {"optimal"})))
def test_a_core_finishes_at_the_overhead_plus_its_own_items(lengths, policy):
    c = costs(nv=2, block_dim=3)
    est = estimate(c, np.array([lengths]), policy)
    items, toks, finish = finish_by_loop(c, lengths, policy)
    assert est.items[0].tolist() == items and est.tokens[0].tolist() == toks
    assert est.finish[0].tolist() == finish
    assert est.makespan[0] == max(finish)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(lengths=lengths_st, policy=st.sampled_from(sorted(set(POLICIES) - {"optimal"})))
def test_no_policy_beats_the_lower_bound(lengths, policy):
    c = costs(nv=2, block_dim=3)
    est = estimate(c, np.array([lengths]), policy)
    cost = [item_by_loop(c, n, 0) for n in lengths for _ in range(c.nv)]
    bound = est.overhead[0] + max(-(-sum(cost) // c.block_dim), max(cost))
    assert est.lower_bound(c.block_dim)[0] == bound
    assert est.makespan[0] >= bound


def test_many_batches_at_once_equal_one_at_a_time():
    c = costs(nv=2, block_dim=4)
    rng = np.random.default_rng(5)
    batch = rng.integers(0, 500, (12, 5))
    batch[3] = [0, 0, 0, 0, 9]
    together = estimate(c, batch, "greedy")
    for i in range(12):
        alone = estimate(c, batch[i], "greedy")
        assert together.finish[i].tolist() == alone.finish[0].tolist()


def test_split_tiles_are_items_of_their_own_slot_s_table():
    """Each V-tile of a head is an item timed by its slot's table, on the core the policy gives it;
    the lower bound is every item at that duration (siblings alongside change nothing: each core
    keeps its own data cache)."""
    c = costs(nv=1, block_dim=2, v_tiles=2, split=True)
    lengths = np.array([[300, 200]])
    est = estimate(c, lengths, "round_robin")
    want = [item_by_loop(c, n, v) for n in (300, 200) for v in (0, 1)]
    busy = [sum(want[k::2]) for k in range(2)]     # round robin: item k on core k % 2
    assert est.busy[0].tolist() == busy
    assert est.lower_bound(2)[0] == est.overhead[0] + max(-(-sum(want) // 2), max(want))
