"""End to end: scenario -> multi-core simulation with real outputs -> frames, trace, files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from conftest import SCENARIOS
from kernel_cases import assert_kernel_bounds, oracle

import cgdr_des
from cgdr_des.errors import KernelDiagnostic
from cgdr_des.kernel.functional import build_launch, run_functional
from cgdr_des.results.export import write_results
from cgdr_des.results.frames import SUMMARY_COLUMNS
from cgdr_des.results.trace import trace_from_result
from cgdr_des.scenario import Scenario
from cgdr_des.workload.tensors import make_inputs

DESIGN_SUMMARY = ("makespan_cycles", "makespan_us", "lower_bound_cycles", "imbalance", "cv", "finish_p50_cycles",
                  "finish_p95_cycles", "finish_p99_cycles", "util_S", "util_V", "util_MTE2", "util_MTE3",
                  "scenario_name", "scenario_hash", "hardware", "policy", "buffer_num", "fidelity", "numerics")


def shipped(name: str, **changes) -> Scenario:
    sc = cgdr_des.load_scenario(SCENARIOS / f"{name}.toml")
    return sc.with_changes(changes) if changes else sc


def custom(lengths, nk=1, nv=2, dk=64, dv=64, **sections) -> Scenario:
    data = {"name": "custom", "shape": {"nk": nk, "nv": nv, "dk": dk, "dv": dv},
            "workload": {"lengths": list(lengths)}, **sections}
    return Scenario.from_dict(data)


@pytest.fixture(scope="module")
def representative():
    return shipped("representative")


@pytest.fixture(scope="module")
def rep_result(shipped_result):
    return shipped_result("representative")


def functional_of(sc: Scenario):
    s, w = sc.shape, sc.workload
    x = make_inputs(sc.lengths(), s.nk, s.nv, s.dk, s.dv, seed=w.seed, has_gamma=s.has_gamma,
                    beta=w.tensors.beta, initial_state=w.tensors.initial_state)
    prof = cgdr_des.hw.load_profile(sc.hardware.profile, dict(sc.hardware.overrides))
    launch = build_launch(*x.kwargs().values(), numerics=sc.sim.numerics, ub_size=prof.ub_bytes,
                          aiv_num=prof.aiv_num, buffer_num=sc.kernel.buffer_num)
    return x, run_functional(launch, sc.kernel.policy, emit=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["small", "representative", "low_head_dv256"])
def test_shipped_scenario_outputs_equal_the_functional_run_and_pass_the_oracle(name, shipped_result):
    sc = shipped(name)
    res = shipped_result(name)
    x, fr = functional_of(sc)
    np.testing.assert_array_equal(res.out, fr.out)
    np.testing.assert_array_equal(res.final_state, fr.final_state)
    assert_kernel_bounds(res, *oracle(x))


def test_items_cover_every_work_item_exactly_once(rep_result, representative):
    items = rep_result.items
    assert len(items) == representative.shape.nv  # one sequence, 16 heads, not split
    assert not items.duplicated(["batch", "head", "vtile"]).any()
    assert sorted(items["head"]) == list(range(16))
    assert (items["end"] > items["start"]).all() and items["core"].between(0, 7).all()


def test_busy_never_exceeds_makespan_and_summary_is_complete(rep_result):
    s = rep_result.summary.iloc[0]
    assert set(DESIGN_SUMMARY) <= set(rep_result.summary.columns) <= set(SUMMARY_COLUMNS)
    for pipe in ("S", "V", "MTE2", "MTE3"):
        assert (rep_result.cores[f"busy_{pipe}"] <= s.makespan_cycles).all()
        assert 0 <= s[f"util_{pipe}"] <= 1
    assert s.makespan_cycles == rep_result.cores["finish"].max()
    assert s.lower_bound_cycles <= s.makespan_cycles


def test_trace_of_a_real_run_has_no_overlap_on_any_track(rep_result, tmp_path):
    trace = json.loads(json.dumps(trace_from_result(rep_result)))
    xs = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert xs and all({"pid", "tid", "ts", "dur"} <= e.keys() for e in xs)
    tracks: dict = {}
    for e in xs:
        tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in tracks.values():
        spans.sort()
        assert all(a_end <= b_start + 1e-9 for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False))


@pytest.mark.slow  # the README's command as written: an instr-fidelity run, its trace and plots (~15 s)
def test_quickstart_command_writes_every_file(tmp_path):
    out = tmp_path / "small"
    exe = shutil.which("cgdr-des")  # the README's command; python -m cgdr_des is the same entry point
    cmd = [exe] if exe else [sys.executable, "-m", "cgdr_des"]
    cmd += ["run", str(SCENARIOS / "small.toml"), "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for name in ("ops.parquet", "items.parquet", "cores.parquet", "summary.parquet", "trace.json",
                 "scenario.resolved.json", "core_load.png", "finish_cdf.png"):
        assert (out / name).is_file(), name
    assert list(out.glob("gantt_core*.png"))
    json.loads((out / "trace.json").read_text())


@pytest.mark.slow
def test_machine_executes_exactly_the_kernel_layers_instructions():
    sc = custom([70, 0, 5], nk=1, nv=2, dk=64, dv=32, sim={"fidelity": "instr", "numerics": "off"})
    prof = cgdr_des.hw.load_profile(sc.hardware.profile)
    x = make_inputs(sc.lengths(), 1, 2, 64, 32)
    launch = build_launch(*x.kwargs().values(), numerics="off", ub_size=prof.ub_bytes, aiv_num=prof.aiv_num)
    kernel_counts = Counter({k: n for k, n in run_functional(launch).counts.items() if not k[1].startswith("bytes")})
    launch = build_launch(*x.kwargs().values(), numerics="off", ub_size=prof.ub_bytes, aiv_num=prof.aiv_num)
    from cgdr_des.hw import Machine
    from cgdr_des.kernel.program import core_program

    run = Machine(prof).run([core_program(launch, i) for i in range(launch.block_dim)])
    machine_counts = Counter({k: n for k, n in sum(run.counts, Counter()).items() if k[1] != "Tag"})
    assert sum(kernel_counts.values()) > 10_000
    assert +machine_counts == +kernel_counts


@pytest.mark.slow
@pytest.mark.parametrize("lengths, shape", [([64], (8, 8, 64, 64)), ([37, 0, 130, 9], (2, 4, 64, 32))])
def test_phase_fidelity_agrees_with_instr_within_one_percent(lengths, shape):
    nk, nv, dk, dv = shape
    base = {"sim": {"numerics": "off", "ops": False}}     # makespans only
    instr = cgdr_des.simulate(custom(lengths, nk, nv, dk, dv, **{"sim": {**base["sim"], "fidelity": "instr"}}))
    phase = cgdr_des.simulate(custom(lengths, nk, nv, dk, dv, **base))
    a, b = instr.summary.makespan_cycles[0], phase.summary.makespan_cycles[0]
    assert abs(a - b) <= 0.01 * a


@pytest.mark.slow
def test_same_scenario_and_seed_give_identical_frames():
    sc = custom([40, 9], sim={"fidelity": "instr", "numerics": "kernel"})
    one, two = cgdr_des.simulate(sc), cgdr_des.simulate(sc)
    for name in ("ops", "items", "cores", "summary"):
        assert getattr(one, name).equals(getattr(two, name)), name
    np.testing.assert_array_equal(one.out, two.out)


def test_double_buffering_computes_the_same_outputs():
    sc = custom([130, 20], nk=2, nv=4, dk=64, dv=64)
    one = cgdr_des.simulate(sc)
    two = cgdr_des.simulate(sc.with_changes({"kernel": {"buffer_num": 2}}))
    np.testing.assert_array_equal(one.out, two.out)
    np.testing.assert_array_equal(one.final_state, two.final_state)
    assert two.summary.buffer_num[0] == 2


def test_op_api_with_a_machine_fidelity_attaches_the_frames():
    x = make_inputs([64, 10], 1, 2, 64, 64, seed=3)
    r = cgdr_des.chunk_gated_delta_rule(**x.kwargs(), fidelity="phase")
    assert r.result is not None and r.result.summary.makespan_cycles[0] > 0
    assert_kernel_bounds(r, *oracle(x))


def test_results_round_trip_through_parquet(rep_result, tmp_path):
    written = write_results(rep_result, tmp_path, csv=True, trace=False, plots=False)
    assert written
    from cgdr_des.results.export import read_frames

    frames = read_frames(tmp_path)
    assert frames["summary"]["makespan_cycles"][0] == rep_result.summary.makespan_cycles[0]


def test_double_buffer_without_its_host_accounting_is_a_ub_diagnostic():
    """BUFFER_NUM=2 on the device with the host still deducting one out-queue buffer (docs/kernel.md
    §7.4): the machine reports the UB over-allocation instead of simulating it."""
    from cgdr_des.errors import KernelDiagnostic
    from cgdr_des.hw import Machine
    from cgdr_des.kernel.functional import make_launch
    from cgdr_des.kernel.launch import Shape
    from cgdr_des.kernel.program import core_program

    prof = cgdr_des.hw.load_profile("atlas-300i-duo")
    launch = make_launch(Shape(1, 64, 1, 1, 128, 128, 0.088, True), [64], None, None, numerics="off",
                         buffer_num=2, host_queue_buffers=1)
    assert launch.tiling.ub_overflow_bytes > 0
    with pytest.raises(KernelDiagnostic, match="UB"):
        Machine(prof).run([core_program(launch, 0)])


@pytest.mark.parametrize("fidelity", ["phase", "instr"])
def test_dot_fp32_beyond_its_in_place_limit_is_a_diagnostic(fidelity):
    """dk = 528 fits only a larger UB; DotFp32 would then overwrite unread products (docs/design-notes.md §6)."""
    data = {"name": "custom", "shape": {"nk": 1, "nv": 1, "dk": 528, "dv": 16},
            "workload": {"lengths": [8]}, "hardware": {"overrides": {"ub_bytes": 1 << 20, "ub_usable_bytes": 1 << 20}},
            "sim": {"fidelity": fidelity}}
    with pytest.raises(KernelDiagnostic, match="DotFp32 count dk=528 exceeds its in-place limit of 512"):
        cgdr_des.simulate(Scenario.from_dict(data, check_tiling=False))
    with pytest.raises(KernelDiagnostic, match="DotFp32 count dk=528 exceeds its in-place limit of 512"):
        Scenario.from_dict(data)  # and statically, before any simulation
