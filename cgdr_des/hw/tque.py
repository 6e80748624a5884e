"""TPipe buffers of one core: UB carving, TBuf, and TQue with the events TPipe inserts.

UB is carved in InitBuffer call order from offset 0: each of the ``num`` buffers takes ``nbytes``
rounded up to ``ub_align_bytes``; passing the profile's ``ub_bytes`` (what GetCoreMemSize(UB) returns)
is reported. ``position`` is ``VECIN`` / ``VECOUT`` (a TQue) or ``VECCALC`` (a TBuf: no events, and
queue calls on it are accepted as no-ops).

A TQue's buffers go FREE -> ALLOCATED (AllocTensor) -> QUEUED (EnQue) -> HELD (DeQue) -> FREE
(FreeTensor). The bookkeeping runs on the scalar unit, in program order, and inserts the flags of
docs/hardware.md §3 (rows 30-31); ``enq`` is the event of the data direction, ``free`` its reverse:

    VECIN  (GM->UB): enq MTE2_V, free V_MTE2      VECOUT (UB->GM): enq V_MTE3, free MTE3_V
    AllocTensor: takes the next FREE buffer round-robin from the cursor; if it has a pending free
                 event id: WaitFlag<free>(id), ReleaseEventID
    EnQue:       AllocEventID<enq>, SetFlag<enq>(id) (of the oldest ALLOCATED buffer, else of the
                 oldest HELD one: a dequeued tensor may be enqueued again)
    DeQue:       WaitFlag<enq>(id), ReleaseEventID
    FreeTensor:  AllocEventID<free>, SetFlag<free>(id); the id stays pending on the buffer

SimPy carries the buffers: each TQue's ``buffers`` is a ``simpy.Resource`` of capacity BUFFER_NUM
(AllocTensor requests one, FreeTensor releases it) and EnQue/DeQue pass the buffer through
``passing``, a ``simpy.Store`` (both granting in place, :mod:`cgdr_des.hw.grants`). Only the scalar
unit calls them, in program order, so a request that cannot be granted at once (every buffer held,
or nothing enqueued) could never be granted: it is reported then, not waited for.

Each call issues at most one flag instruction (:meth:`TQue.apply` returns it), which the scalar unit
hands to that pipe's queue after the call's own cycles.
"""

from __future__ import annotations

from typing import NamedTuple

from cgdr_des.hw.diagnostics import HwFault
from cgdr_des.hw.flags import EventIdPool
from cgdr_des.hw.grants import GrantResource, GrantStore
from cgdr_des.integers import ceil_align


class FlagCall(NamedTuple):
    """The flag instruction a TQue call inserts: ``kind`` "set" or "wait" on HardEvent ``event``, id ``id``."""

    kind: str
    event: str
    id: int

POSITIONS = ("VECIN", "VECOUT", "VECCALC")
_EVENTS = {"VECIN": ("MTE2_V", "V_MTE2"), "VECOUT": ("V_MTE3", "MTE3_V")}
FREE, ALLOCATED, QUEUED, HELD = range(4)
QUEUE_OPS = ("AllocTensor", "EnQue", "DeQue", "FreeTensor")


