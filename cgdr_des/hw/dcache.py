"""The scalar unit's data cache for GlobalTensor GetValue / SetValue (docs/hardware.md rows 16, 40),
and the L2 lines a core's DataCopy calls moved recently (docs/timing.md §2.5).

Lines of ``line_bytes``; ``capacity_bytes / line_bytes`` of them, fully associative with LRU
replacement, write-allocate (a SetValue miss fetches the line like a GetValue: the cache is
write-back). The real DCache's associativity is not published: full associativity is the
optimistic choice. An access hits when every line it touches is resident.

With an :class:`L2Lines` attached (profile ``l2_scalar_hits``), a miss whose every line a recent
DataCopy of the same core moved is an L2 hit (:attr:`DataCache.in_l2`, and the outcome
:data:`L2_HIT` in :meth:`DataCache.pattern`); the DCache itself behaves
as without it.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

#: The outcome of an access that missed the DCache and found its lines in L2 (hits are True,
#: misses to GM False).
L2_HIT = 2


class L2Lines:
    """The GM lines one core's DataCopy calls moved, most recent last: an LRU of ``line_bytes`` lines
    holding ``capacity_bytes`` (the core's share of the chip's L2). Only transfers feed it (every MTE
    transfer to or from GM is cached in L2, docs/hardware.md row 9); a scalar read asks it and
    changes nothing."""

    def __init__(self, line_bytes: int, capacity_bytes: int) -> None:
        self.line_bytes = line_bytes
        self.n_lines = max(1, capacity_bytes // line_bytes)
        self.lines: OrderedDict[int, None] = OrderedDict()

    def moved(self, spans) -> None:
        """Lines of every ``(addr, nbytes)`` span become the most recent, in order."""
        lines, lb, n_lines = self.lines, self.line_bytes, self.n_lines
        for addr, nbytes in spans:
            for line in range(addr // lb, (addr + max(nbytes, 1) - 1) // lb + 1):
                lines[line] = None
                lines.move_to_end(line)
                if len(lines) > n_lines:
                    lines.popitem(last=False)

    def holds(self, addr: int, nbytes: int) -> bool:
        """Whether every line of ``[addr, addr + nbytes)`` is resident."""
        lb, lines = self.line_bytes, self.lines
        return all(line in lines for line in range(addr // lb, (addr + max(nbytes, 1) - 1) // lb + 1))


def dma_gm_spans(rec) -> list[tuple[int, int]]:
    """The GM bytes a Dma record's first DataCopy call touches, as ``(addr, nbytes)`` blocks:
    ``block_count`` blocks of ``block_len`` (32-byte units in DataCopyParams, bytes in
    DataCopyExtParams), the GM-side stride (``src_stride`` reading, ``dst_stride`` writing) between
    them. A merged run (``repeat`` > 1, phase fidelity) keeps only its first call's addresses."""
    p = rec.params
    ext = type(p).__name__ == "DataCopyExtParams"
    unit = 1 if ext else 32
    block = p.block_len * unit
    stride = (p.src_stride if rec.direction == "GM2UB" else p.dst_stride) * unit
    if p.block_count <= 1 or block == 0:
        return [(rec.gm_addr, block or rec.nbytes)]
    return [(rec.gm_addr + i * (block + stride), block) for i in range(p.block_count)]


