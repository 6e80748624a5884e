"""What the one-pass compute-run timer (:mod:`cgdr_des.hw.compute_run`) reads of the profile and carries
from record to record, how a Repeat's steady iterations shift it (see that module's docstring,
"Repeat"), how its relative state reads after S alone ran on (:func:`delayed`), how a flag of the run
changes it (:func:`s_flag`, :func:`v_flag`), and the record counts it reports."""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.hw.rules import flag_set, flag_wait, scalar_flag_set, set_while_set

_new_tuple = tuple.__new__

#: The HardEvents a compute run may use: S sets S_V and V waits it; V sets V_S and S waits it; V_V is V's.
COMPUTE_EVENTS = ("S_V", "V_S", "V_V")


class TimerConsts(NamedTuple):
    """The profile's values the timer reads, computed once per profile."""

    launch: int             # kernel_launch_cycles
    flag: int               # flag_cycles
    vec_call: int           # scalar cycles of one vector call before its hand-over
    dispatch: int           # scalar_dispatch_cycles per hand-over
    queue_depth: int
    n_ids: int              # event ids per HardEvent
    stall_policy: bool      # flag_double_set's rule: S's SetFlag waits for the previous consume
    report_double: bool     # flag_double_set's rule: a double set is a diagnostic
    vec_params: dict        # dtype -> op -> (width, cycles per repeat, latency)
    scalar_kinds: dict      # Scalar kind -> cycles per count


class ScanScalars(NamedTuple):
    """The scan's scalar state (:meth:`ScanState.scalars`): S's clock, V's free/done/cover cycles, the
    stall and busy totals, the counts, V's first start and how many entries went to V. The timer's
    loop (``ComputeRunTimer._walk``) unpacks it by position into locals, the one place it is read so."""

    t: int
    free: int
    done: int
    cov: int
    s_stall: int
    v_busy: int
    v_stall: int
    n_vec: int
    n_bar: int
    n_ld: int
    n_st: int
    first: int | None
    n_v: int


#: A snapshot of a scan's state (:meth:`ScanState.totals`): its :class:`ScanScalars` and the counts of
#: sets per event and of Scalar work per kind.
Totals = NamedTuple("Totals", [*ScanScalars.__annotations__.items(), ("n_sets", dict), ("scalar_n", dict)])


