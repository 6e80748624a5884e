"""Copy-in -> compute -> copy-out through TQues: steady-state period against the closed forms.

With BUFFER_NUM=1 every stage waits for the other's buffer, period = max(in + vec, vec + out);
with BUFFER_NUM=2 (TPipe double buffering) the stages overlap, period = max(in, vec, out)
(docs/hardware.md §2.7). ``in``/``out`` are lone DMAs (first byte + bytes at the per-core peak),
``vec`` the barrier-chained compute (closed by a last barrier, so tiles do not overlap on V). Flag
cycles are set to 0 so the period is exactly the closed form, and GM bandwidth is made non-limiting.
"""

import pytest
from test_hw_support import copy_compute_copy, dma_cycles, rows, run, vec_issue, vec_latency

from cgdr_des.hw import load_profile
from cgdr_des.isa import VecOp

OVERRIDES = {"flag_cycles": 0, "gm_bandwidth_gbps": 1e5}
P = load_profile("atlas-300i-duo", OVERRIDES)
N_TILES = 120


def _vec_time(ops) -> int:
    return sum(vec_issue(P, o.op, o.dtype, o.n) + vec_latency(P, o.op, o.dtype) for o in ops)


def _period(r) -> int:
    """Start-to-start distance of the first V op of consecutive tiles in the middle of the run."""
    first = {}
    for d in rows(r, pipe="V"):
        if d["op"] in ("Mul", "Add", "Axpy", "Exp"):
            first.setdefault(d["chunk"], d["start"])
    middle = range(N_TILES // 3, 2 * N_TILES // 3)
    periods = {first[i + 1] - first[i] for i in middle}
    assert len(periods) == 1, periods
    return periods.pop()


CASES = {   # (in bytes, out bytes, vector ops): which stage dominates
    "in-bound": (16384, 4096, [VecOp("Mul", "fp32", 256)] * 2),
    "vec-bound": (4096, 4096, [VecOp("Exp", "fp32", 4096)] * 4),
    "out-bound": (4096, 32768, [VecOp("Add", "fp32", 512)] * 3),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("buffer_num", [1, 2])
def test_steady_state_period_matches_the_closed_form(case, buffer_num):
    in_b, out_b, ops = CASES[case]
    t_in, t_out, t_vec = dma_cycles(P, in_b, read=True), dma_cycles(P, out_b, read=False), _vec_time(ops)
    r = run([copy_compute_copy(N_TILES, buffer_num, in_b, out_b, ops)], **OVERRIDES)
    expected = max(t_in + t_vec, t_vec + t_out) if buffer_num == 1 else max(t_in, t_vec, t_out)
    assert _period(r) == expected
    dominant = {"in-bound": t_in, "vec-bound": t_vec, "out-bound": t_out}[case]
    assert dominant == max(t_in, t_vec, t_out)


def test_without_a_closing_barrier_the_next_tile_overlaps_the_last_latency():
    in_b, out_b, ops = CASES["vec-bound"]
    r = run([copy_compute_copy(N_TILES, 2, in_b, out_b, ops, close_compute=False)], **OVERRIDES)
    last = ops[-1]
    assert _period(r) == _vec_time(ops) - vec_latency(P, last.op, last.dtype)


def test_double_buffering_shortens_the_run():
    in_b, out_b, ops = CASES["in-bound"]
    single = run([copy_compute_copy(N_TILES, 1, in_b, out_b, ops)], **OVERRIDES).makespan
    double = run([copy_compute_copy(N_TILES, 2, in_b, out_b, ops)], **OVERRIDES).makespan
    assert double < single


def test_pipeline_with_default_flag_costs_runs_clean_and_accounts_bytes():
    in_b, out_b, ops = CASES["vec-bound"]
    r = run([copy_compute_copy(20, 2, in_b, out_b, ops)])
    assert r.gm_bytes_read == 20 * in_b and r.gm_bytes_written == 20 * out_b
    assert len(rows(r, pipe="MTE2", op="DataCopy:GM2UB")) == 20
    assert len(rows(r, pipe="MTE3", op="DataCopy:UB2GM")) == 20
    # TPipe inserted one MTE2_V and one V_MTE2 pair per tile, V_MTE3 / MTE3_V likewise
    for op, pipe in [("SetFlag:MTE2_V", "MTE2"), ("WaitFlag:MTE2_V", "V"), ("SetFlag:V_MTE3", "V"),
                     ("WaitFlag:V_MTE3", "MTE3"), ("SetFlag:MTE3_V", "MTE3"), ("SetFlag:V_MTE2", "V")]:
        assert len(rows(r, pipe=pipe, op=op)) == 20, op
    # the first two AllocTensors of a queue find fresh buffers: no wait
    assert len(rows(r, pipe="MTE2", op="WaitFlag:V_MTE2")) == 18
    assert len(rows(r, pipe="V", op="WaitFlag:MTE3_V")) == 18


def test_tbuf_carves_ub_without_events():
    from cgdr_des.isa import AllocTensor, InitBuffer
    r = run([[InitBuffer("tmp", "VECCALC", 1, 1000), AllocTensor("tmp"), VecOp("Mul", "fp32", 64)]])
    assert not rows(r, op="SetFlag:") and not rows(r, op="WaitFlag:")
