"""The V, MTE2 and MTE3 pipes of one core: in-order queues drained on the pipe's own clock.

Each pipe is a generator (an *automaton*, see :mod:`cgdr_des.hw.core`) that takes entries
(:class:`~cgdr_des.hw.records.Entry`) from its queue in order, gives each a start and an end in
cycles by the rules of :mod:`cgdr_des.hw.rules`, and yields only when it cannot go on: the queue is
empty, the head is a WaitFlag whose flag has no set recorded yet, or (MTE) a DMA's data has not
finished moving. An entry starts at its :func:`~cgdr_des.hw.rules.arrival`; then

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
pipe passes it. That cycle goes into ``ring[k % depth]`` for the scalar unit's full-queue stall.

Accounting: ``busy`` is the union of work intervals (:func:`~cgdr_des.hw.rules.cover`: a VEC's
[start, end), a DMA's [start, end), the ``flag_cycles`` of a SET or WAIT), ``stall`` the cycles spent
blocked on WaitFlags and barriers.
"""

from __future__ import annotations

from collections import deque

from cgdr_des.hw.diagnostics import at
from cgdr_des.hw.flags import double_set_message
from cgdr_des.hw.records import BAR, DMA, MAC, VEC, WAIT, Entry
from cgdr_des.hw.rules import arrival, barrier, flag_set, flag_wait, set_while_set, vec_op
from cgdr_des.isa import HARD_EVENTS


class PipeState:
    """What other automata may read of one pipe. Written back by the pipe whenever it yields."""

    __slots__ = ("name", "q", "ring", "n_push", "n_deq", "free", "done", "busy", "stall", "idle",
                 "s_waiting", "drain_waiting", "outstanding", "head", "gen", "on_done", "first")

    def __init__(self, name: str, depth: int, t0: int) -> None:
        self.name = name
        self.q: deque[Entry] = deque()
        self.ring = [t0] * depth       # dequeue cycle of entry k at ring[k % depth]
        self.n_push = 0                # entries handed over by the scalar unit
        self.n_deq = 0                 # entries that have left the queue
        self.free = t0                 # cycle the pipe may start its next instruction
        self.done = t0                 # latest end of anything the pipe has executed
        self.busy = 0
        self.stall = 0
        self.idle = True               # queue empty and waiting for the scalar unit
        self.s_waiting = False         # the scalar unit waits for a free slot
        self.drain_waiting = False     # the scalar unit waits in PipeBarrier<ALL>
        self.outstanding = 0           # DMAs whose data phase has not completed (MTE)
        self.head: Entry | None = None  # the entry the pipe is blocked on, for diagnostics
        self.gen = None                # the pipe's automaton (generator)
        self.on_done = None            # GM bus callback for this pipe's transfers (MTE)
        self.first = None              # start cycle of the pipe's first instruction (V only)

    @property
    def drained(self) -> bool:
        return not self.q and not self.outstanding


SET_OP = {ev: "SetFlag:" + ev for ev in HARD_EVENTS}
WAIT_OP = {ev: "WaitFlag:" + ev for ev in HARD_EVENTS}


def vector_pipe(core, P: PipeState):
    """The V pipe automaton: one pass of the inner loop per V instruction of the whole program, so
    its clock and totals live in locals (written back to ``P`` when it yields).

    Span bookkeeping is accumulated per span (``span``, ``span_end``, ``span_k``: ``nd`` when it
    began) and flushed when the span changes or the pipe yields: V sees spans in program order and
    its starts never decrease, so a span's first V start is its smallest."""
    prof = core.profile
    depth, f, keep, cid = prof.queue_depth, prof.flag_cycles, core.keep_ops, core.cid
    diag_double = prof.flag_double_set == "diagnostic"
    q, ring, popleft, rows_append = P.q, P.ring, P.q.popleft, core.rows.append
    free = done = cov = P.free
    nd = busy = stall = span_k = span_end = 0
    span = None
    while True:
        while q:
            e = popleft()
            code, issued, rec, e_span, _, x, y = e
            if code == VEC:
                a, free, end, added, cov = vec_op(free, issued, rec.n, x, cov)
                busy += added
                deq, op, elements = a, rec.op, rec.n
            elif code == WAIT and not x.sets:
                q.appendleft(e)
                break
            else:
                a = arrival(free, issued)
                if code == MAC:   # a Macro's V part holds V for its span; busy/stall as timed alone
                    end = free = a + y
                    busy += getattr(rec, "v_busy", y)
                    stall += getattr(rec, "v_stall", 0)
                    cov = end if end > cov else cov
                    deq, op, elements = a, "Macro:" + rec.name, 0
                elif code == BAR:
                    end = free = deq = barrier(a, done)
                    stall += end - a
                    op, elements = "PipeBarrier:V", 0
                elif code == WAIT:
                    c, end, added, cov = _consume(x, a, diag_double, core, e, cov)
                    stall += c - a
                    busy += added
                    free = deq = end
                    op, elements = WAIT_OP[x.event], x.id
                else:  # SET
                    free, end, added, cov = flag_set(a, done, f, cov)
                    _record_set(x, end, diag_double, core, e)
                    busy += added
                    deq, op, elements = a, SET_OP[x.event], x.id
            ring[nd % depth] = deq
            if keep:
                rows_append(e_span.row(cid, "V", op, a, end, elements, 0))
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
        P.free, P.done, P.n_deq, P.busy, P.stall = free, done, nd, busy, stall
        if span is not None:
            span.add(span.start, span_end, nd - span_k)
            span = None
        _before_yield(core, P)
        yield


