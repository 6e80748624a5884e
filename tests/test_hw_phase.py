"""``phase`` fidelity: compute runs compiled to Macros, timed alone, replayed; agreement with ``instr``."""

import pytest
from test_hw_support import copy_compute_copy, dma, machine, rows, run, vec, vec_issue, vec_latency

from cgdr_des.hw import load_profile
from cgdr_des.hw.phase import PhaseCompiler, TimedMacro, balanced, is_compute
from cgdr_des.isa import (
    AllocTensor,
    EventHandle,
    Macro,
    PipeBarrier,
    Scalar,
    ScalarGm,
    SetFlag,
    Tag,
    VecOp,
    WaitFlag,
)

P = load_profile("atlas-300i-duo")


def test_what_counts_as_compute():
    assert all(is_compute(r) for r in [Scalar("alu"), ScalarGm(0, 4), vec(), PipeBarrier("V"), SetFlag("S_V", 1),
                                       WaitFlag("V_S", 0), SetFlag("V_V", 2)])
    assert not any(is_compute(r) for r in [PipeBarrier("ALL"), PipeBarrier("MTE2"), SetFlag("MTE2_V", 0),
                                           WaitFlag("V_MTE3", 0), SetFlag("S_V", EventHandle()), dma("GM2UB", 64),
                                           AllocTensor("q"), Tag("x")])


def test_balanced_runs():
    assert balanced([SetFlag("S_V"), WaitFlag("S_V"), SetFlag("V_S", 1), vec(), WaitFlag("V_S", 1)])
    assert not balanced([SetFlag("V_S"), vec()])                       # consumed after the run
    assert not balanced([WaitFlag("V_S"), SetFlag("V_S")])              # waits for a set made before
    assert not balanced([SetFlag("S_V", 0), WaitFlag("S_V", 1)])


def test_macro_numbers_match_the_closed_form():
    run_ = [vec("Mul", 640), PipeBarrier("V"), vec("Add", 640), SetFlag("V_S"), WaitFlag("V_S"), Scalar("alu", 3)]
    m = PhaseCompiler(P).macro(run_)
    hand = P.vec_api_scalar_cycles + P.scalar_dispatch_cycles
    mul_end = hand + vec_issue(P, "Mul", "fp32", 640) + vec_latency(P, "Mul", "fp32")
    add_start = max(mul_end, 2 * hand + P.scalar_dispatch_cycles)        # behind the barrier
    fire = add_start + vec_issue(P, "Add", "fp32", 640) + vec_latency(P, "Add", "fp32") + P.flag_cycles
    assert (m.v_start, m.v_end) == (hand, fire)
    assert m.s_cycles == fire + P.flag_cycles + 3 * P.scalar_alu_cycles
    assert dict(m.counts) == {"vec": 2, "barrier_V": 1, "set_V_S": 1, "wait_V_S": 1, "scalar_alu": 3}
    assert isinstance(m, TimedMacro) and m.s_stall > 0 and 0 < m.v_busy <= m.v_end - m.v_start


def test_compile_keeps_sync_with_other_pipes_explicit():
    recs = [Scalar("alu"), vec(), PipeBarrier("V"), vec(), dma("GM2UB", 1024), vec(), SetFlag("V_S"),
            Scalar("alu"), WaitFlag("V_S"), PipeBarrier("ALL"), Scalar("ub_load")]
    out = PhaseCompiler(P).compile(recs)
    kinds = [type(r).__name__ for r in out]
    assert kinds == ["TimedMacro", "Dma", "TimedMacro", "PipeBarrier", "Scalar"]
    c = PhaseCompiler(P)
    unbalanced = [vec(), SetFlag("V_S"), dma("GM2UB", 64), Scalar("alu"), WaitFlag("V_S")]
    assert c.compile(unbalanced) == unbalanced and c.kept_runs == 2


def _phase_program(program):
    """The program with every Tag segment compiled, as the kernel does at phase fidelity."""
    compiler, out, seg = PhaseCompiler(P), [], []
    for rec in program:
        if isinstance(rec, Tag):
            out.extend(compiler.compile(seg))
            out.append(rec)
            seg = []
        else:
            seg.append(rec)
    return out + compiler.compile(seg)


def test_counts_are_those_of_the_instr_run():
    prog = list(copy_compute_copy(6, 1, 4096, 4096, [vec("Mul", 512), vec("Exp", 512)]))
    prog += [Tag("dot")] + [r for _ in range(5) for r in
                            (vec(), VecOp("WholeReduceSum", "fp32", 128), SetFlag("V_S"), WaitFlag("V_S"),
                             Scalar("ub_load", 2))]
    instr, phase = run([prog]), run([_phase_program(prog)])
    assert instr.counts == phase.counts


@pytest.mark.parametrize("buffer_num", [1, 2])
def test_closed_compute_between_queue_flags_times_exactly(buffer_num):
    prog = list(copy_compute_copy(30, buffer_num, 8192, 4096, [vec("Exp", 2048), vec("Add", 2048)]))
    instr, phase = run([prog]), run([_phase_program(prog)])
    assert phase.makespan == instr.makespan
    assert phase.cores[0]["busy_V"] == instr.cores[0]["busy_V"]


def test_mixed_program_agrees_within_tolerance():
    prog = []
    for i in range(20):
        prog += [Tag("P", 0, 0, -1, i), dma("GM2UB", 8192, gm_addr=i * 8192)]
        prog += [r for _ in range(8) for r in (vec(), VecOp("WholeReduceSum", "fp32", 128), SetFlag("V_S"),
                                              WaitFlag("V_S"), Scalar("ub_load", 2))]
        prog += [Scalar("ub_load"), SetFlag("S_V"), WaitFlag("S_V"), vec("Axpy"), PipeBarrier("V")] * 10
    instr, phase = run([prog] * 4), run([_phase_program(prog)] * 4)
    assert abs(phase.makespan - instr.makespan) <= 0.02 * instr.makespan


def test_a_plain_macro_runs_as_the_isa_says():
    m = Macro("m", s_cycles=40, v_start=5, v_end=25)
    r = run([[vec("Exp", 3200), m, Scalar("alu")]])
    exp, mac_v = rows(r, pipe="V")
    mac_s, alu = rows(r, pipe="S")
    assert mac_s["end"] - mac_s["start"] == 40 and alu["start"] == mac_s["end"]
    assert mac_v["start"] == max(mac_s["start"] + 5, exp["start"] + vec_issue(P, "Exp", "fp32", 3200))
    assert mac_v["end"] - mac_v["start"] == 20
    assert r.cores[0]["busy_V"] == exp["end"] - exp["start"] + 20     # a plain Macro's span counts as busy
    assert machine().run([[m]]).counts[0] == {}
