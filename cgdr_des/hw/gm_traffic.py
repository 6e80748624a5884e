"""An occurrence's GM traffic through one core's data cache (``phase`` fidelity, split V-tiles).

Where a head's V-tiles run on different cores, each core has its own data cache, and every
occurrence of a phase that reads GM by scalar passes its accesses through it
(:meth:`~cgdr_des.hw.phase.PhaseCompiler.occurrence`): its hits and misses decide which compiled
form of the phase it replays. :func:`touch` does that pass on arrays (a loop's rows at once, declared
by :class:`~cgdr_des.isa.GmRows` and :class:`~cgdr_des.isa.GmStrided`); :func:`touch_walk` does it
access by access, the reference the array pass is tested against (tests/test_phase_touch.py).
"""

from __future__ import annotations

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
    blocks: list[tuple] = []     # (addresses, one size or sizes) in program order, the lists' run included

    def flush_lists() -> None:
        if addrs:
            one = sizes[0]
            blocks.append((np.array(addrs, np.int64), one if sizes.count(one) == len(sizes) else np.array(sizes)))
            addrs.clear()
            sizes.clear()

    def flush() -> None:
        flush_lists()
        if len(blocks) > 1:
            a = np.concatenate([b[0] for b in blocks])
            each = [b[1] for b in blocks]
            if all(type(x) is int for x in each) and each.count(each[0]) == len(each):
                nb = each[0]
            else:
                nb = np.concatenate([np.full(len(b[0]), b[1], np.int64) if type(b[1]) is int else b[1]
                                     for b in blocks])
            blocks[:] = [(a, nb)]
        if blocks:
            out.append(cache.pattern_of(*blocks[0]))
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
                blocks.append((_row_addresses([gm.row(i) for i in range(rec.n)]), int(gm.nbytes)))
            elif type(gm) is GmStrided:
                flush_lists()
                blocks.append((gm.start + gm.step * np.arange(rec.n, dtype=np.int64), int(gm.nbytes)))
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
