"""Sweep files and their expansion: grid order, samples, replication seeds, fingerprints, file errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import SWEEPS
from sweep_cases import GRID, write_sweep

from cgdr_des.errors import CgdrError, InputError
from cgdr_des.overrides import apply_overrides
from cgdr_des.sweep import expand, load_sweep
from cgdr_des.sweep.points import REPLICATION, SEED_FIELD


def test_grid_is_the_product_with_replications_innermost(tmp_path):
    spec = load_sweep(write_sweep(tmp_path, GRID))
    points = expand(spec)
    seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(5).spawn(2)]
    want = [(pol, dv, nv, r, seeds[r]) for pol, dv, nv in itertools.product(["greedy", "round_robin"], [16, 24, 32],
                                                                             [2, 3]) for r in range(2)]
    got = [(p.params["kernel.policy"], p.params["shape.dv"], p.params["shape.nv"], p.params[REPLICATION],
            p.params[SEED_FIELD]) for p in points]
    assert got == want
    assert [p.point for p in points] == list(range(24))


def test_each_point_is_the_base_with_its_overrides(tmp_path):
    spec = load_sweep(write_sweep(tmp_path, GRID))
    points = expand(spec)
    for p in points:
        overrides = [("shape.nk", 2), *((k, v) for k, v in p.params.items() if k != REPLICATION)]
        if p.params["shape.nv"] == 3 or p.params["shape.dv"] == 24:
            # nv = 3 is not a multiple of nk; dv = 24 is CopyToGm's row overrun, a static diagnostic
            with pytest.raises(CgdrError) as info:
                apply_overrides(spec.base_scenario, overrides)
            assert p.scenario is None and p.error == f"{type(info.value).__name__}: {info.value}"
        else:
            assert p.scenario == apply_overrides(spec.base_scenario, overrides).resolved_dict() and p.error is None
    assert sum(p.error is None for p in points) == 8


def test_fingerprints_are_stable_and_follow_the_scenario(tmp_path):
    path = write_sweep(tmp_path, GRID)
    first, again = expand(load_sweep(path)), expand(load_sweep(path))
    assert [p.fingerprint for p in first] == [p.fingerprint for p in again]
    other = expand(load_sweep(path, overrides=[("kernel.buffer_num", 2)]))
    assert all(a.fingerprint != b.fingerprint for a, b in zip(first, other, strict=True))
    reseeded = expand(load_sweep(path, seed=6))
    assert all(a.fingerprint != b.fingerprint for a, b in zip(first, reseeded, strict=True))
    # same resolved scenario -> same fingerprint, whatever the point id
    by_scenario = {}
    for p in first:
        by_scenario.setdefault(p.fingerprint, set()).add(str(p.scenario))
    assert all(len(s) == 1 for s in by_scenario.values())


def test_samples_are_reproducible_and_inside_their_laws(tmp_path):
    text = GRID.split("[grid]")[0] + """
"workload.batch" = 2
[sample]
n = 50
seed = 3
"workload.distribution" = {kind = "choice", values = [{kind = "fixed", length = 8}, {kind = "fixed", length = 24}]}
"hardware.overrides.gm_bandwidth_gbps" = {kind = "loguniform", low = 20.0, high = 200.0}
"""
    spec = load_sweep(write_sweep(tmp_path, text))
    points = expand(spec)
    assert len(points) == 100
    rng = np.random.default_rng(3)
    laws = [{"kind": "fixed", "length": 8}, {"kind": "fixed", "length": 24}]
    want_laws = [laws[i] for i in rng.integers(0, 2, 50)]
    want_bw = np.exp(rng.uniform(np.log(20.0), np.log(200.0), 50))
    got_bw = [p.params["hardware.overrides.gm_bandwidth_gbps"] for p in points[::2]]
    assert np.array_equal(got_bw, want_bw)
    assert [p.scenario["workload"]["lengths"][0] for p in points[::2] if p.error is None] == \
        [law["length"] for law, p in zip(want_laws, points[::2], strict=True) if p.error is None]


def test_mixed_int_and_float_grid_is_one_float_column(tmp_path):
    text = GRID.split("[grid]")[0] + '[grid]\n"shape.scale_value" = [1, 0.5]\n'
    points = expand(load_sweep(write_sweep(tmp_path, text)))
    assert [type(p.params["shape.scale_value"]) for p in points] == [float] * 4


@pytest.mark.parametrize("edit, field", [
    (("replications = 2", "replications = 0"), "sweep.replications"),
    (("replications = 2", "replicates = 2"), "sweep.replicates"),
    (('base = "tiny.toml"', 'base = "gone.toml"'), "sweep.base"),
    (('name = "tiny_grid"', ''), "sweep.name"),
    (('"shape.dv" = [16, 24, 32]', '"shape.dv" = []'), "sweep.grid.shape.dv"),
    (('"shape.dv" = [16, 24, 32]', '"shape..dv" = [16]'), "sweep.grid.shape..dv"),
    (("[grid]", '[sample]\nn = 2\n"kernel.buffer_num" = {kind = "beta"}\n[grid]'),
     "sweep.sample.kernel.buffer_num.kind"),
    (("[grid]", '[sample]\nn = 2\n"shape.dk" = {kind = "uniform", low = 4}\n[grid]'), "sweep.sample.shape.dk.high"),
    (("[set]\n", '[set]\n"kernel.policy" = "fastest"\n'), "sweep.set: kernel.policy"),
    (("[set]\n", '[set]\n"workload.seed" = 3\n'), "sweep: workload.seed"),
])
def test_bad_sweep_files_name_the_field(tmp_path, edit, field):
    assert edit[0] in GRID
    with pytest.raises(InputError) as info:
        expand(load_sweep(write_sweep(tmp_path, GRID.replace(*edit))))
    assert str(info.value).startswith(f"{field}: got "), str(info.value)


def test_nested_tables_and_dotted_keys_are_the_same_grid(tmp_path):
    nested = GRID.replace('[grid]\n"kernel.policy" = ["greedy", "round_robin"]\n"shape.dv" = [16, 24, 32]\n'
                          '"shape.nv" = [2, 3]', '[grid.kernel]\npolicy = ["greedy", "round_robin"]\n'
                          '[grid.shape]\ndv = [16, 24, 32]\nnv = [2, 3]')
    assert nested != GRID
    a = expand(load_sweep(write_sweep(tmp_path, GRID)))
    b = expand(load_sweep(write_sweep(tmp_path, nested, "nested.toml")))
    assert [p.fingerprint for p in a] == [p.fingerprint for p in b]


@pytest.mark.parametrize("path", sorted(SWEEPS.glob("*.toml")),
                         ids=lambda p: p.stem)
def test_shipped_sweeps_expand_without_errors(path):
    points = expand(load_sweep(path))
    assert points and all(p.error is None for p in points)
    assert len({p.fingerprint for p in points}) == len(points)  # no two points run the same thing
