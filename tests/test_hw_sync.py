"""Synchronisation: flags, barriers, bounded queues, event ids, and the scalar unit's own costs."""

import math

from test_hw_support import dma, dma_cycles, rows, run, vec, vec_issue, vec_latency

from cgdr_des.hw import load_profile
from cgdr_des.isa import (
    AllocEventID,
    EventHandle,
    FetchEventID,
    PipeBarrier,
    ReleaseEventID,
    Scalar,
    ScalarGm,
    SetFlag,
    VecOp,
    WaitFlag,
)
from cgdr_des.kernel.emit import scalar_exp_call

P = load_profile("atlas-300i-duo")
F = P.flag_cycles


def test_v_to_s_flag_stalls_the_scalar_unit_until_v_has_drained():
    r = run([[vec("Exp", 2048), SetFlag("V_S"), WaitFlag("V_S"), Scalar("alu")]])
    (exp,) = rows(r, pipe="V", op="Exp")
    (s_next,) = rows(r, pipe="S", op="alu")
    # SetFlag fires F after V completed, the scalar unit consumes it then and goes on F later
    assert s_next["start"] == exp["end"] + F + F
    assert r.cores[0]["stall_S"] > 0


def test_set_flag_fires_after_everything_before_it_completed_not_just_issued():
    # a long-latency Exp then a short Add, pipelined: the flag must wait for the later completion
    r = run([[vec("Exp", 640), vec("Add", 64), SetFlag("V_S"), WaitFlag("V_S")]])
    exp, add = rows(r, pipe="V", op="Exp")[0], rows(r, pipe="V", op="Add")[0]
    assert add["start"] == exp["start"] + vec_issue(P, "Exp", "fp32", 640)    # pipelined behind the issue
    assert add["end"] < exp["end"]
    (setf,) = rows(r, pipe="V", op="SetFlag:V_S")
    assert setf["end"] == exp["end"] + F


def test_s_to_v_flag_makes_v_wait_for_the_scalar_unit():
    r = run([[Scalar("div", 10), SetFlag("S_V"), vec("Mul")]])
    # SetFlag<S_V> is executed by S; an unrelated V op does not wait for it ...
    assert rows(r, pipe="V", op="Mul")[0]["start"] > P.kernel_launch_cycles
    r = run([[WaitFlag("S_V"), vec("Mul"), Scalar("div", 10), SetFlag("S_V")]])
    (mul,) = rows(r, pipe="V", op="Mul")
    (setf,) = rows(r, pipe="S", op="SetFlag:S_V")
    # ... but one behind WaitFlag<S_V> starts only after the set fires (+ the wait's cycle)
    assert mul["start"] == setf["end"] + F


def test_pipe_barrier_all_waits_for_every_pipe_to_drain():
    r = run([[dma("GM2UB", 4096), vec("Exp", 4096), PipeBarrier("ALL"), Scalar("alu")]])
    (d,) = rows(r, pipe="MTE2")
    (e,) = rows(r, pipe="V", op="Exp")
    (s_next,) = rows(r, pipe="S", op="alu")
    assert s_next["start"] == max(d["end"], e["end"])
    assert d["end"] - d["start"] == dma_cycles(P, 4096, read=True)


def test_pipe_barrier_v_does_not_stop_the_scalar_unit():
    r = run([[vec("Exp", 4096), PipeBarrier("V"), Scalar("alu")]])
    (s_next,) = rows(r, pipe="S", op="alu")
    assert s_next["start"] < rows(r, pipe="V", op="Exp")[0]["end"]


def test_a_full_queue_stalls_the_scalar_unit_until_the_oldest_entry_starts():
    depth, n_ops, n = 4, 12, 64 * 100                # 100 issue cycles per op: V is the bottleneck
    r = run([[vec("Mul", n) for _ in range(n_ops)] + [Scalar("alu")]], queue_depth=depth)
    v = rows(r, pipe="V")
    iss = vec_issue(P, "Mul", "fp32", n)
    assert [d["start"] - v[0]["start"] for d in v] == [k * iss for k in range(n_ops)]
    (s_next,) = rows(r, pipe="S", op="alu")
    # the last op could only be handed over when the op `depth` places before it started
    assert s_next["start"] == v[n_ops - 1 - depth]["start"] + P.scalar_dispatch_cycles
    r_deep = run([[vec("Mul", n) for _ in range(n_ops)] + [Scalar("alu")]], queue_depth=32)
    assert rows(r_deep, pipe="S", op="alu")[0]["start"] < s_next["start"]
    assert r.cores[0]["stall_S"] > r_deep.cores[0]["stall_S"]


def test_event_handles_are_filled_lowest_free_first():
    a, b, c, fetched = EventHandle(), EventHandle(), EventHandle(), EventHandle()
    prog = [AllocEventID("V_MTE2", a), AllocEventID("V_MTE2", b), ReleaseEventID("V_MTE2", a),
            FetchEventID("V_MTE2", fetched), AllocEventID("V_MTE2", c)]
    run([prog])
    assert (a.id, b.id, fetched.id, c.id) == (0, 1, 0, 0)


