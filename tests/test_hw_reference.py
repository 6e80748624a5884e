"""The machine against an independent reference: a cycle-driven simulator of one core's S and V.

The machine computes times lazily on per-automaton clocks; the reference below walks cycle by cycle
(skipping cycles where nothing can change) with the rules of docs/architecture.md §2 written out directly:

- S executes records in order; a V-bound record costs ``pre`` scalar cycles, then waits until the V
  queue holds fewer than ``depth`` entries (an entry leaves when V starts it, or passes a wait /
  barrier), then ``dispatch`` cycles; V sees it from that cycle on.
- V takes its head when the head is visible and V is free: a vector op occupies V for its issue
  cycles and completes ``latency`` later; a barrier holds V until all earlier ops completed; a
  SetFlag fires ``flag`` cycles after all earlier V work completed without holding V beyond its own
  ``flag`` cycles; a WaitFlag holds V until a set fired, then ``flag`` cycles.
- Flags: the k-th wait of a flag (event, id) consumes its k-th set. A set while the previous set of
  its flag is not yet consumed is what ``flag_double_set`` decides: ``counter`` lets it be, ``stall``
  holds the scalar unit at its SetFlag until the previous set is consumed, ``diagnostic`` makes the
  program illegal (the reference runs it as ``counter`` and checks every pair of consecutive sets
  of a flag afterwards: set k+1 firing before set k is consumed; the machine must then refuse it),
  ``lost`` is the one-bit flag: a set that fires while the bit is 1 (after the previous set fired and
  before the cycle its wait clears the bit) is lost, and a wait that can then never be satisfied
  leaves the program deadlocked -- the reference notices that nothing is left to happen, the machine
  must report the deadlock.

Random programs (hypothesis) mix scalar work, vector ops, barriers, S->V and V->S flag pairs and
PipeBarrier<ALL>; every row (pipe, op, start, end) must agree.
"""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hw_support import machine, vec_issue, vec_latency

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.hw import load_profile
from cgdr_des.isa import PipeBarrier, Scalar, SetFlag, Tag, VecOp, WaitFlag

SCALAR_COST = {"alu": "scalar_alu_cycles", "ub_load": "scalar_ub_load_cycles", "ub_store": "scalar_ub_store_cycles"}


