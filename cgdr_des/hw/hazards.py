"""On-chip buffer hazards between pipes: a read before the write it depends on has completed.

Cube-side records name the on-chip buffers they read and write (``reads`` / ``writes``, e.g.
``"L0C:0"``). Nothing in the machine orders two pipes' accesses to a buffer except the flags and
barriers the program issues, so the machine checks that they sufficed:

- **read after write**: a record reading buffer X must start no earlier than the completion of the
  last record writing X before it in program order;
- **write after read**: a record writing X must start no earlier than the completion of every record
  that read the previous contents of X (the last write before it in program order).

Program order is known when the scalar unit hands a record over (:meth:`BufferLog.hand_over` gives
each access its *version*: how many writes of X precede it); times are known only when the pipes
execute them, in any order (:meth:`BufferLog.executed`). So the check runs once the run is over
(:meth:`BufferLog.hazards`), over every access. The pre-!1174 Cube-era kernel, which drains L0C on V
without waiting for the Mmad writing it (no M_V / V_M events), is what this catches.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple


class Access(NamedTuple):
    """One record's accesses in program order: ``reads`` as (buffer, version read), ``writes`` as
    (buffer, version written); version ``k`` is the contents the ``k``-th write left (0: initial)."""

    reads: tuple[tuple[str, int], ...]
    writes: tuple[tuple[str, int], ...]


class Timed(NamedTuple):
    """An executed access: the record index, its label, the pipe, its start and completion cycle."""

    idx: int
    label: str
    pipe: str
    start: int
    end: int


class BufferLog:
    """The buffer accesses of one core's program, in program order and as executed."""

    def __init__(self) -> None:
        self.version: dict[str, int] = defaultdict(int)
        self.writers: dict[tuple[str, int], Timed] = {}
        self.readers: dict[tuple[str, int], list[Timed]] = defaultdict(list)

    def hand_over(self, rec) -> Access:
        """The versions a record handed over now reads and writes."""
        reads = tuple((buf, self.version[buf]) for buf in rec.reads)
        writes = []
        for buf in rec.writes:
            self.version[buf] += 1
            writes.append((buf, self.version[buf]))
        return Access(reads, tuple(writes))

    def executed(self, access: Access, timed: Timed) -> None:
        """The record with ``access`` ran on its pipe as ``timed``."""
        for key in access.reads:
            self.readers[key].append(timed)
        for key in access.writes:
            self.writers[key] = timed

    def hazards(self) -> list[str]:
        """Every access that started before an access it depends on completed, earliest first."""
        found = []
        for (buf, version), readers in self.readers.items():
            writer = self.writers.get((buf, version))
            for r in readers:
                if writer is not None and r.start < writer.end:
                    found.append((r.start, _raw(buf, r, writer)))
        for (buf, version), writer in self.writers.items():
            for r in self.readers.get((buf, version - 1), ()):
                if writer.start < r.end:
                    found.append((writer.start, _war(buf, writer, r)))
        return [text for _, text in sorted(found)]


def _raw(buf: str, r: Timed, w: Timed) -> str:
    return (f"hazard: {r.label} on {r.pipe} (record #{r.idx}) reads {buf} from cycle {r.start}, but "
            f"{w.label} on {w.pipe} (record #{w.idx}) writing it completes only at cycle {w.end}: no flag "
            "or barrier orders them")


def _war(buf: str, w: Timed, r: Timed) -> str:
    return (f"hazard: {w.label} on {w.pipe} (record #{w.idx}) overwrites {buf} from cycle {w.start}, but "
            f"{r.label} on {r.pipe} (record #{r.idx}) reading its previous contents completes only at "
            f"cycle {r.end}: no flag or barrier orders them")
