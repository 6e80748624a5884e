"""Ranges, the one-at-a-time and Latin-hypercube perturbations, the interval and the CLI.

Truths used: the interval is the min/max over runs that include the nominal one; a cycle cost raised
can only lengthen the makespan and a rate raised can only shorten it (the machine has no anomaly
that would reverse this on these shapes); a higher clock shortens the µs of the same cycles; a Latin
hypercube has one point per stratum of every parameter."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from cgdr_des.cli import main
from cgdr_des.errors import InputError
from cgdr_des.hw import list_profiles, load_profile
from cgdr_des.hw.profile import read_doc, with_overrides
from cgdr_des.hw.ranges import get_param, merge_overrides, set_param
from cgdr_des.scenario import Scenario
from cgdr_des.timing.profile_toml import dump_profile
from cgdr_des.timing.sensitivity import run_sensitivity, write_sensitivity
from cgdr_des.timing.space import latin_hypercube, select, unit_of, value_at

TINY = {"name": "tiny", "shape": {"nk": 2, "nv": 2, "dk": 64, "dv": 64}, "workload": {"lengths": [40]},
        "sim": {"fidelity": "phase", "numerics": "off", "trace": False}}
COSTS = ["vec_pipe_delay_cycles", "scalar_ub_load_cycles", "dcache_miss_cycles", "flag_cycles",
         "vec_delay_cycles.Axpy", "dma_read_latency_cycles"]
RATES = ["dma_read_peak_per_cycle", "gm_bandwidth_gbps"]


@pytest.fixture(scope="module")
def study():
    return run_sensitivity(Scenario.from_dict(TINY), fields=COSTS + RATES + ["clock_mhz", "flag_double_set"],
                           samples=6, seed=3)


@pytest.mark.parametrize("name", list_profiles())
def test_every_range_holds_its_value_and_gives_loadable_profiles(name):
    prof = load_profile(name)
    assert prof.ranges
    for r in prof.ranges.values():
        assert r.reason.strip()
        ends = r.choices or (r.low, r.high)
        assert get_param(prof, r.name) in ends or r.low <= get_param(prof, r.name) <= r.high
        for u in (0.0, 1.0):
            value_at(r, u)
    for pt in latin_hypercube(list(prof.ranges.values()), 3, seed=1):
        with_overrides(prof, merge_overrides(set_param(prof, k, v) for k, v in pt.items()))


def _bad_profile(tmp_path: Path, edit: str) -> Path:
    doc, _ = read_doc("atlas-300i-duo")
    old = 'range = [1, 10]\nrange_reason = "simulators'
    text = dump_profile(doc).replace(old, edit + '\nrange_reason = "simulators')
    p = tmp_path / "bad.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("edit, match", [("range = [2, 10]", "flag_cycles.range"),
                                         ("range = [1]", "flag_cycles.range"),
                                         ('range = ["a", "b"]', "flag_cycles.range")])
def test_a_range_that_excludes_its_value_or_is_malformed_is_an_input_error(tmp_path, edit, match):
    with pytest.raises(InputError, match=match):
        load_profile(_bad_profile(tmp_path, edit))


def test_value_and_unit_are_inverse():
    prof = load_profile()
    for r in prof.ranges.values():
        for x in (r.choices or (r.low, r.high)):
            assert value_at(r, unit_of(r, x)) == x


def test_latin_hypercube_puts_one_point_in_each_stratum_and_is_seeded():
    params = select(load_profile(), ["clock_mhz", "gm_bandwidth_gbps", "dma_unaligned_efficiency"])
    n = 16
    pts = latin_hypercube(params, n, seed=7)
    for p in params:
        u = np.array([unit_of(p, pt[p.name]) for pt in pts])
        assert sorted(np.floor(u * n).astype(int)) == list(range(n))
    assert pts == latin_hypercube(params, n, seed=7) and pts != latin_hypercube(params, n, seed=8)


def test_unknown_field_is_an_input_error_naming_the_ranged_ones():
    with pytest.raises(InputError, match="--fields.*vec_pipe_delay_cycles"):
        select(load_profile(), ["aiv_num"])


@pytest.mark.slow
def test_interval_contains_nominal_and_is_min_max_of_every_run(study):
    lo, hi = study.interval_us
    assert lo <= study.nominal_us <= hi
    assert (lo, hi) == (study.runs["makespan_us"].min(), study.runs["makespan_us"].max())
    kinds = study.runs["kind"].value_counts()
    assert kinds["nominal"] == 1 and kinds["lhs"] == 6 and kinds["oat"] == len(study.oat())


def _end(study, name, end):
    row = study.runs[(study.runs["param"] == name) & (study.runs["end"] == end)]
    return int(row["makespan_cycles"].iloc[0]), float(row["makespan_us"].iloc[0])


@pytest.mark.slow
def test_each_field_moves_the_makespan_its_way(study):
    nom = int(study.runs.loc[study.runs["kind"] == "nominal", "makespan_cycles"].iloc[0])
    for name in COSTS:
        lo = _end(study, name, "low")[0] if name != "flag_cycles" else nom   # flag_cycles' low end is nominal
        assert lo <= nom <= _end(study, name, "high")[0], name
    assert _end(study, "vec_pipe_delay_cycles", "high")[0] > nom
    for name in RATES:
        assert _end(study, name, "low")[0] >= nom, name
    # a slower clock: GM bandwidth is per second, so each cycle moves more bytes (fewer cycles where a
    # DataCopy holds the scalar unit up, as the DMA calls phase keeps apart do), yet more µs
    cyc, us = _end(study, "clock_mhz", "low")
    assert cyc <= nom and us > study.nominal_us


@pytest.mark.slow
def test_the_study_is_deterministic():
    a, b = (run_sensitivity(Scenario.from_dict(TINY), fields=["clock_mhz", "flag_cycles"], samples=3, seed=5)
            for _ in range(2))
    pd.testing.assert_frame_equal(a.runs, b.runs)


@pytest.mark.slow
def test_written_files(study, tmp_path):
    paths = write_sensitivity(study, tmp_path)
    runs = pd.read_parquet(paths["samples"])
    assert len(runs) == len(study.runs) and set(COSTS) <= set(runs.columns)
    summary = json.loads(paths["interval"].read_text())
    assert summary["low_us"] <= summary["nominal_us"] <= summary["high_us"]
    assert paths["tornado"].stat().st_size > 1000


def _scenario_file(tmp_path: Path) -> Path:
    p = tmp_path / "tiny.toml"
    p.write_text('name = "tiny"\n[shape]\nnk = 2\nnv = 2\ndk = 64\ndv = 64\n[workload]\nlengths = [40]\n'
                 '[sim]\nnumerics = "off"\ntrace = false\n[output]\nplots = false\n')
    return p


@pytest.mark.slow
def test_cli_sensitivity(tmp_path):
    sc = _scenario_file(tmp_path)
    r = CliRunner().invoke(main, ["sensitivity", str(sc), "--out", str(tmp_path / "s"), "--fields",
                                  "vec_pipe_delay_cycles,flag_cycles", "--samples", "3"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("range ") and "vec_pipe_delay_cycles" in r.output
    assert (tmp_path / "s" / "tornado.png").is_file()


@pytest.mark.parametrize("args, field", [(["--fields", "aiv_num"], "--fields"), (["--samples", "-1"], "--samples"),
                                         (["--fields", "a,,b"], "--fields")])
def test_cli_sensitivity_bad_input_exits_2(tmp_path, args, field):
    r = CliRunner().invoke(main, ["sensitivity", str(_scenario_file(tmp_path)), "--out", str(tmp_path / "s"), *args])
    assert r.exit_code == 2 and r.output.startswith(f"error: {field}")


@pytest.mark.slow
def test_run_with_range_prints_the_interval(tmp_path, monkeypatch):
    import cgdr_des.cli.sensitivity as cli_sens

    real = cli_sens.sensitivity_of
    monkeypatch.setattr(cli_sens, "sensitivity_of", lambda sc, fields, samples, seed:
                        real(sc, ["vec_pipe_delay_cycles"], 2, seed))
    r = CliRunner().invoke(main, ["run", str(_scenario_file(tmp_path)), "--out", str(tmp_path / "o"), "--with-range"])
    assert r.exit_code == 0, r.output
    line = [x for x in r.output.splitlines() if x.startswith("range ")]
    assert len(line) == 1 and "[" in line[0]
    assert (tmp_path / "o" / "range" / "samples.parquet").is_file()


def test_a_default_study_leaves_out_what_cannot_move_the_makespan():
    from cgdr_des.hw import load_profile
    from cgdr_des.hw.profile import CUBE_ONLY_FIELDS
    from cgdr_des.timing.space import select

    prof = load_profile("atlas-300i-duo")
    vector = {p.name.split(".")[0] for p in select(prof)}
    cube = {p.name.split(".")[0] for p in select(prof, None, "cube")}
    ranged = {name.split(".")[0] for name in prof.ranges}
    assert "host_overhead_cycles" in ranged and "host_overhead_cycles" not in vector | cube
    assert vector == ranged - set(CUBE_ONLY_FIELDS) - {"host_overhead_cycles"}
    assert cube == ranged - {"host_overhead_cycles"}
    assert [p.name for p in select(prof, ["cube_fractal_cycles"])] == ["cube_fractal_cycles"]  # still nameable
