"""An occurrence's GM traffic through one core's data cache (``phase`` fidelity, split V-tiles).

Where a head's V-tiles run on different cores, each core has its own data cache, and every
occurrence of a phase that reads GM by scalar passes its accesses through it
(:meth:`~cgdr_des.hw.phase.PhaseCompiler.occurrence`): its hits and misses decide which compiled
form of the phase it replays. :func:`touch` does that pass on arrays (a loop's rows at once, declared
by :class:`~cgdr_des.isa.GmRows` and :class:`~cgdr_des.isa.GmStrided`); :func:`touch_walk` does it
access by access, the reference the array pass is tested against (tests/test_phase_touch.py).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from cgdr_des.hw.dcache import DataCache
from cgdr_des.isa import Dma, GmRows, GmStrided, Repeat, ScalarGm


def gm_accesses(records: list) -> list[tuple]:
    """Every ScalarGm's ``(addr, nbytes, store)`` in ``records``, in program order, each Repeat's
    declared ones (``Repeat.gm``) included."""
    out: list = []
    for rec in records:
        t = type(rec)
        if t is ScalarGm:
            out.append((rec.addr, rec.nbytes, rec.store))
        elif t is Repeat and rec.gm is not None:
            gm = rec.gm
            for i in range(rec.n):
                out += gm(i)
    return out


def touch(cache: DataCache, records: list) -> bytes:
    """``records``' DataCopy calls and scalar GM accesses through ``cache``, in program order; the
    accesses' outcomes, one byte each (:meth:`DataCache.pattern`). The accesses between two DataCopy
    calls (all of them when L2 is not tracked) go through the cache as arrays (:meth:`DataCache.pattern_of`),
    a :class:`~cgdr_des.isa.GmRows` loop's row by row and a :class:`~cgdr_des.isa.GmStrided` loop's at
    once, rather than access by access."""
    with_dma = cache.l2 is not None
    if not gm_traffic(records, with_dma):     # most lists a program hands over (Tags, flags, DMAs)
        return b""
    out: list[bytes] = []
    addrs: list[int] = []
    sizes: list[int] = []
    blocks: list[Block] = []     # in program order, the lists' run included

    def flush_lists() -> None:
        if addrs:
            one = sizes[0]
            blocks.append(Block(addrs[:], one if sizes.count(one) == len(sizes) else sizes[:], None, len(addrs)))
            addrs.clear()
            sizes.clear()

    def flush() -> None:
        flush_lists()
        if blocks:
            out.append(_pattern_of_blocks(cache, blocks))
            blocks.clear()

    for rec in records:
        t = type(rec)
        if t is ScalarGm:
            addrs.append(rec.addr)
            sizes.append(rec.nbytes)
        elif t is Repeat and rec.gm is not None:
            gm = rec.gm
            if type(gm) is GmRows and rec.n:
                flush_lists()
                blocks.append(_row_block([gm.row(i) for i in range(rec.n)], int(gm.nbytes), cache.line_bytes))
            elif type(gm) is GmStrided:
                flush_lists()
                blocks.append(_strided_block(gm, rec.n, cache.line_bytes))
            else:
                for i in range(rec.n):
                    for acc in gm(i):
                        addrs.append(acc[0])
                        sizes.append(acc[1])
        elif with_dma and t is Dma:
            flush()
            cache.moved(rec)
    flush()
    return b"".join(out)


def touch_walk(cache: DataCache, records: list) -> bytes:
    """:func:`touch` access by access (:meth:`DataCache.pattern` on tuples): the reference the array
    path is tested against, and what ``PhaseCompiler(walk_accesses=True)`` uses."""
    if cache.l2 is None:
        accesses = gm_accesses(records)
        return cache.pattern(accesses) if accesses else b""
    out = bytearray()
    for rec in records:
        if type(rec) is Dma:
            cache.moved(rec)
        elif type(rec) is ScalarGm or type(rec) is Repeat:
            accesses = gm_accesses([rec])
            if accesses:
                out += cache.pattern(accesses)
    return bytes(out)


class Block(NamedTuple):
    """``n`` scalar accesses in program order, of which those at ``addr`` (sizes ``nbytes``: one int for
    all, or one each) are looked up; ``at``: where those stand among the ``n`` (None: all are there).
    The others hit within the line the access before them ended in (:func:`_contiguous`)."""

    addr: np.ndarray | list
    nbytes: int | np.ndarray | list
    at: np.ndarray | list | None
    n: int


#: up to this many looked-at accesses, a block list goes through :meth:`DataCache.pattern` as tuples: numpy's
#: fixed cost per call (a dozen array operations in :meth:`DataCache.pattern_of`) outweighs the walk there
SMALL_BLOCKS = 48


def _pattern_of_blocks(cache: DataCache, blocks: list[Block]) -> bytes:
    """:meth:`DataCache.pattern_of` of ``blocks`` as one sequence of accesses, each block's left-out
    accesses counted as the hits they are. Few accesses go through :meth:`DataCache.pattern` instead
    (the same outcomes)."""
    kept = sum(len(b.addr) for b in blocks)
    if kept <= SMALL_BLOCKS:
        got = cache.pattern([acc for b in blocks for acc in _pairs(b)])
    else:
        a = np.concatenate([np.asarray(b.addr, np.int64) for b in blocks])
        each = [b.nbytes for b in blocks]
        if all(type(x) is int for x in each) and each.count(each[0]) == len(each):
            nb = each[0]
        else:
            nb = np.concatenate([np.full(len(b.addr), b.nbytes, np.int64) if type(b.nbytes) is int
                                 else np.asarray(b.nbytes, np.int64) for b in blocks])
        got = cache.pattern_of(a, nb)
    if all(b.at is None for b in blocks):
        return got
    n = sum(b.n for b in blocks)
    cache.hits += n - kept
    return _expand_small(blocks, got, n) if kept <= SMALL_BLOCKS else _expand(blocks, got, n)


def _expand(blocks: list[Block], got: bytes, n: int) -> bytes:
    """The ``n`` outcome bytes of ``blocks`` from ``got``, those of their kept accesses; the rest hits."""
    at, offset = [], 0
    for b in blocks:
        at.append(np.arange(offset, offset + b.n) if b.at is None else np.asarray(b.at) + offset)
        offset += b.n
    full = np.ones(n, np.uint8)
    full[np.concatenate(at)] = np.frombuffer(got, np.uint8)
    return full.tobytes()


def _expand_small(blocks: list[Block], got: bytes, n: int) -> bytes:
    """:func:`_expand` for a few kept accesses, without numpy's fixed costs."""
    full, k, offset = bytearray(b"\x01") * n, 0, 0
    for b in blocks:
        at = range(b.n) if b.at is None else b.at.tolist() if type(b.at) is np.ndarray else b.at
        for pos in at:
            full[offset + pos] = got[k]
            k += 1
        offset += b.n
    return bytes(full)