def _before_yield(core, P: PipeState) -> None:
    """A pipe is about to yield for want of work: register as the head flag's waiter, or go idle
    (waking a PipeBarrier<ALL>), and wake the scalar unit if it waits for a free slot."""
    q = P.q
    if q:
        P.head = q[0]
        P.head.a.waiter = P.gen
    else:
        P.idle, P.head = True, None
        if P.drain_waiting:
            P.drain_waiting = False
            core.ready.append(core.s_gen)
    if P.s_waiting:
        P.s_waiting = False
        core.ready.append(core.s_gen)


def _consume(fl, a: int, diag_double: bool, core, e: Entry, cov: int) -> tuple[int, int, int, int]:
    """A WaitFlag arriving at cycle ``a`` consumes the flag's oldest set: ``(consume, free, busy
    added, covered)`` (:func:`~cgdr_des.hw.rules.flag_wait`)."""
    sets = fl.sets
    c, free, added, cov = flag_wait(a, sets.popleft(), core.profile.flag_cycles, cov)
    if diag_double and sets and set_while_set(sets[0], c):
        raise at(core.cid, e.idx, e.span, double_set_message(fl, sets[0], c) + " (seen at this WaitFlag)")
    fl.last_consume = c
    if fl.set_waiter is not None:
        core.ready.append(fl.set_waiter)
        fl.set_waiter = None
    return c, free, added, cov


def _record_set(fl, fire: int, diag_double: bool, core, e: Entry) -> None:
    """A SetFlag from a pipe fires at ``fire``: record it and wake the flag's waiter."""
    if diag_double and not fl.sets and set_while_set(fire, fl.last_consume):
        raise at(core.cid, e.idx, e.span, double_set_message(fl, fire, fl.last_consume))
    fl.sets.append(fire)
    if fl.waiter is not None:
        core.ready.append(fl.waiter)
        fl.waiter = None


def mte_pipe(core, P: PipeState):
    """An MTE2 or MTE3 automaton: DMAs, flags and barriers in order; a DMA waits on the GM bus."""
    prof = core.profile
    depth, f, keep, cid, name = prof.queue_depth, prof.flag_cycles, core.keep_ops, core.cid, P.name
    diag_double = prof.flag_double_set == "diagnostic"
    q, ring, popleft, rows_append = P.q, P.ring, P.q.popleft, core.rows.append
    bar_op = "PipeBarrier:" + name
    while True:
        while q:
            e = q[0]
            code, issued, rec, span, _, fl, _ = e
            if code == WAIT and not fl.sets:
                break
            popleft()
            a = arrival(P.free, issued)
            ring[P.n_deq % depth] = a
            P.n_deq += 1
            if code == DMA:
                if rec.nbytes > 0:
                    tr = _submit(core, P, e, a)
                    while tr.done is None:
                        yield
                    P.outstanding, P.head = 0, None
                    end = tr.done
                else:
                    end = a + 1
                op, elements, nbytes, work = DMA_OP[rec.direction], 0, rec.nbytes, end - a
                P.free = end
            elif code == BAR:
                end, op, elements, nbytes, work = a, bar_op, 0, 0, 0
            elif code == WAIT:
                c, end, _, _ = _consume(fl, a, diag_double, core, e, 0)
                P.stall += c - a
                op, elements, nbytes, work = WAIT_OP[fl.event], fl.id, 0, f
                P.free = ring[(P.n_deq - 1) % depth] = end
            else:  # SET: everything earlier on an MTE pipe has completed (DMAs hold the pipe)
                P.free, end, _, _ = flag_set(a, P.done, f, 0)
                _record_set(fl, end, diag_double, core, e)
                op, elements, nbytes, work = SET_OP[fl.event], fl.id, 0, f
            P.busy += work
            if end > P.done:
                P.done = end
            span.add(a, end)
            if keep:
                rows_append(span.row(cid, name, op, a, end, elements, nbytes))
        _before_yield(core, P)
        yield


DMA_OP = {d: "DataCopy:" + d for d in ("GM2UB", "UB2GM")}   # directions check_dma lets through


def _submit(core, P: PipeState, e: Entry, a: int):
    """Hand a DMA starting at cycle ``a`` to the GM bus; the pipe is held until the transfer is done."""
    tr = core.bus.submit(a + e.a, e.rec.nbytes, e.b, P.on_done)
    P.outstanding, P.head = 1, e
    if P.s_waiting:                      # the DMA left the queue: a slot is free
        P.s_waiting = False
        core.ready.append(core.s_gen)
    return tr
