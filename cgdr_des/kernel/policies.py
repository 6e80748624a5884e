"""Dispatch policies as array functions: many batches at once, one owner core per work item.

Every policy has the signature ``policy(tokens, cost, block_dim, avgload) -> owner`` where
``tokens`` and ``cost`` are ``(N, K)`` int64 arrays (N batches, K items in ``Process`` visiting
order; an item of weight 0 in ``tokens`` is padding and gets owner -1), ``cost`` is each item's
modelled duration in cycles (from the tail calibration; token policies ignore it), ``avgload`` is
the source's ``ComputeAvgload`` per batch (``(N,)``). The result is an ``(N, K)`` int64 array of core
indices. A core always walks its items in visiting order: a policy only changes which core says
"mine" to an item.

What the kernel would have to change to run each policy is in its docstring. Two mechanisms exist:
a *device-side predicate* (every core evaluates the same deterministic rule while walking the
items, as ``IsCurrentBlock`` does), or *host-computed ranges* (the host tiling function computes
each core's items and passes them in the tiling data; the device then compares its block index
with the owner of each item, or with a [first, last) range when the ownership is contiguous).
The batch's lengths are host-visible (``actual_seq_lengths`` is a host input), so both are possible.
"""

from __future__ import annotations

import numpy as np

from cgdr_des.errors import InputError
from cgdr_des.integers import ceil_div

#: ``optimal`` is exact (branch and bound); beyond this many items per batch it is not offered.
OPTIMAL_MAX_ITEMS = 20


def _end_to_end(csum: np.ndarray, reach: int) -> tuple[np.ndarray, int]:
    """The rows of prefix sums ``csum`` (``(N, K + 1)``, nondecreasing) laid end to end as one sorted array,
    row r shifted by ``r * span``, and ``span``: past every value by more than ``reach`` (a row's sum plus
    at most ``reach`` never reaches the next row), so one ``searchsorted`` answers for every row at once."""
    span = int(csum[:, -1].max(initial=0)) + max(reach, 0) + 1
    return (csum + span * np.arange(len(csum))[:, None]).ravel(), span


def _scan(weights: np.ndarray, avgload: np.ndarray) -> np.ndarray:
    """``IsCurrentBlock`` vectorised over batches: a bin closes at the item that brings it to avgload.

    A bin that starts at item ``s`` closes at the first item whose prefix sum from ``s`` reaches avgload:
    one ``searchsorted`` over the rows' prefix sums laid end to end finds it for every batch at once (as
    :func:`_fill` does), a step per bin rather than per item (a B = 64 batch of 32 heads on two V-tiles
    is 4 096 items and at most a bin per core).
    """
    n, k = weights.shape
    csum = np.zeros((n, k + 1), np.int64)
    np.cumsum(weights, axis=1, out=csum[:, 1:])
    avg = np.broadcast_to(np.asarray(avgload, np.int64), (n,))
    flat, span = _end_to_end(csum, int(avg.max(initial=0)))
    mark = np.zeros((n, k + 1), np.int64)   # 1 where a bin starts
    start = np.zeros(n, np.int64)
    live = np.arange(n if k else 0)    # the batches with items left to scan
    while live.size:
        s = start[live]
        mark[live, s] = 1
        first = np.searchsorted(flat, csum[live, s] + avg[live] + span * live, side="left") - live * (k + 1)
        start[live] = np.maximum(first, s + 1)    # after the item that closes it (itself, when avgload <= 0)
        live = live[start[live] < k]
    return np.cumsum(mark[:, :-1], axis=1) - 1


def greedy(tokens, cost, block_dim, avgload):
    """The source: ``IsCurrentBlock`` claims contiguous runs until a run's tokens reach avgload.

    Kernel change: none (this is ``chunk_gated_delta_rule.h``).
    """
    return _scan(tokens, avgload)


def cost_greedy(tokens, cost, block_dim, avgload):
    """The source's contiguous scan weighted by modelled item cost (cycles) instead of tokens.

    The bin size is ``Ceil(total cost, blockDim)``. Kernel change: the smallest one that sees the
    fixed per-item work: ``IsCurrentBlock`` adds ``a + b * nChunks + cost(tailLength)`` instead of
    ``seqLen`` (a device-side predicate with a small cost table passed in the tiling data), and
    ``ComputeAvgload`` sums the same weights.
    """
    total = cost.sum(axis=1)
    return _scan(cost, ceil_div(total, block_dim))


def round_robin(tokens, cost, block_dim, avgload):
    """Item k (visiting order, empty batches skipped) goes to core ``k % blockDim``.

    Kernel change: device-side predicate ``itemIndex % GetBlockNum() == blockIdx`` replacing
    ``IsCurrentBlock`` (the naive head-modulo scheme).
    """
    rank = np.cumsum(tokens > 0, axis=1) - 1
    return rank % block_dim


