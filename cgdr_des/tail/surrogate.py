"""The surrogate: every core's finish for many batches at once, from the calibrated item costs.

A batch of B lengths becomes ``K = B * nv * tiles`` items in ``Process`` visiting order (columns;
the items of an empty sequence are padding), the policy gives each an owner core
(:mod:`cgdr_des.kernel.policies`, vectorised over batches), and a core's finish is the launch's
overhead plus the sum of its own items' durations (:class:`~cgdr_des.item_costs.ItemCosts`).
What it drops against ``phase`` fidelity: GM contention that varies with the batch (durations are
those of a busy chip) and ScalarExp's dependence on the drawn g; the study's check measures both.

Split V-tiles: each V-tile of a head is an item of its own, timed by its slot's tables. Whether its
sibling tiles run alongside on other cores does not change its duration, since each core keeps its
own data cache at ``phase`` fidelity (:mod:`cgdr_des.item_costs`); the surrogate once blended every
item between an apart and a together duration by how much a sibling overlapped it, which moved
nothing once the two were measured alike, and was half of a split-tile study's surrogate time.
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
    item_cycles: np.ndarray   # (N, K) each item's duration (0 for padding): the lower bound's
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
    """The policy-independent arrays of a set of batches, ``(N, K)``: tokens and durations. A study
    computes them once for every policy."""

    tokens: np.ndarray
    cycles: np.ndarray


def items_of(costs: ItemCosts, lengths: np.ndarray) -> Items:
    """:class:`Items` of ``lengths`` (``(N, B)`` tokens)."""
    return Items(*item_arrays(costs, np.atleast_2d(np.asarray(lengths, np.int64))))


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

    busy = per_core(cycles).astype(np.int64)
    overhead = costs.overhead(lengths.shape[1], (tokens > 0).sum(axis=1))
    return Estimate(per_core(None).astype(np.int64), per_core(tokens).astype(np.int64), busy,
                    overhead[:, None] + busy, cycles, overhead)

