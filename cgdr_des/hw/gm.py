"""GM bandwidth shared by every core's DMAs: a processor-sharing fluid model on the SimPy clock.

A DMA's data phase is a :class:`Transfer` of ``nbytes`` that becomes *active* at its ``start`` cycle
(the DMA's start on its pipe plus its first-byte cycles, which use no bandwidth) and completes when
its bytes have moved. While ``n`` transfers are active, the chip's ``capacity`` (bytes/cycle) is split
max-min fairly (water-filling): each gets ``min(cap, fair share)`` where a transfer capped below its
share (the core's per-DMA peak, possibly reduced for an unaligned address) leaves the rest to the
others. With equal caps this is ``min(cap, capacity / n)``; the aggregate never exceeds ``capacity``.

Rates change only when a transfer starts or completes; at each such instant the model advances
every active transfer's remaining bytes and re-plans the next completion. Completion times are rounded
up to whole cycles (a transfer with ``r`` bytes left at rate ``q`` completes ``ceil(r / q)`` cycles
later unless rates change first: :func:`~cgdr_des.hw.rules.bus_cycles`). Exactness relies on the
machine's invariant: a transfer is submitted at an env time no later than its start, so every
transfer active at a given cycle is known by then.

Lifecycle of a transfer: submitted (``start`` in the future or now) -> active -> done (``done`` set to
the completion cycle, then ``on_done(transfer)`` is called from the SimPy event loop).
"""

from __future__ import annotations

import heapq
from operator import attrgetter

from cgdr_des.hw.rules import bus_cycles
from cgdr_des.hw.simpy_compat import schedule_call

_EPS_BYTES = 1e-6      # bytes left below this count as moved (float residue of rate * cycles)
_CAP_SEQ = attrgetter("cap", "seq")   # water-filling order: lowest cap first, ties by submission


class Transfer:
    """One DMA's data phase on the bus: ``nbytes`` from cycle ``start``, at most ``cap`` bytes/cycle.

    ``rem`` (bytes left) and ``rate`` (bytes/cycle now) change at each re-plan; ``done`` is the completion
    cycle once known; ``seq`` orders transfers by submission (ties in water-filling).
    """

    __slots__ = ("start", "nbytes", "cap", "rem", "rate", "done", "on_done", "seq")

    def __init__(self, start: int, nbytes: int, cap: float, on_done, seq: int) -> None:
        self.start, self.nbytes, self.cap, self.on_done, self.seq = start, nbytes, cap, on_done, seq
        self.rem = float(nbytes)
        self.rate = 0.0
        self.done: int | None = None


class GmBus:
    """The shared GM bandwidth of one chip. ``capacity`` in bytes per cycle.

    Invariant after every re-plan at ``last``: nothing active has finished, nothing pending is due, and
    ``timer_at`` (the live timer's cycle) is at or before every pending start and every active
    transfer's planned completion.
    """

    def __init__(self, env, capacity: float) -> None:
        self.env, self.capacity = env, capacity
        self.pending: list[tuple[int, int, Transfer]] = []   # (start, seq, transfer) heap
        self.active: list[Transfer] = []
        self.last = 0                 # cycle the active transfers' rem was last brought up to date
        self.timer = None             # the live timer event; a superseded one fires and is ignored
        self.timer_at: int | None = None
        self.seq = 0
        self.peak_active = 0

    def submit(self, start: int, nbytes: int, cap: float, on_done) -> Transfer:
        """A data phase of ``nbytes`` beginning at cycle ``start`` (>= now); calls ``on_done`` at the end."""
        now = self.env.now
        if start < now:
            raise RuntimeError(f"GM transfer submitted for cycle {start} at env time {now} (invariant broken)")
        self.seq += 1
        tr = Transfer(start, nbytes, cap, on_done, self.seq)
        heapq.heappush(self.pending, (start, tr.seq, tr))
        if start > now and self.last == now:
            # Already re-planned at ``now`` (the usual case: a DMA leaves its pipe when a transfer ends)
            # and the new transfer starts later: by the invariant a full re-plan could only move the
            # timer forward to ``start``.
            if self.timer_at is None or start < self.timer_at:
                self._set_timer(start, now)
        else:
            self._plan(now)
        return tr

    # -------------------------------------------------------------- internals

    def _share(self) -> None:
        """Water-filling: the lowest caps first, each taking min(cap, what is left / how many left).
        Only called with transfers active."""
        active = self.active
        n = len(active)
        if max([tr.cap for tr in active]) * n <= self.capacity:
            for tr in active:
                tr.rate = tr.cap
            return
        left = self.capacity
        for i, tr in enumerate(sorted(active, key=_CAP_SEQ)):
            tr.rate = min(tr.cap, left / (n - i))
            left -= tr.rate

    def _finish(self, now: int) -> list[Transfer]:
        """Advance the active transfers to ``now``; remove and return those whose bytes have all moved."""
        active = self.active
        dt = now - self.last
        if dt:
            for tr in active:
                tr.rem -= tr.rate * dt
        finished = [tr for tr in active if tr.rem <= _EPS_BYTES]
        if finished:
            self.active = [tr for tr in active if tr.rem > _EPS_BYTES]
            for tr in finished:
                tr.done = now
        return finished

    def _step(self, now: int) -> list[Transfer]:
        """Bring the model to ``now``: finish what has moved, start what is due, re-share."""
        finished = self._finish(now) if self.active else []
        self.last = now
        changed = bool(finished)
        pending = self.pending
        while pending and pending[0][0] <= now:
            tr = heapq.heappop(pending)[2]
            if tr.nbytes <= 0:
                tr.done = now
                finished.append(tr)
            else:
                self.active.append(tr)
                changed = True
        if changed and self.active:      # rates depend only on the set of active transfers
            self.peak_active = max(self.peak_active, len(self.active))
            self._share()
        return finished

    def _next_time(self, now: int) -> int | None:
        nxt = self.pending[0][0] if self.pending else None
        for tr in self.active:
            t = now + bus_cycles(tr.rem, tr.rate)
            if nxt is None or t < nxt:
                nxt = t
        return nxt

    def _plan(self, now: int) -> None:
        finished = self._step(now)
        nxt = self._next_time(now)
        if nxt is not None and (self.timer_at is None or nxt < self.timer_at):
            self._set_timer(nxt, now)
        for tr in finished:
            on_done, tr.on_done = tr.on_done, None  # its event holds the transfer: no cycle left behind
            on_done(tr)

    def _set_timer(self, at: int, now: int) -> None:
        self.timer_at = at
        self.timer = schedule_call(self.env, at - now, self._on_timer)

    def _on_timer(self, ev) -> None:
        if ev is not self.timer:
            return                      # superseded by an earlier re-plan
        self.timer = self.timer_at = None
        self._plan(self.env.now)
