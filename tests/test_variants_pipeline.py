"""Closed-form copy-in -> compute -> copy-out pipelines: what double buffering can and cannot buy, and
the critical-path attribution of such pipelines against their closed forms.

A stage's time comes from profile fields by the formulas of tests/test_hw_support.py (never from
the machine's cost code). Flag cycles are 0 and GM bandwidth is not limiting, so the steady-state
period is exactly max(in + vec, vec + out) with one buffer and max(in, vec, out) with two.
"""

from hypothesis import given, settings
from hypothesis import strategies as st
from test_hw_support import copy_compute_copy, dma, dma_cycles, run, vec_issue, vec_latency

from cgdr_des.hw import load_profile
from cgdr_des.isa import PipeBarrier, VecOp
from cgdr_des.results.attribution import attribute_run

OVERRIDES = {"flag_cycles": 0, "gm_bandwidth_gbps": 1e5}
P = load_profile("atlas-300i-duo", OVERRIDES)


def _stage_times(in_b: int, out_b: int, n: int) -> tuple[int, int, int]:
    return (dma_cycles(P, in_b, read=True), vec_issue(P, "Mul", "fp32", n) + vec_latency(P, "Mul", "fp32"),
            dma_cycles(P, out_b, read=False))


def _period(in_b: int, out_b: int, n: int, buffer_num: int) -> int:
    """Makespan growth per tile between a 24- and a 12-tile run: the steady-state period."""
    ops = [VecOp("Mul", "fp32", n)]
    spans = [run([copy_compute_copy(k, buffer_num, in_b, out_b, ops)], **OVERRIDES).makespan for k in (12, 24)]
    return (spans[1] - spans[0]) // 12


sizes = st.sampled_from([1024, 4096, 16384, 32768])


@settings(max_examples=12, deadline=None)
@given(in_b=sizes, out_b=sizes, n=st.sampled_from([512, 4096, 16384]))
def test_two_buffers_reach_the_slowest_stage_and_are_never_slower(in_b, out_b, n):
    t_in, t_vec, t_out = _stage_times(in_b, out_b, n)
    single, double = _period(in_b, out_b, n, 1), _period(in_b, out_b, n, 2)
    assert single == max(t_in + t_vec, t_vec + t_out)
    assert double == max(t_in, t_vec, t_out)
    assert double <= single
    ops = [VecOp("Mul", "fp32", n)]
    whole = [run([copy_compute_copy(16, bn, in_b, out_b, ops)], **OVERRIDES).makespan for bn in (1, 2)]
    assert whole[1] <= whole[0]


def test_a_serial_program_attributes_each_stage_to_its_pipe():
    """DMA in, barrier, vector op, barrier, DMA out, barrier: the scalar unit waits for each in turn,
    so the critical path holds each stage's closed-form time on its own pipe."""
    in_b, out_b, n = 16384, 8192, 4096
    t_in, t_vec, t_out = _stage_times(in_b, out_b, n)
    prog = [dma("GM2UB", in_b), PipeBarrier("ALL"), VecOp("Mul", "fp32", n), PipeBarrier("ALL"),
            dma("UB2GM", out_b), PipeBarrier("ALL")]
    r = run([prog], **OVERRIDES)
    a = attribute_run(r)
    assert (a.MTE2, a.V, a.MTE3, a.flags) == (t_in, t_vec, t_out, 0)
    assert a.launch == P.kernel_launch_cycles + P.scalar_dispatch_cycles  # up to the first hand-over
    assert a.launch + a.S + a.V + a.MTE2 + a.MTE3 + a.flags == a.makespan == r.makespan
    assert a.barrier_V == t_vec and a.exposed_dma == t_in + t_out


def test_an_input_bound_double_buffered_pipeline_is_bound_by_mte2():
    in_b, out_b, n = 32768, 1024, 512
    t_in, _, _ = _stage_times(in_b, out_b, n)
    r = run([copy_compute_copy(40, 2, in_b, out_b, [VecOp("Mul", "fp32", n)])], **OVERRIDES)
    a = attribute_run(r)
    assert a.bounding_part == "MTE2"
    assert a.launch + a.S + a.V + a.MTE2 + a.MTE3 + a.flags == r.makespan
    # MTE2 runs back to back: its 40 transfers fill the critical path but for what overlaps S's issue
    assert 40 * t_in - a.S <= a.MTE2 <= 40 * t_in
