"""The Cube side of the machine against closed forms written here from profile fields (never from
cgdr_des.hw.cube_costs): Mmad, LoadData and the L0C drain; the events between MTE1, M and V; the
pre-!1174 L0C race reported and the final program clean; a whole Cube-era launch timed."""

from __future__ import annotations

import math

import pytest
from test_hw_support import rows, run

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.hw import load_profile
from cgdr_des.isa import L0cToUb, LoadData, Mmad, SetFlag, WaitFlag
from cgdr_des.scenario import Scenario

P = load_profile("atlas-300i-duo")


def mmad_issue(m: int, n: int, k: int) -> int:
    return math.ceil(m / 16) * math.ceil(n / 16) * math.ceil(k / 16) * P.cube_fractal_cycles


@pytest.mark.parametrize(("m", "n", "k"), [(64, 128, 64), (16, 16, 16), (32, 32, 32), (64, 64, 128), (8, 24, 40)])
def test_mmads_back_to_back_issue_one_after_the_other(m, n, k):
    r = run([[Mmad(m, n, k, True), Mmad(m, n, k, False), Mmad(m, n, k, False)]])
    ms = rows(r, pipe="M")
    iss = mmad_issue(m, n, k)
    assert [d["start"] - ms[0]["start"] for d in ms] == [0, iss, 2 * iss]
    assert ms[-1]["end"] - ms[0]["start"] == 3 * iss + P.cube_delay_cycles


@pytest.mark.parametrize("fractals", [1, 4, 8])
def test_load_data_costs_bytes_over_the_mte1_rate(fractals):
    nbytes = fractals * 512
    r = run([[LoadData(fractals, nbytes), LoadData(fractals, nbytes)]])
    a, b = rows(r, pipe="MTE1")
    iss = math.ceil(nbytes / P.mte1_bytes_per_cycle)
    assert b["start"] - a["start"] == iss
    assert a["end"] - a["start"] == iss + P.mte1_delay_cycles


def test_l0c_drain_runs_on_v_at_its_rate():
    r = run([[L0cToUb(64, 128, 64 * 128 * 4)]])
    (d,) = rows(r, pipe="V")
    assert d["end"] - d["start"] == math.ceil(64 * 128 * 4 / P.l0c_drain_bytes_per_cycle) + P.l0c_drain_delay_cycles


def test_mte1_m_event_orders_the_mmad_after_the_load():
    r = run([[LoadData(8, 4096), SetFlag("MTE1_M", 0), WaitFlag("MTE1_M", 0), Mmad(64, 64, 64, True)]])
    ld = [x for x in rows(r, pipe="MTE1") if not x["op"].startswith(("SetFlag", "WaitFlag"))][0]
    (mm,) = [x for x in rows(r, pipe="M") if not x["op"].startswith(("SetFlag", "WaitFlag"))]
    assert mm["start"] >= ld["end"]


def test_m_v_event_orders_the_drain_after_the_mmad():
    prog = [Mmad(64, 128, 128, True), SetFlag("M_V", 0), WaitFlag("M_V", 0), L0cToUb(64, 128, 32768)]
    r = run([prog])
    (mm,) = [x for x in rows(r, pipe="M") if not x["op"].startswith(("SetFlag", "WaitFlag"))]
    (dr,) = [x for x in rows(r, pipe="V") if not x["op"].startswith(("SetFlag", "WaitFlag"))]
    assert dr["start"] >= mm["end"]


def test_a_drain_racing_the_mmad_is_reported():
    with pytest.raises(KernelDiagnostic, match="L0C"):
        run([[Mmad(64, 128, 128, True), L0cToUb(64, 128, 32768)]])


TINY = {"name": "tiny_cube", "shape": {"nk": 1, "nv": 1, "dk": 64, "dv": 64}, "workload": {"lengths": [128]},
        "sim": {"numerics": "off"}}


def test_pre1174_race_reported_and_the_final_program_clean():
    with pytest.raises(KernelDiagnostic, match="L0C"):
        from cgdr_des.simulation import simulate

        simulate(Scenario.from_dict({**TINY, "kernel": {"kernel_version": "cube-pre1174"}}))
    res = simulate(Scenario.from_dict({**TINY, "kernel": {"kernel_version": "cube"}}))
    assert res.summary.iloc[0]["makespan_cycles"] > 0


@pytest.mark.slow
def test_a_whole_cube_launch_is_timed_and_busy_m_matches_the_mmads():
    """representative under the Cube-era kernel: core 0's M pipe is busy exactly the issue cycles of
    its 4 chunks x 42 Mmads, and phase fidelity is within 1 % of instr."""
    from cgdr_des.scenario import load_scenario
    from cgdr_des.simulation import simulate

    sc = load_scenario("scenarios/measured/representative.toml")
    per_chunk = (4 * mmad_issue(64, 64, 128) + 4 * mmad_issue(64, 128, 128) + 10 * mmad_issue(64, 128, 64)
                 + 8 * mmad_issue(32, 32, 32) + 16 * mmad_issue(16, 16, 16))
    phase = simulate(sc)
    instr = simulate(sc.with_changes({"sim": {"fidelity": "instr"}}))
    ops = instr.ops
    m = ops[(ops["core"] == 0) & (ops["pipe"] == "M") & ~ops["op"].astype(str).str.startswith(("SetFlag", "WaitFlag"))]
    assert len(m) == 4 * 42
    assert int((m["end"] - m["start"]).sum()) == 4 * per_chunk + len(m) * P.cube_delay_cycles
    a, b = (int(x.summary.iloc[0]["makespan_cycles"]) for x in (phase, instr))
    assert abs(a - b) <= 0.01 * b
