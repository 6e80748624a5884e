"""The V, MTE2 and MTE3 pipes of one core: loops draining in-order queues on their own clocks.

Each pipe is a loop (see :mod:`cgdr_des.hw.core`) that takes entries
(:class:`~cgdr_des.hw.records.Entry`) from its :class:`~cgdr_des.hw.queues.IssueQueue` in order, gives
each a start and an end in cycles by the rules of :mod:`cgdr_des.hw.rules`, and stops only when it
cannot go on: the queue is empty, the head is a WaitFlag whose flag has no set recorded yet, or (MTE)
a DMA's data has not finished moving. It then leaves its :class:`Pump` where a SimPy process would
leave an event -- in the queue's ``get_queue``, as the flag's ``waiter``, as the GM bus's callback of
the transfer -- and whoever would trigger that event (the scalar unit's hand-over, a pipe's SetFlag,
the bus at env time == the DMA's completion) runs the loop on in its own call. The Cube-era MTE1 and M
pipes (:func:`fixed_pipe`) are SimPy processes that wait on those events. An entry starts at its
:func:`~cgdr_des.hw.rules.arrival`; then

- ``VEC``: :func:`~cgdr_des.hw.rules.vec_op` (pipelined: free again when the issue ends);
- ``BAR`` (PipeBarrier<X>): :func:`~cgdr_des.hw.rules.barrier` (held until every earlier
  instruction completed);
- ``SET``: :func:`~cgdr_des.hw.rules.flag_set` (fires after everything before it completed;
  later instructions on the pipe do not wait for it);
- ``WAIT``: blocks until its set is recorded, then :func:`~cgdr_des.hw.rules.flag_wait`;
- ``MAC`` (V only): the V part of a ``Macro`` (``phase`` fidelity) holds V for its whole span;
- ``DMA`` (MTE only): holds the pipe from its start until its last byte has moved: the data phase
  starts after the first-byte cycles and is timed by the shared GM bus. DMAs on one pipe therefore
  never overlap (a DataCopy occupies its MTE until done).

An entry leaves the queue (freeing a slot for the scalar unit) when it starts; a WAIT or BAR when the
pipe passes it. That cycle goes into the queue's ring for the scalar unit's full-queue stall
(:meth:`~cgdr_des.hw.queues.IssueQueue.took`). A pipe with nothing queued and nothing in flight is
*drained*; a PipeBarrier<ALL> on the scalar unit waits for :meth:`PipeState.when_drained`.

Accounting: ``busy`` is the union of work intervals (:func:`~cgdr_des.hw.rules.cover`: a VEC's
[start, end), a DMA's [start, end), the ``flag_cycles`` of a SET or WAIT), ``stall`` the cycles spent
blocked on WaitFlags and barriers.
"""

from __future__ import annotations

from cgdr_des.hw.compute_state import late_cycle
from cgdr_des.hw.diagnostics import at
from cgdr_des.hw.flags import DOUBLE_SET, double_set_at_wait, record_set
from cgdr_des.hw.hazards import Timed
from cgdr_des.hw.queues import IssueQueue
from cgdr_des.hw.records import BAR, DMA, FIXED, MAC, SET, VEC, WAIT, Entry
from cgdr_des.hw.rules import arrival, barrier, fixed_op, flag_set, flag_wait, set_while_set, vec_op
from cgdr_des.hw.simpy_compat import trigger_put
from cgdr_des.isa import HARD_EVENTS


