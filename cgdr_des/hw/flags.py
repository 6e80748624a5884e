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
set of that flag has been consumed; ``lost`` is the bare one-bit flag: the second set finds the bit
already 1 and is lost, so a later WaitFlag may wait for a set that never comes (a deadlock the machine
reports). Whether a set is lost is known only once the previous set's consumption cycle is: it is
decided then (:func:`drop_lost`) or, with nothing pending, when the set is recorded.

Waiting is on SimPy events: a WaitFlag that finds no set recorded waits on ``Flag.waiter`` (triggered
by the next set; on a V or MTE pipe that is the pipe's :class:`~cgdr_des.hw.pipes.Pump`, which runs
the pipe in place), and under ``stall`` a SetFlag on S that finds a set pending waits on
``Flag.set_waiter`` (triggered by the consumption).

Event ids (docs/hardware.md row 24): per HardEvent a SimPy ``PriorityStore`` holding the ``n_ids``
free ids (granting in place, :mod:`cgdr_des.hw.grants`). ``alloc`` (AllocEventID) gets the lowest
free id out of it; ``fetch`` (FetchEventID) reads the lowest without taking it; ``release``
(ReleaseEventID) puts it back. The scalar unit is the only one to take and return ids, in program
order, so an empty store is not something to wait for -- nothing could ever refill it -- and is
reported at once ("event ids exhausted").
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

from cgdr_des.hw.diagnostics import HwFault
from cgdr_des.hw.grants import GrantPriorityStore
from cgdr_des.hw.rules import set_while_set
from cgdr_des.isa import HARD_EVENTS, event_pipes


class EventInfo(NamedTuple):
    """What the scalar unit needs to know of one HardEvent."""

    src: str        # the pipe that sets it
    dst: str        # the pipe that waits on it
    set_key: str    # count key of its SetFlag
    wait_key: str   # count key of its WaitFlag
    set_op: str     # ops label of its SetFlag
    wait_op: str    # ops label of its WaitFlag


EVENTS = {ev: EventInfo(*event_pipes(ev), "set_" + ev, "wait_" + ev, "SetFlag:" + ev, "WaitFlag:" + ev)
          for ev in HARD_EVENTS}

class DoubleSet(NamedTuple):
    """What the machine does with a SetFlag that fires while its flag is still set, under one
    ``flag_double_set`` policy (:data:`DOUBLE_SET`). Every site reads these: the V, MTE and Cube pipes
    and the scalar unit (through :func:`record_set` and :func:`double_set_at_wait`), the compute-run
    timer (``report``, ``stall``) and the phase compiler (``lose``: only the machine follows lost sets)."""

    check: bool     # each set is compared with the previous set's consumption
    report: bool    # such a set is a KernelDiagnostic
    lose: bool      # such a set is lost: the bare one-bit flag
    stall: bool     # a SetFlag on S first waits until the previous set is consumed


#: ``flag_double_set`` -> its :class:`DoubleSet`: ``counter`` lets each set be consumed by its own wait
DOUBLE_SET = {
    "diagnostic": DoubleSet(check=True, report=True, lose=False, stall=False),
    "counter": DoubleSet(check=False, report=False, lose=False, stall=False),
    "stall": DoubleSet(check=False, report=False, lose=False, stall=True),
    "lost": DoubleSet(check=True, report=False, lose=True, stall=False),
}


class Flag:
    """One hardware flag's timeline. Times are integer cycles."""

    __slots__ = ("event", "id", "sets", "last_consume", "waiter", "set_waiter", "lost")

    def __init__(self, event: str, eid: int) -> None:
        self.event, self.id = event, eid
        self.sets: deque[int] = deque()   # fire cycles of sets not yet consumed, in order
        self.last_consume = -1             # cycle the previous set was consumed
        self.waiter = None                 # event a WaitFlag waits on until a set is recorded
        self.set_waiter = None             # ``stall`` policy: event the scalar unit's SetFlag waits on
        self.lost = 0                      # ``lost`` policy: sets that found the flag still set

    def wait_set(self, env):
        """The event a WaitFlag waits on while no set is recorded (triggered by :meth:`wake`)."""
        self.waiter = env.event()
        return self.waiter

    def wait_consumed(self, env):
        """The event a SetFlag under ``stall`` waits on while a set is pending."""
        self.set_waiter = env.event()
        return self.set_waiter

    def wake(self) -> None:
        """A set was recorded: release the WaitFlag waiting for one, if any."""
        waiter = self.waiter
        if waiter is not None:      # cleared first: a pipe's pump may wait on this flag again at once
            self.waiter = None
            waiter.succeed()

    def wake_setter(self) -> None:
        """A set was consumed: release the SetFlag waiting under ``stall``, if any."""
        waiter = self.set_waiter
        if waiter is not None:
            self.set_waiter = None
            waiter.succeed()

    def __repr__(self) -> str:
        return f"Flag({self.event}({self.id}), pending sets={list(self.sets)})"


