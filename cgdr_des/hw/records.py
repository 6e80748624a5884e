"""The machine's own records: spans of a Tag, pipe-queue entries, and what each entry code means.

These are read by field name everywhere (``tests/test_hw_named_records.py`` greps for indexing).
"""

from __future__ import annotations

from typing import NamedTuple

#: What a pipe does with a queue entry (``Entry.code``). FIXED: a fixed-cost Cube-side record.
VEC, WAIT, SET, BAR, DMA, MAC, FIXED = range(7)

#: No start seen yet (any real start is smaller).
NO_START = 2**62


class Span:
    """The ops of one Tag segment on one core: its labels, the smallest start and largest end of the
    ops it holds so far (cycles), and how many ops it holds. Every process widens it as it goes."""

    __slots__ = ("phase", "batch", "head", "vtile", "chunk", "start", "end", "n")

    def __init__(self, phase: str = "", batch: int = -1, head: int = -1, vtile: int = -1, chunk: int = -1) -> None:
        self.phase, self.batch, self.head, self.vtile, self.chunk = phase, batch, head, vtile, chunk
        self.start, self.end, self.n = NO_START, -1, 0

    def add(self, start: int, end: int, n: int = 1) -> None:
        """Widen the span by ``n`` ops covering ``[start, end)``."""
        if start < self.start:
            self.start = start
        if end > self.end:
            self.end = end
        self.n += n

    def row(self, cid: int, pipe: str, op: str, start: int, end: int, elements: int, nbytes: int) -> tuple:
        """One ops row (``OP_COLUMNS`` order) of an op of this span (off the hot paths)."""
        return (cid, pipe, op, self.phase, self.batch, self.head, self.vtile, self.chunk, start, end, elements,
                nbytes)


class MacroTally:
    """How many times a Macro ran in one phase: its ``counts`` are added ``times`` times to the
    phase's ``phase_counts`` at the end of the run."""

    __slots__ = ("phase_counts", "counts", "times")

    def __init__(self, phase_counts, counts: tuple) -> None:
        self.phase_counts, self.counts, self.times = phase_counts, counts, 0


class Entry(NamedTuple):
    """One instruction the scalar unit handed to a pipe's in-order queue.

    ``issue`` is the cycle it was handed over, ``span`` the Tag span it belongs to, ``idx`` its
    record index (diagnostics). ``a`` and ``b`` depend on ``code``: VEC the op's (width, cycles per
    repeat, latency) and nothing;
    WAIT and SET the Flag (b None); BAR nothing; MAC the Macro's V offset and span length; DMA the
    first-byte cycles and the rate cap; FIXED its (issue, latency) cycles and its buffer
    :class:`~cgdr_des.hw.hazards.Access`."""

    code: int
    issue: int
    rec: object
    span: Span
    idx: int
    a: object
    b: object


#: ``new_entry(Entry, (code, issue, rec, span, idx, a, b))``: an Entry without the Python-level
#: ``Entry.__new__`` (the scalar unit makes one per handed-over instruction; this is 2x cheaper).
new_entry = tuple.__new__