class PipeState:
    """What other processes may read of one pipe: its queue, clocks and totals (cycles). Written
    back by the pipe whenever it yields."""

    __slots__ = ("name", "q", "n_deq", "free", "done", "busy", "stall", "outstanding", "head", "first",
                 "drain_ev", "cov", "dma_start")

    def __init__(self, env, name: str, depth: int, t0: int) -> None:
        self.name = name
        self.q = IssueQueue(env, depth, t0)
        self.n_deq = 0                 # entries that have left the queue
        self.free = t0                 # cycle the pipe may start its next instruction
        self.done = t0                 # latest end of anything the pipe has executed
        self.busy = 0
        self.stall = 0
        self.outstanding = 0           # DMAs whose data phase has not completed (MTE)
        self.head: Entry | None = None  # the entry the pipe is blocked on, for diagnostics
        self.first = None              # start cycle of the pipe's first instruction (V only)
        self.drain_ev = None           # event a PipeBarrier<ALL> waits on until the pipe drains
        self.cov = t0                  # end of the union of V's work intervals so far (busy)
        self.dma_start = t0            # start cycle of the DMA in flight (MTE)

    @property
    def drained(self) -> bool:
        """Nothing queued and no DMA in flight."""
        return not self.q.items and not self.outstanding

    def when_drained(self, env):
        """The event PipeBarrier<ALL> waits on: triggered when the pipe next runs out of work."""
        if self.drain_ev is None:
            self.drain_ev = env.event()
        return self.drain_ev


#: the pipes of a coupled core's Cube side, started when a program first uses them (:func:`fixed_pipe`)
FIXED_PIPES = ("MTE1", "M")

SET_OP = {ev: "SetFlag:" + ev for ev in HARD_EVENTS}
WAIT_OP = {ev: "WaitFlag:" + ev for ev in HARD_EVENTS}


class Pump:
    """Where a V or MTE pipe waits, in place of a SimPy event: triggering it (``succeed``, as a flag's
    set or a hand-over triggers a waiting event) runs the pipe's loop at once, in the caller's call.

    Why this is exact: the pipes compute every cycle from their own clocks and the cycles stamped on
    what they consume, never from ``env.now`` (:mod:`.core`), so running a pipe the moment its input
    appears gives the cycles a scheduled resumption would; and a DMA is still submitted at an env time
    no later than its start (its start is at least the cycle of what released it, which is at least
    ``env.now``). A pump is registered only while its pipe is idle (queue empty, head WaitFlag
    without a set, or a DMA in flight), so it is never triggered while its loop runs.

    ``succeed`` is the loop itself (an attribute, not a method calling it: a pump runs ~14 000 times
    in long_t2048's op call, and the extra Python frame was one more call each)."""

    __slots__ = ("succeed", "callbacks")

    def __init__(self, run) -> None:
        #: run the pipe until it must wait again (called with no argument, as an event's succeed)
        self.succeed, self.callbacks = run, None


def _idle(P: PipeState, pump: Pump) -> None:
    """The pipe cannot go on: ``pump`` waits on its head WaitFlag's set or (queue empty: the pipe is
    drained, which releases a PipeBarrier<ALL>) on the next hand-over."""
    q = P.q.items
    if q:
        P.head = head = q[0]
        head.a.waiter = pump        # the flag of a WAIT entry
        return
    P.head = None
    if P.drain_ev is not None:
        ev, P.drain_ev = P.drain_ev, None
        ev.succeed()
    P.q.get_queue.append(pump)


