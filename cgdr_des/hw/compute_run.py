"""Exact timing of a compute run (scalar unit + V pipe only) in one pass, without the machine.

A compute run (:mod:`cgdr_des.hw.phase`) is made of Scalar, ScalarGm, VecOp, PipeBarrier<V> and
SetFlag/WaitFlag of S_V, V_S, V_V with literal ids. :func:`time_compute_run` gives it the numbers the
machine gives it alone on an idle core (:meth:`PhaseCompiler.macro`), scanning it once in program
order with the scalar unit's clock and the V pipe's state in locals.

Why one pass in program order is exact. The machine is a dataflow network (:mod:`cgdr_des.hw.core`):
every cycle it computes is a ``max`` of its own clock and cycles stamped on what it consumed, so the
order its automata run in does not change them. With only S and V, and every WaitFlag after its
SetFlag in program order, each entry's times depend only on earlier entries:

- V takes entries in hand-over order and its rules (:mod:`cgdr_des.hw.pipes`) read only V's own state
  (free, done, the busy cover) and the entry's issue cycle, plus, for a WaitFlag, the fire cycle of
  its set. That set comes earlier in program order: from S (S_V, already executed) or from V (V_S,
  V_V, already processed). So V can process each entry the moment S hands it over.
- S's full-queue stall reads the dequeue cycle of the entry ``queue_depth`` places back: already known
  (kept in a ring of the last ``queue_depth`` dequeue cycles). S's WaitFlag<V_S> reads the fire cycle
  of a V SetFlag handed over earlier: already known. Under ``flag_double_set = "stall"`` S's SetFlag
  waits for the previous set's consume, by a WaitFlag handed over earlier: already known too.
- ScalarGm goes through ``dcache`` in S's program order, as in the machine, so hits, misses and the
  cache left behind are the same.
- The double-set check (``flag_double_set = "diagnostic"``) compares, for consecutive sets k, k+1 of
  one flag, set k+1's fire cycle with set k's consume cycle. The machine makes it at whichever of the
  two events its automata reach second; here it is made at the same pair of events in program
  order, so the same runs fail. A set V executes never fails it: the previous set's consume came
  earlier in program order, by S (V_S), which hands the new set over no earlier, or by V itself (V_V),
  free again only ``flag_cycles`` after it; so the set-side check is made for S's sets only.

Repeat (:class:`~cgdr_des.isa.Repeat`: n iterations of a body whose records cost alike). The scan
walks iterations, comparing the state before and after each in relative terms (:meth:`ScanState.relative`):
S's clock is the origin; every cycle later records compare only with S's clock or later reads as its
offset, or as 0 (-1 for a pending set's fire cycle) once at or below the clock. When an iteration
leaves that relative state as it found it, the next iteration meets the same relative state and, if
it has the same costs, is the same iteration shifted by its duration, and so is every one after it
with the same costs: they are added at once (:meth:`ScanState.extrapolate`). Without declared costs
(no ScalarGm or ScalarExp, and no data-cache access seen) that is all the remaining iterations; with
``Repeat.gm`` / ``Repeat.exp`` it is the following iterations whose accesses hit and miss as the
steady one's did and whose ScalarExp arguments cost what its did (the cache is touched for them in
order; whether an iteration's accesses go as the steady one's did is answered on an overlay of the
cache, :meth:`~cgdr_des.hw.dcache.DataCache.pattern_if`, not on a copy of its ~500 lines kept in case
they do not); the first that differs is walked, and so on. Where an iteration is added or walked, the
cache sees the same accesses in the same order, so what a scan leaves in the cache does not depend on
when V is free (the phase compiler's second scan, with V busy, relies on it). A ScalarExp cost that
differs is no reason to walk when every ScalarExp call of the body sits in its *lead* (the Scalar
records it begins with):
the lead moves only S's clock, so if the steady state reads the same from the end of either lead
(:func:`~cgdr_des.hw.compute_state.delayed`: usually V has caught up with S by then), the iteration
is the steady one delayed by the difference in its lead, and is added at once with that delay
(UpdateAndWriteState's token loop, whose ScalarExp cost varies with its argument, is walked three
to six times instead of ten to thirteen). That is exact, not an estimate: the tests
compare every field against the expanded loop, on random bodies and on the kernel's loops. A Repeat
of fewer than two iterations or of an empty body raises KernelDiagnostic (the compiler then times
its expansion).

Reported as :meth:`~cgdr_des.hw.core.Core.stats` reports them, minus ``kernel_launch_cycles``:
``s_cycles`` is S's last cycle (busy + stall), ``v_start`` the arrival of V's first entry, ``v_end``
the latest end of anything V executed (both 0 if V ran nothing). ``counts`` are the
:func:`~cgdr_des.isa.record_kind` tallies, a Scalar weighted by its count.

A busy V (``scan``'s ``v_free`` / ``v_done``): the scan starts with V free and done at those cycles
instead of the launch cycle, its queue's earlier entries taken as gone; the phase compiler's late
scan (:mod:`cgdr_des.hw.phase`, "A run met by a busy V") uses it. ``v_free`` in the result is V's
free cycle after the run (its last issue), which ``v_end`` passes by the last op's latency.

A WaitFlag with no earlier set left to consume, a set never waited in the run (the run is not
:func:`~cgdr_des.hw.phase.balanced`), a set under the ``stall`` policy while the previous set is
still pending (the machine deadlocks), a record outside the compute subset when the whole run is
asked for, and every record error the machine reports (unknown op, kind, event id, negative cost,
ScalarExp of an infinite argument) raise KernelDiagnostic: the caller then falls back to the machine,
which answers exactly (or reports it its own way). On a raise, ``dcache`` has seen the accesses made
so far: a caller that falls back restores it first.
"""

