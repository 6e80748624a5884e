"""The tail surrogate's arithmetic (item_costs.py ItemCosts, tail/surrogate.py) on made-up costs.

No simulation: the costs are synthetic tables, so each expected number is computed here by a loop
over chunks, items and cores. An item of n tokens costs its sole chunk when n <= 64, else the
two-chunk cost of its tail plus one middle per further chunk; a core finishes at the launch's
overhead plus its own items; the lower bound is what no assignment beats.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgdr_des.item_costs import ItemCosts
from cgdr_des.kernel.policies import POLICIES, owners
from cgdr_des.tail.surrogate import Items, _overlap_share, _starts, _walk, estimate, item_arrays, items_of

CS = 64


def costs(*, nv=2, block_dim=3, v_tiles=1, split=False, siblings=1) -> ItemCosts:
    slots = v_tiles if split else 1
    sole = np.array([[1000 + 17 * L + 5 * v for L in range(CS + 1)] for v in range(slots)], np.int64)
    two = np.array([[3000 + 13 * L + 5 * v for L in range(CS + 1)] for v in range(slots)], np.int64)
    middle = np.array([2000 + 5 * v for v in range(slots)], np.int64)
    return ItemCosts(sole=sole, two=two, middle=middle, pre=500, per_item=7, per_batch=11.5, nv=nv, dv=128,
                     v_step=128 // v_tiles, v_tiles=v_tiles, split=split, block_dim=block_dim, clock_mhz=1000.0,
                     profile="synthetic", lock_two=two - 40, lock_middle=middle - 20, siblings=siblings)


def item_by_loop(c: ItemCosts, n: int, v: int, together: bool = False) -> int:
    """Walk the chunks of an n-token item: one sole chunk, or the two-chunk pair plus middles."""
    if n <= 0:
        return 0
    two, middle = (c.lock_two, c.lock_middle) if together else (c.two, c.middle)
    chunks = -(-n // CS)
    if chunks == 1:
        return int(c.sole[v, n])
    tail = n - CS * (chunks - 1)
    return int(two[v, tail]) + (chunks - 2) * int(middle[v])


@pytest.mark.parametrize("n", [0, 1, 17, 63, 64, 65, 100, 128, 129, 192, 640, 641, 4096])
def test_item_cycles_walk_the_chunks(n):
    c = costs(split=True, v_tiles=2)
    for v in (0, 1):
        assert c.item_cycles(n, v) == item_by_loop(c, n, v)
        assert c.item_cycles(n, v, together=True) == item_by_loop(c, n, v, together=True)
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


def test_split_tiles_with_siblings_are_between_together_and_apart():
    """Blended durations: never slower than apart, never faster than together (each item)."""
    c = costs(nv=1, block_dim=2, v_tiles=2, split=True, siblings=2)
    lengths = np.array([[300, 200]])
    est = estimate(c, lengths, "round_robin")
    tokens, apart = item_arrays(c, lengths)
    tiles = np.tile(np.arange(2), 2)
    together = c.item_cycles(tokens, tiles[None, :], together=True)
    busy_apart = [int(apart[0, k::2].sum()) for k in range(2)]     # round robin: item k on core k % 2
    busy_together = [int(together[0, k::2].sum()) for k in range(2)]
    assert all(t <= b <= a for t, b, a in zip(busy_together, est.busy[0].tolist(), busy_apart, strict=True))
    assert est.lower_bound(2)[0] == est.overhead[0] + max(-(-int(together.sum()) // 2), int(together.max()))



@pytest.mark.parametrize("policy", ["greedy", "round_robin", "cost_lpt", "minmax_contiguous"])
def test_equal_together_tables_skip_the_blend_and_change_nothing(policy):
    """A calibration of this version measures the together tables as the apart ones: the estimate
    then skips the sibling blend, and every frame is what the blend itself gives, to the cycle."""
    c = costs(nv=4, block_dim=3, v_tiles=2, split=True, siblings=2)
    c = replace(c, lock_two=c.two.copy(), lock_middle=c.middle.copy())
    assert c.together_is_apart and not costs(v_tiles=2, split=True, siblings=2).together_is_apart
    lengths = np.random.default_rng(11).integers(0, 400, (30, 5))
    items = items_of(c, lengths)
    assert items.together is None
    blended = Items(items.tokens, items.cycles, items.cycles.copy())    # what the blend path would take
    skipped, full = estimate(c, lengths, policy), estimate(c, lengths, policy, items=blended)
    for field in ("items", "tokens", "busy", "finish", "item_cycles", "overhead"):
        assert getattr(skipped, field).tolist() == getattr(full, field).tolist(), field


def starts_by_loop(dur, owner, per_item: int) -> list[list[int]]:
    """Item k starts after the walk over the k items before it and its core's own earlier items."""
    return [[per_item * k + sum(int(d[j]) for j in range(k) if o[j] == o[k]) for k in range(len(d))]
            for d, o in zip(dur, owner, strict=True)]


def overlap_by_loop(start, dur, owner, g: int) -> list[list[float]]:
    """Per item: the most cycles one sibling (same group of ``g`` neighbours) on another, real core runs
    alongside it, over its duration."""
    out = []
    for s, d, o in zip(start, dur, owner, strict=True):
        row = []
        for i in range(len(d)):
            head = range(i - i % g, i - i % g + g)
            best = max([max(0, min(s[i] + d[i], s[j] + d[j]) - max(s[i], s[j]))
                        for j in head if j != i and o[j] != o[i] and o[j] >= 0], default=0)
            row.append(best / d[i] if d[i] > 0 else 0.0)
        out.append(row)
    return out


@settings(max_examples=150, deadline=None, derandomize=True)
@given(g=st.integers(1, 4), heads=st.integers(1, 6), n=st.integers(1, 3), cores=st.integers(1, 5),
       seed=st.integers(0, 2**32 - 1))
def test_starts_and_sibling_overlap_equal_their_loops(g, heads, n, cores, seed):
    """The arrays behind the split-tile blend (padding items, owner -1, included) against plain loops."""
    rng = np.random.default_rng(seed)
    dur = rng.integers(0, 60, (n, g * heads))
    owner = rng.integers(-1, cores, (n, g * heads))
    start = _starts(dur, _walk(owner), 7)
    assert start.tolist() == starts_by_loop(dur, owner, 7)
    # on the walk's starts (one core's items never overlap) and on any starts (they may)
    for s in (start, rng.integers(0, 200, (n, g * heads))):
        assert np.allclose(_overlap_share(s, dur, owner, g), overlap_by_loop(s, dur, owner, g), rtol=0, atol=1e-12)
