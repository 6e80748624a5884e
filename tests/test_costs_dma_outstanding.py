"""``dma_outstanding``: a run of ``k`` back-to-back DataCopy calls (one merged Dma record with
``repeat = k``, as phase fidelity hands the per-row state copies over) pays each call's overhead ``h``
in turn but its first-byte latency ``L`` once per ``N`` calls in flight:
``k h + ceil(k / N) L``, and each call's bytes at the core's rate, rounded up to a whole cycle per
call (as the calls would, one after the other: the merged run's bytes are spread over that time,
tests/test_phase_dma_runs.py). ``N = 1`` is the serial model."""

import math

import pytest
from test_hw_support import rows, run

import cgdr_des
from cgdr_des.errors import InputError
from cgdr_des.hw import load_profile
from cgdr_des.isa import DataCopyParams, Dma
from cgdr_des.scenario import load_scenario

P = load_profile("atlas-300i-duo")
ROW = 512   # one state row of 128 fp32


def _merged(k: int, read: bool = True) -> Dma:
    return Dma("GM2UB" if read else "UB2GM", k * ROW, DataCopyParams(1, ROW // 32, 0, 0), 0, 0, repeat=k)


def _expected(k: int, n: int, read: bool) -> int:
    if read:
        lat, h, peak = P.dma_read_latency_cycles, P.dma_read_overhead_cycles, P.dma_read_peak_per_cycle
    else:
        lat, h, peak = P.dma_write_latency_cycles, P.dma_write_overhead_cycles, P.dma_write_peak_per_cycle
    return k * h + math.ceil(k / n) * lat + k * math.ceil(ROW / peak)


def test_default_is_serial():
    assert P.dma_outstanding == 1


@pytest.mark.parametrize("read", [True, False])
@pytest.mark.parametrize("k", [1, 5, 128])
@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_merged_run_costs_overheads_and_one_latency_per_group(k, n, read):
    r = run([[_merged(k, read)]], dma_outstanding=n)
    (d,) = rows(r, pipe="MTE2" if read else "MTE3")
    assert d["end"] - d["start"] == _expected(k, n, read)


def test_a_single_call_always_pays_its_whole_latency():
    (a,) = rows(run([[_merged(1)]]), pipe="MTE2")
    (b,) = rows(run([[_merged(1)]], dma_outstanding=8), pipe="MTE2")
    assert a["end"] - a["start"] == b["end"] - b["start"]


def test_the_state_copies_get_cheaper_at_phase_fidelity():
    sc = load_scenario(cgdr_des.__path__[0] + "/../scenarios/small.toml").with_changes(
        {"sim": {"fidelity": "phase", "numerics": "off", "trace": False}, "workload": {"lengths": [80]},
         "shape": {"nk": 1, "nv": 1}})
    base = cgdr_des.simulate(sc).summary["makespan_cycles"].iloc[0]
    fast = cgdr_des.simulate(sc.with_changes({"hardware": {"overrides": {"dma_outstanding": 4}}}))
    assert fast.summary["makespan_cycles"].iloc[0] < base


def test_instr_fidelity_refuses_it():
    sc = load_scenario(cgdr_des.__path__[0] + "/../scenarios/small.toml").with_changes(
        {"workload": {"lengths": [4]}, "shape": {"nk": 1, "nv": 1},
         "hardware": {"overrides": {"dma_outstanding": 2}}})
    with pytest.raises(InputError, match="dma_outstanding"):
        cgdr_des.simulate(sc)