class Reference:
    """Cycle-driven single-core S + V simulator (no DMA). ``run(program)`` -> sorted rows."""

    def __init__(self, p) -> None:
        self.p = p
        self.illegal = False     # a double set, under flag_double_set = "diagnostic"
        self.deadlocked = False  # nothing left to happen with work left (``lost`` sets)

    def run(self, program):
        p, recs = self.p, list(program)
        self.rows, self.flags, self.history, self.deadlocked = [], {}, {}, False
        self.vq, self.v_free, self.v_done = [], p.kernel_launch_cycles, p.kernel_launch_cycles
        self.v_head, self.v_arrival = 0, None
        pc, s_free, s_state, s_arrival = 0, p.kernel_launch_cycles, "start", None
        self.idle = None        # (pc, V head, rows) when a cycle last passed with nothing scheduled
        t, horizon = p.kernel_launch_cycles, 10**7
        while t < horizon:
            self._v_step(t)
            while pc < len(recs) and s_free <= t:           # S: as many records as fit in this cycle
                rec = recs[pc]
                done, s_free, s_state, s_arrival = self._s_step(rec, t, s_free, s_state, s_arrival)
                if not done:
                    break
                pc, s_state, s_arrival = pc + 1, "start", None
            if pc == len(recs) and self.v_head == len(self.vq):
                self.illegal = p.flag_double_set == "diagnostic" and self._double_set()
                return sorted(self.rows)
            t = self._next_time(t, s_free, (pc, self.v_head, len(self.rows)))
            if t is None:
                self.deadlocked = True
                return sorted(self.rows)
        raise AssertionError("reference did not finish")

    # ------------------------------------------------------------- scalar unit

    def _s_step(self, rec, t, s_free, state, arrival):
        p = self.p
        if isinstance(rec, Tag):
            return True, t, state, arrival
        if isinstance(rec, Scalar):
            cost = getattr(p, SCALAR_COST[rec.kind]) * rec.count
            self.rows.append(("S", rec.kind, t, t + cost))
            return True, t + cost, state, arrival
        if isinstance(rec, SetFlag) and rec.event == "S_V":
            arrival = t if arrival is None else arrival
            if p.flag_double_set == "stall" and self.flags.get((rec.event, rec.id)):
                return False, t, state, arrival      # the previous set is not consumed yet
            self._fire(rec, t + p.flag_cycles)
            self.rows.append(("S", "SetFlag:S_V", arrival, t + p.flag_cycles))
            return True, t + p.flag_cycles, state, arrival
        if isinstance(rec, WaitFlag) and rec.event == "V_S":
            arrival = t if arrival is None else arrival
            if not self._consume(rec, t):
                return False, t, state, arrival
            self.rows.append(("S", "WaitFlag:V_S", arrival, t + p.flag_cycles))
            return True, t + p.flag_cycles, state, arrival
        if isinstance(rec, PipeBarrier) and rec.pipe == "ALL":
            arrival = t if arrival is None else arrival
            if self.v_head < len(self.vq) or self.v_done > t:
                return False, t, state, arrival
            self.rows.append(("S", "PipeBarrier:ALL", arrival, t))
            return True, t, state, arrival
        pre = p.vec_api_scalar_cycles if isinstance(rec, VecOp) else 0
        if state == "start" and pre:
            return False, t + pre, "room", arrival
        gone = sum(1 for e in self.vq if e["deq"] is not None and e["deq"] <= t)
        if len(self.vq) - gone >= p.queue_depth:
            return False, t, "room", arrival
        self.vq.append({"rec": rec, "visible": t + p.scalar_dispatch_cycles, "deq": None})
        return True, t + p.scalar_dispatch_cycles, state, arrival

    # ------------------------------------------------------------- vector pipe

    def _v_step(self, t):
        p, f = self.p, self.p.flag_cycles
        while self.v_head < len(self.vq):
            e = self.vq[self.v_head]
            if e["visible"] > t or self.v_free > t:
                return
            rec = e["rec"]
            self.v_arrival = t if self.v_arrival is None else self.v_arrival
            a = self.v_arrival
            if isinstance(rec, VecOp):
                iss = vec_issue(p, rec.op, rec.dtype, rec.n)
                end = t + iss + vec_latency(p, rec.op, rec.dtype)
                self.rows.append(("V", rec.op, t, end))
                self.v_free, e["deq"] = t + iss, t
            elif isinstance(rec, PipeBarrier):
                if self.v_done > t:
                    return
                end = t
                self.rows.append(("V", "PipeBarrier:V", a, t))
                self.v_free, e["deq"] = t, t
            elif isinstance(rec, SetFlag):                   # V_S
                end = max(t, self.v_done) + f
                self._fire(rec, end)
                self.rows.append(("V", "SetFlag:V_S", t, end))
                self.v_free, e["deq"] = t + f, t
            else:                                            # WaitFlag S_V
                if not self._consume(rec, t):
                    return
                end = t + f
                self.rows.append(("V", "WaitFlag:S_V", a, end))
                self.v_free, e["deq"] = end, end
            self.v_done = max(self.v_done, end)
            self.v_head, self.v_arrival = self.v_head + 1, None

    # ------------------------------------------------------------- flags

    def _fire(self, rec, cycle: int) -> None:
        """A set of the record's flag fires at ``cycle``."""
        key = (rec.event, rec.id)
        self.flags.setdefault(key, deque()).append(cycle)
        self.history.setdefault(key, []).append([cycle, None])

    def _consume(self, rec, t: int) -> bool:
        """A wait at cycle ``t`` consumes the oldest set of its flag if that has fired by then."""
        key = (rec.event, rec.id)
        fires = self.flags.get(key)
        if not fires or fires[0] > t:
            return False
        fires.popleft()
        next(pair for pair in self.history[key] if pair[1] is None)[1] = t
        while self.p.flag_double_set == "lost" and fires and fires[0] < t:
            fires.popleft()             # fired while the bit was still 1: lost
            self.history[key].remove(next(pair for pair in self.history[key] if pair[1] is None))
        return True

    def _double_set(self) -> bool:
        """Whether some set fired before the previous set of its flag was consumed."""
        return any(later_fire < consume for sets in self.history.values()
                   for (_, consume), (later_fire, _) in zip(sets, sets[1:], strict=False))

    def _next_time(self, t, s_free, progress):
        cands = [s_free, self.v_free, self.v_done]
        cands += [e["visible"] for e in self.vq[self.v_head:self.v_head + 1]]
        cands += [e["deq"] for e in self.vq if e["deq"] is not None]
        cands += [x for fires in self.flags.values() for x in fires]
        later = [c for c in cands if c > t]
        if later:
            return min(later)
        return None if self._stuck(progress) else t + 1

    def _stuck(self, progress) -> bool:
        """Nothing is scheduled later and a whole cycle passed in which neither S nor V moved
        (``progress``: S's record, V's head, rows written): every party waits on something no
        pending set or free slot can bring. (A pending set of another flag does not help: a
        ``lost`` set can leave V stuck on one flag with sets of other flags still pending.)"""
        stuck, self.idle = progress == self.idle, progress
        return stuck


# ----------------------------------------------------------------- random programs

OPS = [("Mul", "fp32"), ("Add", "fp16"), ("Exp", "fp32"), ("WholeReduceSum", "fp32"), ("Axpy", "fp32"),
       ("Duplicate", "fp16"), ("Cast", "fp32")]

