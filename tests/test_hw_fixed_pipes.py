"""The Cube side's pipes (MTE1, M) and fixed-cost records on V, against closed forms; buffer hazards.

Records here are synthetic: a class with a ``pipe`` class attribute, ``reads`` / ``writes``, and its
own ``issue`` / ``latency`` returned by the cost function the test gives the machine, so every expected
cycle is written out from the profile's dispatch cycles and those two numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.hw import Machine, load_profile
from cgdr_des.isa import PipeBarrier, Scalar

P = load_profile("atlas-300i-duo")
T0, DISP = P.kernel_launch_cycles, P.scalar_dispatch_cycles


@dataclass(frozen=True)
class OnM:
    pipe: ClassVar[str] = "M"
    issue: int
    latency: int
    reads: tuple = ()
    writes: tuple = ()


@dataclass(frozen=True)
class OnMTE1(OnM):
    pipe: ClassVar[str] = "MTE1"


@dataclass(frozen=True)
class OnV(OnM):
    pipe: ClassVar[str] = "V"


def cost(_profile, rec) -> tuple[int, int]:
    return rec.issue, rec.latency


def run(program, keep_ops=True):
    return Machine(P, keep_ops=keep_ops, fixed_costs=cost).run([program])


def ops(result, pipe):
    return [(r[2], r[8], r[9]) for r in result.ops if r[1] == pipe]


@pytest.mark.parametrize(("n", "issue", "latency"), [(1, 8, 20), (5, 8, 20), (7, 1, 1), (4, 30, 30)])
def test_back_to_back_records_are_pipelined_on_their_pipe(n, issue, latency):
    """The scalar unit hands one record per DISP cycles; the pipe takes the next when the previous
    one's issue ends: start_k = T0 + DISP + k * max(issue, DISP), end_k = start_k + latency."""
    r = run([OnM(issue, latency)] * n)
    step = max(issue, DISP)
    expected = [("OnM", T0 + DISP + k * step, T0 + DISP + k * step + latency) for k in range(n)]
    assert ops(r, "M") == expected
    core = r.cores[0]
    assert core["busy_M"] == (n - 1) * step + latency if step <= latency else n * latency
    assert r.makespan == expected[-1][2]


def test_pipes_run_in_parallel_and_pipe_barrier_all_waits_for_each():
    """MTE1 and M work at once; PIPE_ALL on S waits for the later of them, then S goes on."""
    r = run([OnMTE1(50, 60), OnM(10, 100), PipeBarrier("ALL"), Scalar("alu")])
    (_, s1, e1), = ops(r, "MTE1")
    (_, s2, e2), = ops(r, "M")
    assert (s1, e1) == (T0 + DISP, T0 + DISP + 60)
    assert (s2, e2) == (T0 + 2 * DISP, T0 + 2 * DISP + 100)
    alu = [row for row in r.ops if row[2] == "alu"][0]
    assert alu[8] == max(e1, e2)
    assert {"busy_M", "busy_MTE1", "stall_M", "stall_MTE1"} <= set(r.cores[0])


def test_pipe_barrier_on_m_holds_m_until_everything_before_completed():
    r = run([OnM(5, 50), PipeBarrier("M"), OnM(5, 50)])
    (_, s1, e1), (_, s2, _) = [x for x in ops(r, "M") if x[0] == "OnM"]
    assert s2 == e1                      # not s1 + 5: the barrier waited for completion
    assert r.cores[0]["stall_M"] == e1 - (s1 + 5)


def test_a_read_before_the_write_it_depends_on_completed_is_a_hazard():
    """V reads L0C while the Mmad writing it is still running, with nothing ordering them."""
    with pytest.raises(KernelDiagnostic, match=r"hazard: OnV on V \(record #1\) reads L0C:0 from cycle"):
        run([OnM(10, 100, writes=("L0C:0",)), OnV(4, 8, reads=("L0C:0",))])


def test_a_write_over_contents_still_being_read_is_a_hazard():
    with pytest.raises(KernelDiagnostic, match="overwrites L0C:0"):
        run([OnM(1, 1, writes=("L0C:0",)), PipeBarrier("ALL"), OnV(4, 80, reads=("L0C:0",)),
             OnM(1, 1, writes=("L0C:0",))])


def test_ordered_accesses_are_clean_and_other_buffers_do_not_interfere():
    program = [OnM(10, 100, writes=("L0C:0",)), OnM(10, 20, writes=("L0C:1",)), PipeBarrier("ALL"),
               OnV(4, 8, reads=("L0C:0",)), OnM(10, 100, writes=("L0C:1",))]
    r = run(program)          # the second L0C:1 write has no reader of L0C:1's old contents
    assert [x[0] for x in ops(r, "V")] == ["OnV"]
    r2 = run([OnM(10, 100, writes=("L0C:0",)), OnV(4, 8, reads=("L0C:1",))])
    assert r2.makespan > 0


def test_a_pipe_the_aiv_does_not_have_is_refused():
    @dataclass(frozen=True)
    class OnX(OnM):
        pipe: ClassVar[str] = "FIXPIPE"

    with pytest.raises(KernelDiagnostic, match="no pipe 'FIXPIPE'"):
        run([OnX(1, 1)])


def test_vector_programs_report_no_cube_columns():
    r = run([Scalar("alu")])
    assert "busy_M" not in r.cores[0]




def test_a_gm_to_l1_copy_runs_on_mte2_and_its_uint16_fields_are_checked():
    from cgdr_des.isa import DataCopyParams, Dma, Nd2NzParams

    r = run([Dma("GM2L1", 64 * 128 * 2, Nd2NzParams(1, 64, 128, 128, 64), 0, 0)])
    (row,) = [x for x in r.ops if x[1] == "MTE2"]
    assert row[2] == "DataCopy:GM2L1" and row[11] == 64 * 128 * 2
    with pytest.raises(KernelDiagnostic, match=r"Nd2NzParams.n_value = 70000 is outside \[0, 65535\]"):
        run([Dma("GM2L1", 64, Nd2NzParams(1, 70000, 128, 128, 64), 0, 0)])
    with pytest.raises(KernelDiagnostic, match="a GM -> L1 copy takes Nd2NzParams"):
        run([Dma("GM2L1", 64, DataCopyParams(1, 2, 0, 0), 0, 0)])
