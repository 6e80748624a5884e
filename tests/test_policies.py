"""Cost-weighted dispatch policies against exhaustive search and the classical LPT bound."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgdr_des.kernel.dispatch import BlockScan
from cgdr_des.kernel.policies import POLICIES, owners

small = st.fixed_dictionaries({
    "cost": st.lists(st.integers(1, 1000), min_size=1, max_size=7),
    "m": st.integers(1, 4),
})


def makespan(cost, owner, m):
    return max(sum(c for c, o in zip(cost, owner, strict=True) if o == core) for core in range(m))


def run(policy, cost, m):
    tokens = np.ones((1, len(cost)), np.int64)  # every item real; token weights play no part here
    return owners(policy, tokens, np.array([cost], np.int64), m, np.array([1]))[0].tolist()


def brute_optimum(cost, m):
    return min(makespan(cost, a, m) for a in itertools.product(range(m), repeat=len(cost)))


def brute_contiguous(cost, m):
    """Every split of the items into m (possibly empty) runs in order: the smallest largest run."""
    best = None
    for cuts in itertools.combinations_with_replacement(range(len(cost) + 1), m - 1):
        edges = (0, *cuts, len(cost))
        worst = max(sum(cost[a:b]) for a, b in itertools.pairwise(edges))
        best = worst if best is None else min(best, worst)
    return best


@pytest.mark.slow
@settings(max_examples=150, deadline=None, derandomize=True)
@given(c=small)
def test_optimal_equals_exhaustive_search(c):
    assert makespan(c["cost"], run("optimal", c["cost"], c["m"]), c["m"]) == brute_optimum(c["cost"], c["m"])


@pytest.mark.slow
@settings(max_examples=150, deadline=None, derandomize=True)
@given(c=small)
def test_cost_lpt_within_graham_bound_of_optimal(c):
    m, opt = c["m"], brute_optimum(c["cost"], c["m"])
    assert makespan(c["cost"], run("cost_lpt", c["cost"], m), m) <= (4 / 3 - 1 / (3 * m)) * opt
    assert makespan(c["cost"], run("optimal", c["cost"], m), m) == opt


@settings(max_examples=150, deadline=None, derandomize=True)
@given(c=small)
def test_minmax_contiguous_is_the_best_contiguous_split(c):
    owner = run("minmax_contiguous", c["cost"], c["m"])
    assert owner == sorted(owner) and max(owner) < c["m"]  # contiguous runs, cores in order
    assert makespan(c["cost"], owner, c["m"]) == brute_contiguous(c["cost"], c["m"])


@settings(max_examples=100, deadline=None, derandomize=True)
@given(c=small)
def test_cost_greedy_is_the_source_scan_on_cost_weights(c):
    m, cost = c["m"], c["cost"]
    avg = -(-sum(cost) // m)
    expected = []
    for core in range(m):  # each core replays IsCurrentBlock on the cost weights
        scan = BlockScan(core, avg)
        expected.append([k for k, w in enumerate(cost) if scan.is_current_block(w)])
    owner = run("cost_greedy", cost, m)
    assert [[k for k, o in enumerate(owner) if o == core] for core in range(m)] == expected


@pytest.mark.slow
@settings(max_examples=150, deadline=None, derandomize=True)
@given(rows=st.lists(st.lists(st.integers(0, 50), min_size=0, max_size=30), min_size=1, max_size=4).filter(
           lambda rows: len({len(r) for r in rows}) == 1),
       m=st.integers(1, 6), shift=st.integers(-3, 3))
def test_greedy_is_every_core_replaying_is_current_block(rows, m, shift):
    """Many batches at once, padding (weight 0) and avgloads below, at and above the source's ceil(total / m)
    (0 and negative too): each real item is claimed by the core whose ``IsCurrentBlock`` says mine, and by
    none when the bins run past the last core."""
    tokens = np.array(rows, np.int64).reshape(len(rows), -1)
    avg = np.array([max(-(-int(t.sum()) // m) + shift * 3, -1) for t in tokens], np.int64)
    owner = owners("greedy", tokens, tokens * 7, m, avg)
    for t, a, got in zip(tokens.tolist(), avg.tolist(), owner.tolist(), strict=True):
        scans = [BlockScan(core, a) for core in range(len(t) + 1)]     # enough cores for every bin
        want = []
        for w in t:
            mine = [core for core, scan in enumerate(scans) if scan.is_current_block(w)]
            want.append(mine[0] if mine else -1)
        assert got == want


def test_padding_items_get_no_core_under_every_policy():
    tokens = np.array([[5, 0, 7, 0, 9]], np.int64)
    cost = tokens * 10 + 100
    for name in POLICIES:
        owner = owners(name, tokens, cost, 2, np.array([11]))[0]
        assert (owner[[1, 3]] == -1).all() and (owner[[0, 2, 4]] >= 0).all(), name


def test_vectorised_rows_equal_one_batch_at_a_time():
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, 200, (40, 12)).astype(np.int64)
    cost = tokens * 37 + 5000 * (tokens > 0)
    avg = -(-tokens.sum(axis=1) // 3)
    for name in POLICIES:
        together = owners(name, tokens, cost, 3, avg)
        alone = np.vstack([owners(name, tokens[i:i + 1], cost[i:i + 1], 3, avg[i:i + 1]) for i in range(40)])
        assert (together == alone).all(), name


def _fill_item_by_item(cost, limit):
    """The contiguous greedy fill one item at a time (the form minmax_contiguous had before its
    searchsorted fill): a new core starts when the current one would exceed the limit."""
    owner, part, cur = np.empty(cost.shape, np.int64), np.zeros(len(cost), np.int64), np.zeros(len(cost), np.int64)
    for j in range(cost.shape[1]):
        w = cost[:, j]
        cur += w
        over = (cur > limit) & (cur > w)
        part += over
        cur = np.where(over, w, cur)
        owner[:, j] = part
    return owner, part + 1


@pytest.mark.slow
def test_minmax_contiguous_equals_the_item_by_item_fill_with_padding_and_many_items():
    rng = np.random.default_rng(11)
    for _ in range(60):
        n, k, m = int(rng.integers(1, 20)), int(rng.integers(1, 300)), int(rng.integers(1, 50))
        tokens = rng.integers(0, 3000, (n, k)).astype(np.int64)
        tokens[rng.random((n, k)) < rng.random() * 0.5] = 0  # padding items, anywhere
        cost = np.where(tokens > 0, tokens * 41 + 9000, 0)
        lo = np.maximum(cost.max(axis=1), -(-cost.sum(axis=1) // m))
        hi = np.maximum(cost.sum(axis=1), lo)
        while (lo < hi).any():  # the bisection over the reference fill
            mid = (lo + hi) // 2
            ok = _fill_item_by_item(cost, mid)[1] <= m
            hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid + 1)
        expected = np.where(tokens > 0, _fill_item_by_item(cost, hi)[0], -1)
        assert (owners("minmax_contiguous", tokens, cost, m, np.ones(n, np.int64)) == expected).all()


def lpt_by_loop(weights: list[int], m: int) -> list[int]:
    """LPT item by item: heaviest first (visiting order among equals), each to the least-loaded core
    (the lowest index among equals)."""
    loads, owner = [0] * m, [0] * len(weights)
    for k in sorted(range(len(weights)), key=lambda k: (-weights[k], k)):
        core = loads.index(min(loads))
        owner[k], loads[core] = core, loads[core] + weights[k]
    return owner


@pytest.mark.parametrize("policy", ["cost_lpt", "longest_first"])
def test_lpt_policies_equal_the_item_by_item_loop(policy):
    """Every batch's owners as the plain loop gives them: ties in weight and load, padding items
    (weight 0, owner -1) and batches of different item counts in one call."""
    rng = np.random.default_rng(21)
    for m in (1, 3, 48):
        tokens = rng.integers(1, 6, (40, 30)) * 64        # few distinct weights: ties everywhere
        tokens[rng.random(tokens.shape) < 0.2] = 0
        tokens[5] = 0                                     # a batch of padding only
        cost = tokens * 7 + rng.integers(0, 2, tokens.shape) * (tokens > 0)
        got = owners(policy, tokens, cost, m, np.ones(len(tokens), np.int64))
        weights = cost if policy == "cost_lpt" else tokens
        for row, w, t in zip(got, weights, tokens, strict=True):
            want = lpt_by_loop([int(x) if x > 0 else 0 for x in np.where(t > 0, w, 0)], m)
            assert row.tolist() == [o if x > 0 else -1 for o, x in zip(want, t, strict=True)]