from __future__ import annotations

from typing import NamedTuple

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.hw.compute_state import (
    ScanState,
    TimerConsts,
    Totals,
    delayed,
    record_counts,
    s_flag,
    scalar_only,
    v_flag,
)
from cgdr_des.hw.costs import scalar_kind_cycles, vec_params
from cgdr_des.hw.dcache import L2_HIT
from cgdr_des.hw.declared import DeclaredCosts, exp_cycles
from cgdr_des.hw.flags import DOUBLE_SET
from cgdr_des.hw.profile import Profile
from cgdr_des.hw.repeat_memo import apply, memo_for, memo_key, outcome
from cgdr_des.hw.rules import (
    arrival,
    barrier,
    hand_over,
    scalar_gm_l2,
    vec_call_scalar,
    vec_op,
)
from cgdr_des.hw.scan_marks import BusyMatch, IdleMarks
from cgdr_des.isa import PipeBarrier, Repeat, Scalar, ScalarGm, SetFlag, VecOp, WaitFlag


class RunTiming(NamedTuple):
    """A run's numbers as :class:`~cgdr_des.hw.phase.TimedMacro` holds them (cycles from S's start)."""

    s_cycles: int
    v_start: int
    v_end: int
    counts: tuple
    s_stall: int
    v_busy: int
    v_stall: int
    v_free: int = 0     # V's free cycle after the run (its last issue; ``v_end`` adds the last latency)