class TQue:
    """One TQue (or TBuf) initialised by InitBuffer. ``offset`` is its first UB byte."""

    def __init__(self, env, name: str, position: str, num: int, nbytes: int, offset: int) -> None:
        self.name, self.position, self.num, self.nbytes, self.offset = name, position, num, nbytes, offset
        self.enq, self.free = _EVENTS.get(position, (None, None))
        self.state = [FREE] * num
        self.free_id: list[int | None] = [None] * num
        self.cursor = 0
        self.buffers = GrantResource(env, capacity=num)
        self.grant: list = [None] * num          # the granted request of each buffer not FREE
        self.passing = GrantStore(env)           # (buffer, event id) from EnQue to DeQue
        self.allocated: list[int] = []           # ALLOCATED buffers in AllocTensor order
        self.held: list[int] = []                # HELD buffers in DeQue order

    def _next_free(self) -> int:
        for k in range(self.num):
            b = (self.cursor + k) % self.num
            if self.state[b] == FREE:
                return b
        raise HwFault(f"AllocTensor on TQue '{self.name}': all {self.num} buffers (BUFFER_NUM={self.num}) "
                      "are in use and no earlier FreeTensor released one")

    def apply(self, op: str, pool: EventIdPool) -> FlagCall | None:
        """Do ``op``'s bookkeeping; return the flag instruction TPipe inserts with it, if any."""
        if self.enq is None:
            return None
        return getattr(self, "_" + op)(pool)

    def _AllocTensor(self, pool: EventIdPool):
        b = self._next_free()
        self.cursor = (b + 1) % self.num
        self.grant[b] = self.buffers.take_now(b)    # granted at once: buffer b is FREE
        self.state[b] = ALLOCATED
        self.allocated.append(b)
        eid, self.free_id[b] = self.free_id[b], None
        if eid is None:
            return None
        pool.release(self.free, eid)
        return FlagCall("wait", self.free, eid)

    def _EnQue(self, pool: EventIdPool):
        if self.allocated:
            b = self.allocated.pop(0)
        elif self.held:         # EnQue of a tensor already dequeued: it passes to the consumer again
            b = self.held.pop(0)
        else:
            raise HwFault(f"EnQue on TQue '{self.name}' without an allocated or dequeued tensor")
        self.state[b] = QUEUED
        eid = pool.alloc(self.enq)
        self.passing.put_now((b, eid))
        return FlagCall("set", self.enq, eid)

    def _DeQue(self, pool: EventIdPool):
        if not self.passing.items:
            raise HwFault(f"DeQue on TQue '{self.name}' with nothing enqueued")
        b, eid = self.passing.get_now()
        self.state[b] = HELD
        self.held.append(b)
        pool.release(self.enq, eid)
        return FlagCall("wait", self.enq, eid)

    def _FreeTensor(self, pool: EventIdPool):
        if self.held:
            b = self.held.pop(0)
        elif self.allocated:
            b = self.allocated.pop(0)
        else:
            raise HwFault(f"FreeTensor on TQue '{self.name}' with no tensor allocated")
        eid = pool.alloc(self.free)
        self.buffers.give_back(self.grant[b])
        self.grant[b] = None
        self.state[b] = FREE
        self.free_id[b] = eid
        return FlagCall("set", self.free, eid)


class UnifiedBuffer:
    """The core's UB: carves TQue/TBuf buffers in InitBuffer order against ``capacity`` bytes."""

    def __init__(self, env, capacity: int, align: int, max_buffers_per_position: int) -> None:
        self.env = env
        self.capacity, self.align, self.max_per_pos = capacity, align, max_buffers_per_position
        self.offset = 0
        self.queues: dict[str, TQue] = {}

    def init_buffer(self, name: str, position: str, num: int, nbytes: int) -> TQue:
        """InitBuffer: carve ``num`` buffers of ``nbytes`` (aligned) at the next free UB offset."""
        if name in self.queues:
            raise HwFault(f"InitBuffer: '{name}' initialised twice")
        if position not in POSITIONS:
            raise HwFault(f"InitBuffer('{name}'): position {position!r} not one of {', '.join(POSITIONS)}")
        if isinstance(num, bool) or not isinstance(num, int) or num < 1:
            raise HwFault(f"InitBuffer('{name}'): num={num!r}, must be >= 1")
        if position != "VECCALC":
            used = sum(q.num for q in self.queues.values() if q.position == position)
            if used + num > self.max_per_pos:
                raise HwFault(f"InitBuffer('{name}'): {used + num} {position} buffers, at most "
                              f"{self.max_per_pos} per position (one event id each)")
        size = ceil_align(max(nbytes, 0), self.align)
        end = self.offset + num * size
        if end > self.capacity:
            raise HwFault(f"UB over-allocation: InitBuffer('{name}', num={num}, len={nbytes}) needs UB bytes "
                          f"[{self.offset}, {end}) but UB has {self.capacity} bytes "
                          f"({self.offset} already carved by {', '.join(self.queues) or 'nothing'})")
        q = TQue(self.env, name, position, num, size, self.offset)
        self.queues[name] = q
        self.offset = end
        return q

    def queue(self, name: str) -> TQue:
        """The TQue/TBuf initialised as ``name``."""
        q = self.queues.get(name)
        if q is None:
            raise HwFault(f"TQue '{name}' used before InitBuffer")
        return q
