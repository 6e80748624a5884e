"""What a plain Repeat does to the one-pass timer's scan, kept from its first meeting and applied again.

A *plain* Repeat (:class:`~cgdr_des.isa.Repeat` without declared ScalarGm or ScalarExp) whose body
holds only Scalar work of fixed cost, VecOps, PipeBarrier<V> and SetFlag/WaitFlag of the compute
events with literal ids touches no data cache and reads nothing but the scan state. What it does to
that state depends on three things only: its body's costs (:func:`body_costs`), its iteration count
and the relative state it meets (:meth:`~cgdr_des.hw.compute_state.ScanState.relative`: everything
later records can observe, offsets from S's clock, the same reading that makes a Repeat's steady
iterations exact to extrapolate; :mod:`cgdr_des.hw.compute_run`, "Repeat"). Every rule the timer
applies is a ``max`` and sums of those offsets and constants, so a second meeting in the same relative
state is the first one shifted by the difference of S's clocks, in every cycle it writes.

The kernel meets the same plain Repeat in the same relative state again and again: ComputeKCumdecay's
row loops, one per row after its Duplicate and barrier, in every chunk length a calibration compiles
(a 310P calibration of (8, 8, 64, 64) meets 19 786 plain Repeats, 95 % of them in a (body, count,
state) met before). The first meeting is walked and its :class:`Outcome` kept (:class:`RepeatMemo`,
one per profile); later ones apply it, which costs what one relative-state comparison does.

What an outcome holds, and why that is the whole state afterwards:

- S's advance, and the stall, busy and count totals the walk added (sums of the walked records).
- The relative state it left: the ring of dequeue cycles and the flags are only ever read against
  S's clock or later (``relative``'s docstring), so a cycle at or below the clock may be any such
  cycle: applied, a ring slot read as 0 becomes S's new clock, a pending fire read as -1 the cycle
  before it, and a consume read as 0 keeps the cycle it had (one id's consumes only grow, its waits
  being on one pipe and in order: the cycle kept is at or below the one the walk wrote).
- V's free, done and cover cycles and V's first start, which the run's report reads absolutely
  (:class:`~cgdr_des.hw.compute_run.RunTiming`): each as its offset from S's clock at entry if the
  walk wrote it, else "unchanged". A write is never below that clock, so a written cycle equal to the
  old one means an old one at or above the clock, which the key holds exactly (its offset, or whether
  a cycle read as 0 sits exactly at the clock): unchanged and written are then the same cycle.

A walk that raises (a diagnostic) keeps nothing; a later meeting walks and raises the same way. The
memo holds at most :data:`LIMIT` outcomes per profile and starts afresh beyond that (a few MiB).
"""

from __future__ import annotations

from typing import NamedTuple

from cgdr_des.hw.compute_state import COMPUTE_EVENTS, ScanState, Totals
from cgdr_des.isa import PipeBarrier, Repeat, Scalar, SetFlag, VecOp, WaitFlag

#: outcomes kept per profile before the memo starts afresh (a calibration keeps about a thousand)
LIMIT = 20_000
_FIELDS = ("free", "done", "cov")
_TOTALS = ("s_stall", "v_busy", "v_stall", "n_vec", "n_bar", "n_ld", "n_st", "n_v")


def body_costs(body: list, scalar_kinds: dict) -> tuple | None:
    """What of ``body`` the timer's rules read (a VecOp's op, dtype and element count; the other
    records whole, addresses aside), or None if the body is not plain (module docstring)."""
    out = []
    for rec in body:
        typ = type(rec)
        if typ is VecOp:
            out.append((rec.op, rec.dtype, rec.n))
        elif (typ is Scalar and rec.kind in scalar_kinds and rec.count >= 0) or \
                (typ is PipeBarrier and rec.pipe == "V") or \
                ((typ is SetFlag or typ is WaitFlag) and type(rec.id) is int and rec.event in COMPUTE_EVENTS):
            out.append(rec)
        else:
            return None
    return tuple(out)


def memo_key(rep: Repeat, st: ScanState, rel: tuple, scalar_kinds: dict) -> tuple | None:
    """The key of ``rep`` met in state ``st`` (its relative state ``rel``), or None if ``rep`` is not
    plain. By the Repeat contract every iteration costs what the first does, so its body stands for all."""
    if rep.gm is not None or rep.exp is not None:
        return None
    costs = body_costs(rep.body(0), scalar_kinds)
    if costs is None:
        return None
    t = st.t
    return costs, rep.n, rel[:5], tuple(rel[5]), (st.free == t, st.done == t, st.cov == t)


