"""Hardware flags (SetFlag / WaitFlag) and the TPipe event-id pools of one core.

A flag is one bit per (HardEvent, id) per core: SetFlag sets it, WaitFlag waits for it and clears it
(a binary semaphore, not a counter). Its sets always come from one pipe (the event's source) and its
waits from one pipe (the destination), each in program order, so the k-th WaitFlag consumes the k-th
SetFlag. The machine's pipes run on their own clocks and may reach a SetFlag before the WaitFlag that
precedes it in time, so a :class:`Flag` keeps its *timeline*: the set times not yet consumed and the
time of the last consumption. Lifecycle of one set: recorded (``set`` at its fire cycle) -> consumed
(a wait at cycle ``max(wait arrival, set cycle)``).

A second SetFlag while the flag is still set (its time earlier than the consumption of the previous
set) is illegal on hardware (CCE set_flag doc). The profile's ``flag_double_set`` decides what the
machine does: ``diagnostic`` (default) reports it; ``counter`` lets every set be consumed by its own
wait; ``stall`` is ``counter`` plus the scalar unit stalling on a SetFlag it executes until the previous
set of that flag has been consumed.

Event ids (docs/hardware.md row 24): a per-HardEvent occupancy mask of ``n_ids`` bits. ``alloc`` takes the
lowest free id and marks it; ``fetch`` returns the lowest free id without marking; ``release`` clears.
"""

from __future__ import annotations

from collections import deque

from cgdr_des.hw.diagnostics import HwFault
from cgdr_des.isa import HARD_EVENTS


class Flag:
    """One hardware flag's timeline. Times are integer cycles."""

    __slots__ = ("event", "id", "sets", "last_consume", "waiter", "set_waiter")

    def __init__(self, event: str, eid: int) -> None:
        self.event, self.id = event, eid
        self.sets: deque[int] = deque()   # fire cycles of sets not yet consumed, in order
        self.last_consume = -1             # cycle the previous set was consumed
        self.waiter = None                 # the automaton blocked until a set is recorded
        self.set_waiter = None             # ``stall`` policy: the scalar unit waiting for a consume

    def __repr__(self) -> str:
        return f"Flag({self.event}({self.id}), pending sets={list(self.sets)})"


def double_set_message(flag: Flag, t_set: int, t_consume: int) -> str:
    return (f"SetFlag<{flag.event}>({flag.id}) fires at cycle {t_set} while the flag is still set "
            f"(the previous set is consumed by its WaitFlag only at cycle {t_consume}); two SetFlags "
            "without a WaitFlag in between are illegal (profile flag_double_set='diagnostic')")


class FlagTable:
    """All flags of one core: ``table[event][id]`` is a :class:`Flag`."""

    def __init__(self, n_ids: int) -> None:
        self.n_ids = n_ids
        self.table = {ev: [Flag(ev, i) for i in range(n_ids)] for ev in HARD_EVENTS}

    def get(self, event: str, eid) -> Flag:
        if eid is None:
            raise HwFault(f"{event}: event id not filled in (EventHandle used before Fetch/AllocEventID)")
        row = self.table.get(event)
        if row is None:
            raise HwFault(f"unknown HardEvent {event!r}; allowed: {', '.join(HARD_EVENTS)}")
        if not 0 <= eid < self.n_ids:
            raise HwFault(f"{event}: event id {eid} outside 0..{self.n_ids - 1}")
        return row[eid]


class EventIdPool:
    """TPipe's per-HardEvent event-id masks of one core."""

    def __init__(self, n_ids: int) -> None:
        self.n_ids = n_ids
        self.mask = dict.fromkeys(HARD_EVENTS, 0)

    def _lowest_free(self, event: str, what: str) -> int:
        if event not in self.mask:
            raise HwFault(f"unknown HardEvent {event!r}; allowed: {', '.join(HARD_EVENTS)}")
        m = self.mask[event]
        for i in range(self.n_ids):
            if not m >> i & 1:
                return i
        raise HwFault(f"event ids exhausted: {what}<{event}> with all {self.n_ids} ids "
                      f"0..{self.n_ids - 1} allocated and not released")

    def alloc(self, event: str) -> int:
        i = self._lowest_free(event, "AllocEventID")
        self.mask[event] |= 1 << i
        return i

    def fetch(self, event: str) -> int:
        return self._lowest_free(event, "FetchEventID")

    def release(self, event: str, eid: int) -> None:
        """Clear the id's bit. Releasing a free id is harmless on hardware, so it is allowed."""
        if event not in self.mask:
            raise HwFault(f"unknown HardEvent {event!r}; allowed: {', '.join(HARD_EVENTS)}")
        if eid is None or not 0 <= eid < self.n_ids:
            raise HwFault(f"ReleaseEventID<{event}>({eid}): id outside 0..{self.n_ids - 1}")
        self.mask[event] &= ~(1 << eid)
