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
    record index (diagnostics). What ``a`` and ``b`` hold depends on ``code``; each code's entry is
    of the subclass :data:`ENTRY_TYPES` names for it, which reads them by their role (``e.flag``,
    ``e.first_byte``, ...). The pipes' loops unpack an entry by position, once per loop
    (``code, issued, rec, span, idx, a, b = e``: attribute reads there cost more than the 2 % the
    benchmarks allow), everything else reads the role names."""

    code: int
    issue: int
    rec: object
    span: Span
    idx: int
    a: object
    b: object


class VecEntry(Entry):
    """VEC: ``params`` the op's (width, cycles per repeat, latency); ``b`` unused."""

    __slots__ = ()
    params = Entry.a


class FlagEntry(Entry):
    """WAIT and SET: ``flag`` the :class:`~cgdr_des.hw.flags.Flag`; ``b`` unused."""

    __slots__ = ()
    flag = Entry.a


class BarEntry(Entry):
    """BAR: a PipeBarrier on the entry's pipe; ``a`` and ``b`` unused."""

    __slots__ = ()


class DmaEntry(Entry):
    """DMA: ``first_byte`` the cycles to its first byte, ``rate_cap`` its per-transfer rate cap."""

    __slots__ = ()
    first_byte = Entry.a
    rate_cap = Entry.b


class MacroEntry(Entry):
    """MAC: a Macro's V part for ``v_length`` cycles (issued ``v_start`` cycles after the Macro's
    start); ``started`` the :class:`MacroStart` V succeeds with its (free, done) cycles when it reaches
    the part, for a TimedMacro whose scalar end depends on them (``s_waits``), else None."""

    __slots__ = ()
    started = Entry.a
    v_length = Entry.b


class MacroStart:
    """When V reached a TimedMacro's V part: ``value`` is V's (free, done) cycles then, None until it
    has. The scalar unit reads it once V's pump has run; only if V has not got there yet (about one
    Macro in four on long_t2048) does it wait, on ``event``, which :meth:`succeed` then triggers.
    A SimPy event for every Macro would cost one more scheduled step each, for a value that is
    usually there already; the cycles are the same either way (the pipes compute them from their
    own clocks, never from the order of the steps at one env time)."""

    __slots__ = ("value", "event")

    def __init__(self) -> None:
        self.value = None
        self.event = None

    def succeed(self, value: tuple) -> None:
        """V reached the part with ``value`` = (free, done); wake the scalar unit if it waits."""
        self.value = value
        if self.event is not None:
            self.event.succeed(value)


class FixedEntry(Entry):
    """FIXED: a Cube-side record's ``cycles`` (issue, latency) and the buffer ``access`` it makes
    (:class:`~cgdr_des.hw.hazards.Access`)."""

    __slots__ = ()
    cycles = Entry.a
    access = Entry.b


#: the entry type of each code, indexed by code (VEC, WAIT, SET, BAR, DMA, MAC, FIXED are 0..6)
ENTRY_TYPES = (VecEntry, FlagEntry, FlagEntry, BarEntry, DmaEntry, MacroEntry, FixedEntry)


#: ``new_entry(ENTRY_TYPES[code], (code, issue, rec, span, idx, a, b))``: an Entry without the Python-level
#: ``Entry.__new__`` (the scalar unit makes one per handed-over instruction; this is 2x cheaper).
new_entry = tuple.__new__
