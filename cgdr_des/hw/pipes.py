"""The V, MTE2 and MTE3 pipes of one core: in-order queues drained on the pipe's own clock.

Each pipe is a generator (an *automaton*, see :mod:`cgdr_des.hw.core`) that takes entries from its
queue in order, gives each a start and an end in cycles, and yields only when it cannot go on: the
queue is empty, the head is a WaitFlag whose flag has no set recorded yet, or (MTE) a DMA's data has
not finished moving. Queue entries are tuples ``(code, issue, rec, seg, idx, a, b)``: ``issue`` is
the cycle the scalar unit handed the entry over, ``seg`` the Tag span it belongs to, ``idx`` its record
index; ``a``/``b`` depend on ``code``.

Timing rules (``arrival = max(pipe free, issue)``):

- ``VEC`` (a = issue cycles, b = latency): starts at arrival; the pipe is free again when the issue
  ends (pipelined), the result is complete ``latency`` cycles later.
- ``BAR`` (PipeBarrier<X>): the pipe is held until every earlier instruction completed.
- ``SET`` (a = Flag): fires ``flag_cycles`` after everything before it completed; later instructions
  on the pipe do not wait for it (hardware.md row 21).
- ``WAIT`` (a = Flag): blocks the pipe until its set is recorded, then consumes it at
  ``max(arrival, set cycle)``; the pipe goes on ``flag_cycles`` later.
- ``MAC`` (a = v_start, b = v_end - v_start; V only): the V part of a ``Macro`` (``phase``
  fidelity); handed over at the scalar unit's cycle + v_start, it holds V for its whole span.
- ``DMA`` (a = first-byte cycles, b = rate cap; MTE only): holds the pipe from its start until its
  last byte has moved: the data phase starts ``a`` cycles after the start and is timed by the shared
  GM bus. DMAs on one pipe therefore never overlap (a DataCopy occupies its MTE until done).

An entry leaves the queue (freeing a slot for the scalar unit) when it starts; a WAIT or BAR when the
pipe passes it. That cycle goes into ``ring[k % depth]`` for the scalar unit's full-queue stall.

Accounting: ``busy`` is the union of work intervals (a VEC's [start, end), a DMA's [start, end), the
``flag_cycles`` of a SET or WAIT), ``stall`` the cycles spent blocked on WaitFlags and barriers.
"""

from __future__ import annotations

from collections import deque

from cgdr_des.hw.diagnostics import at
from cgdr_des.hw.flags import double_set_message
from cgdr_des.isa import HARD_EVENTS

VEC, WAIT, SET, BAR, DMA, MAC = range(6)


class PipeState:
    """What other automata may read of one pipe. Written back by the pipe whenever it yields."""

    __slots__ = ("name", "q", "ring", "n_push", "n_deq", "free", "done", "busy", "stall", "idle",
                 "s_waiting", "drain_waiting", "outstanding", "head", "gen", "on_done", "first")

    def __init__(self, name: str, depth: int, t0: int) -> None:
        self.name = name
        self.q: deque = deque()
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
        self.head = None               # the entry the pipe is blocked on, for diagnostics
        self.gen = None                # the pipe's automaton (generator)
        self.on_done = None            # GM bus callback for this pipe's transfers (MTE)
        self.first = None              # start cycle of the pipe's first instruction (V only)

    @property
    def drained(self) -> bool:
        return not self.q and not self.outstanding


SET_OP = {ev: "SetFlag:" + ev for ev in HARD_EVENTS}
WAIT_OP = {ev: "WaitFlag:" + ev for ev in HARD_EVENTS}


