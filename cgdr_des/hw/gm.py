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
later unless rates change first). Exactness relies on the machine's invariant: a transfer is submitted
at an env time no later than its start, so every transfer active at a given cycle is known by then.

Lifecycle of a transfer: submitted (``start`` in the future or now) -> active -> done (``done`` set to
the completion cycle, then ``on_done(transfer)`` is called from the SimPy event loop).
"""

from __future__ import annotations

import heapq
import math

_EPS_BYTES = 1e-6      # bytes left below this count as moved (float residue of rate * cycles)


class Transfer:
    __slots__ = ("start", "nbytes", "cap", "rem", "rate", "done", "on_done", "seq")

    def __init__(self, start: int, nbytes: int, cap: float, on_done, seq: int) -> None:
        self.start, self.nbytes, self.cap, self.on_done, self.seq = start, nbytes, cap, on_done, seq
        self.rem = float(nbytes)
        self.rate = 0.0
        self.done: int | None = None


class GmBus:
    """The shared GM bandwidth of one chip. ``capacity`` in bytes per cycle."""

    def __init__(self, env, capacity: float) -> None:
        self.env, self.capacity = env, capacity
        self.pending: list[tuple[int, int, Transfer]] = []   # (start, seq, transfer) heap
        self.active: list[Transfer] = []
        self.last = 0                 # cycle the active transfers' rem was last brought up to date
        self.timer_at: int | None = None
        self.timer_gen = 0
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
        self._plan(now)
        return tr

    # -------------------------------------------------------------- internals

    def _advance(self, now: int) -> None:
        dt = now - self.last
        if dt:
            for tr in self.active:
                tr.rem -= tr.rate * dt
        self.last = now

    def _share(self) -> None:
        """Water-filling: the lowest caps first, each taking min(cap, what is left / how many left)."""
        active = self.active
        n = len(active)
        if n and max(tr.cap for tr in active) * n <= self.capacity:
            for tr in active:
                tr.rate = tr.cap
            return
        left = self.capacity
        for i, tr in enumerate(sorted(active, key=lambda t: (t.cap, t.seq))):
            tr.rate = min(tr.cap, left / (n - i))
            left -= tr.rate

    def _step(self, now: int) -> list[Transfer]:
        """Bring the model to ``now``: finish what has moved, start what is due, re-share."""
        self._advance(now)
        finished = [tr for tr in self.active if tr.rem <= _EPS_BYTES]
        if finished:
            self.active = [tr for tr in self.active if tr.rem > _EPS_BYTES]
            for tr in finished:
                tr.done = now
        pending = self.pending
        while pending and pending[0][0] <= now:
            tr = heapq.heappop(pending)[2]
            if tr.nbytes <= 0:
                tr.done = now
                finished.append(tr)
            else:
                self.active.append(tr)
        self.peak_active = max(self.peak_active, len(self.active))
        self._share()
        return finished

    def _next_time(self, now: int) -> int | None:
        nxt = self.pending[0][0] if self.pending else None
        for tr in self.active:
            t = now + max(1, math.ceil(tr.rem / tr.rate - 1e-9))
            if nxt is None or t < nxt:
                nxt = t
        return nxt

    def _plan(self, now: int) -> None:
        finished = self._step(now)
        nxt = self._next_time(now)
        if nxt is not None and (self.timer_at is None or nxt < self.timer_at):
            self.timer_gen += 1
            self.timer_at = nxt
            gen = self.timer_gen
            self.env.timeout(nxt - now).callbacks.append(lambda _ev, g=gen: self._on_timer(g))
        for tr in finished:
            tr.on_done(tr)

    def _on_timer(self, gen: int) -> None:
        if gen != self.timer_gen:
            return                      # superseded by an earlier re-plan
        self.timer_at = None
        self._plan(self.env.now)
