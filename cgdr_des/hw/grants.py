"""SimPy resources whose immediate grants cost no scheduled event.

A TQue's buffers (``simpy.Resource``), the buffers passing from EnQue to DeQue (``simpy.Store``) and
the event ids of one HardEvent (``simpy.PriorityStore``) are SimPy resources (docs/architecture.md
§2.2), but only the scalar unit calls them, in program order, and a request that cannot be granted
at once is reported rather than waited for (:mod:`cgdr_des.hw.tque`, :mod:`cgdr_des.hw.flags`). SimPy
still schedules every granted request as an event and steps through it later with nothing to
resume: four fifths of a phase run's TQue and event-id traffic, some 4 000 events on long_t2048.

These subclasses grant such a request in place: the event is marked triggered and processed at the
moment it is granted, as :meth:`simpy.core.Environment.step` would mark it at the same simulated
time. That skips the event's callbacks, so it is done only when the one callback is the resource's
own (waking requests of the other kind) and no such request is queued: a request granted as it is
made, which no process has yielded yet. Otherwise the event is scheduled as SimPy always does. A
process that yields a granted event resumes at once with its value.

The machine's own callers go one step further (``take_now`` / ``put_now`` / ``get_now``): only the
scalar unit calls these resources, in program order, and never yields their requests, so with no
request queued (always, for them) a grant needs no event object at all -- the resource's ``users`` or
``items`` change exactly as a granted request would change them. With a request queued they fall back
to the SimPy call, so the resource's behaviour is the same either way.
"""

from __future__ import annotations

from heapq import heappop, heappush

import simpy

from cgdr_des.hw.simpy_compat import grant_in_place


def grant(event, value, waiting) -> None:
    """Trigger ``event`` with ``value``: in place when its only callback is its resource's own and
    ``waiting`` (the queue of requests that callback would serve) is empty; else (a process waits on
    it, or a request of the other kind does) scheduled as usual."""
    if waiting or len(event.callbacks) > 1:
        event.succeed(value)
        return
    grant_in_place(event, value)


class GrantResource(simpy.Resource):
    """``simpy.Resource`` (TQue buffers: AllocTensor requests one, FreeTensor releases it)."""

    def _do_put(self, event) -> None:
        if len(self.users) < self.capacity:
            self.users.append(event)
            event.usage_since = event.env.now
            grant(event, None, self.get_queue)

    def _do_get(self, event) -> None:
        if event.request in self.users:
            self.users.remove(event.request)
        grant(event, None, self.put_queue)

    def take_now(self, token):
        """A request no process waits for, granted at once when a slot is free and nothing is queued:
        ``token`` joins ``users`` (returned; :meth:`give_back` it). Otherwise :meth:`request`'s event."""
        if self.put_queue or self.get_queue or len(self.users) >= self.capacity:
            return self.request()
        self.users.append(token)
        return token

    def give_back(self, token) -> None:
        """Release what :meth:`take_now` returned (a token in place, an event as :meth:`release` does)."""
        if isinstance(token, simpy.events.Event) or self.put_queue or self.get_queue:
            self.release(token)
        elif token in self.users:
            self.users.remove(token)


class GrantStore(simpy.Store):
    """``simpy.Store`` (a TQue's buffers from EnQue to DeQue), first in, first out."""

    def _do_put(self, event) -> None:
        if len(self.items) < self.capacity:
            self.items.append(event.item)
            grant(event, None, self.get_queue)

    def _do_get(self, event) -> None:
        if self.items:
            grant(event, self.items.pop(0), self.put_queue)

    def put_now(self, item) -> None:
        """:meth:`put` by a caller that does not wait for it."""
        if self.put_queue or self.get_queue or len(self.items) >= self.capacity:
            self.put(item)
        else:
            self.items.append(item)

    def get_now(self):
        """:meth:`get`'s item, by a caller that checked the store is not empty."""
        if self.put_queue or self.get_queue:
            return self.get().value
        return self.items.pop(0)


class GrantPriorityStore(simpy.PriorityStore):
    """``simpy.PriorityStore`` (a HardEvent's free event ids, lowest first)."""

    def _do_put(self, event) -> None:
        if len(self.items) < self.capacity:
            heappush(self.items, event.item)
            grant(event, None, self.get_queue)

    def _do_get(self, event) -> None:
        if self.items:
            grant(event, heappop(self.items), self.put_queue)

    def put_now(self, item) -> None:
        """:meth:`put` by a caller that does not wait for it."""
        if self.put_queue or self.get_queue or len(self.items) >= self.capacity:
            self.put(item)
        else:
            heappush(self.items, item)

    def get_now(self):
        """:meth:`get`'s item (the lowest), by a caller that checked the store is not empty."""
        if self.put_queue or self.get_queue:
            return self.get().value
        return heappop(self.items)
