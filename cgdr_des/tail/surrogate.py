"""The surrogate: every core's finish for many batches at once, from the calibrated item costs.

A batch of B lengths becomes ``K = B * nv * tiles`` items in ``Process`` visiting order (columns;
the items of an empty sequence are padding), the policy gives each an owner core
(:mod:`cgdr_des.kernel.policies`, vectorised over batches), and a core's finish is the launch's
overhead plus the sum of its own items' durations (:class:`~cgdr_des.item_costs.ItemCosts`).
What it drops against ``phase`` fidelity: GM contention that varies with the batch (durations are
those of a busy chip) and ScalarExp's dependence on the drawn g; the study's check measures both.

Split V-tiles: an item whose sibling tiles (same batch entry and K/Q head) run at the same time on
other cores is faster (their K/Q lines are resident when its phases are first timed; see
:mod:`cgdr_des.item_costs`). Each item's interval on its core is laid out from the apart
durations (its core's earlier own items plus the walk over every earlier item), and its duration
moves from the apart towards the together value by the largest share of it that one sibling on
another core overlaps; a second pass re-lays the intervals with the blended durations. Where the
together tables are the apart ones, as every calibration since ``phase`` gave each core its own data
cache measures them (:mod:`cgdr_des.item_costs`), the blend moves nothing and is not run: it was half
of a split-tile study's surrogate time, for durations equal to the apart ones to the cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cgdr_des.integers import ceil_div
from cgdr_des.item_costs import ItemCosts
from cgdr_des.kernel.policies import owners


@dataclass(frozen=True)
class Estimate:
    """Per batch (rows) and core (columns): items, tokens, busy and finish cycles (int64)."""

    items: np.ndarray
    tokens: np.ndarray
    busy: np.ndarray
    finish: np.ndarray
    item_cycles: np.ndarray   # (N, K) each item's fastest duration (0 for padding): the lower bound's
    overhead: np.ndarray      # (N,) a core's finish beyond its own items

    @property
    def makespan(self) -> np.ndarray:
        """Per batch, the last core's finish (cycles, int64)."""
        return self.finish.max(axis=1)

    def lower_bound(self, block_dim: int) -> np.ndarray:
        """No assignment of these items beats ``overhead + max(ceil(total / cores), longest item)``."""
        total = self.item_cycles.sum(axis=1)
        return self.overhead + np.maximum(ceil_div(total, block_dim), self.item_cycles.max(axis=1))


