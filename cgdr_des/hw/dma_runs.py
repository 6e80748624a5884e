"""DataCopy runs at ``phase`` fidelity: consecutive like calls handed to the machine as one Dma
record (``repeat`` = the calls), and which calls stay apart so the scalar unit waits as at ``instr``.
A merged run's GM timing is :func:`~cgdr_des.hw.rules.burst_cap`'s; the compiler
(:mod:`cgdr_des.hw.phase`) calls :func:`merge_dma_runs` on every phase it compiles."""

from __future__ import annotations

from dataclasses import replace

from cgdr_des.isa import Dma, PipeBarrier


def merge_dma_runs(records: list, singles: int = 0) -> list:
    """Consecutive DataCopy calls of one direction and one parameter set, with nothing between
    them, become one Dma with ``repeat`` (first addresses kept; nbytes summed), but for the last
    ``singles`` calls of each such run, kept one by one.

    Why keep ``queue_depth + 1`` singles: the scalar unit hands the k calls of a run to a queue of
    ``queue_depth`` = q slots and leaves the run when the call q + 1 places before the last one
    starts (a full queue stalls each hand-over until the entry q places back starts). A burst
    stands for all of its calls in one slot, so a run merged whole lets S go on at once, while at
    ``instr`` it waits for the pipe to work down the run (all_same's state write-back: S held
    ~22 000 cycles at instr, none at phase). With the last q + 1 calls kept, the entry q places
    before the last is the call q + 1 before the last, as at ``instr``. A run followed at once by
    PipeBarrier<ALL> keeps none: S stays at the barrier until every pipe drains, so it leaves on the
    same cycle whether the calls held it at the queue or not."""
    out: list = []
    start = 0       # where the current run of like DataCopy calls begins in ``out``
    for rec in records:
        prev = out[-1] if out else None
        if (type(rec) is Dma and type(prev) is Dma and prev.direction == rec.direction
                and prev.params == rec.params):
            out.append(rec)
            continue
        _merge_head(out, start, 0 if _drains_all(rec) else singles)
        start = len(out)
        out.append(rec)
    _merge_head(out, start, singles)
    return out


def _drains_all(rec) -> bool:
    """Whether ``rec`` is a PipeBarrier<ALL>: the scalar unit waits there for every pipe to drain, so
    it leaves a DataCopy run just before it when the run's last byte moves, whenever it handed the
    calls over: a run ending there needs no singles (the state rows of Steps 3 and 7)."""
    return type(rec) is PipeBarrier and rec.pipe == "ALL"


def _merge_head(out: list, start: int, singles: int) -> None:
    """Merge ``out[start:]`` (a run of like Dma, or one other record) into one burst, but for its
    last ``singles`` calls."""
    stop = len(out) - singles
    if stop - start < 2 or type(out[start]) is not Dma:
        return
    head = out[start]
    for rec in out[start + 1:stop]:
        head = replace(head, nbytes=head.nbytes + rec.nbytes, repeat=head.repeat + rec.repeat)
    out[start:stop] = [head]
