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
    EnQue:       AllocEventID<enq>, SetFlag<enq>(id)
    DeQue:       WaitFlag<enq>(id), ReleaseEventID
    FreeTensor:  AllocEventID<free>, SetFlag<free>(id); the id stays pending on the buffer

Each call issues at most one flag instruction, so the scalar unit can wait for room in that pipe's
queue (:meth:`TQue.plan`, no side effects) before the call takes effect (:meth:`TQue.apply`).
"""

from __future__ import annotations

from collections import deque

from cgdr_des.hw.diagnostics import HwFault
from cgdr_des.hw.flags import EventIdPool

POSITIONS = ("VECIN", "VECOUT", "VECCALC")
_EVENTS = {"VECIN": ("MTE2_V", "V_MTE2"), "VECOUT": ("V_MTE3", "MTE3_V")}
FREE, ALLOCATED, QUEUED, HELD = range(4)
QUEUE_OPS = ("AllocTensor", "EnQue", "DeQue", "FreeTensor")


class TQue:
    """One TQue (or TBuf) initialised by InitBuffer. ``offset`` is its first UB byte."""

    def __init__(self, name: str, position: str, num: int, nbytes: int, offset: int) -> None:
        self.name, self.position, self.num, self.nbytes, self.offset = name, position, num, nbytes, offset
        self.enq, self.free = _EVENTS.get(position, (None, None))
        self.state = [FREE] * num
        self.free_id: list[int | None] = [None] * num
        self.cursor = 0
        self.allocated: deque[int] = deque()
        self.queued: deque[tuple[int, int]] = deque()
        self.held: deque[int] = deque()

    def _next_free(self) -> int:
        for k in range(self.num):
            b = (self.cursor + k) % self.num
            if self.state[b] == FREE:
                return b
        raise HwFault(f"AllocTensor on TQue '{self.name}': all {self.num} buffers (BUFFER_NUM={self.num}) "
                      "are in use and no earlier FreeTensor released one")

    def plan(self, op: str) -> tuple[str, str] | None:
        """The flag instruction ``op`` will issue, ``("set"|"wait", event)``, without side effects."""
        if self.enq is None:
            return None
        if op == "AllocTensor":
            return ("wait", self.free) if self.free_id[self._next_free()] is not None else None
        if op == "EnQue":
            return ("set", self.enq)
        if op == "DeQue":
            return ("wait", self.enq)
        return ("set", self.free)

    def apply(self, op: str, pool: EventIdPool) -> tuple[str, str, int] | None:
        """Do ``op``'s bookkeeping; return the flag instruction ``(kind, event, id)`` to issue."""
        if self.enq is None:
            return None
        return getattr(self, "_" + op)(pool)

    def _AllocTensor(self, pool: EventIdPool):
        b = self._next_free()
        self.cursor = (b + 1) % self.num
        self.state[b] = ALLOCATED
        self.allocated.append(b)
        eid, self.free_id[b] = self.free_id[b], None
        if eid is None:
            return None
        pool.release(self.free, eid)
        return ("wait", self.free, eid)

    def _EnQue(self, pool: EventIdPool):
        if not self.allocated:
            raise HwFault(f"EnQue on TQue '{self.name}' without an allocated tensor")
        b = self.allocated.popleft()
        self.state[b] = QUEUED
        eid = pool.alloc(self.enq)
        self.queued.append((b, eid))
        return ("set", self.enq, eid)

    def _DeQue(self, pool: EventIdPool):
        if not self.queued:
            raise HwFault(f"DeQue on TQue '{self.name}' with nothing enqueued")
        b, eid = self.queued.popleft()
        self.state[b] = HELD
        self.held.append(b)
        pool.release(self.enq, eid)
        return ("wait", self.enq, eid)

    def _FreeTensor(self, pool: EventIdPool):
        if self.held:
            b = self.held.popleft()
        elif self.allocated:
            b = self.allocated.popleft()
        else:
            raise HwFault(f"FreeTensor on TQue '{self.name}' with no tensor allocated")
        eid = pool.alloc(self.free)
        self.state[b] = FREE
        self.free_id[b] = eid
        return ("set", self.free, eid)


class UnifiedBuffer:
    """The core's UB: carves TQue/TBuf buffers in InitBuffer order against ``capacity`` bytes."""

    def __init__(self, capacity: int, align: int, max_buffers_per_position: int) -> None:
        self.capacity, self.align, self.max_per_pos = capacity, align, max_buffers_per_position
        self.offset = 0
        self.queues: dict[str, TQue] = {}

    def init_buffer(self, name: str, position: str, num: int, nbytes: int) -> TQue:
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
        size = -(-max(nbytes, 0) // self.align) * self.align
        end = self.offset + num * size
        if end > self.capacity:
            raise HwFault(f"UB over-allocation: InitBuffer('{name}', num={num}, len={nbytes}) needs UB bytes "
                          f"[{self.offset}, {end}) but UB has {self.capacity} bytes "
                          f"({self.offset} already carved by {', '.join(self.queues) or 'nothing'})")
        q = TQue(name, position, num, size, self.offset)
        self.queues[name] = q
        self.offset = end
        return q

    def queue(self, name: str) -> TQue:
        q = self.queues.get(name)
        if q is None:
            raise HwFault(f"TQue '{name}' used before InitBuffer")
        return q