class ScanState:
    """What the scan carries from record to record: S's clock; V's free/done/cover cycles, first
    start and the ring of dequeue cycles; the flags; the stall/busy totals and counts."""

    __slots__ = ("t", "free", "done", "cov", "s_stall", "v_busy", "v_stall", "n_vec", "n_bar", "n_ld", "n_st",
                 "first", "n_v", "ring", "flags", "n_sets", "scalar_n")

    def __init__(self, t0: int, depth: int, n_ids: int) -> None:
        self.put(t0, t0, t0, t0, 0, 0, 0, 0, 0, 0, 0, None, 0)   # n_v: entries handed to V
        self.ring = deque([t0] * depth, maxlen=depth)   # dequeue cycles of the last ``depth`` V entries
        self.flags = {ev: _flag_state(n_ids) for ev in COMPUTE_EVENTS}   # event -> (pending sets, consumes)
        self.n_sets = dict.fromkeys(COMPUTE_EVENTS, 0)
        self.scalar_n: dict[str, int] = {}

    def scalars(self) -> ScanScalars:
        """The scalar state, in :class:`ScanScalars`' order (built without ``ScanScalars.__new__``)."""
        return _new_tuple(ScanScalars, (self.t, self.free, self.done, self.cov, self.s_stall, self.v_busy,
                                        self.v_stall, self.n_vec, self.n_bar, self.n_ld, self.n_st, self.first,
                                        self.n_v))

    def put(self, t, free, done, cov, s_stall, v_busy, v_stall, n_vec, n_bar, n_ld, n_st, first, n_v) -> None:
        (self.t, self.free, self.done, self.cov, self.s_stall, self.v_busy, self.v_stall, self.n_vec,
         self.n_bar, self.n_ld, self.n_st, self.first, self.n_v) = (t, free, done, cov, s_stall, v_busy, v_stall,
                                                                    n_vec, n_bar, n_ld, n_st, first, n_v)

    def relative(self) -> tuple:
        """Everything later records can observe, relative to S's clock ``t``. Later records compare
        free, done, cover, dequeue and consume cycles only with cycles >= t, so any of them <= t reads
        as t (0 here); a pending set's fire cycle also meets ``<`` against a consume cycle that may
        equal t, so one below t reads as -1. Flags are listed only where they hold something."""
        t = self.t
        ring = tuple([x - t if x > t else 0 for x in self.ring])
        flags = []
        for ev, (pend, cons) in self.flags.items():
            if max(cons) > t or any(pend):     # most events hold nothing: skipped without a loop per id
                flags += [(ev, rid, tuple([x - t if x >= t else -1 for x in fires]), c - t if c > t else 0)
                          for rid, (fires, c) in enumerate(zip(pend, cons, strict=True)) if fires or c > t]
        free, done, cov = self.free - t, self.done - t, self.cov - t
        return (free if free > 0 else 0, done if done > 0 else 0, cov if cov > 0 else 0, self.first is None,
                ring, flags)

    def consumes(self) -> tuple:
        return tuple(tuple(cons) for _, cons in self.flags.values())

    def totals(self) -> Totals:
        """A snapshot of the clocks, totals and counts (what :meth:`extrapolate` grows from)."""
        return Totals(*self.scalars(), dict(self.n_sets), dict(self.scalar_n))

    def extrapolate(self, before: Totals, left: int, delay: int = 0) -> None:
        """Account for ``left`` more iterations, each a copy of the one that took the state from
        ``before`` (a :meth:`totals`) to now, shifted by its duration: every cycle moves on by
        ``left`` durations (plus ``delay``: how much longer than that one they took together, in
        scalar leads nothing else saw), every total and count grows by ``left`` iterations' worth.
        ``done`` moves only if the iteration handed V something: each such iteration ends V's work at
        or past its own start, so past the previous done (which it may equal: an iteration that only
        adds to done what equals it still moves it next time); with nothing for V it stays where it
        was, and so do V's free cycle and busy cover (at or below S's clock, as the steady state
        found them: moved on, they would read the same to later records but not to the run's
        reported ``v_free``)."""
        n_v = before.n_v
        shift = (self.t - before.t) * left + delay
        self.t += shift
        if self.n_v != n_v:
            self.free += shift
            self.cov += shift
            self.done += shift
            self.n_v += (self.n_v - n_v) * left
        ring = self.ring
        shifted = [x + shift for x in ring]
        ring.clear()
        ring.extend(shifted)
        for pend, cons in self.flags.values():
            for fires in pend:
                if fires:
                    moved = [x + shift for x in fires]
                    fires.clear()
                    fires.extend(moved)
            cons[:] = [c + shift for c in cons]
        self.s_stall += (self.s_stall - before.s_stall) * left
        self.v_busy += (self.v_busy - before.v_busy) * left
        self.v_stall += (self.v_stall - before.v_stall) * left
        self.n_vec += (self.n_vec - before.n_vec) * left
        self.n_bar += (self.n_bar - before.n_bar) * left
        self.n_ld += (self.n_ld - before.n_ld) * left
        self.n_st += (self.n_st - before.n_st) * left
        for counts, old in ((self.n_sets, before.n_sets), (self.scalar_n, before.scalar_n)):
            for k, n in counts.items():
                counts[k] = n + (n - old.get(k, 0)) * left


def _flag_state(n_ids: int) -> tuple[list, list]:
    """Per id of one event: the fire cycles of sets not yet consumed, and the last consume cycle."""
    return [deque() for _ in range(n_ids)], [-1] * n_ids


def delayed(rel: tuple, d: int) -> tuple:
    """A :meth:`ScanState.relative` state as seen ``d`` cycles later by S alone (nothing else happened
    meanwhile): every offset ``d`` smaller, read as 0 (a pending fire as -1) once at or below S's
    clock, as ``relative`` reads it."""
    free, done, cov, no_first, ring, flags = rel
    ring = tuple([x - d if x > d else 0 for x in ring])
    flags = [(ev, rid, tuple([x - d if x >= d else -1 for x in fires]), c - d if c > d else 0)
             for ev, rid, fires, c in flags if fires or c > d]
    return (free - d if free > d else 0, done - d if done > d else 0, cov - d if cov > d else 0, no_first,
            ring, flags)