def vector_pipe(core, P: PipeState):
    """The V pipe automaton.

    This loop runs once per V instruction of the whole program, so its state lives in locals
    (written back to ``P`` only when it yields) and rows are built inline. Span bookkeeping is
    accumulated per segment in locals (``cs``: current span, ``cs_end``, ``cs_k``: ``nd`` when it
    began) and flushed when the segment changes or the pipe yields: V sees segments in program
    order and its starts never decrease, so a segment's first V start is its smallest.
    """
    prof = core.profile
    depth, f, keep, cid = prof.queue_depth, prof.flag_cycles, core.keep_ops, core.cid
    diag_double = prof.flag_double_set == "diagnostic"
    q, ring, popleft = P.q, P.ring, P.q.popleft
    rows_append, ready_append, me = core.rows.append, core.ready.append, P.gen
    free = done = cov = P.free
    nd = busy = stall = cs_k = cs_end = 0
    cs = None
    while True:
        while q:
            e = popleft()
            code, ti, seg = e[0], e[1], e[3]
            if code == WAIT and not e[5].sets:
                q.appendleft(e)
                break
            a = free if free > ti else ti
            if seg is not cs:
                if not nd:
                    P.first = a  # off the hot path: the first entry always opens a segment
                if cs is not None:
                    _flush_span(cs, cs_end, nd - cs_k)
                cs, cs_k, cs_end = seg, nd, 0
                if a < seg[5]:
                    seg[5] = a
            if code == VEC:
                iss = e[5]
                end = a + iss + e[6]
                free = a + iss
                if a >= cov:
                    busy += end - a
                    cov = end
                elif end > cov:
                    busy += end - cov
                    cov = end
                ring[nd % depth] = a
                if keep:
                    rec = e[2]
                    rows_append((cid, "V", rec.op, seg[0], seg[1], seg[2], seg[3], seg[4], a, end, rec.n, 0))
            elif code == BAR:
                end = free = done if done > a else a
                stall += end - a
                ring[nd % depth] = end
                if keep:
                    rows_append((cid, "V", "PipeBarrier:V", seg[0], seg[1], seg[2], seg[3], seg[4], a, end, 0, 0))
            elif code == WAIT:
                fl = e[5]
                sets = fl.sets
                c = sets.popleft()
                if a > c:
                    c = a
                if sets and diag_double:
                    _check_consumed(fl, c, core, e)
                fl.last_consume = c
                if fl.set_waiter is not None:
                    ready_append(fl.set_waiter)
                    fl.set_waiter = None
                stall += c - a
                end = free = c + f
                if end > cov:
                    busy += end - (c if c > cov else cov)
                    cov = end
                ring[nd % depth] = end
                if keep:
                    rows_append((cid, "V", WAIT_OP[fl.event], seg[0], seg[1], seg[2], seg[3], seg[4], a, end,
                                 fl.id, 0))
            elif code == MAC:   # a Macro's V part holds V for its span; busy/stall as timed alone
                end = free = a + e[6]
                mac = e[2]
                busy += getattr(mac, "v_busy", e[6])
                stall += getattr(mac, "v_stall", 0)
                if end > cov:
                    cov = end
                ring[nd % depth] = a
                if keep:
                    rows_append((cid, "V", "Macro:" + e[2].name, seg[0], seg[1], seg[2], seg[3], seg[4], a, end,
                                 0, 0))
            else:  # SET
                fl = e[5]
                end = (done if done > a else a) + f
                if diag_double and not fl.sets and end < fl.last_consume:
                    _record_set(fl, end, diag_double, core, e)      # raises the diagnostic
                fl.sets.append(end)
                if fl.waiter is not None:
                    ready_append(fl.waiter)
                    fl.waiter = None
                free = a + f
                if end > cov:
                    busy += end - (end - f if end - f > cov else cov)
                    cov = end
                ring[nd % depth] = a
                if keep:
                    rows_append((cid, "V", SET_OP[fl.event], seg[0], seg[1], seg[2], seg[3], seg[4], a, end,
                                 fl.id, 0))
            if end > done:
                done = end
            if end > cs_end:
                cs_end = end
            nd += 1
        # nothing to do: publish the state, register as a waiter, wait
        P.free, P.done, P.n_deq, P.busy, P.stall = free, done, nd, busy, stall
        if cs is not None:
            _flush_span(cs, cs_end, nd - cs_k)
            cs = None
        if q:
            P.head = q[0]
            q[0][5].waiter = me
        else:
            P.idle, P.head = True, None
            if P.drain_waiting:
                P.drain_waiting = False
                ready_append(core.s_gen)
        if P.s_waiting:
            P.s_waiting = False
            ready_append(core.s_gen)
        yield


def _flush_span(seg, end: int, n: int) -> None:
    if end > seg[6]:
        seg[6] = end
    seg[7] += n


def _before_yield(core, P: PipeState) -> None:
    """A pipe is about to yield for want of work: register as the head flag's waiter, or go idle
    (waking a PipeBarrier<ALL>), and wake the scalar unit if it waits for a free slot."""
    q = P.q
    if q:
        P.head = q[0]
        q[0][5].waiter = P.gen
    else:
        P.idle, P.head = True, None
        if P.drain_waiting:
            P.drain_waiting = False
            core.ready.append(core.s_gen)
    if P.s_waiting:
        P.s_waiting = False
        core.ready.append(core.s_gen)