class ComputeRunTimer:
    """The profile's constants and cost tables, computed once for many runs."""

    #: plain Repeats met again in a relative state met before take that meeting's outcome
    #: (:mod:`cgdr_des.hw.repeat_memo`); False walks every one (tests/test_repeat_memo.py holds the
    #: two to each other)
    memo_repeats = True

    def __init__(self, profile: Profile) -> None:
        p = profile
        self.profile = p
        vec_call = vec_call_scalar(p.vec_api_scalar_cycles, p.vec_call_loop_cycles)
        rule = DOUBLE_SET[p.flag_double_set]
        self.consts = TimerConsts(p.kernel_launch_cycles, p.flag_cycles, vec_call, p.scalar_dispatch_cycles,
                                  p.queue_depth, p.event_ids_per_hard_event, rule.stall, rule.report, vec_params(p),
                                  scalar_kind_cycles(p))
        #: ScalarGm cycles by [store][outcome] (outcome 0 a miss, 1 a hit, L2_HIT), from the rule
        self.gm_cost = [[scalar_gm_l2(o == 1, o == L2_HIT, store, p.scalar_ub_load_cycles, p.scalar_ub_store_cycles,
                                      p.dcache_miss_cycles, p.l2_hit_cycles) for o in range(L2_HIT + 1)]
                        for store in (False, True)]
        self.memo = memo_for(p)
        self.declared = DeclaredCosts(p, self.gm_cost, self.consts.scalar_kinds)

    def time(self, run: list, dcache, marks: IdleMarks | None = None) -> RunTiming:
        """The numbers of ``run`` (all compute records); KernelDiagnostic if it cannot be timed here.
        ``marks``: notes for a busy scan of the run to come (:meth:`scan`)."""
        run = run if type(run) is list else list(run)
        timing, stop = self.scan(run, 0, dcache, marks=marks)
        if stop != len(run):
            raise KernelDiagnostic(f"record #{stop} ({type(run[stop]).__name__}) is not a compute record")
        return timing

    def scan(self, records: list, start: int, dcache, v_free: int = 0, v_done: int = 0,
             marks: IdleMarks | BusyMatch | None = None) -> tuple[RunTiming, int]:
        """Time the maximal compute run beginning at ``records[start]``; returns (timing, end index).
        ``v_free``, ``v_done``: V still busy with earlier work as the run begins, free to issue that
        many cycles after S's start and done with it all ``v_done`` cycles after (the queue's earlier
        entries taken as dequeued); 0 and 0 for an idle V. ``marks``: an idle scan's notes to take
        (:class:`IdleMarks`), or a busy scan's match against them (:class:`BusyMatch`), which may end
        the walk early and take the rest from the idle scan (:mod:`cgdr_des.hw.scan_marks`)."""
        t0 = self.profile.kernel_launch_cycles
        st = ScanState(t0, self.profile.queue_depth, self.profile.event_ids_per_hard_event)
        st.free = t0 + v_free
        st.done = st.cov = t0 + max(v_free, v_done)
        try:
            stop = self._walk(records, start, st, dcache, marks=marks)
        except _Matched:        # at an iteration boundary of a top-level Repeat
            stop = None
        if type(marks) is BusyMatch and marks.hit is not None:
            marks.finish(st)
            stop, counts = marks.idle.stop, marks.idle.counts
        else:
            if any(any(pending) for pending, _ in st.flags.values()):
                raise KernelDiagnostic("a SetFlag of the run is not waited in it")
            counts = record_counts(st.scalar_n, st.n_vec, st.n_bar, st.n_ld, st.n_st, st.n_sets)
            if type(marks) is IdleMarks:
                marks.close(st, stop, counts)
        if st.first is None:
            return RunTiming(st.t - t0, 0, 0, counts, st.s_stall, 0, 0), stop
        return RunTiming(st.t - t0, st.first - t0, st.done - t0, counts, st.s_stall, st.v_busy, st.v_stall,
                         st.free - t0), stop

    def _walk(self, records: list, start: int, st: ScanState, dcache, seen: list | None = None,
              marks: IdleMarks | BusyMatch | None = None) -> int:
        """Advance ``st`` through ``records[start:]`` up to the first record outside the compute subset;
        returns its index (``len(records)`` if none). ``seen``: where to note how each ScalarGm went.
        ``marks`` (the run's own walk, not a Repeat body's): told of each WaitFlag<V_S>; a match ends
        the walk after it (see :meth:`scan`).
        State in locals (this runs once per record of every compiled run) for Scalar, ScalarGm, VecOp
        and PipeBarrier<V>, nearly every record; a flag or a Repeat goes to :meth:`_sync` on ``st``."""
        consts, gm_cost = self.consts, self.gm_cost
        api, disp, vp, kc = consts.vec_call, consts.dispatch, consts.vec_params, consts.scalar_kinds
        access, lines, line_bytes, to_end = dcache.access, dcache.lines, dcache.line_bytes, dcache.lines.move_to_end
        (t, free, done, cov, s_stall, v_busy, v_stall, n_vec, n_bar, n_ld, n_st, first, n_v) = st.scalars()
        ring, ring_append, scalar_n, scalar_get = st.ring, st.ring.append, st.scalar_n, st.scalar_n.get
        for i in range(start, len(records)):
            rec = records[i]
            typ = type(rec)
            if typ is Scalar:
                k, n = rec.kind, rec.count
                c = kc.get(k)
                c = c * n if c is not None else exp_cycles(rec, self.profile)
                if c < 0:
                    raise KernelDiagnostic(f"Scalar count {n!r} is negative")
                scalar_n[k] = scalar_get(k, 0) + n
                t += c
            elif typ is ScalarGm:
                # DataCache.access's hit on one resident line, inline: a chunk's first build makes
                # ~50 000 of these and the call was 40 % of the scan; anything else goes through it
                addr, nb = rec.addr, rec.nbytes
                line, off = divmod(addr, line_bytes)
                if off + nb <= line_bytes and line in lines:
                    to_end(line)
                    dcache.hits += 1
                    hit = True
                else:
                    hit = access(addr, nb) or (L2_HIT if dcache.in_l2 else False)
                if seen is not None:
                    seen.append(hit)
                n_st += rec.store
                n_ld += not rec.store
                t += gm_cost[rec.store][hit]      # hit: True, False or L2_HIT, an index
            elif typ is VecOp or (typ is PipeBarrier and rec.pipe == "V"):
                if typ is VecOp:
                    params = _vec_params(vp, rec)
                    t += api        # the mask set-up before the hand-over
                slot = ring[0]          # hand_over(t, ring[0], disp), written out: once per V entry
                if slot > t:
                    s_stall += slot - t
                    t = slot
                t += disp
                n_v += 1
                if typ is VecOp:
                    a, free, end, added, cov = vec_op(free, t, rec.n, params, cov)
                    v_busy += added
                    n_vec += 1
                    ring_append(a)
                else:
                    a, end = barrier(free, t, done)
                    free = end
                    v_stall += end - a
                    n_bar += 1
                    ring_append(end)
                first = a if first is None else first
                done = end if end > done else done
            else:
                st.put(t, free, done, cov, s_stall, v_busy, v_stall, n_vec, n_bar, n_ld, n_st, first, n_v)
                if not self._sync(rec, typ, st, dcache, (marks, i) if marks is not None and typ is Repeat else None):
                    return i
                if marks is not None and typ is WaitFlag and rec.event == "V_S" and marks.at(i, st):
                    return i + 1
                (t, free, done, cov, s_stall, v_busy, v_stall, n_vec, n_bar, n_ld, n_st, first, n_v) = st.scalars()
        st.put(t, free, done, cov, s_stall, v_busy, v_stall, n_vec, n_bar, n_ld, n_st, first, n_v)
        return len(records)

    def _sync(self, rec, typ, st: ScanState, dcache, at: tuple | None = None) -> bool:
        """A SetFlag / WaitFlag of the run, or a Repeat, applied to ``st``; False (``st`` untouched)
        if ``rec`` ends the run: a record outside the compute subset, or a flag shared with another
        pipe or on a fetched id. ``at``: (marks, index of ``rec``) for a record of the run's own walk
        (:meth:`_iterate`)."""
        if typ is Repeat:
            self._repeat(rec, st, dcache, at)
            return True
        if typ is not SetFlag and typ is not WaitFlag:
            return False
        ev, rid = rec.event, rec.id
        state = st.flags.get(ev)
        if state is None or type(rid) is not int:
            return False
        consts = self.consts
        f, n_ids, stall_policy, diag_double = consts.flag, consts.n_ids, consts.stall_policy, consts.report_double
        if not 0 <= rid < n_ids:
            raise KernelDiagnostic(f"{ev}: event id {rid} outside 0..{n_ids - 1}")
        pend, cons = state[0][rid], state[1]
        is_set = typ is SetFlag
        if is_set:
            st.n_sets[ev] += 1
        elif not pend:
            raise KernelDiagnostic(f"WaitFlag<{ev}>({rid}) has no earlier SetFlag in the run")
        if ev == ("S_V" if is_set else "V_S"):      # the scalar unit's own side
            st.t, stall = s_flag(is_set, pend, cons, rid, ev, st.t, f, stall_policy, diag_double)
            st.s_stall += stall
            return True
        # V sets V_S, V_V and waits S_V, V_V: handed over like any entry, then executed by V
        st.t, stall = hand_over(st.t, st.ring[0], consts.dispatch)
        st.s_stall += stall
        st.n_v += 1
        a = arrival(st.free, st.t)
        if st.first is None:
            st.first = a
        st.free, end, deq, stall, added, st.cov = v_flag(is_set, a, st.done, st.cov, pend, cons, rid, ev, f,
                                                          diag_double)
        st.v_stall += stall
        st.v_busy += added
        st.ring.append(deq)
        if end > st.done:
            st.done = end
        return True

    def _repeat(self, rep: Repeat, st: ScanState, dcache, at: tuple | None = None) -> None:
        """Run ``rep``'s iterations on ``st``; once one leaves the relative state unchanged, add the
        following iterations' shift and counts at once (exact: module docstring, "Repeat"): all the
        rest when the body declares no ScalarGm or ScalarExp, else as many as meet the same cache
        hits and ScalarExp costs as the steady one (the cache is touched for them in order). A plain
        Repeat met before in the same relative state takes that meeting's outcome
        (:mod:`cgdr_des.hw.repeat_memo`)."""
        if rep.n < 2:   # stands for fewer records than a run needs: compiled as its expansion
            raise KernelDiagnostic(f"a Repeat of {rep.n} iterations")
        before = st.relative()
        key = memo_key(rep, st, before, self.consts.scalar_kinds) if self.memo_repeats else None
        if key is None:
            self._iterate(rep, st, dcache, before, at)
            return
        done = self.memo.get(key)
        if done is not None:
            apply(done, st)
            return
        met = st.totals()
        self._iterate(rep, st, dcache, before, at)
        self.memo.put(key, outcome(met, st, key))

    def _iterate(self, rep: Repeat, st: ScanState, dcache, before: tuple, at: tuple | None = None) -> None:
        """:meth:`_repeat`'s walk of ``rep`` from ``st`` (relative state ``before``). A top-level Repeat of
        a scan with marks (``at``: the marks and the Repeat's index; a nested Repeat's walk gets none)
        tells them of each boundary between walked iterations; a busy scan's match there ends the scan
        (:class:`_Matched`)."""
        varies = rep.gm is not None or rep.exp is not None
        i, n = 0, rep.n
        while i < n:
            body = rep.body(i)
            if not body:
                raise KernelDiagnostic("a Repeat of an empty body")
            snap, lookups, cons = st.totals(), dcache.hits + dcache.misses, st.consumes()
            seen = [] if rep.gm is not None else None
            stop = self._walk(body, 0, st, dcache, seen)
            if stop != len(body):
                raise KernelDiagnostic(f"a Repeat body holds a non-compute record ({type(body[stop]).__name__})")
            key = self.declared.walked(rep, i, seen) if varies else None
            i += 1
            if i == n:
                return
            if at is not None and at[0].at((at[1], i), st):
                raise _Matched
            if key is None and varies:      # accesses it did not declare (a nested Repeat's): walk on
                before = st.relative()
                continue
            if varies and scalar_only(st, snap, cons):
                self._add_scalar_iterations(rep, i, st, snap, key, dcache)
                return
            after = st.relative()
            steady, before = after == before, after
            if not steady:
                continue
            if not varies:
                if dcache.hits + dcache.misses == lookups:   # else the body broke its contract: walk on
                    st.extrapolate(snap, n - i)
                    return
                continue
            i = self._matching(rep, i, st, snap, self._steady(rep, key, body, after), dcache)

    def _add_scalar_iterations(self, rep: Repeat, i: int, st: ScanState, snap: Totals, key: tuple, dcache) -> None:
        """Iterations i.. of a Repeat whose body is scalar work only (the walked one handed V nothing
        and set or waited no flag): S runs them back to back with nothing to wait for, so each takes
        the walked iteration's scalar time but for its own declared costs, ScalarExp cycles and data
        cache hits or misses (the cache is touched for them in order, as their records would)."""
        exps, hits = key
        walked = rep.gm(i - 1) if rep.gm is not None else ()
        rest = st.t - snap.t - self.declared.gm_cycles(walked, hits) - sum(exps)
        t = st.t + rest * (rep.n - i)
        if rep.gm is not None:      # no other cache access among them: the GM ones all at once
            t += self.declared.gm_span(rep.gm, i, rep.n, dcache)
        if rep.exp is not None:
            t += sum(sum(self.declared.exp_costs(rep, k)) for k in range(i, rep.n))
        left = rep.n - i                    # the counts grow by the walked iteration's; V, flags stay
        st.t = t
        st.n_ld += (st.n_ld - snap.n_ld) * left
        st.n_st += (st.n_st - snap.n_st) * left
        for kind, n in st.scalar_n.items():
            st.scalar_n[kind] = n + (n - snap.scalar_n.get(kind, 0)) * left

    def _matching(self, rep: Repeat, i: int, st: ScanState, snap, steady: tuple, dcache) -> int:
        """Add at once iterations i.. as long as each is the walked one (which took ``st`` from ``snap``
        to the ``steady`` relative state) shifted: its accesses hit and miss alike and its ScalarExp
        costs match, or differ only inside a scalar lead whose delay the steady state does not see
        (:meth:`_costs`); returns the first iteration that is not."""
        k, delay = i, 0
        while k < rep.n:
            d = self._costs(rep, k, dcache, steady)
            if d is None:
                break
            k, delay = k + 1, delay + d
        if k > i:
            st.extrapolate(snap, k - i, delay)
        return k

    def _steady(self, rep: Repeat, key: tuple, body: list, after: tuple) -> tuple:
        """What :meth:`_costs` compares each later iteration with: the walked iteration's declared
        costs ``key`` (:meth:`DeclaredCosts.walked`), the cycles of its scalar lead other than
        ScalarExp (:meth:`DeclaredCosts.scalar_lead`), the relative state ``after`` it left, and that
        state as seen from the end of its lead (None without a lead)."""
        lead = self.declared.scalar_lead(rep, body)
        seen = None if lead is None else delayed(after, lead + sum(key[0]))
        return key, lead, after, seen

    def _costs(self, rep: Repeat, i: int, dcache, steady: tuple) -> int | None:
        """How much later than the walked iteration iteration i ends, if it is that iteration shifted
        (None if not); if so the cache is touched for it (as its records would touch it), else left as
        it was. ``steady``: see :meth:`_steady`. ScalarExp costs may differ inside the body's scalar
        lead (module docstring, "Repeat")."""
        like, lead, rel, seen = steady
        exp = self.declared.exp_costs(rep, i)
        delay = 0
        if exp != like[0]:
            if lead is None or delayed(rel, lead + sum(exp)) != seen:
                return None
            delay = sum(exp) - sum(like[0])
        if rep.gm is None:
            return delay
        return delay if self.declared.goes_as(rep.gm, i, dcache, like[1]) else None


class _Matched(Exception):
    """A busy scan met the idle scan's state inside a top-level Repeat: the walk ends there."""


def _vec_params(vp: dict, rec: VecOp) -> tuple:
    """A VecOp's (width, cycles per repeat, latency) from the profile's table."""
    try:
        return vp[rec.dtype][rec.op]
    except KeyError:
        raise KernelDiagnostic(f"VecOp {rec.op!r} / {rec.dtype!r} has no cost") from None


def time_compute_run(run: list, profile: Profile, dcache) -> RunTiming:
    """One-off :meth:`ComputeRunTimer.time` (a compiler keeps one timer for all its runs)."""
    return ComputeRunTimer(profile).time(run, dcache)
