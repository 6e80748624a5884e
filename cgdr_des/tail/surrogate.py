"""The surrogate: every core's finish for many batches at once, from the calibrated item costs.

A batch of B lengths becomes ``K = B * nv * tiles`` items in ``Process`` visiting order (columns;
the items of an empty sequence are padding), the policy gives each an owner core
(:mod:`cgdr_des.kernel.policies`, vectorised over batches), and a core's finish is the launch's
overhead plus the sum of its own items' durations (:class:`~cgdr_des.tail.calibration.ItemCosts`).
What it drops against ``phase`` fidelity: GM contention that varies with the batch (durations are
those of a busy chip) and ScalarExp's dependence on the drawn g; the study's check measures both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cgdr_des.kernel.policies import owners
from cgdr_des.tail.calibration import ItemCosts


@dataclass(frozen=True)
class Estimate:
    """Per batch (rows) and core (columns): items, tokens, busy and finish cycles (int64)."""

    items: np.ndarray
    tokens: np.ndarray
    busy: np.ndarray
    finish: np.ndarray
    item_cycles: np.ndarray   # (N, K) each item's duration (0 for padding)
    overhead: np.ndarray      # (N,) a core's finish beyond its own items

    @property
    def makespan(self) -> np.ndarray:
        return self.finish.max(axis=1)

    def lower_bound(self, block_dim: int) -> np.ndarray:
        """No assignment of these items beats ``overhead + max(ceil(total / cores), longest item)``."""
        total = self.item_cycles.sum(axis=1)
        return self.overhead + np.maximum(-(-total // block_dim), self.item_cycles.max(axis=1))


def item_arrays(costs: ItemCosts, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, cycles) of every item, ``(N, K)``, in visiting order (batch, head, V-tile)."""
    per_head = costs.v_tiles if costs.split else 1
    tokens = np.repeat(np.asarray(lengths, np.int64), costs.nv * per_head, axis=1)
    tile = np.tile(np.arange(per_head) if costs.split else np.array([-1]), lengths.shape[1] * costs.nv)
    return tokens, costs.item_cycles(tokens, np.broadcast_to(tile, tokens.shape))


def estimate(costs: ItemCosts, lengths: np.ndarray, policy: str) -> Estimate:
    """Every core's finish for each row of ``lengths`` (``(N, B)`` tokens) under ``policy``."""
    lengths = np.atleast_2d(np.asarray(lengths, np.int64))
    n, m = lengths.shape[0], costs.block_dim
    tokens, cycles = item_arrays(costs, lengths)
    avgload = -(-tokens.sum(axis=1) // m)
    owner = owners(policy, tokens, cycles, m, avgload)
    slot = np.where(owner >= 0, owner + m * np.arange(n)[:, None], n * m)  # padding to a spare bin

    def per_core(weights):
        return np.bincount(slot.ravel(), weights=weights.ravel(), minlength=n * m + 1)[:-1].reshape(n, m)

    busy = per_core(cycles).astype(np.int64)
    overhead = costs.overhead(lengths.shape[1], (tokens > 0).sum(axis=1))
    return Estimate(per_core(np.ones_like(cycles)).astype(np.int64), per_core(tokens).astype(np.int64), busy,
                    overhead[:, None] + busy, cycles, overhead)