def drop_lost(flag: Flag, consume: int) -> None:
    """``lost`` policy: the set just consumed at ``consume`` kept the bit at 1 until then, so every
    pending set that fired before is lost."""
    sets = flag.sets
    while sets and sets[0] < consume:
        sets.popleft()
        flag.lost += 1


def record_set(flag: Flag, fire: int, rule: DoubleSet) -> str | None:
    """A SetFlag fires at ``fire``: record it and wake the flag's waiter, unless the previous set is
    consumed only after ``fire`` (checked under ``rule``): then it is lost (``lost``) or reported
    (``diagnostic``: the report is returned, for the caller to raise where it stands)."""
    if rule.check and not flag.sets and set_while_set(fire, flag.last_consume):
        if rule.lose:
            flag.lost += 1
            return None
        return double_set_message(flag, fire, flag.last_consume)
    flag.sets.append(fire)
    if flag.waiter is not None:
        flag.wake()
    return None


def double_set_at_wait(flag: Flag, consume: int, rule: DoubleSet) -> str | None:
    """A WaitFlag consumed ``flag`` at ``consume`` and its next pending set fired before (the caller
    checked, ``rule.check``): ``lost`` drops it (and every other such set), ``diagnostic`` returns its
    report."""
    if rule.lose:
        drop_lost(flag, consume)
        return None
    return double_set_message(flag, flag.sets[0], consume) + " (seen at this WaitFlag)"


def double_set_message(flag: Flag, t_set: int, t_consume: int) -> str:
    """The ``diagnostic`` policy's report of a set firing at ``t_set`` before ``t_consume``."""
    return (f"SetFlag<{flag.event}>({flag.id}) fires at cycle {t_set} while the flag is still set "
            f"(the previous set is consumed by its WaitFlag only at cycle {t_consume}); two SetFlags "
            "without a WaitFlag in between are illegal (profile flag_double_set='diagnostic')")


class FlagTable:
    """All flags of one core: ``table[event][id]`` is a :class:`Flag`."""

    def __init__(self, n_ids: int) -> None:
        self.n_ids = n_ids
        self.table = {ev: [Flag(ev, i) for i in range(n_ids)] for ev in HARD_EVENTS}

    def get(self, event: str, eid) -> Flag:
        """The flag ``(event, eid)``; an unknown event, an unfilled handle or an id out of range is a
        HwFault."""
        if eid is None:
            raise HwFault(f"{event}: event id not filled in (EventHandle used before Fetch/AllocEventID)")
        row = self.table.get(event)
        if row is None:
            raise HwFault(f"unknown HardEvent {event!r}; allowed: {', '.join(HARD_EVENTS)}")
        if not 0 <= eid < self.n_ids:
            raise HwFault(f"{event}: event id {eid} outside 0..{self.n_ids - 1}")
        return row[eid]


_HARD_EVENT_SET = frozenset(HARD_EVENTS)


class EventIdPool:
    """TPipe's event ids of one core: one SimPy PriorityStore of free ids per HardEvent."""

    def __init__(self, env, n_ids: int) -> None:
        self.env, self.n_ids = env, n_ids
        #: HardEvent -> its store, made on the event's first use (a program uses a few of the 18, and
        #: a machine makes one pool per core per run)
        self.free: dict[str, GrantPriorityStore] = {}

    def _made(self, event: str) -> GrantPriorityStore | None:
        """The store of ``event`` (made now with every id free if it is a HardEvent); None if it is not."""
        store = self.free.get(event)
        if store is None and event in _HARD_EVENT_SET:
            store = self.free[event] = GrantPriorityStore(self.env, capacity=self.n_ids)
            store.items = list(range(self.n_ids))    # already a heap: every id free at launch
        return store

    def _store(self, event: str, what: str) -> GrantPriorityStore:
        store = self._made(event)
        if store is None:
            raise HwFault(f"unknown HardEvent {event!r}; allowed: {', '.join(HARD_EVENTS)}")
        if not store.items:
            raise HwFault(f"event ids exhausted: {what}<{event}> with all {self.n_ids} ids "
                          f"0..{self.n_ids - 1} allocated and not released")
        return store

    def alloc(self, event: str) -> int:
        """AllocEventID: take the lowest free id."""
        return self._store(event, "AllocEventID").get_now()

    def fetch(self, event: str) -> int:
        """FetchEventID: the lowest free id, left free."""
        return self._store(event, "FetchEventID").items[0]

    def release(self, event: str, eid: int) -> None:
        """Return the id. Releasing a free id is harmless on hardware, so it is allowed."""
        store = self._made(event)
        if store is None:
            raise HwFault(f"unknown HardEvent {event!r}; allowed: {', '.join(HARD_EVENTS)}")
        if eid is None or not 0 <= eid < self.n_ids:
            raise HwFault(f"ReleaseEventID<{event}>({eid}): id outside 0..{self.n_ids - 1}")
        if eid not in store.items:
            store.put_now(eid)
