"""A replayed compute run (TimedMacro) behind a busy V pipe against the machine running its records.

``phase`` fidelity times each compute run once with V idle, plus the two late scans that say how S's
end and V's end and free move when V is still busy with earlier work (TimedMacro.late). Here every
compute run of small kernel launches (the source kernel and every double-buffering variant) runs on
the machine behind prefixes that leave V busy in different ways -- nothing, one vector op (free
before done: its latency), one vector op and a barrier, a held V part -- once as its own records and
once as the compiled Macro: the scalar unit's last cycle and V's last cycle must be the same.
"""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from cgdr_des.hw import load_profile
from cgdr_des.hw.compute_run import RunTiming
from cgdr_des.hw.dcache import DataCache, data_cache
from cgdr_des.hw.late_scan import late_numbers
from cgdr_des.hw.machine import Machine
from cgdr_des.hw.phase import PhaseCompiler, PhaseRecorder, TimedMacro, balanced, is_compute
from cgdr_des.hw.records import MacroStart
from cgdr_des.isa import Macro, PipeBarrier, Repeat, VecOp
from cgdr_des.kernel.functional import make_launch
from cgdr_des.kernel.launch import Shape
from cgdr_des.kernel.program import core_program
from cgdr_des.kernel.variants import variant_fields
from cgdr_des.simulation import CompileStage

P = load_profile("atlas-300i-duo")

#: what V is busy with as the run begins, free and done at one cycle (a hold): short and long
#: against the runs; the replay is exact
PREFIXES = {
    "idle": [],
    "short hold": [Macro("hold", 0, 0, 300)],
    "long hold": [Macro("hold", 0, 0, 200_000)],
}
#: prefixes where the replay is an upper bound: a vector op's latency runs past V's free cycle, and
#: the replay starts the run at its end (by at most the latency); a barrier leaves V's queue only as
#: it ends, and the late scan takes the queue's earlier entries as gone, so the records have one
#: queue slot fewer than the replay while it waits (S stalls a few cycles sooner)
BOUNDED = {
    "short op": ([VecOp("Muls", "fp32", 64)], P.vec_latency_cycles("Muls", "fp32")),
    "long op": ([VecOp("Exp", "fp32", 16384)], P.vec_latency_cycles("Exp", "fp32")),
    "op and barrier": ([VecOp("Exp", "fp32", 16384), PipeBarrier("V")], 10),
}


def kernel_runs(variant: str, repeats: bool = False) -> list[list]:
    """The distinct compute runs (balanced, two records or more) of a 70-token, dk = dv = 64 item
    (``repeats``: with their loops as isa.Repeat records, as the phase compiler gets them)."""
    lengths = np.array([70])
    shape = Shape(1, 70, 1, 1, 64, 64, 0.125, True)
    g = np.full((70, 1), -0.01, np.float32)
    launch = make_launch(shape, lengths, g, None, numerics="off", ub_size=P.ub_usable_bytes, aiv_num=P.aiv_num,
                         **variant_fields(variant))
    cap = PhaseRecorder(repeats=repeats)
    for _ in core_program(launch, 0, stage=CompileStage(cap)):
        pass
    runs, seen = [], set()
    for records in cap.phases:
        run = []
        for rec in [*records, None]:
            if rec is not None and is_compute(rec):
                run.append(rec)
                continue
            if len(run) >= 2 and balanced(run) and repr(run) not in seen:
                seen.add(repr(run))
                runs.append(run)
            run = []
    return runs


def ends(program: list) -> tuple[int, int]:
    """The scalar unit's last cycle and V's last cycle of ``program`` alone on the machine."""
    core = Machine(P, keep_ops=False).run([program]).cores[0]
    return core["busy_S"] + core["stall_S"], core["last_V"]


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["baseline", "all_same"])
def test_a_macro_behind_a_busy_v_ends_where_its_records_end(variant):
    runs = kernel_runs(variant)
    assert len(runs) >= 10
    late_runs = 0
    for run in runs:
        macro = PhaseCompiler(P).macro(run)     # a fresh data cache, as each machine run below has
        assert isinstance(macro, TimedMacro)
        late_runs += macro.s_waits
        for name, prefix in PREFIXES.items():
            assert ends([*prefix, macro]) == ends([*prefix, *run]), (name, run[:3])
        for name, (prefix, bound) in BOUNDED.items():
            (s_rep, v_rep), (s_rec, v_rec) = ends([*prefix, macro]), ends([*prefix, *run])
            assert abs(s_rep - s_rec) <= bound and abs(v_rep - v_rec) <= bound, (name, run[:3])
    assert late_runs >= 5       # runs whose S waits for V: the case the late numbers are for


@pytest.mark.parametrize("late", [1, 300, 200_000])
def test_a_scan_behind_a_busy_v_leaves_the_data_cache_as_the_idle_scan(late):
    """What PhaseCompiler._late_whole relies on to keep no copy of the cache after a run: scanned with V
    busy, the kernel's runs (loops as Repeats, extrapolated where steady) touch the data cache as
    scanned with V idle, from the same warm cache: the same lines in LRU order, hits and misses."""
    timer, warm = PhaseCompiler(P).timer, data_cache(P)
    runs = kernel_runs("baseline", repeats=True)
    assert sum(type(rec) is Repeat and rec.gm is not None for run in runs for rec in run) >= 3
    for run in runs:
        idle, busy = (DataCache(warm.line_bytes, warm.n_lines * warm.line_bytes) for _ in range(2))
        for dc in (idle, busy):
            dc.restore(warm.state())
        a, _ = timer.scan(run, 0, idle)
        b, _ = timer.scan(run, 0, busy, late, late)
        assert (list(busy.lines), busy.hits, busy.misses) == (list(idle.lines), idle.hits, idle.misses)
        assert b.s_cycles >= a.s_cycles
        timer.scan(run, 0, warm)      # the next run meets the cache this one left


def test_late_numbers_read_the_paths_from_v_start():
    """Made-up timings: outputs that moved with V's start give their path; one that did not, None."""
    idle = RunTiming(100, 5, 90, (), 0, 80, 0, 85)
    x = 101
    busy = RunTiming(100, x, x + 85, (), 0, 80, 0, x + 80)     # S's end did not move: no path to it
    assert late_numbers(idle, x, busy) == (None, 85, 80)


def test_a_macro_start_wakes_the_scalar_unit_only_if_it_had_to_wait():
    """MacroStart (what V tells the scalar unit of a TimedMacro whose end depends on V): read at once
    when V got there first, no SimPy step; waited on as an event when V gets there later."""
    first = MacroStart()
    first.succeed((5, 7))
    assert first.value == (5, 7) and first.event is None
    env, later, got = simpy.Environment(), MacroStart(), []

    def scalar_unit():
        assert later.value is None
        later.event = env.event()
        value = yield later.event
        got.append((env.now, value))

    def v_pipe():
        yield env.timeout(3)
        later.succeed((11, 13))

    env.process(scalar_unit())
    env.process(v_pipe())
    env.run()
    assert got == [(3, (11, 13))] and later.value == (11, 13)
