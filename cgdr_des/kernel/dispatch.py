"""Work distribution: which core processes which (batch, head[, V-tile]) item.

The source (``chunk_gated_delta_rule.h``, docs/design-notes.md §1-§2, docs/kernel.md §4.3):

- ``ShouldSplitVTiles() = realV_ > vStep_ && GetBlockNum() > NV_`` (h:239-240): with more cores than
  heads and several V-tiles, every (head, V-tile) pair is its own work item;
- ``ComputeAvgload``: ``avgload_ = Ceil(realT * NV * workItemsPerHead, GetBlockNum())`` with
  ``realT = sum(max(len, 0))``;
- ``Process`` visits items in (batch, head[, vTile]) order, skipping batches with ``len <= 0``, and
  every core replays the same greedy scan ``IsCurrentBlock(seqLen)`` (h:241-250) to claim its own
  contiguous run of items. An item weighs its sequence length in tokens.

The alternative policies are data: each is an array function in :mod:`cgdr_des.kernel.policies`
(also used, many batches at once, by the tail surrogate) giving every item its owner core. Every
policy keeps each core's items in visiting order, because the device loop walks the items in that
order and a policy only changes the predicate that says "mine". The cost-weighted ones
(:data:`COST_POLICIES`) need each item's modelled duration (``item_cost``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cgdr_des.errors import InputError
from cgdr_des.integers import ceil_div
from cgdr_des.kernel.policies import COST_POLICIES, POLICIES, owners


@dataclass(frozen=True)
class WorkItem:
    """One unit of work: a sequence, a value head and (in split mode) one V-tile.

    ``vtile`` is -1 when V-tiles are not split (the item then covers every V-tile, ProcessHead);
    ``seqlen`` is the sequence length in tokens (> 0); ``seq0`` its first token in the packed T axis.
    """

    batch: int
    head: int
    vtile: int
    seqlen: int
    seq0: int


def should_split_v_tiles(dv: int, v_step: int, block_num: int, nv: int) -> bool:
    """``ShouldSplitVTiles``: ``dv > v_step and block_num > nv``."""
    return dv > v_step and block_num > nv


def compute_avgload(lengths: Sequence[int], nv: int, work_items_per_head: int, block_num: int) -> int:
    """``ComputeAvgload``: ``Ceil(realT * nv * work_items_per_head, block_num)``.

    ``realT`` sums the positive lengths only (h:203-206).
    """
    real_t = sum(max(int(n), 0) for n in lengths)
    return ceil_div(real_t * nv * work_items_per_head, block_num)


class BlockScan:
    """One core's replay of the greedy scan; members mirror ``load_, usedblk_, avgload_, blockIdx_``.

    Lifecycle: built with zero load before ``Process``; ``is_current_block`` is called once per item
    in visiting order and never reset between batches or heads (h:91-93, 241-250).
    """

    def __init__(self, block_idx: int, avgload: int):
        self.block_idx = block_idx
        self.avgload = avgload
        self.load = 0
        self.usedblk = 0

    def is_current_block(self, seqlen: int) -> bool:
        """``IsCurrentBlock``: claim the item iff this core is the one being filled; the item that
        fills a bin to ``avgload`` still belongs to that bin (the answer is taken before advancing)."""
        self.load += seqlen
        mine = self.block_idx == self.usedblk and seqlen > 0
        if self.load >= self.avgload:
            self.load = 0
            self.usedblk += 1
        return mine


def _lengths(lengths: Sequence[int]) -> list[int]:
    values = [int(n) for n in lengths]
    if any(n < 0 for n in values):
        # The kernel skips them but still moves seq0 by the negative length (h:215-218).
        raise InputError("actual_seq_lengths", values, "lengths must be >= 0")
    return values


def work_items(lengths: Sequence[int], nv: int, v_tiles: int, split: bool) -> list[WorkItem]:
    """Items in ``Process`` visiting order: batch, head, then V-tile when ``split``; empty batches skipped."""
    items: list[WorkItem] = []
    seq0 = 0
    tiles = range(v_tiles) if split else (-1,)
    for b, n in enumerate(_lengths(lengths)):
        if n > 0:
            items.extend(WorkItem(b, h, vt, n, seq0) for h in range(nv) for vt in tiles)
        seq0 += n
    return items


Assignment = list[list[WorkItem]]
#: ``item_cost(seqlen, vtile)``: modelled cycles of items (int64 arrays in, int64 array out).
ItemCost = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _count(name: str, value: object) -> int:
    try:
        number = operator.index(value)
    except TypeError:
        raise InputError(name, value, "a positive integer") from None
    if number < 1:
        raise InputError(name, value, "a positive integer")
    return number


def assign_items(lengths: Sequence[int], nv: int, dv: int, v_step: int, block_dim: int,
                 policy: str = "greedy", item_cost: ItemCost | None = None) -> Assignment:
    """Per core (``block_dim`` lists), the items it processes, in processing order.

    Split mode and avgload are decided exactly as the device does with ``GetBlockNum() == block_dim``.
    ``item_cost`` is required by the cost-weighted policies (``cgdr_des.item_costs``).
    """
    if policy not in POLICIES:
        raise InputError("policy", policy, f"one of {', '.join(POLICIES)}")
    if policy in COST_POLICIES and item_cost is None:
        raise InputError("policy", policy, "a token policy unless item costs are given (item_cost)")
    nv, dv, v_step, block_dim = (_count(n, v) for n, v in
                                 (("nv", nv), ("dv", dv), ("v_step", v_step), ("block_dim", block_dim)))
    split = should_split_v_tiles(dv, v_step, block_dim, nv)
    per_head = ceil_div(dv, v_step) if split else 1
    items = work_items(lengths, nv, per_head, split)
    if not items:
        return [[] for _ in range(block_dim)]
    tokens = np.array([[it.seqlen for it in items]], np.int64)
    cost = np.zeros_like(tokens)
    if item_cost is not None:
        cost[0] = item_cost(tokens[0], np.array([it.vtile for it in items], np.int64))
    avgload = compute_avgload(lengths, nv, per_head, block_dim)
    owner = owners(policy, tokens, cost, block_dim, np.array([avgload]))[0]
    cores: Assignment = [[] for _ in range(block_dim)]
    for it, core in zip(items, owner.tolist(), strict=True):
        cores[core].append(it)
    return cores
