"""The timing rules of one core, each written once as a pure function of named cycle values.

The SimPy machine (:mod:`.scalar`, :mod:`.pipes`) and the phase compiler's one-pass timer
(:mod:`.compute_run`) both compute every cycle through these functions, so the two cannot drift
apart; ``tests/test_hw_compute_run.py`` holds them to each other cycle for cycle and
``tests/test_hw_reference.py`` holds the machine to an independent cycle-driven model.

Vocabulary: ``arrival`` is when an entry reaches the head of its pipe with the pipe free
(``max(pipe free, hand-over cycle)``, :func:`arrival`); ``done`` the latest end of everything the
pipe executed before; ``free`` the cycle the pipe may start its next entry; ``end`` the cycle the
entry is complete (a SetFlag: fires). Every function returns integers when given integers.

| rule | function | who applies it |
|---|---|---|
| vector issue cycles | :func:`vec_issue` | scalar unit (hand-over), compute-run timer |
| vector op on V | :func:`vec_op` | V pipe, compute-run timer |
| PipeBarrier<X> on pipe X | :func:`barrier` | V and MTE pipes, compute-run timer |
| PipeBarrier<ALL> on S | :func:`barrier` (over every pipe's done) | scalar unit |
| SetFlag on a pipe | :func:`flag_set` | V and MTE pipes, compute-run timer |
| SetFlag on S | :func:`scalar_flag_set` | scalar unit, compute-run timer |
| WaitFlag (any side) | :func:`flag_wait` | scalar unit, pipes, compute-run timer |
| ``flag_double_set`` checks | :func:`set_while_set` | scalar unit, pipes, compute-run timer |
| queue hand-over | :func:`hand_over` | scalar unit, compute-run timer |
| scalar GM read/write | :func:`scalar_gm` | scalar unit, compute-run timer |
| ScalarExp cost | :func:`scalar_exp` | scalar unit, compute-run timer |
| DMA first byte | :func:`dma_first_byte` | MTE pipes (via :mod:`.dma`) |
| scalar cycles of one vector call | :func:`vec_call_scalar` | scalar unit, compute-run timer |
| busy cover | :func:`cover` | V pipe, compute-run timer |
"""

from __future__ import annotations


def arrival(free: int, issued: int) -> int:
    """The cycle an entry handed over at ``issued`` starts on a pipe that is free from ``free``."""
    return free if free > issued else issued


def vec_issue(n: int, width: int, cycles_per_repeat: int) -> int:
    """Cycles V spends issuing one count-form instruction over ``n`` elements: one repeat per
    ``width`` elements (at least one), ``cycles_per_repeat`` each."""
    return (-(-n // width) if n > width else 1) * cycles_per_repeat


def vec_op(arrival: int, issue: int, latency: int) -> tuple[int, int]:
    """A vector op starting at ``arrival``: ``(free, end)``. V is pipelined: it takes the next
    instruction when this one's issue ends; the result is complete ``latency`` cycles later."""
    free = arrival + issue
    return free, free + latency


def barrier(arrival: int, done: int) -> int:
    """PipeBarrier<X>: the pipe (or, for ALL, the scalar unit) goes on only once everything before
    it completed; returns the cycle it does (the entry's end and the pipe's next free cycle)."""
    return done if done > arrival else arrival


def flag_set(arrival: int, done: int, flag_cycles: int) -> tuple[int, int]:
    """A SetFlag on a pipe: ``(free, fire)``. It fires ``flag_cycles`` after everything before it
    completed; later instructions on the pipe need not wait for it (only for its own cycles)."""
    return arrival + flag_cycles, (done if done > arrival else arrival) + flag_cycles


def scalar_flag_set(t: int, last_consume: int, flag_cycles: int, stall_policy: bool) -> tuple[int, int]:
    """A SetFlag the scalar unit executes at ``t``: ``(fire, stall)``. Under the ``stall`` policy it
    first waits until the previous set of the flag is consumed."""
    stall = last_consume - t if stall_policy and last_consume > t else 0
    return t + stall + flag_cycles, stall


def flag_wait(arrival: int, fire: int, flag_cycles: int) -> tuple[int, int]:
    """A WaitFlag reaching its pipe at ``arrival`` consumes the set that fires at ``fire``:
    ``(consume, free)``: it is consumed at the later of the two, the pipe goes on ``flag_cycles``
    after that."""
    consume = fire if fire > arrival else arrival
    return consume, consume + flag_cycles


def set_while_set(fire: int, previous_consume: int) -> bool:
    """Whether a set firing at ``fire`` overlaps the previous set of its flag, consumed only at
    ``previous_consume``: two sets without a wait in between (illegal on hardware; what the machine
    does about it is the profile's ``flag_double_set``)."""
    return fire < previous_consume


def hand_over(t: int, slot_free: int, dispatch: int) -> tuple[int, int]:
    """The scalar unit at ``t`` hands an entry to a pipe queue whose slot frees at ``slot_free``
    (the dequeue cycle of the entry ``queue_depth`` places back): ``(issued, stall)``. It waits for
    the slot, then spends ``dispatch`` cycles; the entry is issued at the end of those."""
    stall = slot_free - t if slot_free > t else 0
    return t + stall + dispatch, stall


def scalar_gm(hit: bool, store: bool, load_cycles: int, store_cycles: int, miss_cycles: int) -> int:
    """Cycles of a scalar GM read or write through the data cache: a hit costs a UB-speed load or
    store, a miss a GM round trip."""
    if not hit:
        return miss_cycles
    return store_cycles if store else load_cycles


def scalar_exp(alu_ops: int, div_ops: int, alu_cycles: int, div_cycles: int) -> int:
    """Cycles of one ScalarExp call from the work the kernel declares for it (ALU operations and
    divisions): the machine knows the routine only by those counts."""
    return alu_ops * alu_cycles + div_ops * div_cycles


def dma_first_byte(latency: int, overhead: int, calls: int = 1, outstanding: int = 1) -> int:
    """Cycles from a DMA's start on its pipe to its first byte. A merged run of ``calls`` DataCopy
    calls pays each call's ``overhead`` one after the other, but up to ``outstanding`` calls wait for
    their first byte at once, so the run pays ``latency`` once per group of ``outstanding`` calls
    (``outstanding`` 1: every call holds the pipe through its whole latency)."""
    return overhead * calls + latency * -(-calls // outstanding)


def vec_call_scalar(api_cycles: int, loop_cycles: int) -> int:
    """Scalar cycles the scalar unit spends on one count-form vector call before its hand-over: the
    mask set-up (``api_cycles``) and the loop and address work around the call (``loop_cycles``:
    loop counter, compare and branch, offset arithmetic, LocalTensor slicing)."""
    return api_cycles + loop_cycles


def cover(start: int, end: int, covered: int) -> tuple[int, int]:
    """Busy accounting as a union of intervals: the work ``[start, end)`` adds the part of it past
    ``covered`` (the end of the union so far); returns ``(added, new covered)``."""
    if end <= covered:
        return 0, covered
    return end - (start if start > covered else covered), end