def vector_pipe(core, P: PipeState) -> Pump:
    """The V pipe: its loop, run by its :class:`Pump` whenever an entry or a set it waits for arrives;
    one pass of the inner loop per V instruction, its clock and totals in locals (written back to
    ``P`` when it stops).

    Span bookkeeping is accumulated per span (``span``, ``span_end``, ``span_k``: ``nd`` when it
    began) and flushed when the span changes or the pipe stops: V sees spans in program order and
    its starts never decrease, so a span's first V start is its smallest. Branches are ordered by
    how often the kernel's V entries take them at ``instr`` fidelity (VEC, BAR, WAIT, SET; then MAC,
    most of them at ``phase`` fidelity, where V sees ~30 entries a chunk, and FIXED), and
    an ops row's label is made only when ops are kept (inline for VEC and MAC, :func:`_v_row` for the
    others)."""
    prof = core.profile
    depth, f, keep = prof.queue_depth, prof.flag_cycles, core.keep_ops
    rule = DOUBLE_SET[prof.flag_double_set]
    check = rule.check
    queue = P.q
    q, ring, put_queue = queue.items, queue.ring, queue.put_queue
    popleft = q.popleft
    P.cov = P.free
    cid, rows_extend = core.cid, core.rows.extend

    def run_v() -> None:
        free, done, cov, nd, busy, stall = P.free, P.done, P.cov, P.n_deq, P.busy, P.stall
        span_k = span_end = 0
        span = None
        while q:
            e = popleft()
            code, issued, rec, e_span, _, x, y = e
            if code == VEC:
                a, free, end, added, cov = vec_op(free, issued, rec.n, x, cov)
                busy += added
                deq = a
            elif code == BAR:
                a, end = barrier(free, issued, done)
                free = deq = end
                stall += end - a
            elif code == WAIT:
                sets = x.sets
                if not sets:
                    q.appendleft(e)
                    break
                a, c, free, added, cov = flag_wait(free, issued, sets.popleft(), f, cov)
                if sets and check and set_while_set(sets[0], c):     # _consume, inline from here
                    _double_set_at_wait(x, c, rule, core, e)
                x.last_consume = c
                if x.set_waiter is not None:
                    x.wake_setter()
                stall += c - a
                busy += added
                end = deq = free
            elif code == SET:
                a, free, end, added, cov = flag_set(free, issued, done, f, cov)
                msg = record_set(x, end, rule)      # _record_set, inline (may run an MTE pipe's pump)
                if msg is not None:
                    raise at(core.cid, e.idx, e.span, msg)
                busy += added
                deq = a
            elif code == MAC:   # a Macro's V part holds V for its span; busy/stall as timed alone
                a = deq = arrival(free, issued)
                end = free = a + y
                late = getattr(rec, "late", None)
                if late is not None:    # V's free/done when the run began move its end (TimedMacro)
                    free, end = macro_v_part(rec, issued, a, done, late)
                    if x is not None:       # the scalar unit waits to know when (TimedMacro.s_waits)
                        x.succeed((a, done))
                busy += getattr(rec, "v_busy", y)
                stall += getattr(rec, "v_stall", 0)
                cov = end if end > cov else cov
            else:               # FIXED: a Cube-era L0C drain or UB copy on V
                a, free, end, added, cov = fixed_op(free, issued, x[0], x[1], cov)
                busy += added
                deq = a
                _executed(core, e, "V", a, end)
            ring[nd % depth] = deq
            if put_queue:       # the scalar unit waits for this slot (IssueQueue.took, inline)
                trigger_put(queue, None)
            if keep:
                if code == VEC:
                    rows_extend((cid, "V", rec.op, e_span, a, end, rec.n, 0))
                elif code == MAC:       # phase fidelity's most frequent V row
                    rows_extend((cid, "V", "Macro:" + rec.name, e_span, a, end, 0, 0))
                else:
                    rows_extend(_v_row(cid, e, a, end))
            if end > done:
                done = end
            if e_span is not span:
                if not nd:
                    P.first = a  # off the hot path: the first entry always opens a span
                if span is not None:
                    span.add(span.start, span_end, nd - span_k)
                span, span_k, span_end = e_span, nd, 0
                if a < span.start:
                    span.start = a
            if end > span_end:
                span_end = end
            nd += 1
        P.free, P.done, P.cov, P.n_deq, P.busy, P.stall = free, done, cov, nd, busy, stall
        if span is not None:
            span.add(span.start, span_end, nd - span_k)
        _idle(P, pump)

    pump = Pump(run_v)
    return pump


def macro_v_part(rec, issued: int, a: int, done: int, late: tuple) -> tuple[int, int]:
    """V's free and end cycles after a TimedMacro's V part, issued at ``issued`` and met by V at
    ``a`` with its earlier work done at ``done`` (:func:`~cgdr_des.hw.compute_state.late_cycle`)."""
    shift = issued - rec.v_start
    return late_cycle(shift + rec.v_free, a, done, late[2]), late_cycle(shift + rec.v_end, a, done, late[1])


def _v_row(cid: int, e: Entry, start: int, end: int) -> tuple:
    """The compact ops row of a V entry that ran from ``start`` to ``end``, other than a VecOp or a
    Macro's V part (the loop writes those two itself; only when ops are kept:
    :class:`~cgdr_des.hw.machine.MachineRun` expands it when the ops are read)."""
    code = e.code
    if code == BAR:
        op, elements = "PipeBarrier:V", 0
    elif code == WAIT or code == SET:
        op, elements = (WAIT_OP if code == WAIT else SET_OP)[e.flag.event], e.flag.id
    else:
        op, elements = type(e.rec).__name__, 0
    return (cid, "V", op, e.span, start, end, elements, 0)


