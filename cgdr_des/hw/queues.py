"""A pipe's in-order issue queue: a SimPy resource of ``queue_depth`` slots.

The scalar unit *puts* instructions (:class:`~cgdr_des.hw.records.Entry`) into the queue of the pipe
that executes them; the pipe takes them from the front in order. Capacity is the profile's
``queue_depth``: an entry occupies a slot from its hand-over until it starts on the pipe (a WaitFlag or
PipeBarrier until the pipe passes it), so a scalar unit ``queue_depth`` instructions ahead of the pipe
stalls.

Time: both sides keep their own clocks in cycles, ahead of ``env.now`` (see :mod:`.core`), so the
queue records *when* each slot freed -- the ring of dequeue cycles -- and stamps every entry it accepts
with its hand-over cycle (:func:`~cgdr_des.hw.rules.hand_over`: the later of the scalar unit's cycle
and the slot's dequeue cycle, plus the dispatch cycles). Events are used only to wait:

- :meth:`IssueQueue.put` (a :class:`Handover` event) when the queue is full: accepted when the pipe
  takes the entry ``queue_depth`` places back, its value ``(issued, stall)``;
- :meth:`IssueQueue.get` (a :class:`Nonempty` event) when the pipe finds the queue empty: triggered
  by the next hand-over. It does not remove the entry: the pipe takes entries itself
  (:meth:`IssueQueue.took`), because an entry it cannot start yet (a WaitFlag whose set is not
  recorded) must keep its slot.

With room in the queue the scalar unit hands over without an event (:meth:`IssueQueue.hand`), and a
pipe with entries queued takes them without one: that is what keeps the machine at about one SimPy
event per blocking wait instead of one per instruction.
"""

from __future__ import annotations

from collections import deque

from simpy.core import BoundClass
from simpy.events import Event
from simpy.resources.base import BaseResource, Get, Put

from cgdr_des.hw.records import ENTRY_TYPES, Entry, new_entry
from cgdr_des.hw.rules import hand_over
from cgdr_des.hw.simpy_compat import trigger_put


class Handover(Put):
    """The scalar unit waits to hand ``fields`` (an Entry without its cycle) to a full queue; it is
    ready from cycle ``ready`` and spends ``dispatch`` cycles; a Macro's V part is issued
    ``offset`` cycles after the hand-over. Value once accepted: ``(issued, stall)``.

    Made only when the queue is full, so unlike SimPy's generic Put it does not try itself at
    once, and its acceptance (:meth:`IssueQueue.took`) has nothing further to trigger: the only
    callback is the waiting process's resumption (a wait costs one bare SimPy event)."""

    def __init__(self, queue: IssueQueue, fields: tuple, ready: int, dispatch: int, offset: int = 0) -> None:
        Event.__init__(self, queue.env)
        self.resource, self.proc = queue, None
        self.fields, self.ready, self.dispatch, self.offset = fields, ready, dispatch, offset
        queue.put_queue.append(self)


class Nonempty(Get):
    """The pipe waits for an entry in its empty queue (the entry stays queued). Made only when the
    queue is empty; triggered by the next hand-over (:meth:`IssueQueue.hand`)."""

    def __init__(self, queue: IssueQueue) -> None:
        Event.__init__(self, queue.env)
        self.resource, self.proc = queue, None
        queue.get_queue.append(self)


class IssueQueue(BaseResource):
    """The in-order queue of one pipe: ``items`` (a deque of Entries, oldest first), ``ring`` (the
    dequeue cycle of entry ``k`` at ``ring[k % depth]``) and ``n_push`` (entries handed over)."""

    put = BoundClass(Handover)
    get = BoundClass(Nonempty)

    def __init__(self, env, depth: int, t0: int) -> None:
        super().__init__(env, depth)
        self.env = env
        self.items: deque[Entry] = deque()
        self.ring = [t0] * depth
        self.n_push = 0

    def hand(self, fields: tuple, ready: int, dispatch: int, offset: int = 0) -> tuple[int, int]:
        """Accept an entry into a queue with room: ``(issued, stall)`` of the scalar unit."""
        n = self.n_push
        t, stall = hand_over(ready, self.ring[n % self.capacity], dispatch)
        code, rec, span, idx, a, b = fields
        self.items.append(new_entry(ENTRY_TYPES[code], (code, t + offset, rec, span, idx, a, b)))
        self.n_push = n + 1
        if self.get_queue:
            self.get_queue.pop().succeed()
        return t, stall

    def took(self, k: int, dequeue: int) -> None:
        """The pipe took its ``k``-th entry off the queue at cycle ``dequeue``: the slot is free, and
        a waiting hand-over is accepted into it."""
        self.ring[k % self.capacity] = dequeue
        if self.put_queue:
            trigger_put(self, None)

    def _do_put(self, event: Handover) -> bool:
        if len(self.items) < self.capacity:
            event.succeed(self.hand(event.fields, event.ready, event.dispatch, event.offset))
        return False        # one scalar unit: at most one waiting hand-over

    def _do_get(self, event: Nonempty) -> bool:
        if self.items:
            event.succeed()
        return True

    def unhook(self) -> None:
        """Drop the waits still pending when the run ends (a pipe waits for work forever): each holds
        a reference cycle through its process that only the cyclic collector would free."""
        for ev in (*self.put_queue, *self.get_queue):
            ev.callbacks = []
        self.put_queue.clear()
        self.get_queue.clear()