def _check_consumed(fl, c: int, core, e) -> None:
    """The next set of ``fl`` must not fire before cycle ``c``, when the previous one is consumed."""
    if fl.sets[0] < c:
        raise at(core.cid, e[4], e[3], double_set_message(fl, fl.sets[0], c) + " (seen at this WaitFlag)")


def _consume(fl, a: int, diag_double: bool, core, e) -> int:
    """A WaitFlag arriving at cycle ``a`` consumes the flag's oldest set; returns the cycle it does."""
    sets = fl.sets
    st = sets.popleft()
    c = a if a > st else st
    if diag_double and sets:
        _check_consumed(fl, c, core, e)
    fl.last_consume = c
    if fl.set_waiter is not None:
        core.ready.append(fl.set_waiter)
        fl.set_waiter = None
    return c


def _record_set(fl, fire: int, diag_double: bool, core, e) -> None:
    """A SetFlag from a pipe fires at ``fire``: record it and wake the flag's waiter."""
    if diag_double and not fl.sets and fire < fl.last_consume:
        raise at(core.cid, e[4], e[3], double_set_message(fl, fire, fl.last_consume))
    fl.sets.append(fire)
    if fl.waiter is not None:
        core.ready.append(fl.waiter)
        fl.waiter = None


def mte_pipe(core, P: PipeState):
    """An MTE2 or MTE3 automaton.

    It runs once per DMA and flag of the program, so its counters live in locals, written back to
    ``P`` whenever it yields (the scalar unit reads ``n_deq`` and ``ring`` for free slots and ``done``
    at PipeBarrier<ALL>; while a DMA's data moves, another automaton runs).
    """
    prof = core.profile
    depth, f, keep, cid, name = prof.queue_depth, prof.flag_cycles, core.keep_ops, core.cid, P.name
    diag_double = prof.flag_double_set == "diagnostic"
    q, ring, popleft, rows_append = P.q, P.ring, P.q.popleft, core.rows.append
    bar_op = "PipeBarrier:" + name
    free, done, nd, busy, stall = P.free, P.done, P.n_deq, P.busy, P.stall
    while True:
        while q:
            e = q[0]
            code = e[0]
            if code == WAIT and not e[5].sets:
                break
            popleft()
            ti = e[1]
            a = free if free > ti else ti
            ring[nd % depth] = a
            nd += 1
            if code == DMA:
                rec = e[2]
                nbytes = rec.nbytes
                if nbytes > 0:
                    P.free, P.done, P.n_deq, P.busy, P.stall = free, done, nd, busy, stall
                    tr = _submit(core, P, e, a, nbytes)
                    while tr.done is None:
                        yield
                    P.outstanding, P.head = 0, None
                    end = tr.done
                else:
                    end = a + 1
                op, elements, work = DMA_OP[rec.direction], 0, end - a
                free = end
            elif code == BAR:
                end, op, elements, nbytes, work = a, bar_op, 0, 0, 0
            elif code == WAIT:
                fl = e[5]
                c = _consume(fl, a, diag_double, core, e)
                stall += c - a
                end, op, elements, nbytes, work = c + f, WAIT_OP[fl.event], fl.id, 0, f
                free = ring[(nd - 1) % depth] = end
            else:  # SET: everything earlier on an MTE pipe has completed (DMAs hold the pipe)
                fl = e[5]
                end = (a if a > done else done) + f
                _record_set(fl, end, diag_double, core, e)
                op, elements, nbytes, work = SET_OP[fl.event], fl.id, 0, f
                free = a + f
            busy += work
            if end > done:
                done = end
            seg = e[3]
            if a < seg[5]:
                seg[5] = a
            if end > seg[6]:
                seg[6] = end
            seg[7] += 1
            if keep:
                rows_append((cid, name, op, seg[0], seg[1], seg[2], seg[3], seg[4], a, end, elements, nbytes))
        P.free, P.done, P.n_deq, P.busy, P.stall = free, done, nd, busy, stall
        _before_yield(core, P)
        yield


DMA_OP = {d: "DataCopy:" + d for d in ("GM2UB", "UB2GM")}   # directions check_dma lets through


def _submit(core, P: PipeState, e, a: int, nbytes: int):
    """Hand a DMA starting at cycle ``a`` to the GM bus; the pipe is held until the transfer is done."""
    tr = core.bus.submit(a + e[5], nbytes, e[6], P.on_done)
    P.outstanding, P.head = 1, e
    if P.s_waiting:                      # the DMA left the queue: a slot is free
        P.s_waiting = False
        core.ready.append(core.s_gen)
    return tr
