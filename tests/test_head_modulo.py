"""The head-modulo finding docs/tail.md states: with one item per head and Nv a multiple of the core
count, round_robin, longest_first and cost_lpt put every core exactly on total / cores in every batch;
with Nv not a multiple they do not (the reason the headline study has 12 heads on 8 cores)."""

import numpy as np
import pytest

from cgdr_des.integers import ceil_div
from cgdr_des.kernel.policies import owners

EXACT = ("round_robin", "longest_first", "cost_lpt")


def batches(nv: int, seed: int, n: int = 200, b: int = 6):
    """(tokens, cost) of n random batches: b sequences (some empty), nv equal items per sequence
    (visiting order: sequence, then head), cost a random increasing function of the length plus fixed work."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 3000, size=(n, b)) * (rng.random((n, b)) > 0.2)
    per_token = rng.integers(50, 200)
    tokens = np.repeat(lengths, nv, axis=1)
    cost = np.where(tokens > 0, 7_000 + per_token * tokens + (tokens % 64) * 31, 0)
    return tokens, cost


def max_busy(policy, tokens, cost, m):
    own = owners(policy, tokens, cost, m, ceil_div(tokens.sum(axis=1), m))
    busy = np.stack([np.where(own == c, cost, 0).sum(axis=1) for c in range(m)], axis=1)
    return busy.max(axis=1)


@pytest.mark.parametrize(("nv", "m"), [(8, 8), (16, 8), (48, 48), (96, 48), (6, 2)])
@pytest.mark.parametrize("policy", EXACT)
def test_nv_a_multiple_of_the_cores_puts_every_batch_on_the_bound(policy, nv, m):
    tokens, cost = batches(nv, seed=nv * m)
    bound = np.maximum(ceil_div(cost.sum(axis=1), m), cost.max(axis=1))
    assert np.array_equal(max_busy(policy, tokens, cost, m), bound)


@pytest.mark.parametrize(("nv", "m"), [(12, 8), (16, 48)])
def test_otherwise_round_robin_leaves_the_bound(nv, m):
    tokens, cost = batches(nv, seed=1)
    bound = np.maximum(ceil_div(cost.sum(axis=1), m), cost.max(axis=1))
    assert (max_busy("round_robin", tokens, cost, m) > bound).mean() > 0.5