def item_arrays(costs: ItemCosts, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, cycles) of every item, ``(N, K)``, in visiting order (batch, head, V-tile)."""
    per_head = costs.v_tiles if costs.split else 1
    tokens = np.repeat(np.asarray(lengths, np.int64), costs.nv * per_head, axis=1)
    tile = np.tile(np.arange(per_head) if costs.split else np.array([-1]), lengths.shape[1] * costs.nv)
    return tokens, costs.item_cycles(tokens, np.broadcast_to(tile, tokens.shape))


@dataclass(frozen=True)
class Items:
    """The policy-independent arrays of a set of batches, ``(N, K)``: tokens, apart durations, and the
    together durations (split V-tiles only, else None). A study computes them once for every policy."""

    tokens: np.ndarray
    cycles: np.ndarray
    together: np.ndarray | None


def items_of(costs: ItemCosts, lengths: np.ndarray) -> Items:
    """:class:`Items` of ``lengths`` (``(N, B)`` tokens)."""
    tokens, cycles = item_arrays(costs, np.atleast_2d(np.asarray(lengths, np.int64)))
    split = costs.split and costs.siblings > 1 and not costs.together_is_apart
    return Items(tokens, cycles, _together(costs, tokens) if split else None)


def estimate(costs: ItemCosts, lengths: np.ndarray, policy: str, *, items: Items | None = None) -> Estimate:
    """Every core's finish for each row of ``lengths`` (``(N, B)`` tokens) under ``policy``
    (``items``: :func:`items_of` the same lengths, when the caller already has them)."""
    lengths = np.atleast_2d(np.asarray(lengths, np.int64))
    n, m = lengths.shape[0], costs.block_dim
    items = items_of(costs, lengths) if items is None else items
    tokens, cycles = items.tokens, items.cycles
    avgload = ceil_div(tokens.sum(axis=1), m)
    owner = owners(policy, tokens, cycles, m, avgload)
    slot = np.where(owner >= 0, owner + m * np.arange(n)[:, None], n * m)  # padding to a spare bin

    def per_core(weights):
        """Sum ``weights`` (N, K) per (batch, core) by owner (None: count the items); padding items
        fall into a dropped bin."""
        w = None if weights is None else weights.ravel()
        return np.bincount(slot.ravel(), weights=w, minlength=n * m + 1)[:-1].reshape(n, m)

    run = _blend(costs, items, owner) if items.together is not None else cycles
    busy = per_core(run).astype(np.int64)
    overhead = costs.overhead(lengths.shape[1], (tokens > 0).sum(axis=1))
    # the lower bound holds for every assignment: each item at its fastest (together) duration
    fastest = np.minimum(cycles, items.together) if items.together is not None else cycles
    return Estimate(per_core(None).astype(np.int64), per_core(tokens).astype(np.int64), busy,
                    overhead[:, None] + busy, fastest, overhead)


def _together(costs: ItemCosts, tokens: np.ndarray) -> np.ndarray:
    tile = np.broadcast_to(np.tile(np.arange(costs.v_tiles), tokens.shape[1] // costs.v_tiles), tokens.shape)
    return costs.item_cycles(tokens, tile, together=True)


def _walk(owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What :func:`_starts` needs of the owners alone (the same for every pass of :func:`_blend`): each
    batch's items sorted by core, then visiting order (padding last), and for each place in that order
    the place of its core's first item."""
    n, k = owner.shape
    order = np.argsort(np.where(owner >= 0, owner, owner.max() + 1) * k + np.arange(k), axis=1, kind="stable")
    o = np.take_along_axis(owner, order, axis=1)
    first = np.ones_like(o, dtype=bool)
    first[:, 1:] = o[:, 1:] != o[:, :-1]
    return order, np.maximum.accumulate(np.where(first, np.arange(k), 0), axis=1)


def _starts(dur: np.ndarray, walk: tuple[np.ndarray, np.ndarray], per_item: int) -> np.ndarray:
    """Each item's start on its core: its core's earlier own durations plus the walk up to it."""
    order, base = walk
    d = np.take_along_axis(dur, order, axis=1)
    before = np.cumsum(d, axis=1) - d
    own = before - np.take_along_axis(before, base, axis=1)
    start = np.empty_like(own)
    np.put_along_axis(start, order, own, axis=1)
    return start + per_item * np.arange(dur.shape[1])


def _blend(costs: ItemCosts, items: Items, owner, passes: int = 2) -> np.ndarray:
    """Item durations (N, K) between apart and together by sibling overlap (see the module docstring)."""
    apart = items.cycles
    gain = apart - items.together
    dur, walk = apart, _walk(owner)
    for _ in range(passes):
        start = _starts(dur, walk, costs.per_item)
        dur = apart - np.round(gain * _overlap_share(start, dur, owner, costs.siblings)).astype(np.int64)
    return dur


def _overlap_share(start, dur, owner, g: int) -> np.ndarray:
    """(N, K): the largest share of each item's duration that one sibling on another core overlaps.
    The ``g`` siblings of a head are neighbours; each is paired with the others by ``g - 1`` rotations
    (not a ``g`` x ``g`` table of pairs: the long batches of a 48-core chip hold millions of items)."""
    n, k = dur.shape
    s, e, o = (x.reshape(n, k // g, g) for x in (start, start + dur, owner))
    best = np.zeros(s.shape, np.int64)
    for j in range(1, g):
        s2, e2, o2 = (np.roll(x, j, axis=-1) for x in (s, e, o))
        both = np.minimum(e, e2) - np.maximum(s, s2)
        np.maximum(best, np.where((o != o2) & (o2 >= 0), both, 0), out=best)
    return np.divide(best.reshape(n, k), dur, out=np.zeros(dur.shape), where=dur > 0)