def _pairs(block: Block) -> list[tuple]:
    """A block's kept accesses as ``(addr, nbytes)`` tuples."""
    addr, nb = block.addr, block.nbytes
    addr = addr.tolist() if type(addr) is np.ndarray else addr
    if type(nb) is int:
        return [(a, nb) for a in addr]
    return list(zip(addr, nb.tolist() if type(nb) is np.ndarray else nb, strict=True))


def _row_block(rows: list[range], nbytes: int, line_bytes: int) -> Block:
    """A GmRows loop's accesses as a :class:`Block`: compressed
    (:func:`_contiguous`) where it can be, else every address (``at`` None)."""
    r0 = rows[0]
    m = len(r0)
    if m and r0.step == nbytes and all(r.step == nbytes and len(r) == m for r in rows):
        block = _contiguous(np.fromiter((r.start for r in rows), np.int64, len(rows)), m, nbytes, line_bytes)
        if block is not None:
            return block
    return Block(_row_addresses(rows), nbytes, None, sum(len(r) for r in rows))


def _strided_block(gm: GmStrided, n: int, line_bytes: int) -> Block:
    """A GmStrided loop's ``n`` accesses as a block (see :func:`_row_block`): one row when contiguous,
    compressed in plain Python (a row is a handful of lines; numpy's fixed costs would dominate)."""
    nb, lb, start = int(gm.nbytes), line_bytes, gm.start
    if gm.step == nb and n >= 1 and _within_lines(nb, lb) and not start & (nb - 1):
        addr = [start, *range((start // lb + 1) * lb, start + n * nb, lb)]
        return Block(addr, nb, [(a - start) // nb for a in addr], n)
    return Block(start + gm.step * np.arange(n, dtype=np.int64), nb, None, n)


def _contiguous(starts: np.ndarray, m: int, nbytes: int, lb: int) -> Block | None:
    """Rows of ``m`` contiguous accesses of ``nbytes`` from ``starts``, compressed: of each run of
    accesses within one line only the first is kept (``at``: where the kept ones stand among all).
    The rest hit, touch no LRU order and leave the line the previous access ended in unchanged
    (:meth:`DataCache.pattern`'s within-line test), so the kept ones are looked up exactly as in the
    full sequence: a row of 128 2-byte reads is 4 or 5 lookups instead of an array of 128 (split
    V-tiles read K and Q rows and the state this way). None unless ``nbytes`` is a power of two
    dividing the line (a power of two) and every start a multiple of it: no access crosses a line."""
    if m < 1 or not _within_lines(nbytes, lb) or (starts & (nbytes - 1)).any():
        return None
    shift = lb.bit_length() - 1
    first = starts >> shift
    runs = ((starts + (m - 1) * nbytes) >> shift) - first + 1      # the lines each row touches
    row = np.repeat(np.arange(len(starts)), runs)
    j = np.arange(len(row)) - np.repeat(np.cumsum(runs) - runs, runs)    # a line's place in its row
    addr = np.where(j == 0, starts[row], (first[row] + j) << shift)
    return Block(addr, nbytes, row * m + (addr - starts[row]) // nbytes, len(starts) * m)


def _within_lines(nbytes: int, lb: int) -> bool:
    """Whether accesses of ``nbytes`` at multiples of it never cross a line of ``lb`` bytes, and lines can be
    found by shifts: both powers of two, ``nbytes`` at most ``lb``."""
    return nbytes >= 1 and not nbytes & (nbytes - 1) and not lb & (lb - 1) and not lb % nbytes


def _row_addresses(rows: list[range]) -> np.ndarray:
    """The addresses of ``rows`` (ranges), in order, as one int64 array."""
    r0 = rows[0]
    if all(r.step == r0.step and len(r) == len(r0) for r in rows):
        starts = np.fromiter((r.start for r in rows), np.int64, len(rows))
        return (starts[:, None] + np.arange(0, len(r0) * r0.step, r0.step, dtype=np.int64)).ravel()
    return np.concatenate([np.arange(r.start, r.stop, r.step, dtype=np.int64) for r in rows])


def gm_traffic(records: list, with_dma: bool) -> bool:
    """Whether ``records`` hold a scalar GM access (or, ``with_dma``, a DataCopy)."""
    for rec in records:
        t = type(rec)
        if t is ScalarGm or (t is Repeat and rec.gm is not None) or (with_dma and t is Dma):
            return True
    return False