def _wait_for_work(core, P: PipeState):
    """The event a pipe that cannot go on waits for: the head WaitFlag's set, or (queue empty: the
    pipe is drained, which releases a PipeBarrier<ALL>) the next hand-over."""
    q = P.q.items
    if q:
        P.head = q[0]
        return P.head.flag.wait_set(core.env)
    P.head = None
    if P.drain_ev is not None:
        P.drain_ev.succeed()
        P.drain_ev = None
    return P.q.get()


def _consume(fl, a: int, rule, core, e: Entry, cov: int) -> tuple[int, int, int, int]:
    """A WaitFlag starting at cycle ``a`` consumes the flag's oldest set: ``(consume, free, busy
    added, covered)`` (:func:`~cgdr_des.hw.rules.flag_wait`); ``rule`` (the policy's
    :class:`~cgdr_des.hw.flags.DoubleSet`) says what a set that fired while this one was pending does."""
    sets = fl.sets
    _, c, free, added, cov = flag_wait(a, a, sets.popleft(), core.profile.flag_cycles, cov)
    if rule.check and sets and set_while_set(sets[0], c):
        _double_set_at_wait(fl, c, rule, core, e)
    fl.last_consume = c
    if fl.set_waiter is not None:
        fl.wake_setter()
    return c, free, added, cov


def _double_set_at_wait(fl, c: int, rule, core, e: Entry) -> None:
    """A WaitFlag consumed ``fl`` at ``c`` and its next set fired before: as ``rule`` decides
    (:func:`~cgdr_des.hw.flags.double_set_at_wait`), raised at this entry when reported."""
    msg = double_set_at_wait(fl, c, rule)
    if msg is not None:
        raise at(core.cid, e.idx, e.span, msg)


def _record_set(fl, fire: int, rule, core, e: Entry) -> None:
    """A SetFlag from a pipe fires at ``fire``: as ``rule`` decides (:func:`~cgdr_des.hw.flags.record_set`),
    raised at this entry when reported."""
    msg = record_set(fl, fire, rule)
    if msg is not None:
        raise at(core.cid, e.idx, e.span, msg)


def mte_pipe(core, P: PipeState) -> Pump:
    """An MTE2 or MTE3 pipe: DMAs, flags and barriers in order, run by its :class:`Pump`; a DMA holds
    the pipe until the GM bus reports its last byte (the bus calls :func:`dma_done`, at env time ==
    completion, and the loop goes on from there)."""
    prof = core.profile
    f, keep, cid, name = prof.flag_cycles, core.keep_ops, core.cid, P.name
    rule = DOUBLE_SET[prof.flag_double_set]
    queue = P.q
    q, popleft, rows_extend = queue.items, queue.items.popleft, core.rows.extend
    bar_op = "PipeBarrier:" + name
    submit = core.bus.submit
    depth, ring, put_queue = queue.capacity, queue.ring, queue.put_queue

    def run_mte() -> None:
        free, done, nd, busy, stall = P.free, P.done, P.n_deq, P.busy, P.stall
        while q:
            e = q[0]
            code, issued, rec, span, _, fl, _ = e
            if code == WAIT and not fl.sets:
                break
            popleft()
            a = arrival(free, issued)
            if code != WAIT:    # IssueQueue.took, inline (a WaitFlag frees its slot when passed, below)
                ring[nd % depth] = a
                if put_queue:
                    trigger_put(queue, None)
            nd += 1
            if code == DMA:
                if rec.nbytes > 0:      # the pipe waits for its last byte: dma_done goes on
                    P.free, P.done, P.n_deq, P.busy, P.stall = free, done, nd, busy, stall
                    P.outstanding, P.head, P.dma_start = 1, e, a
                    submit(a + e.first_byte, rec.nbytes, e.rate_cap, dma_done)
                    return
                end = free = a + 1
                op, elements, nbytes, work = DMA_OP[rec.direction], 0, rec.nbytes, 1
            elif code == BAR:
                end, op, elements, nbytes, work = a, bar_op, 0, 0, 0
            elif code == WAIT:
                c, end, _, _ = _consume(fl, a, rule, core, e, 0)
                stall += c - a
                op, elements, nbytes, work = WAIT_OP[fl.event], fl.id, 0, f
                free = end
                ring[(nd - 1) % depth] = end
                if put_queue:
                    trigger_put(queue, None)
            else:  # SET: everything earlier on an MTE pipe has completed (DMAs hold the pipe)
                _, free, end, _, _ = flag_set(a, a, done, f, 0)
                _record_set(fl, end, rule, core, e)
                op, elements, nbytes, work = SET_OP[fl.event], fl.id, 0, f
            busy += work
            if end > done:
                done = end
            if a < span.start:      # Span.add, inline
                span.start = a
            if end > span.end:
                span.end = end
            span.n += 1
            if keep:
                rows_extend((cid, name, op, span, a, end, elements, nbytes))
        P.free, P.done, P.n_deq, P.busy, P.stall = free, done, nd, busy, stall
        _idle(P, pump)

    def dma_done(tr) -> None:
        """The DMA at the head of the pipe moved its last byte at ``tr.done``: finish it, go on."""
        e, a, end = P.head, P.dma_start, tr.done
        P.outstanding, P.head = 0, None
        rec = e.rec
        P.free = end
        P.busy += end - a
        if end > P.done:
            P.done = end
        e.span.add(a, end)
        if keep:
            rows_extend((cid, name, DMA_OP[rec.direction], e.span, a, end, 0, rec.nbytes))
        run_mte()

    pump = Pump(run_mte)
    return pump