work = st.one_of(
    st.builds(lambda k, c: [Scalar(k, c)], st.sampled_from(sorted(SCALAR_COST)), st.integers(0, 4)),
    st.builds(lambda o, n: [VecOp(o[0], o[1], n)], st.sampled_from(OPS), st.integers(1, 2000)),
    st.just([PipeBarrier("V")]),
)
between = st.lists(work, max_size=4).map(lambda bs: [r for b in bs for r in b])
block = st.one_of(
    work,
    st.just([PipeBarrier("ALL")]),
    st.builds(lambda i, mid: [SetFlag("S_V", i), *mid, WaitFlag("S_V", i)], st.integers(0, 2), between),
    st.builds(lambda i, mid: [SetFlag("V_S", i), *mid, WaitFlag("V_S", i)], st.integers(0, 2), between),
    st.just([Tag("x")]),
)
programs = st.lists(block, min_size=1, max_size=40).map(lambda bs: [r for b in bs for r in b])
knobs = st.fixed_dictionaries({
    "queue_depth": st.integers(1, 6), "flag_cycles": st.integers(1, 3), "vec_api_scalar_cycles": st.integers(0, 5),
    "scalar_dispatch_cycles": st.integers(1, 2),
    "flag_double_set": st.sampled_from(["counter", "stall", "diagnostic", "lost"]),
})


def _machine_rows(program, overrides):
    r = machine(**overrides).run([program])
    return sorted((row[1], row[2], row[8], row[9]) for row in r.ops), r


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, knobs)
def test_machine_matches_the_cycle_driven_reference(program, overrides):
    reference = Reference(load_profile("atlas-300i-duo", overrides))
    ref = reference.run(program)
    if reference.illegal:
        with pytest.raises(KernelDiagnostic, match="while the flag is still set"):
            machine(**overrides).run([program])
        return
    if reference.deadlocked:
        with pytest.raises(KernelDiagnostic, match="deadlock"):
            machine(**overrides).run([program])
        return
    got, r = _machine_rows(program, overrides)
    assert got == ref
    assert r.makespan == max([load_profile("atlas-300i-duo").kernel_launch_cycles] + [row[3] for row in ref])


def test_reference_agrees_on_a_hand_checked_case():
    prog = [VecOp("Mul", "fp32", 128), SetFlag("V_S", 0), WaitFlag("V_S", 0), Scalar("alu")]
    ref = Reference(load_profile("atlas-300i-duo")).run(prog)
    # Mul handed over at 300 + 4 + 1, issue 2, latency 22 -> 329; the flag fires 1 later (330); S,
    # waiting since 306, consumes it at 330 and the wait takes 1 more cycle
    assert ref == [("S", "WaitFlag:V_S", 306, 331), ("S", "alu", 331, 333), ("V", "Mul", 305, 329),
                   ("V", "SetFlag:V_S", 307, 330)]
    assert _machine_rows(prog, {})[0] == ref


@pytest.mark.parametrize("policy", ["counter", "stall", "diagnostic"])
def test_each_policy_on_a_set_before_the_previous_one_is_consumed(policy):
    """S sets S_V(0) twice while V is still busy with a long op ahead of the first wait."""
    prog = [VecOp("Exp", "fp32", 4096), SetFlag("S_V", 0), WaitFlag("S_V", 0), SetFlag("S_V", 0),
            WaitFlag("S_V", 0)]
    reference = Reference(load_profile("atlas-300i-duo", {"flag_double_set": policy}))
    ref = reference.run(prog)
    assert reference.illegal == (policy == "diagnostic")
    if reference.illegal:
        with pytest.raises(KernelDiagnostic):
            machine(flag_double_set=policy).run([prog])
        return
    assert _machine_rows(prog, {"flag_double_set": policy})[0] == ref
    second_set = [row for row in ref if row[1] == "SetFlag:S_V"][1]
    first_wait = [row for row in ref if row[1] == "WaitFlag:S_V"][0]
    if policy == "stall":       # the second set fires only after the first was consumed
        assert second_set[3] >= first_wait[3] - load_profile("atlas-300i-duo").flag_cycles
    else:
        assert second_set[3] < first_wait[3]


def test_lost_policy_deadlocks_where_the_kernel_re_sets_a_flag_still_set():
    """The one-bit flag: the second S_V set fires while V is still busy ahead of the first wait, so it
    is lost and the second wait never returns -- the reference finds nothing left to happen and the
    machine reports the deadlock, naming the lost set."""
    prog = [VecOp("Exp", "fp32", 4096), SetFlag("S_V", 0), WaitFlag("S_V", 0), SetFlag("S_V", 0),
            WaitFlag("S_V", 0)]
    reference = Reference(load_profile("atlas-300i-duo", {"flag_double_set": "lost"}))
    reference.run(prog)
    assert reference.deadlocked
    with pytest.raises(KernelDiagnostic, match=r"WaitFlag<S_V>\(0\) for a SetFlag that never comes \(1 set"):
        machine(flag_double_set="lost").run([prog])
    # the same program with the sets spaced out (the wait consumes before the re-set) finishes
    spaced = [SetFlag("S_V", 0), WaitFlag("S_V", 0), VecOp("Exp", "fp32", 4096), PipeBarrier("ALL"),
              SetFlag("S_V", 0), WaitFlag("S_V", 0)]
    reference.run(spaced)
    assert not reference.deadlocked
    assert _machine_rows(spaced, {"flag_double_set": "lost"})[0] == reference.run(spaced)
