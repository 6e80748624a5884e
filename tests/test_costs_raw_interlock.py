"""``raw_interlock``: DotFp32's WholeReduceSum reads the product its Mul writes, with no barrier in the
source. Off (default), the reduce issues as soon as V takes it; on, it waits for the Mul's result
exactly as behind a PipeBarrier<V>: it starts at the Mul's end (issue + op delay + pipe delay)."""

import pytest
from test_hw_support import vec_issue, vec_latency

import cgdr_des
from cgdr_des.hw import load_profile
from cgdr_des.isa import PipeBarrier, VecOp
from cgdr_des.scenario import Scenario

P = load_profile("atlas-300i-duo")
SC = {"name": "dot", "shape": {"nk": 1, "nv": 1, "dk": 64, "dv": 64}, "workload": {"lengths": [9]},
      "sim": {"fidelity": "instr", "numerics": "off", "trace": False}}


def _run(interlock: bool, fidelity: str = "instr"):
    sc = Scenario.from_dict({**SC, "hardware": {"overrides": {"raw_interlock": interlock}},
                                      "sim": {**SC["sim"], "fidelity": fidelity}})
    return cgdr_des.simulate(sc)


def _dot_pairs(res):
    """(Mul, WholeReduceSum) V rows of every DotFp32 (the reduce follows its Mul on V)."""
    ops = res.ops
    v = ops[(ops["pipe"] == "V") & ops["op"].isin(["Mul", "WholeReduceSum"])]
    v = v.sort_values(["start", "end"]).reset_index(drop=True)
    wrs = v.index[(v["op"] == "WholeReduceSum") & v["phase"].astype(str).str.contains("DotFp32")]
    assert len(wrs) > 10
    assert (v.loc[wrs - 1, "op"] == "Mul").all()
    return v.loc[wrs - 1].reset_index(drop=True), v.loc[wrs].reset_index(drop=True)


def test_off_by_default():
    assert P.raw_interlock is False


def test_on_the_reduce_starts_when_its_product_is_complete():
    mul, wrs = _dot_pairs(_run(True))
    assert (mul["end"] - mul["start"] == vec_issue(P, "Mul", "fp32", 64) + vec_latency(P, "Mul", "fp32")).all()
    assert (wrs["start"] == mul["end"]).all()


def test_off_the_reduce_starts_before_its_product_is_complete():
    mul, wrs = _dot_pairs(_run(False))
    assert (wrs["start"] < mul["end"]).all()
    # it waits at most for the scalar unit's next vector call, never for the product
    assert (wrs["start"] - mul["start"] <= P.vec_api_scalar_cycles + P.scalar_dispatch_cycles).all()


def test_on_is_a_barrier_per_dot_product():
    off, on = _run(False), _run(True)
    n_dots = len(_dot_pairs(on)[0])
    bars = {k: int(r.ops[(r.ops["pipe"] == "V") & (r.ops["op"] == "PipeBarrier:V")].shape[0]) for k, r in
            (("off", off), ("on", on))}
    assert bars["on"] - bars["off"] == n_dots
    assert on.summary["makespan_cycles"].iloc[0] > off.summary["makespan_cycles"].iloc[0]


@pytest.mark.parametrize("interlock", [False, True])
def test_phase_fidelity_agrees_with_instr(interlock):
    instr, phase = _run(interlock, "instr"), _run(interlock, "phase")
    a, b = (int(r.summary["makespan_cycles"].iloc[0]) for r in (instr, phase))
    assert abs(b - a) <= 0.01 * a


def test_a_barrier_between_the_two_gives_the_same_timing_as_a_dependency_would():
    """The closed form on a bare V pipe: Mul, PipeBarrier<V>, WholeReduceSum."""
    from test_hw_support import rows, run

    r = run([[VecOp("Mul", "fp32", 64), PipeBarrier("V"), VecOp("WholeReduceSum", "fp32", 64)]])
    (mul,), (red,) = rows(r, pipe="V", op="Mul"), rows(r, pipe="V", op="WholeReduceSum")
    assert red["start"] == mul["start"] + vec_issue(P, "Mul", "fp32", 64) + vec_latency(P, "Mul", "fp32")