DMA_OP = {d: "DataCopy:" + d for d in ("GM2UB", "UB2GM", "GM2L1")}   # directions check_dma lets through


def fixed_pipe(core, P: PipeState):
    """The MTE1 or M process of a Cube-era program: fixed-cost records (LoadData, Mmad), flags and
    barriers in order, each by the same rules as on V (:func:`~cgdr_des.hw.rules.fixed_op`)."""
    f, keep, cid, name = core.profile.flag_cycles, core.keep_ops, core.cid, P.name
    rule = DOUBLE_SET[core.profile.flag_double_set]
    queue = P.q
    q, popleft, rows_extend = queue.items, queue.items.popleft, core.rows.extend
    cov = P.free            # busy is the union of [start, end) of pipelined records
    while True:
        while q:
            e = q[0]
            code, issued, rec, span, _, x, _ = e
            if code == WAIT and not x.sets:
                break
            popleft()
            a = arrival(P.free, issued)
            if code == FIXED:
                a, P.free, end, added, cov = fixed_op(P.free, issued, x[0], x[1], cov)
                op, elements, work = _executed(core, e, name, a, end), 0, added
            elif code == BAR:
                _, end = barrier(a, a, P.done)
                P.free = end
                op, elements, work = "PipeBarrier:" + name, 0, 0
                P.stall += end - a
            elif code == WAIT:
                c, end, work, cov = _consume(x, a, rule, core, e, cov)
                P.stall += c - a
                P.free, op, elements = end, WAIT_OP[x.event], x.id
            else:  # SET
                _, P.free, end, work, cov = flag_set(a, a, P.done, f, cov)
                _record_set(x, end, rule, core, e)
                op, elements = SET_OP[x.event], x.id
            queue.took(P.n_deq, end if code in (WAIT, BAR) else a)
            P.n_deq += 1
            P.busy += work
            if end > P.done:
                P.done = end
            span.add(a, end)
            if keep:
                rows_extend((cid, name, op, span, a, end, elements, getattr(rec, "nbytes", 0)))
        yield _wait_for_work(core, P)


def _executed(core, e: Entry, pipe: str, start: int, end: int) -> str:
    """A fixed-cost record ran from ``start`` to ``end``: log its buffer accesses; its ops label."""
    label = type(e.rec).__name__
    if e.access.reads or e.access.writes:
        core.buffers.executed(e.access, Timed(e.idx, label, pipe, start, end))
    return label
