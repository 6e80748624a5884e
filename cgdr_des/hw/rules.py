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
| vector issue and completion | :func:`vec_op` | V pipe, compute-run timer |
| PipeBarrier<X> on pipe X | :func:`barrier` | V and MTE pipes, compute-run timer |
| PipeBarrier<ALL> on S | :func:`barrier` (over every pipe's done) | scalar unit |
| SetFlag on a pipe | :func:`flag_set` | V and MTE pipes, compute-run timer |
| SetFlag on S | :func:`scalar_flag_set` | scalar unit, compute-run timer |
| WaitFlag (any side) | :func:`flag_wait` | scalar unit, pipes, compute-run timer |
| ``flag_double_set`` checks | :func:`set_while_set` | scalar unit, pipes, compute-run timer |
| queue hand-over | :func:`hand_over` | scalar unit, compute-run timer |
| scalar GM read/write | :func:`scalar_gm_l2` (``in_l2`` False without L2) | scalar unit, compute-run timer |
| ScalarExp cost | :func:`scalar_exp` | scalar unit, compute-run timer |
| DMA first byte | :func:`dma_first_byte` | MTE pipes (via :mod:`.dma`) |
| merged DataCopy run's rate | :func:`burst_cap` (per call: :func:`bus_cycles`) | MTE pipes (via :mod:`.dma`), GM bus |
| scalar cycles of one vector call | :func:`vec_call_scalar` | scalar unit, compute-run timer |
| busy as a union of intervals | :func:`cover` (inside the rules above) | V pipe, compute-run timer |
| entry start on its pipe | :func:`arrival` (written out in the pipe-side rules) | MTE pipes, Macro on V, timer |
| a fixed-cost instruction (Cube side) | :func:`fixed_op` | MTE1, M and V pipes |
"""

from __future__ import annotations

from math import ceil

from cgdr_des.integers import ceil_div


def arrival(free: int, issued: int) -> int:
    """The cycle an entry handed over at ``issued`` starts on a pipe that is free from ``free``."""
    return free if free > issued else issued


def vec_op(free: int, issued: int, n: int, params: tuple, covered: int) -> tuple[int, int, int, int, int]:
    """A vector op over ``n`` elements (``params`` = (width, cycles per repeat, latency)) handed
    over at ``issued`` to V, free from ``free``: ``(start, free, end, busy added, covered)``.

    It starts at its :func:`arrival`; V issues one repeat per ``width`` elements (at least one),
    ``cycles per repeat`` each, and is pipelined: it takes the next instruction when this one's
    issue ends; the result is complete ``latency`` cycles later; V is busy over [start, end)
    (:func:`cover`). Those are written out here, not called: this rule runs once per vector
    instruction of an ``instr`` run, where a call costs more than the arithmetic
    (``tests/test_hw_rules.py`` holds it to them)."""
    width, cycles_per_repeat, latency = params
    start = free if free > issued else issued
    free = start + (-(-n // width) if n > width else 1) * cycles_per_repeat
    end = free + latency
    if end <= covered:      # cover(start, end, covered), written out
        return start, free, end, 0, covered
    return start, free, end, end - (start if start > covered else covered), end


def barrier(free: int, issued: int, done: int) -> tuple[int, int]:
    """PipeBarrier<X> handed over at ``issued`` to pipe X, free from ``free`` (for ALL: the scalar
    unit, with ``free`` = ``issued`` = its clock): ``(start, end)``. It starts at its :func:`arrival`
    and the pipe goes on only once everything before it completed (``done``): ``end`` is the
    entry's end and the pipe's next free cycle. (The arrival is written out in this rule and the two
    flag rules below: each runs once per barrier or flag of an ``instr`` run, where a call costs more
    than the ``max``; ``tests/test_hw_rules.py`` holds them to :func:`arrival`.)"""
    start = free if free > issued else issued
    return start, (done if done > start else start)


def flag_set(free: int, issued: int, done: int, flag_cycles: int, covered: int) -> tuple[int, int, int, int, int]:
    """A SetFlag handed over at ``issued`` to a pipe free from ``free``: ``(start, free, fire, busy
    added, covered)``. It starts at its :func:`arrival` and fires ``flag_cycles`` after everything
    before it completed (``done``); later instructions on the pipe need not wait for it (only for its
    own cycles); the pipe is busy for the ``flag_cycles`` before it fires."""
    start = free if free > issued else issued
    fire = (done if done > start else start) + flag_cycles
    if fire <= covered:     # cover(fire - flag_cycles, fire, covered), written out
        return start, start + flag_cycles, fire, 0, covered
    busy_from = fire - flag_cycles
    return start, start + flag_cycles, fire, fire - (busy_from if busy_from > covered else covered), fire


def scalar_flag_set(t: int, last_consume: int, flag_cycles: int, stall_policy: bool) -> tuple[int, int]:
    """A SetFlag the scalar unit executes at ``t``: ``(fire, stall)``. Under the ``stall`` policy it
    first waits until the previous set of the flag is consumed."""
    stall = last_consume - t if stall_policy and last_consume > t else 0
    return t + stall + flag_cycles, stall


def flag_wait(free: int, issued: int, fire: int, flag_cycles: int, covered: int = 0
              ) -> tuple[int, int, int, int, int]:
    """A WaitFlag handed over at ``issued`` to a pipe free from ``free`` (on the scalar unit: ``free``
    = ``issued`` = its clock) consumes the set that fires at ``fire``: ``(start, consume, free, busy
    added, covered)``. It starts at its :func:`arrival` and consumes at the later of that and the
    set; the pipe is busy ``flag_cycles`` after that and goes on then."""
    start = free if free > issued else issued
    consume = fire if fire > start else start
    free = consume + flag_cycles
    if free <= covered:     # cover(consume, free, covered), written out: once per flag wait
        return start, consume, free, 0, covered
    return start, consume, free, free - (consume if consume > covered else covered), free


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


def scalar_exp(alu_ops: int, div_ops: int, alu_cycles: int, div_cycles: int) -> int:
    """Cycles of one ScalarExp call from the work the kernel declares for it (ALU operations and
    divisions): the machine knows the routine only by those counts."""
    return alu_ops * alu_cycles + div_ops * div_cycles


def dma_first_byte(latency: int, overhead: int, calls: int = 1, outstanding: int = 1) -> int:
    """Cycles from a DMA's start on its pipe to its first byte. A merged run of ``calls`` DataCopy
    calls pays each call's ``overhead`` one after the other, but up to ``outstanding`` calls wait for
    their first byte at once, so the run pays ``latency`` once per group of ``outstanding`` calls
    (``outstanding`` 1: every call holds the pipe through its whole latency)."""
    return overhead * calls + latency * ceil_div(calls, outstanding)


def burst_cap(nbytes: int, calls: int, run_first_byte: int, first_byte: int, cap: float) -> float:
    """The rate cap of a merged run of ``calls`` like DataCopy calls (``nbytes`` in all; phase
    fidelity's burst), whose first byte comes one call's ``first_byte`` after its start: the run's
    bytes spread evenly over what its calls take one after the other alone on the bus (their first
    bytes, ``run_first_byte`` in all (:func:`dma_first_byte`), and each call's bytes at ``cap``, rounded
    up to whole cycles as the GM bus ends a transfer), so that alone it ends when its last call would.

    Why spread, not the calls' latencies first and then all bytes at ``cap``: the calls move their
    bytes in short bursts between long first-byte waits, so the cores' row copies rarely take
    bandwidth at the same cycle; run back to back at ``cap`` the cores' merged runs would, and contend
    as the calls do not (representative: +0.035 % against ``instr`` that way, +0.003 % spread)."""
    return nbytes / (run_first_byte + calls * bus_cycles(nbytes / calls, cap) - first_byte)


def bus_cycles(nbytes: float, rate: float) -> int:
    """Whole cycles the GM bus (:mod:`~cgdr_des.hw.gm`) takes to move ``nbytes`` at ``rate``
    bytes/cycle alone: rounded up, at least one."""
    d = ceil(nbytes / rate - 1e-9)
    return d if d > 1 else 1


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


def fixed_op(free: int, issued: int, issue: int, latency: int, covered: int) -> tuple[int, int, int, int, int]:
    """An instruction of fixed cost (a Cube-side record: LoadData on MTE1, Mmad on M, an L0C drain on
    V) handed over at ``issued`` to a pipe free from ``free``: ``(start, free, end, busy added,
    covered)``. It starts at its :func:`arrival`, holds the pipe ``issue`` cycles and completes
    ``latency`` cycles after it started (``latency >= issue``)."""
    start = arrival(free, issued)
    end = start + (latency if latency > issue else issue)
    added, covered = cover(start, end, covered)
    return start, start + issue, end, added, covered


def scalar_gm_l2(hit: bool, in_l2: bool, store: bool, load_cycles: int, store_cycles: int, miss_cycles: int,
                 l2_hit_cycles: int) -> int:
    """Cycles of a scalar GM read or write through the data cache when L2 is tracked: a hit costs a
    UB-speed load or store; a miss whose lines a recent DataCopy left in L2 (``in_l2``) costs an L2
    round trip, any other miss a GM round trip (a write-allocating store fetches its line alike)."""
    if hit:
        return store_cycles if store else load_cycles
    return l2_hit_cycles if in_l2 else miss_cycles