def float_share(tokens, cost, block_dim, avgload):
    """Contiguous runs cut at exact fractional token shares: the core whose share holds the item's midpoint.

    Item k, with ``P`` tokens before it and ``w`` its own, goes to core
    ``(2P + w) * blockDim // (2 * total)`` (integers: exact). Kernel change: device-side predicate
    computing that expression from a running token sum instead of ``IsCurrentBlock``'s bins.
    """
    total = tokens.sum(axis=1, keepdims=True)
    before = np.cumsum(tokens, axis=1) - tokens
    return (2 * before + tokens) * block_dim // np.maximum(2 * total, 1)


def _lpt(weights: np.ndarray, block_dim: int) -> np.ndarray:
    """Heaviest item first to the least-loaded core (lowest index on ties; equal weights in visiting order).

    One step per item for every batch at once; a step is an argmin over the loads and one add, the
    owners written back in visiting order after the loop (a B = 64 batch of 32 heads on two V-tiles
    is 4 096 steps). Once every batch is down to its zero-weight items (padding) the loads stop
    moving, so the rest go to the least-loaded core without a step each."""
    n, k = weights.shape
    order = np.argsort(-weights, axis=1, kind="stable")
    w = np.ascontiguousarray(np.take_along_axis(weights, order, axis=1).T)   # (K, N): step j's weights
    loads = np.zeros((n, block_dim), np.int64)
    flat, base = loads.ravel(), np.arange(n) * block_dim
    picked = np.empty((k, n), np.int64)
    steps = int((weights > 0).sum(axis=1).max(initial=0))
    for j in range(steps):
        core = loads.argmin(axis=1)
        picked[j] = core
        flat[base + core] += w[j]
    picked[steps:] = loads.argmin(axis=1)
    owner = np.empty((n, k), np.int64)
    np.put_along_axis(owner, order, picked.T, axis=1)
    return owner


def longest_first(tokens, cost, block_dim, avgload):
    """LPT on tokens: items by sequence length, descending, each to the least-loaded core.

    Kernel change: host-computed ownership (the host sorts the items and passes an owner per item in
    the tiling data; the device tests ``owner[item] == blockIdx`` while walking in visiting order).
    """
    return _lpt(tokens, block_dim)


def cost_lpt(tokens, cost, block_dim, avgload):
    """LPT on modelled item cost (cycles): within (4/3 - 1/(3m)) of the optimum (Graham 1969).

    Kernel change: host-computed ownership as for ``longest_first``, the host also needing the item
    cost model (a per-chunk-length table) to sort by.
    """
    return _lpt(cost, block_dim)


def _fill(csum: np.ndarray, limit: np.ndarray, most: int, owner: bool = False, ends=None):
    """Contiguous greedy fill of items with prefix sums ``csum`` (``(N, K + 1)``): a new core starts
    when the current one would exceed ``limit``. Returns the cores used per batch (counted up to
    ``most + 1``: beyond that the count only needs to say "too many"), and with ``owner`` the owner of
    every item too. The fill uses as few cores as any split under ``limit``.

    ``limit`` is at least each batch's largest item (as every limit the bisection tries is), so a part
    ends where the running sum from its first item would pass ``limit``: one ``searchsorted`` over the
    rows' prefix sums laid end to end finds that end for every batch at once, a call per part rather
    than a Python step per item (the item loop was half of a tail study's time at B = 64). ``ends``:
    :func:`_end_to_end` of ``csum`` with a reach of at least every ``limit``, when the caller has it.
    """
    n, k1 = csum.shape
    flat, span = ends if ends is not None else _end_to_end(csum, int(limit.max()))
    rows = np.arange(n)
    start = np.zeros(n, np.int64)
    parts = np.zeros(n, np.int64)
    mark = np.zeros((n, k1), np.int64) if owner else None
    for _ in range(most + 1):
        live = start < k1 - 1
        if not live.any():
            break
        parts += live
        if owner:
            mark[rows[live], start[live]] = 1
        end = np.searchsorted(flat, csum[rows, start] + limit + span * rows, side="right") - 1 - rows * k1
        start = np.where(live, end, start)
    if not owner:
        return parts
    return parts, np.cumsum(mark[:, :-1], axis=1) - 1


