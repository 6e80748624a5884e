"""Vector pipe timing against the closed forms of docs/architecture.md §2 (issue and latency from profile fields)."""

import pytest
from test_hw_support import rows, run, vec, vec_issue, vec_latency

from cgdr_des.hw import load_profile
from cgdr_des.isa import PipeBarrier, Scalar, VecOp

P = load_profile("atlas-300i-duo")


@pytest.mark.parametrize("op, dtype, n", [("Mul", "fp32", 128), ("Axpy", "fp32", 1000), ("Exp", "fp32", 64),
                                          ("WholeReduceSum", "fp32", 256), ("Cast", "fp16", 300),
                                          ("Duplicate", "fp32", 1)])
@pytest.mark.parametrize("n_ops", [1, 7, 40])
def test_barrier_separated_ops_cost_n_times_issue_plus_latency(op, dtype, n, n_ops):
    prog = []
    for k in range(n_ops):
        if k:
            prog.append(PipeBarrier("V"))
        prog.append(VecOp(op, dtype, n))
    r = run([prog])
    v = rows(r, pipe="V", op=op)
    assert len(v) == n_ops
    assert v[-1]["end"] - v[0]["start"] == n_ops * (vec_issue(P, op, dtype, n) + vec_latency(P, op, dtype))


def test_without_barriers_ops_pipeline_behind_each_issue():
    n, n_ops = 640, 30                     # 10 issue cycles each: longer than the scalar hand-over
    iss, lat = vec_issue(P, "Mul", "fp32", n), vec_latency(P, "Mul", "fp32")
    assert iss > P.vec_api_scalar_cycles + P.scalar_dispatch_cycles
    r = run([[vec("Mul", n) for _ in range(n_ops)]])
    v = rows(r, pipe="V")
    assert [d["start"] - v[0]["start"] for d in v] == [k * iss for k in range(n_ops)]
    assert v[-1]["end"] - v[0]["start"] == n_ops * iss + lat


def test_short_ops_are_limited_by_the_scalar_hand_over():
    n_ops = 20                             # 2-cycle ops: the scalar unit hands one over every 5 cycles
    per_op = P.vec_api_scalar_cycles + P.scalar_dispatch_cycles
    assert vec_issue(P, "Mul", "fp32", 128) < per_op
    r = run([[vec("Mul", 128) for _ in range(n_ops)]])
    v = rows(r, pipe="V")
    assert v[0]["start"] == P.kernel_launch_cycles + per_op
    assert [b["start"] - a["start"] for a, b in zip(v, v[1:], strict=False)] == [per_op] * (n_ops - 1)


def test_whole_reduce_sum_costs_seven_cycles_per_repeat_and_exp_half_width():
    r = run([[VecOp("WholeReduceSum", "fp32", 64 * 5), PipeBarrier("V"), VecOp("Exp", "fp32", 128),
              PipeBarrier("V"), VecOp("Exp", "fp16", 128)]])
    wrs, exp32, exp16 = rows(r, pipe="V", op="WholeReduceSum") + rows(r, pipe="V", op="Exp")
    assert wrs["end"] - wrs["start"] == 7 * 5 + P.vec_delay_cycles["WholeReduceSum"]["fp32"] + 15
    assert exp32["end"] - exp32["start"] == 128 // 32 + 12 + 15
    assert exp16["end"] - exp16["start"] == 128 // 32 + 12 + 15     # Exp: 32 lanes for both dtypes


def test_width_override_changes_issue():
    r = run([[vec("Mul", 640)]], vec_width={"Mul": {"fp32": 32}})
    (d,) = rows(r, pipe="V")
    assert d["end"] - d["start"] == 640 // 32 + vec_latency(P, "Mul", "fp32")


def test_scalar_work_costs_its_kind():
    r = run([[Scalar("alu", 5), Scalar("ub_load", 2), Scalar("ub_store", 3), Scalar("div")]])
    s = rows(r, pipe="S")
    assert [d["end"] - d["start"] for d in s] == [5 * P.scalar_alu_cycles, 2 * P.scalar_ub_load_cycles,
                                                 3 * P.scalar_ub_store_cycles, P.scalar_div_cycles]
    assert s[0]["start"] == P.kernel_launch_cycles
    assert all(b["start"] == a["end"] for a, b in zip(s, s[1:], strict=False))