def test_handles_resolve_in_set_and_wait():
    h = EventHandle()
    r = run([[FetchEventID("V_S", h), vec(), SetFlag("V_S", h), WaitFlag("V_S", h), Scalar("alu")]])
    (setf,) = rows(r, pipe="V", op="SetFlag:V_S")
    assert h.id == 0 and setf["elements"] == 0


def test_scalar_gm_goes_through_the_data_cache():
    line = P.dcache_line_bytes
    prog = [ScalarGm(0, 4), ScalarGm(4, 4), ScalarGm(line, 4), ScalarGm(line - 2, 4), ScalarGm(8, 4, store=True)]
    s = rows(run([prog]), pipe="S")
    cost = [d["end"] - d["start"] for d in s]
    miss, hit_ld, hit_st = P.dcache_miss_cycles, P.scalar_ub_load_cycles, P.scalar_ub_store_cycles
    assert cost == [miss, hit_ld, miss, hit_ld, hit_st]        # line-crossing access hits both lines


def test_data_cache_evicts_least_recently_used_lines():
    n_lines = P.dcache_bytes // P.dcache_line_bytes
    line = P.dcache_line_bytes
    prog = [ScalarGm(k * line, 4) for k in range(n_lines)]         # fill it
    prog += [ScalarGm(0, 4), ScalarGm(n_lines * line, 4)]           # touch line 0, then evict the LRU (1)
    prog += [ScalarGm(0, 4), ScalarGm(line, 4)]
    cost = [d["end"] - d["start"] for d in rows(run([prog]), pipe="S")][-4:]
    assert cost == [P.scalar_ub_load_cycles, P.dcache_miss_cycles, P.scalar_ub_load_cycles, P.dcache_miss_cycles]


def _exp_cycles_by_counting(arg: float) -> int:
    """Independent count of the kernel's ScalarExp (chunk_gated_delta_rule.h:263-284) ops."""
    k = 0 if abs(arg) <= 1 else math.ceil(math.log2(abs(arg)))
    while abs(arg) / 2**k > 1:          # guard log2 rounding at exact powers of two
        k += 1
    alu = 6 + 3 * k + 4 * 12 + 2 * k
    div = 12 + (1 if arg < 0 else 0)
    return alu * P.scalar_alu_cycles + div * P.scalar_div_cycles


def test_scalar_exp_cost_follows_its_argument():
    args = [0.0, 0.5, -1.0, 3.0, -37.5, 1024.0, 1e6]
    s = rows(run([[scalar_exp_call(x) for x in args]]), pipe="S")
    assert [d["end"] - d["start"] for d in s] == [_exp_cycles_by_counting(x) for x in args]


def test_vec_api_overhead_and_dispatch_delay_the_hand_over():
    r = run([[vec("Mul")]])
    (mul,) = rows(r, pipe="V")
    assert mul["start"] == P.kernel_launch_cycles + P.vec_api_scalar_cycles + P.scalar_dispatch_cycles
    assert mul["end"] - mul["start"] == vec_issue(P, "Mul", "fp32", 128) + vec_latency(P, "Mul", "fp32")


def test_flag_cycles_override():
    r = run([[vec("Exp", 2048), SetFlag("V_S"), WaitFlag("V_S"), Scalar("alu")]], flag_cycles=5)
    assert rows(r, pipe="S", op="alu")[0]["start"] == rows(r, pipe="V", op="Exp")[0]["end"] + 10


def test_dotfp32_pattern_round_trip_per_call():
    """DotFp32 (kernel notes §5 Phase 4): Mul, WholeReduceSum, V->S, scalar reads; each call a round trip."""
    calls = 10
    prog = []
    for _ in range(calls):
        prog += [VecOp("Mul", "fp32", 128), VecOp("WholeReduceSum", "fp32", 128), SetFlag("V_S"),
                 WaitFlag("V_S"), Scalar("ub_load", 2)]
    r = run([prog])
    mul = rows(r, pipe="V", op="Mul")
    period = {b["start"] - a["start"] for a, b in zip(mul, mul[1:], strict=False)}
    hand_over = P.vec_api_scalar_cycles + P.scalar_dispatch_cycles
    # Mul starts at s; WRS starts when both Mul's issue ended and the scalar unit handed it over
    wrs_start = max(vec_issue(P, "Mul", "fp32", 128), hand_over)
    wrs_done = wrs_start + vec_issue(P, "WholeReduceSum", "fp32", 128) + vec_latency(P, "WholeReduceSum", "fp32")
    # the flag fires F after WRS completes, the wait takes F, 2 loads, then the next Mul's hand-over
    expected = wrs_done + F + F + 2 * P.scalar_ub_load_cycles + hand_over
    assert period == {expected}