def minmax_contiguous(tokens, cost, block_dim, avgload):
    """Contiguous ranges in visiting order whose largest modelled cost is as small as possible.

    Exact: the smallest feasible integer limit is found by bisection (a contiguous split under a
    limit exists iff the greedy fill needs at most blockDim cores), then the fill under it is used.
    Ascend's FlashAttention tiling reaches nearly the same ranges heuristically (even split, greedy
    fill to the average, boundary shifts). Kernel change: host-computed per-core ranges
    ``[first, last)`` in the tiling data, the device keeping its contiguous walk and testing
    ``first <= itemIndex < last`` instead of ``IsCurrentBlock``.
    """
    csum = np.zeros((cost.shape[0], cost.shape[1] + 1), np.int64)
    np.cumsum(cost, axis=1, out=csum[:, 1:])
    lo = np.maximum(cost.max(axis=1), ceil_div(csum[:, -1], block_dim))
    # feasible: under ceil(total / m) + the largest item every part the fill closes holds more than
    # total / m, so it closes at most m parts; a bracket of one item's width, not the batch's total
    hi = np.maximum(np.minimum(csum[:, -1], ceil_div(csum[:, -1], block_dim) + cost.max(axis=1)), lo)
    ends = _end_to_end(csum, int(hi.max(initial=0)))    # every limit tried is at most the first hi
    while (lo < hi).any():
        mid = (lo + hi) // 2
        ok = _fill(csum, mid, block_dim, ends=ends) <= block_dim
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid + 1)
    return _fill(csum, hi, cost.shape[1], owner=True, ends=ends)[1]


def _bnb(w: list[int], m: int) -> list[int]:
    """Exact P||Cmax by depth-first branch and bound, heaviest item first; returns an owner per item."""
    order = sorted(range(len(w)), key=lambda k: (-w[k], k))
    seed = _lpt(np.asarray([w], np.int64), m)[0].tolist()
    best = [max(sum(w[k] for k in range(len(w)) if seed[k] == c) for c in range(m)), seed]
    floor = max(max(w), ceil_div(sum(w), m))
    loads, assign, rest = [0] * m, [0] * len(w), sum(w)

    def dfs(j: int, high: int) -> bool:  # True: the lower bound is reached, stop searching
        """Place items ``order[j:]`` on the cores; ``high`` is the largest load so far. Updates ``best``."""
        nonlocal rest
        if j == len(order):
            best[:] = [high, assign.copy()]
            return high <= floor
        k, seen = order[j], set()
        for c in range(m):
            new = loads[c] + w[k]
            if loads[c] in seen or max(high, new) >= best[0]:
                continue  # cores of equal load are interchangeable; this branch cannot improve
            seen.add(loads[c])
            loads[c], assign[k], rest = new, c, rest - w[k]
            done = dfs(j + 1, max(high, new))
            loads[c], rest = new - w[k], rest + w[k]
            if done:
                return True
        return False

    if best[0] > floor:
        dfs(0, 0)
    return best[1]


def optimal(tokens, cost, block_dim, avgload):
    """The exact minimum-makespan assignment on modelled cost (small batches only; a reference).

    Branch and bound over at most :data:`OPTIMAL_MAX_ITEMS` items per batch. Kernel change:
    host-computed ownership (an owner per item in the tiling data), and a host that can afford an
    exponential search, which is why this is a reference, not a proposal.
    """
    owner = np.full(cost.shape, -1, np.int64)
    for i in range(cost.shape[0]):
        valid = np.flatnonzero(tokens[i] > 0)
        if valid.size > OPTIMAL_MAX_ITEMS:
            raise InputError("policy", "optimal", f"at most {OPTIMAL_MAX_ITEMS} work items per batch "
                             f"(a batch has {valid.size}); use cost_lpt or minmax_contiguous")
        if valid.size:
            owner[i, valid] = _bnb(cost[i, valid].tolist(), block_dim)
    return owner


POLICIES = {
    "greedy": greedy,
    "round_robin": round_robin,
    "float_share": float_share,
    "longest_first": longest_first,
    "cost_greedy": cost_greedy,
    "cost_lpt": cost_lpt,
    "minmax_contiguous": minmax_contiguous,
    "optimal": optimal,
}
#: Policies that weigh items by modelled cost, so that running them needs a calibration.
COST_POLICIES = frozenset({"cost_greedy", "cost_lpt", "minmax_contiguous", "optimal"})


def owners(policy: str, tokens: np.ndarray, cost: np.ndarray, block_dim: int, avgload: np.ndarray) -> np.ndarray:
    """The owner core of every item of every batch under ``policy`` (-1 for padding items)."""
    if policy not in POLICIES:
        raise InputError("policy", policy, f"one of {', '.join(POLICIES)}")
    cost = np.where(tokens > 0, cost, 0)
    owner = POLICIES[policy](tokens, cost, block_dim, np.asarray(avgload, np.int64))
    return np.where(tokens > 0, owner, -1)