class DataCache:
    def __init__(self, line_bytes: int, capacity_bytes: int, l2: L2Lines | None = None) -> None:
        self.line_bytes = line_bytes
        self.n_lines = max(1, capacity_bytes // line_bytes)
        self.lines: OrderedDict[int, None] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.l2 = l2
        self.in_l2 = False      # whether the last access that missed found its lines in L2
        self.l2_hits = 0        # misses that did

    def moved(self, rec) -> None:
        """A Dma record handed to its MTE: its GM lines become the most recent in L2 (if tracked)."""
        if self.l2 is not None:
            self.l2.moved(dma_gm_spans(rec))

    def access(self, addr: int, nbytes: int) -> bool:
        """Touch ``[addr, addr + nbytes)``; return True on a hit. Updates LRU order and residency."""
        lb, lines = self.line_bytes, self.lines
        first = addr // lb
        last = (addr + (nbytes if nbytes > 1 else 1) - 1) // lb
        if first == last and first in lines:   # one resident line: most scalar GM reads of a run
            lines.move_to_end(first)
            self.hits += 1
            return True
        hit = True
        for line in range(first, last + 1):
            if line in lines:
                lines.move_to_end(line)
            else:
                hit = False
                lines[line] = None
                if len(lines) > self.n_lines:
                    lines.popitem(last=False)
        if hit:
            self.hits += 1
        else:
            self.misses += 1
            self.in_l2 = self.l2 is not None and self.l2.holds(addr, nbytes)
            self.l2_hits += self.in_l2
        return hit

    def outcome(self, addr: int, nbytes: int):
        """:meth:`access`, answered as True (hit), :data:`L2_HIT` or False (a miss to GM)."""
        if self.access(addr, nbytes):
            return True
        return L2_HIT if self.in_l2 else False

    def pattern(self, accesses) -> bytes:
        """:meth:`access` each ``(addr, nbytes, ...)`` in order; how each went, one byte per access
        (1 a hit, :data:`L2_HIT` an L2 hit, 0 a miss to GM; equal to :meth:`outcome`'s True, L2_HIT,
        False): a compact key for the phase compiler. An access within the line the previous one
        ended in hits without an LRU update (that line is already the most recent): a row of 2-byte
        reads costs one lookup per line and two comparisons per read."""
        line_bytes, out = self.line_bytes, bytearray(b"\x01") * len(accesses)
        lo = hi = -1        # the bytes of the line the previous access ended in
        n_hit, k = 0, -1
        for acc in accesses:
            k += 1
            addr = acc[0]
            if lo <= addr < hi and addr + acc[1] <= hi:     # addr < hi: a 0-byte access at hi is the next line
                n_hit += 1
                continue
            nbytes = acc[1]
            out[k] = self.outcome(addr, nbytes)
            lo = (addr + max(nbytes, 1) - 1) // line_bytes * line_bytes
            hi = lo + line_bytes
        self.hits += n_hit
        return bytes(out)

    def pattern_row(self, row: range, nbytes: int) -> bytes:
        """:meth:`pattern` of one access of ``nbytes`` at each address of ``row`` (a
        :class:`~cgdr_des.isa.GmRows` row): the same outcomes, counters and cache. The accesses that
        stay within the line the previous one ended in are counted in one step, not one by one (a
        state row of 128 2-byte reads is 4 or 5 lookups and no loop over the other reads)."""
        n = len(row)
        looked = _row_lookups(row, nbytes, self.line_bytes)
        out = bytearray(b"\x01") * n
        for k in looked:
            out[k] = self.outcome(row[k], nbytes)
        self.hits += n - len(looked)
        return bytes(out)

    def pattern_if(self, accesses, want: bytes) -> bool:
        """:meth:`pattern` of ``accesses`` if it would return ``want`` (True), else False with the cache
        unchanged: what the phase compiler asks of each iteration it adds to a Repeat without walking
        it. Answered on an overlay, without copying the lines: the LRU order after a sequence is the
        lines held before and not touched nor evicted, in their order, then the touched lines in the
        order of their last touch; an eviction takes the first of those. Committed only on a match."""
        if len(want) != len(accesses):
            return False
        lines, lb, cap, l2 = self.lines, self.line_bytes, self.n_lines, self.l2
        touched: dict[int, None] = {}       # lines made the most recent, oldest first
        gone: set[int] = set()              # lines evicted
        oldest = iter(lines)                # eviction candidates among the lines held before
        size, misses, l2_hits, in_l2 = len(lines), 0, 0, None
        lo = hi = -1        # the bytes of the line the previous access ended in, as in pattern
        for k, acc in enumerate(accesses):
            addr, nbytes = acc[0], acc[1]
            if lo <= addr < hi and addr + nbytes <= hi:
                if want[k] != 1:
                    return False
                continue
            hit = True
            for line in range(addr // lb, (addr + max(nbytes, 1) - 1) // lb + 1):
                if line in touched:
                    del touched[line]
                elif line not in lines or line in gone:
                    hit = False
                    size += 1
                touched[line] = None
                if size > cap:
                    gone.add(_evict(oldest, touched))
                    size -= 1
            outcome = 1 if hit else (L2_HIT if l2 is not None and l2.holds(addr, nbytes) else 0)
            if outcome != want[k]:
                return False
            if not hit:
                misses, l2_hits, in_l2 = misses + 1, l2_hits + (outcome == L2_HIT), outcome == L2_HIT
            lo = (addr + max(nbytes, 1) - 1) // lb * lb
            hi = lo + lb
        for line in gone:
            lines.pop(line, None)
        for line in touched:
            lines[line] = None
            lines.move_to_end(line)
        self.hits += len(want) - misses
        self.misses += misses
        self.l2_hits += l2_hits
        if in_l2 is not None:
            self.in_l2 = in_l2
        return True

    def pattern_of(self, addr: np.ndarray, nbytes) -> bytes:
        """:meth:`pattern` of accesses given as an int64 array of addresses and their sizes (an array,
        or one int for all): the same outcomes, counters and cache afterwards. The within-line test
        is made on the arrays at once, so only the accesses that leave the line the previous one
        ended in (one per line along a row of 2-byte reads) are looked up, in order: all at once when
        none of their lines is resident or all are (:meth:`_lookups_at_once`), else one by one."""
        n = len(addr)
        if not n:
            return b""
        lb = self.line_bytes
        if type(nbytes) is int:
            if nbytes < 1:
                nbytes = np.full(n, nbytes, np.int64)
            elif lb % nbytes == 0 and nbytes & (nbytes - 1) == 0 and not (addr & (nbytes - 1)).any():
                # aligned accesses of a power-of-two size dividing the line: none crosses a line
                first = addr >> (lb.bit_length() - 1) if lb & (lb - 1) == 0 else addr // lb
                looked = np.ones(n, bool)
                np.not_equal(first[1:], first[:-1], out=looked[1:])
                idx = np.flatnonzero(looked)
                ev = first[idx].tolist()
                return self._at_once(idx, ev, n) or self._look_up(idx, ev, ev, addr, np.full(n, nbytes, np.int64), n)
        nbytes = np.broadcast_to(np.asarray(nbytes, np.int64), (n,))
        if nbytes.min() < 1:    # an empty access's within-line test differs from its line's: walk them
            return self.pattern(list(zip(addr.tolist(), nbytes.tolist(), strict=True)))
        first, last = addr // lb, (addr + nbytes - 1) // lb
        looked = np.ones(n, bool)   # pattern's test: within [lo, hi), the line the previous access ended in
        looked[1:] = (first[1:] != last[:-1]) | (last[1:] != last[:-1])
        idx = np.flatnonzero(looked)
        ev, ev_last = first[idx].tolist(), last[idx].tolist()
        return (ev == ev_last and self._at_once(idx, ev, n)) or self._look_up(idx, ev, ev_last, addr, nbytes, n)

    def _at_once(self, idx: np.ndarray, ev: list, n: int) -> bytes | None:
        """The outcome bytes of ``n`` accesses whose lookups (accesses ``idx``, of lines ``ev``) are
        decided together (:meth:`_lookups_at_once`), the others hits; None if they cannot be."""
        hit = self._lookups_at_once(ev)
        if hit is None:
            return None
        self.hits += n - len(idx)
        if hit:
            return b"\x01" * n
        out = np.ones(n, np.uint8)
        out[idx] = 0
        return out.tobytes()

    def _look_up(self, idx: np.ndarray, ev: list, ev_last: list, addr: np.ndarray, nbytes: np.ndarray,
                 n: int) -> bytes:
        """:meth:`pattern_of`'s lookups one by one: accesses ``idx`` of lines ``ev`` to ``ev_last``."""
        out = bytearray(b"\x01") * n
        lines, cap, l2 = self.lines, self.n_lines, self.l2
        to_end, evict = lines.move_to_end, lines.popitem
        hits, misses, l2_hits, in_l2 = n - len(idx), 0, 0, None
        for k, f, lst, a, nb in zip(idx.tolist(), ev, ev_last, addr[idx].tolist(), nbytes[idx].tolist(), strict=True):
            if f != lst:                    # an access across lines: access() decides and counts
                self.hits, self.misses, self.l2_hits = self.hits + hits, self.misses + misses, self.l2_hits + l2_hits
                if in_l2 is not None:
                    self.in_l2 = in_l2
                hits = misses = l2_hits = 0
                out[k], in_l2 = self.outcome(a, nb), None
                continue
            if f in lines:
                to_end(f)
                hits += 1
                continue
            lines[f] = None
            if len(lines) > cap:
                evict(last=False)
            misses += 1
            in_l2 = l2 is not None and l2.holds(a, nb)
            if in_l2:
                l2_hits += 1
                out[k] = L2_HIT
            else:
                out[k] = 0
        self.hits, self.misses, self.l2_hits = self.hits + hits, self.misses + misses, self.l2_hits + l2_hits
        if in_l2 is not None:
            self.in_l2 = in_l2
        return bytes(out)

    def state(self) -> tuple:
        """What the cache holds: its lines in LRU order, its counters, and L2's lines."""
        l2_lines = None if self.l2 is None else self.l2.lines.copy()
        return self.lines.copy(), self.hits, self.misses, self.l2_hits, l2_lines

    def _lookups_at_once(self, lines_in_order: list) -> bool | None:
        """Lookups of single lines, in order, decided together where LRU order cannot change an
        outcome: if none of the lines is resident and none repeats, all miss (each in turn the
        most recent, the oldest evicted past capacity, as :meth:`access` does: False); if all are
        resident, all hit (hits evict nothing) and move to the end in turn (True). Counted as
        :meth:`access` counts them; None, with nothing changed, otherwise. Only without L2 tracking
        (a miss there also asks L2, line by line) and for eight lookups or more."""
        lines = self.lines
        if self.l2 is not None or len(lines_in_order) < 8:
            return None
        if lines.keys().isdisjoint(lines_in_order):
            if len(set(lines_in_order)) != len(lines_in_order):
                return None
            lines.update(dict.fromkeys(lines_in_order))
            evict = lines.popitem
            for _ in range(len(lines) - self.n_lines):
                evict(last=False)
            self.misses += len(lines_in_order)
            return False
        if not lines.keys() >= set(lines_in_order):
            return None
        to_end = lines.move_to_end
        for line in lines_in_order:
            to_end(line)
        self.hits += len(lines_in_order)
        return True

    def snapshot(self) -> tuple:
        """:meth:`state` with the lines as tuples: about three times cheaper to take, dearer to
        :meth:`restore` (for a state seldom gone back to: a phase occurrence's, kept in case it compiles)."""
        l2_lines = None if self.l2 is None else tuple(self.l2.lines)
        return tuple(self.lines), self.hits, self.misses, self.l2_hits, l2_lines

    def scratch(self, saved: tuple, *, copy: bool = False) -> DataCache:
        """A cache in the :meth:`state` ``saved``, for a scan from that earlier state that must leave this
        cache as it is: cheaper than restoring this one and then putting it back (two copies of the lines
        for every late scan). It takes ``saved``'s lines over (``copy`` False: ``saved`` is not to be
        restored from afterwards) and shares this cache's L2 lines, which only a Dma moves: the caller
        vouches that none was handed over since ``saved`` (a compute run's scan reads L2, never moves it)."""
        lines, hits, misses, l2_hits, _ = saved
        other = DataCache.__new__(DataCache)
        other.line_bytes, other.n_lines, other.l2, other.in_l2 = self.line_bytes, self.n_lines, self.l2, self.in_l2
        if type(lines) is tuple:        # a snapshot's
            other.lines = OrderedDict.fromkeys(lines)
        else:
            other.lines = lines.copy() if copy else lines
        other.hits, other.misses, other.l2_hits = hits, misses, l2_hits
        return other

    def copy_of(self, saved: tuple) -> DataCache:
        """A new cache of this one's geometry, restored (:meth:`restore`) to the :meth:`state` or :meth:`snapshot`
        ``saved``, L2 lines included (its own: a Dma moves them); ``saved`` is left as it was."""
        l2 = None if self.l2 is None else L2Lines(self.l2.line_bytes, self.l2.n_lines * self.l2.line_bytes)
        other = DataCache(self.line_bytes, self.n_lines * self.line_bytes, l2)
        other.restore(saved)
        return other

    def restore(self, saved: tuple) -> None:
        """Back to a :meth:`state` or :meth:`snapshot`, in place (a scan holding ``lines`` keeps seeing
        the cache)."""
        lines, self.hits, self.misses, self.l2_hits, l2_lines = saved
        self.lines.clear()
        self.lines.update(dict.fromkeys(lines) if type(lines) is tuple else lines)
        if l2_lines is not None:
            self.l2.lines.clear()
            self.l2.lines.update(dict.fromkeys(l2_lines) if type(l2_lines) is tuple else l2_lines)

    def row_goes_as(self, row: range, nbytes: int, want: bytes) -> bool:
        """:meth:`hit_all` (``want`` all hits) or :meth:`pattern_if` of one access of ``nbytes`` at each
        address of ``row`` (a :class:`~cgdr_des.isa.GmRows` row): the same answer, counters and cache. Only
        the accesses that leave the line the previous one ended in are looked up (both methods skip the
        others, which hit); each skipped one must be wanted a hit."""
        n = len(row)
        if len(want) != n:
            return False
        looked = _row_lookups(row, nbytes, self.line_bytes)
        accesses = [(row[k], nbytes) for k in looked]
        if want.count(1) == n:
            ok = self.hit_all(accesses)
        else:
            sub = bytes(want[k] for k in looked)
            ok = want.count(1) - sub.count(1) == n - len(looked) and self.pattern_if(accesses, sub)
        if ok:
            self.hits += n - len(looked)
        return ok

    def hit_all(self, accesses) -> bool:
        """If every line of every ``(addr, nbytes, ...)`` access is resident: touch them in order and count
        each access a hit, as :meth:`access` would, and return True. Otherwise change nothing and return
        False (hits never evict, so residency checked up front holds for the whole sequence). Accesses
        within the line the previous one ended in change no order: each line is looked up once per run."""
        lines, lb = self.lines, self.line_bytes
        touched, prev = [], -1
        for acc in accesses:
            addr = acc[0]
            first, last = addr // lb, (addr + (acc[1] if acc[1] > 1 else 1) - 1) // lb
            if first == last == prev:
                continue
            for line in range(first, last + 1):
                if line not in lines:
                    return False
                touched.append(line)
            prev = last
        to_end = lines.move_to_end
        for line in touched:
            to_end(line)
        self.hits += len(accesses)
        return True


def _row_lookups(row: range, nbytes: int, line_bytes: int) -> list[int]:
    """The indices into ``row`` of the accesses of ``nbytes`` to look up, in order: those that leave the
    line the previous one ended in (:meth:`DataCache.pattern`'s test); the others hit that line, the most
    recent, and move nothing. A descending row looks every access up (the same outcomes and cache)."""
    n, step, start, w = len(row), row.step, row.start, max(nbytes, 1)
    if step <= 0:
        return list(range(n))
    out, k = [], 0
    while k < n:
        out.append(k)
        lo = (start + k * step + w - 1) // line_bytes * line_bytes
        last = lo + line_bytes - w          # the last address whose access stays within that line
        k += 1
        nxt = start + k * step
        if k < n and lo <= nxt <= last:
            k += min((last - nxt) // step + 1, n - k)
    return out


def _evict(oldest, touched: dict) -> int:
    """The least recently used line of :meth:`DataCache.pattern_if`'s overlay, taken out of it: the
    oldest untouched line held before (``oldest`` yields each once; none is gone before it is passed,
    since a touched line is evicted only once it is exhausted), else the first touched line."""
    for line in oldest:
        if line not in touched:
            return line
    line = next(iter(touched))
    del touched[line]
    return line


def data_cache(profile) -> DataCache:
    """A core's data cache as ``profile`` describes it, with its share of L2 when ``l2_scalar_hits``."""
    l2 = L2Lines(profile.l2_line_bytes, profile.l2_bytes // profile.aiv_num) if profile.l2_scalar_hits else None
    return DataCache(profile.dcache_line_bytes, profile.dcache_bytes, l2)