class Outcome(NamedTuple):
    """What a plain Repeat did to the scan (module docstring); cycles are offsets."""

    advance: int            # S's clock moved by
    written: tuple          # free, done, cover: offset from S's entry clock, or None if not written
    first: int | None       # V's first start, offset from the entry clock, if the walk set it
    totals: tuple           # what the walk added to each of _TOTALS
    n_sets: tuple           # (event, sets added)
    scalar_n: tuple         # (kind, count added), every Scalar kind of the body and every kind the walk met
    ring: tuple             # the relative ring it left
    held: tuple             # (event, id) of the fires pending as it began: the only ones it can have consumed
    flags: tuple            # the relative flags it left (ScanState.relative's form)


def outcome(before: Totals, st: ScanState, key: tuple) -> Outcome:
    """The :class:`Outcome` of a walk that took the scan from ``before`` (:meth:`ScanState.totals`) to
    ``st``, for the Repeat of ``key`` (:func:`memo_key`). Every Scalar kind of the body is listed, even
    at 0 added: the run's counts name each kind seen, count 0 included, and another meeting may be the
    first to see it."""
    t0 = before.t
    written = tuple(None if new == old else new - t0
                    for new, old in ((st.free, before.free), (st.done, before.done), (st.cov, before.cov)))
    first = st.first - t0 if before.first is None and st.first is not None else None
    totals = tuple(getattr(st, f) - getattr(before, f) for f in _TOTALS)
    n_sets = tuple((ev, n - before.n_sets[ev]) for ev, n in st.n_sets.items() if n != before.n_sets[ev])
    kinds = {rec.kind for rec in key[0] if type(rec) is Scalar}
    scalar_n = tuple((k, n - before.scalar_n.get(k, 0)) for k, n in st.scalar_n.items()
                     if k in kinds or k not in before.scalar_n or n != before.scalar_n[k])
    held = tuple((ev, rid) for ev, rid, fires, _ in key[3] if fires)
    rel = st.relative()
    return Outcome(st.t - t0, written, first, totals, n_sets, scalar_n, rel[4], held, tuple(rel[5]))


def apply(out: Outcome, st: ScanState) -> None:
    """Bring ``st``, met in the relative state ``out`` was recorded in, to where the walk would."""
    t0 = st.t
    t = st.t = t0 + out.advance
    for name, off in zip(_FIELDS, out.written, strict=True):
        if off is not None:
            setattr(st, name, t0 + off)
    if out.first is not None:
        st.first = t0 + out.first
    for name, added in zip(_TOTALS, out.totals, strict=True):
        setattr(st, name, getattr(st, name) + added)
    for ev, added in out.n_sets:
        st.n_sets[ev] += added
    scalar_n = st.scalar_n
    for kind, added in out.scalar_n:
        scalar_n[kind] = scalar_n.get(kind, 0) + added
    st.ring.clear()
    st.ring.extend([t + x for x in out.ring])
    flags = st.flags
    for ev, rid in out.held:
        flags[ev][0][rid].clear()
    for ev, rid, fires, c in out.flags:
        pend, cons = flags[ev]
        pend[rid].extend([t + x if x >= 0 else t - 1 for x in fires])
        if c > 0:
            cons[rid] = t + c


class RepeatMemo:
    """The outcomes of one profile's plain Repeats, by :func:`memo_key`."""

    def __init__(self) -> None:
        self.outcomes: dict[tuple, Outcome] = {}
        self.hits = 0

    def get(self, key: tuple) -> Outcome | None:
        found = self.outcomes.get(key)
        self.hits += found is not None
        return found

    def put(self, key: tuple, out: Outcome) -> None:
        if len(self.outcomes) >= LIMIT:
            self.outcomes.clear()
        self.outcomes[key] = out


_MEMOS: dict = {}


def memo_for(profile) -> RepeatMemo:
    """The memo of ``profile`` (a profile's timer constants are all the walk reads besides the key)."""
    memo = _MEMOS.get(profile)
    if memo is None:
        if len(_MEMOS) >= 64:
            _MEMOS.clear()
        memo = _MEMOS[profile] = RepeatMemo()
    return memo
