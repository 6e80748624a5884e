"""Work distribution: which core processes which (batch, head[, V-tile]) item.

The source (``chunk_gated_delta_rule.h``, seed notes §1-§2, notes/kernel.md §4.3):

- ``ShouldSplitVTiles() = realV_ > vStep_ && GetBlockNum() > NV_`` (h:239-240): with more cores than
  heads and several V-tiles, every (head, V-tile) pair is its own work item;
- ``ComputeAvgload``: ``avgload_ = Ceil(realT * NV * workItemsPerHead, GetBlockNum())`` with
  ``realT = sum(max(len, 0))``;
- ``Process`` visits items in (batch, head[, vTile]) order, skipping batches with ``len <= 0``, and
  every core replays the same greedy scan ``IsCurrentBlock(seqLen)`` (h:241-250) to claim its own
  contiguous run of items. An item weighs its sequence length in tokens.

The alternative policies are data: each is a small function in :data:`POLICIES` mapping the items
(in visiting order), the core count and the source's avgload to one item list per core. Every
policy keeps each core's items in visiting order, because the device loop walks the items in that
order and a policy only changes the predicate that says "mine".
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cgdr_des.errors import InputError


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
    return -(-real_t * nv * work_items_per_head // block_num)


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
Policy = Callable[[list[WorkItem], int, int], Assignment]


def greedy(items: list[WorkItem], block_dim: int, avgload: int) -> Assignment:
    """The source: each core replays :class:`BlockScan` over all items and keeps what it claims."""
    cores = []
    for core in range(block_dim):
        scan = BlockScan(core, avgload)
        cores.append([it for it in items if scan.is_current_block(it.seqlen)])
    return cores


def round_robin(items: list[WorkItem], block_dim: int, avgload: int) -> Assignment:
    """Item k goes to core ``k % block_dim``: the naive head-modulo scheme the seed contrasts (§2)."""
    return [items[core::block_dim] for core in range(block_dim)]


def float_share(items: list[WorkItem], block_dim: int, avgload: int) -> Assignment:
    """Contiguous runs cut at exact fractional shares of the total load (no Ceil-rounded avgload).

    Item k, with ``P`` the load of the items before it and ``w`` its own, goes to core
    ``floor((P + w/2) * block_dim / total)``: the core whose share ``[c, c+1) * total / block_dim``
    holds the item's midpoint. Computed in integers (``(2P + w) * block_dim // (2 * total)``), so it
    is exact and deterministic; the result is always < block_dim because the midpoint < total.
    """
    total = sum(it.seqlen for it in items)
    cores: Assignment = [[] for _ in range(block_dim)]
    before = 0
    for it in items:
        cores[(2 * before + it.seqlen) * block_dim // (2 * total)].append(it)
        before += it.seqlen
    return cores


def longest_first(items: list[WorkItem], block_dim: int, avgload: int) -> Assignment:
    """LPT: items by seqlen descending, each to the currently least-loaded core.

    Ties: equal seqlen keeps visiting order; equal load picks the lowest core index. Each core then
    processes its items in visiting order.
    """
    loads = [0] * block_dim
    owner: dict[int, int] = {}
    order = sorted(range(len(items)), key=lambda k: -items[k].seqlen)
    for k in order:
        core = min(range(block_dim), key=loads.__getitem__)
        owner[k] = core
        loads[core] += items[k].seqlen
    cores: Assignment = [[] for _ in range(block_dim)]
    for k, it in enumerate(items):
        cores[owner[k]].append(it)
    return cores


POLICIES: dict[str, Policy] = {
    "greedy": greedy,
    "round_robin": round_robin,
    "float_share": float_share,
    "longest_first": longest_first,
}


def _count(name: str, value: object) -> int:
    try:
        number = operator.index(value)
    except TypeError:
        raise InputError(name, value, "a positive integer") from None
    if number < 1:
        raise InputError(name, value, "a positive integer")
    return number


def assign_items(lengths: Sequence[int], nv: int, dv: int, v_step: int, block_dim: int,
                 policy: str = "greedy") -> Assignment:
    """Per core (``block_dim`` lists), the items it processes, in processing order.

    Split mode and avgload are decided exactly as the device does with ``GetBlockNum() == block_dim``.
    """
    if policy not in POLICIES:
        raise InputError("policy", policy, f"one of {', '.join(POLICIES)}")
    nv, dv, v_step, block_dim = (_count(n, v) for n, v in
                                 (("nv", nv), ("dv", dv), ("v_step", v_step), ("block_dim", block_dim)))
    split = should_split_v_tiles(dv, v_step, block_dim, nv)
    per_head = -(-dv // v_step) if split else 1
    items = work_items(lengths, nv, per_head, split)
    avgload = compute_avgload(lengths, nv, per_head, block_dim)
    if not items:
        return [[] for _ in range(block_dim)]
    return POLICIES[policy](items, block_dim, avgload)
