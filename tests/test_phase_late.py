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

from cgdr_des.hw import load_profile
from cgdr_des.hw.compute_run import RunTiming
from cgdr_des.hw.machine import Machine
from cgdr_des.hw.phase import PhaseCompiler, PhaseRecorder, TimedMacro, balanced, is_compute, late_numbers
from cgdr_des.isa import Macro, PipeBarrier, VecOp
from cgdr_des.kernel.functional import make_launch
from cgdr_des.kernel.launch import Shape
from cgdr_des.kernel.program import core_program
from cgdr_des.kernel.variants import variant_fields
from cgdr_des.simulation import CompileStage

P = load_profile("atlas-300i-duo")

#: what V is busy with as the run begins: free == done (a hold) or done past free (an op's latency),
#: short and long against the runs; each prefix entry leaves V's queue as it starts
PREFIXES = {
    "idle": [],
    "short op": [VecOp("Muls", "fp32", 64)],
    "long op": [VecOp("Exp", "fp32", 16384)],
    "long hold": [Macro("hold", 0, 0, 200_000)],
}
#: a barrier leaves V's queue only as it ends: the late scans take the queue's earlier entries as
#: gone, so while it waits the records have one queue slot fewer than the replay (S stalls a few
#: cycles sooner at a full queue)
BARRIER = [VecOp("Exp", "fp32", 16384), PipeBarrier("V")]


def kernel_runs(variant: str) -> list[list]:
    """The distinct compute runs (balanced, two records or more) of a 70-token, dk = dv = 64 item."""
    lengths = np.array([70])
    shape = Shape(1, 70, 1, 1, 64, 64, 0.125, True)
    g = np.full((70, 1), -0.01, np.float32)
    launch = make_launch(shape, lengths, g, None, numerics="off", ub_size=P.ub_usable_bytes, aiv_num=P.aiv_num,
                         **variant_fields(variant))
    cap = PhaseRecorder()
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
        (s_rep, v_rep), (s_rec, v_rec) = ends([*BARRIER, macro]), ends([*BARRIER, *run])
        assert 0 <= s_rec - s_rep <= 10 and s_rec - s_rep == v_rec - v_rep
    assert late_runs >= 5       # runs whose S waits for V: the case the late numbers are for


def test_late_numbers_read_the_paths_from_v_free_and_done():
    """Made-up timings: S's end moves with V's free (k_a) in the busy scan only where the done-only
    scan shows no path of its own; V's free has no path from V's done here."""
    idle = RunTiming(100, 5, 90, (), 0, 80, 0, 85)
    x = 101
    busy = RunTiming(x + 40, x, x + 85, (), 0, 80, 0, x + 80)     # every output moved by V's start
    done = RunTiming(100, 5, x + 10, (), 0, 80, 0, 85)             # only V's end sees V's done
    assert late_numbers(idle, x, busy, done) == (40, None, 85, 10, 80, None)