def scalar_only(st: ScanState, snap: Totals, cons: tuple) -> bool:
    """Whether the iteration since ``snap`` (a totals()) and ``cons`` (a consumes()) was S's alone:
    nothing handed to V, no flag set or consumed."""
    return st.n_v == snap.n_v and st.n_sets == snap.n_sets and st.consumes() == cons


def record_counts(scalar_n: dict, n_vec: int, n_bar: int, n_ld: int, n_st: int, n_sets: dict) -> tuple:
    """``(record_kind, n)`` pairs, sorted, as a Counter over the run gives them: a Scalar weighted by
    its count (so a kind seen only with count 0 is there with 0), other kinds only if present, and
    as many waits as sets of each event (the run is balanced)."""
    out = {"scalar_" + k: n for k, n in scalar_n.items()}
    pairs = [("vec", n_vec), ("barrier_V", n_bar), ("scalar_gm_load", n_ld), ("scalar_gm_store", n_st)]
    pairs += [(side + ev, n) for ev, n in n_sets.items() for side in ("set_", "wait_")]
    out.update((key, n) for key, n in pairs if n)
    return tuple(sorted(out.items()))


def late_cycle(idle: int, a: int, d: int, k: int | None) -> int:
    """A replayed run's cycle (S's end, V's end or V's free; :class:`~cgdr_des.hw.phase.TimedMacro`)
    when V meets its V part at ``a`` with all earlier V work done at ``d``: ``idle`` (the cycle with
    V idle, shifted to this replay) or ``k`` cycles after the later of the two, if later (None: no
    path from V's start to it)."""
    if k is None:
        return idle
    start = a if a > d else d
    return start + k if start + k > idle else idle


def s_flag(is_set: bool, pend, cons: list, rid: int, ev: str, t: int, f: int, stall_policy: bool,
            diag_double: bool) -> tuple[int, int]:
    """The scalar unit at ``t`` sets S_V or waits V_S (flag ``rid``: its pending fires ``pend`` and
    the consume cycles ``cons``); returns its new clock and the cycles it stalled."""
    if is_set:
        if stall_policy and pend:
            raise KernelDiagnostic(f"SetFlag<{ev}>({rid}) waits for a set not waited before it")
        fire, stall = scalar_flag_set(t, cons[rid], f, stall_policy)
        if diag_double and not pend and set_while_set(fire, cons[rid]):
            raise KernelDiagnostic(f"SetFlag<{ev}>({rid}) fires while the flag is still set")
        pend.append(fire)
        return fire, stall
    _, c, free, _, _ = flag_wait(t, t, pend.popleft(), f)
    if pend and diag_double and set_while_set(pend[0], c):
        raise KernelDiagnostic(f"SetFlag<{ev}>({rid}) fires while the flag is still set")
    cons[rid] = c
    return free, c - t


def v_flag(is_set: bool, a: int, done: int, cov: int, pend, cons: list, rid: int, ev: str, f: int,
            diag_double: bool) -> tuple[int, int, int, int, int, int]:
    """V sets V_S / V_V or waits S_V / V_V, arriving at ``a``: ``(free, end, dequeue cycle, stall, busy
    added, cover)``. No double-set check on a set V executes: see :mod:`cgdr_des.hw.compute_run`'s docstring."""
    if is_set:
        _, free, end, added, cov = flag_set(a, a, done, f, cov)
        pend.append(end)
        return free, end, a, 0, added, cov
    _, c, end, added, cov = flag_wait(a, a, pend.popleft(), f, cov)
    if pend and diag_double and set_while_set(pend[0], c):
        raise KernelDiagnostic(f"SetFlag<{ev}>({rid}) fires while the flag is still set")
    cons[rid] = c
    return end, end, end, c - a, added, cov
