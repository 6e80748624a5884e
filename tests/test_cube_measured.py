"""``cgdr-des measured`` and the kernel comparison: the corners of the ranges, the verdicts'
closed forms, one shape end to end, the shipped measured set, the kernel_version switch."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from cgdr_des.cli import main
from cgdr_des.errors import InputError
from cgdr_des.hw import load_profile
from cgdr_des.kernels_compare import compare_kernels, core0_records, program_counts
from cgdr_des.measured import HYPOTHESES, compare_measured, corners, verdicts
from cgdr_des.scenario import Scenario, load_scenario
from cgdr_des.timing.measurements import read_measurements

TINY = {"name": "tiny", "shape": {"nk": 2, "nv": 2, "dk": 128, "dv": 128}, "workload": {"lengths": [64]},
        "sim": {"numerics": "off"}}


def test_corners_put_costs_and_rates_at_opposite_ends():
    prof = load_profile("atlas-300i-duo")
    pts = corners(prof)
    r = prof.ranges
    assert pts["fast"]["dcache_miss_cycles"] == r["dcache_miss_cycles"].low
    assert pts["slow"]["dcache_miss_cycles"] == r["dcache_miss_cycles"].high
    assert pts["fast"]["clock_mhz"] == r["clock_mhz"].high and pts["slow"]["clock_mhz"] == r["clock_mhz"].low
    assert pts["fast"]["mte1_bytes_per_cycle"] == r["mte1_bytes_per_cycle"].high
    assert pts["slow"]["raw_interlock"] is True and pts["fast"]["raw_interlock"] is False
    assert "ub_usable_bytes" not in pts["fast"] and "host_overhead_cycles" not in pts["slow"]


def _frame(device, measured, host=(10.0, 1000.0)):
    n = len(device)
    return pd.DataFrame({"hypothesis": ["h"] * n, "measured_us": measured, "device_us": device,
                         "inside": [True] * n, "host_low_us": [host[0]] * n, "host_high_us": [host[1]] * n,
                         "error": [""] * n})


def test_verdicts_recover_a_constant_factor_and_a_constant_offset():
    dev = np.array([1000.0, 6000.0, 3000.0, 20000.0])
    v = verdicts(_frame(dev, 1.25 * dev)).iloc[0]
    assert v["factor"] == pytest.approx(1.25) and v["factor_worst_residual"] < 1e-12 and v["factor_explains"]
    v = verdicts(_frame(dev, dev + 300.0)).iloc[0]
    assert v["offset_us"] == pytest.approx(300.0) and v["offset_worst_residual"] < 1e-12
    assert v["offset_explains"] and v["offset_in_host_range"]
    v = verdicts(_frame(dev, dev + 5000.0)).iloc[0]
    assert not v["offset_in_host_range"] and not v["offset_explains"]


def test_one_shape_end_to_end(tmp_path):
    sc = tmp_path / "tiny.toml"
    sc.write_text('name = "measured_tiny"\n[shape]\nnk = 2\nnv = 2\ndk = 64\ndv = 64\n[workload]\nlengths = [64]\n'
                  '[sim]\nnumerics = "off"\n', encoding="utf-8")
    csv = tmp_path / "m.csv"
    csv.write_text("scenario,latency_us\ntiny.toml,500\n", encoding="utf-8")
    df = compare_measured(csv, [HYPOTHESES[0]])
    r = df.iloc[0]
    assert (r["shape"], r["hypothesis"], r["error"]) == ("tiny", "vector", "")
    assert r["device_fast_us"] <= r["device_us"] <= r["device_slow_us"]
    assert r["predicted_low_us"] <= r["predicted_us"] <= r["predicted_high_us"]
    assert r["predicted_us"] == pytest.approx(r["device_us"] + r["host_us"])
    assert r["inside"] == (r["predicted_low_us"] <= 500 <= r["predicted_high_us"])


def test_shipped_measured_set():
    ms = read_measurements("scenarios/measured/published_310p.csv")
    assert [round(m.latency_us) for m in ms] == [1242, 7241, 3616, 25145, 49211, 97188]
    for m in ms:
        sc = load_scenario(m.scenario)
        assert sc.kernel.kernel_version == "cube"


def test_cli_rejects_an_unknown_hypothesis(tmp_path):
    res = CliRunner().invoke(main, ["measured", "scenarios/measured", "--out", str(tmp_path / "o"),
                                    "--hypotheses", "tpu"])
    assert res.exit_code == 2 and "--hypotheses" in res.output and "Traceback" not in res.output


def test_kernel_version_in_the_scenario():
    base = Scenario.from_dict(TINY)
    assert base.kernel.kernel_version == "vector"
    cube = Scenario.from_dict({**TINY, "kernel": {"kernel_version": "cube"}})
    assert cube.scenario_hash() != base.scenario_hash()
    assert "kernel_version" not in base.resolved_dict()["kernel"]  # earlier hashes stay valid
    with pytest.raises(InputError, match="kernel"):
        Scenario.from_dict({**TINY, "kernel": {"kernel_version": "cube", "buffer_num": 2}})
    with pytest.raises(InputError, match="kernel"):
        Scenario.from_dict({**TINY, "kernel": {"kernel_version": "gpu"}})


@pytest.mark.slow
def test_program_counts_of_both_kernels():
    """Core 0 of representative holds 2 heads x 2 chunks: 4 x 42 Mmads under the Cube-era kernel, no
    Mmad and 4 x (T(63) + T(64)) DotFp32 reductions under the vector-only kernel."""
    sc = load_scenario("scenarios/representative.toml")
    cube = program_counts(core0_records(sc, "cube"))
    vec = program_counts(core0_records(sc, "vector"))
    assert cube["mmads"] == 4 * 42 and vec["mmads"] == 0
    assert cube["L0cToUb"] == 4 * 13 and cube["pipe_barrier_ALL"] == 2 * (39 + 39)
    assert cube["scalar_gm_reads"] < vec["scalar_gm_reads"] / 100


@pytest.mark.slow
@pytest.mark.parametrize(("ub", "cube_phase"), [(253_952, "C6a_AttnCube"), (240 * 1024, "C6a_AttnVector")])
def test_compare_kernels(ub, cube_phase):
    """Both programs timed, the Cube-era one on its fast path (profile UB) or its vector path (240 KiB):
    per-phase busy cycles add up to the per-pipe ones, and only the fast path keeps M busy."""
    sc = Scenario.from_dict({**TINY, "hardware": {"overrides": {"ub_usable_bytes": ub}}})
    r = compare_kernels(sc, ("vector", "cube"))
    assert list(r.summary["kernel_version"]) == ["vector", "cube"]
    assert (r.summary["makespan_cycles"] > 0).all()
    for v in ("vector", "cube"):
        ph = r.phases[r.phases["kernel_version"] == v]["busy_cycles_mean_per_core"].sum()
        assert ph == pytest.approx(r.pipes[r.pipes["kernel_version"] == v]["busy_cycles_mean_per_core"].sum())
    cube = r.phases[r.phases["kernel_version"] == "cube"]
    assert cube_phase in set(cube["phase"])
    assert (cube["pipe"] == "M").any() == (cube_phase == "C6a_AttnCube")
