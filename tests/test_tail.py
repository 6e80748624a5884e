"""Tail studies: the surrogate against phase fidelity on every profile, policies against greedy's
outputs, the study's frames against numpy, and the command's files and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_cases import args, inputs

import cgdr_des
from cgdr_des.cli import main
from cgdr_des.errors import InputError, KernelDiagnostic
from cgdr_des.hw import list_profiles, load_profile
from cgdr_des.kernel.dispatch import assign_items
from cgdr_des.kernel.functional import build_launch
from cgdr_des.kernel.policies import POLICIES
from cgdr_des.scenario import Scenario
from cgdr_des.simulation import run_launch
from cgdr_des.tail import calibrate, estimate, run_study, write_study
from cgdr_des.tail.checks import CHECK_BOUND

#: The smallest shape that still has several cores: calibration cost is compile time, not heads.
SHAPE = {"nk": 1, "nv": 2, "dk": 32, "dv": 32}
#: The smallest shape whose V-tiles are split on every shipped profile (one head, two tiles).
SPLIT = {"nk": 1, "nv": 1, "dk": 64, "dv": 256}
#: The 910B profiles report the kernel's flag double-sets unless told to count them (as on 310P).
COUNTER = {"flag_double_set": "counter"}


def profiles() -> list:
    """Every shipped profile, those other than the default ``slow``: each first calibrates SHAPE or
    SPLIT on its profile (5-10 s of CPU, 15-40 s on a busy machine). The default profile's two
    calibrations are shared with the quick loop's other tests."""
    return [p if p == "atlas-300i-duo" else pytest.param(p, marks=pytest.mark.slow) for p in list_profiles()]


def overrides(profile: str) -> dict:
    return {} if profile == "atlas-300i-duo" else COUNTER


def scenario(profile="atlas-300i-duo", **extra) -> Scenario:
    data = {"name": "tail_t", "hardware": {"profile": profile, "overrides": overrides(profile)}, "shape": SHAPE,
            "workload": {"batch": 3, "seed": 2, "distribution": {"kind": "lognormal", "median": 60, "sigma": 1.0,
                                                                 "min": 1, "max": 300}},
            "study": {"batches": 200, "check_batches": 1, "bootstrap": 50}}
    for key, value in extra.items():
        data[key] = {**data.get(key, {}), **value}
    return Scenario.from_dict(data)


def phase_finish(profile: str, lengths: list[int], policy: str = "greedy", shape=None):
    sc = Scenario.from_dict({"name": "t", "hardware": {"profile": profile, "overrides": overrides(profile)},
                             "shape": shape or SHAPE, "workload": {"lengths": lengths}, "kernel": {"policy": policy},
                             "sim": {"numerics": "off", "trace": False}})
    cores = cgdr_des.simulate(sc).cores.sort_values("core")
    return cores["finish"].to_numpy(np.int64), cores["items"].to_numpy() > 0


@pytest.mark.slow
@pytest.mark.parametrize("profile", profiles())
@settings(max_examples=3, deadline=None, derandomize=True)
@given(lengths=st.lists(st.integers(1, 300), min_size=1, max_size=5))
def test_surrogate_within_half_a_percent_of_phase_on_every_profile(profile, lengths):
    costs = calibrate(profile, **SHAPE, overrides=overrides(profile))
    finish, ran = phase_finish(profile, lengths)
    est = estimate(costs, np.array([lengths]), "greedy")
    assert abs(est.makespan[0] - finish.max()) <= CHECK_BOUND * finish.max()
    assert (np.abs(est.finish[0][ran] - finish[ran]) <= CHECK_BOUND * finish[ran]).all()


def within(est, finish, ran, bound) -> bool:
    return (abs(est.makespan[0] - finish.max()) <= bound * finish.max()
            and bool((np.abs(est.finish[0][ran] - finish[ran]) <= bound * finish[ran]).all()))



@pytest.mark.slow
def test_a_middle_chunk_costs_what_it_costs_among_long_sequences():
    """Eight cores busy with multi-chunk sequences: the calibrated middle chunk is the per-chunk slope
    of their items (3 and 11 chunks), and the surrogate their makespan. The probes once ran beside the
    calibration run's 64 short items and read the chunk dearer (+0.009 % here, +0.53 % at dk = 128)."""
    shape = {"nk": 8, "nv": 8, "dk": 32, "dv": 32}
    costs = calibrate(**shape)
    lengths = [3 * 64 + 32, 11 * 64 + 32, 7 * 64 + 5, 9 * 64 + 60]
    sc = Scenario.from_dict({"name": "long", "shape": shape, "workload": {"lengths": lengths},
                             "sim": {"numerics": "off", "trace": False, "ops": False}})
    res = cgdr_des.simulate(sc)
    dur = (res.items["end"] - res.items["start"]).groupby(res.items["seqlen"]).median()
    slope = (dur[lengths[1]] - dur[lengths[0]]) / 8
    assert abs(costs.middle[0] / slope - 1) <= 2e-5
    makespan = int(res.summary["makespan_cycles"].iloc[0])
    assert abs(int(estimate(costs, np.array([lengths]), "greedy").makespan[0]) / makespan - 1) <= 2e-5

@pytest.mark.slow
@pytest.mark.parametrize("profile", profiles())
@settings(max_examples=3, deadline=None, derandomize=True)
@given(n=st.integers(65, 400))
def test_split_tiles_of_one_head_running_together_within_half_a_percent(profile, n):
    """One sequence: greedy puts each V-tile on its own core, all starting at once (the together
    context). Apart durations alone are up to 2.6 % off here; probes cover only a few lengths."""
    costs = calibrate(profile, **SPLIT, overrides=overrides(profile))
    assert costs.split and costs.v_tiles == 2
    finish, ran = phase_finish(profile, [n], shape=SPLIT)
    assert ran.sum() == 2
    assert within(estimate(costs, np.array([[n]]), "greedy"), finish, ran, CHECK_BOUND)


@pytest.mark.slow
@pytest.mark.parametrize("profile", profiles())
@settings(max_examples=3, deadline=None, derandomize=True)
@given(lengths=st.lists(st.integers(1, 300), min_size=2, max_size=4),
       policy=st.sampled_from(["greedy", "round_robin", "cost_lpt"]))
def test_split_tiles_on_random_batches_within_half_a_percent(profile, lengths, policy):
    """Scattering policies too: at phase fidelity each core keeps its own data cache, so an item's
    duration no longer depends on which sibling tile was timed first in the launch."""
    costs = calibrate(profile, **SPLIT, overrides=overrides(profile))
    finish, ran = phase_finish(profile, lengths, policy, shape=SPLIT)
    assert within(estimate(costs, np.array([lengths]), policy), finish, ran, CHECK_BOUND)


@pytest.mark.slow
def test_split_tiles_bound_the_makespan():
    """The lower bound holds for every assignment of split V-tiles (each core keeps its own data cache
    at phase fidelity, so a tile takes as long whether its siblings run alongside or not, docs/tail.md)."""
    costs = calibrate(**SPLIT)
    lengths = np.random.default_rng(4).integers(1, 300, (50, 4))
    for policy in ("greedy", "round_robin", "cost_lpt"):
        est = estimate(costs, lengths, policy)
        assert (est.makespan >= est.lower_bound(costs.block_dim)).all(), policy


@pytest.mark.slow
def test_shared_item_arrays_give_each_policy_s_own_estimate():
    """A study computes the policy-independent item arrays once (items_of); every field of each
    policy's estimate is what estimate() computes on its own, split V-tiles included."""
    from cgdr_des.tail.surrogate import items_of

    lengths = np.random.default_rng(5).integers(0, 300, (40, 4))
    for shape in (SPLIT, SHAPE):
        costs = calibrate(**shape)
        items = items_of(costs, lengths)
        for policy in ("greedy", "round_robin", "cost_lpt"):
            alone, shared = estimate(costs, lengths, policy), estimate(costs, lengths, policy, items=items)
            for name in ("items", "tokens", "busy", "finish", "item_cycles", "overhead"):
                np.testing.assert_array_equal(getattr(shared, name), getattr(alone, name), err_msg=name)


def test_calibration_names_the_override_the_910b_profiles_need():
    with pytest.raises(KernelDiagnostic, match=r'overrides = \{ flag_double_set = "counter" \}'):
        calibrate("atlas-a2-910b2", **SHAPE)


@pytest.mark.slow
def test_item_cost_grows_with_length_and_is_zero_for_empty():
    costs = calibrate(**SHAPE)
    one = costs.item_cycles(np.arange(1, 400), np.full(399, -1))
    assert (np.diff(one) > -0.01 * one[1:]).all()  # longer is never meaningfully cheaper
    assert costs.item_cycles([0], [-1])[0] == 0


@pytest.mark.slow
def test_surrogate_owners_are_the_dispatch_module_s():
    costs = calibrate(**SHAPE)
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 200, (30, 4))
    for policy in POLICIES:
        est = estimate(costs, lengths, policy)
        for i in range(lengths.shape[0]):
            cores = assign_items(lengths[i], costs.nv, costs.dv, costs.v_step, costs.block_dim, policy,
                                 item_cost=costs.item_cycles)
            assert est.items[i].tolist() == [len(c) for c in cores], policy
            assert est.tokens[i].tolist() == [sum(it.seqlen for it in c) for c in cores], policy


def policy_outputs(policy: str):
    """One per-core run of policy ``policy`` at numerics "kernel": (outputs, final state, items)."""
    x = inputs([70, 9, 130], SHAPE["nk"], SHAPE["nv"], SHAPE["dk"], SHAPE["dv"], seed=3)
    prof = load_profile("atlas-300i-duo")
    launch = build_launch(*args(x), numerics="kernel", ub_size=prof.ub_bytes, aiv_num=prof.aiv_num)
    res = run_launch(launch, prof, policy=policy, fidelity="phase", batched_numbers=False)
    return launch.out, launch.final_state, res.items


@pytest.fixture(scope="module")
def greedy_outputs():
    """Greedy's run, the reference of every policy's (computed once, not once per policy)."""
    calibrate(**SHAPE)  # the cost policies dispatch on this (cached) calibration
    return policy_outputs("greedy")


@pytest.mark.parametrize("policy", list(POLICIES))
def test_every_policy_computes_greedy_s_outputs_bit_for_bit(policy, greedy_outputs):
    """Per-core programs compute the numbers (not the head-batched pass), each in its own item order."""
    out, state, items = policy_outputs(policy)
    np.testing.assert_array_equal(greedy_outputs[0], out)
    np.testing.assert_array_equal(greedy_outputs[1], state)
    assert len(items) == 3 * SHAPE["nv"] and not items.duplicated(["batch", "head", "vtile"]).any()
    for _, grp in items.groupby("core"):  # each core walks its items in visiting order
        keys = list(zip(grp["batch"], grp["head"], grp["vtile"], strict=True))
        assert keys == sorted(keys) and grp["start"].is_monotonic_increasing


@pytest.fixture(scope="module")
def study():
    return run_study(scenario(), seed=5)


def test_study_is_deterministic_and_complete(study):
    again = run_study(scenario(), seed=5)
    for frame in ("batches", "core_finish", "summary", "checks"):
        pd.testing.assert_frame_equal(getattr(study, frame), getattr(again, frame))
    assert set(study.batches["policy"]) == set(POLICIES)  # 3 x 2 items: optimal applies
    assert len(study.batches) == 200 * len(POLICIES)
    assert len(study.core_finish) == 200 * len(POLICIES) * study.meta["block_dim"]
    b = study.batches
    assert (b["makespan_cycles"] >= b["lower_bound_cycles"]).all()
    opt = b[b.policy == "optimal"].set_index("batch_index")["makespan_cycles"]
    for policy, grp in b.groupby("policy"):  # nothing beats the exact optimum of the same model
        assert (grp.set_index("batch_index")["makespan_cycles"] >= opt).all(), policy
    assert study.worst_check_error <= CHECK_BOUND


def test_study_rows_agree_with_their_lengths_and_cores(study):
    b, c = study.batches, study.core_finish
    assert (b["tokens"] == b["lengths"].map(sum)).all() and (b["max_seqlen"] == b["lengths"].map(max)).all()
    per = c.groupby(["policy", "batch_index"], sort=False).agg(mk=("finish_cycles", "max"),
                                                               items=("items", "sum"),
                                                               core_tokens=("tokens", "sum"))
    merged = b.set_index(["policy", "batch_index"]).join(per)
    assert (merged["mk"] == merged["makespan_cycles"]).all()
    assert (merged["items"] == merged["lengths"].map(lambda v: SHAPE["nv"] * int(np.count_nonzero(v)))).all()
    assert (merged["core_tokens"] == SHAPE["nv"] * merged["tokens"]).all()
    clock = study.meta["clock_mhz"]
    np.testing.assert_allclose(b["makespan_us"], b["makespan_cycles"] / clock)


def test_summary_percentiles_are_numpy_s_on_the_written_batches(study, tmp_path):
    written = write_study(study, tmp_path, plots=False)
    batches = pd.read_parquet(written["batches"])
    summary = pd.read_csv(written["tail_summary_csv"]).set_index("policy")
    for policy, grp in batches.groupby("policy"):
        mk = grp["makespan_us"].to_numpy()
        for q, col in ((50, "p50_us"), (90, "p90_us"), (99, "p99_us"), (99.9, "p99_9_us")):
            assert summary.loc[policy, col] == pytest.approx(np.percentile(mk, q), rel=1e-12)
            assert summary.loc[policy, col.replace("_us", "_lo_us")] <= summary.loc[policy, col] * (1 + 1e-12)
        within = (grp["makespan_over_lb"] <= 1.01).mean()
        assert summary.loc[policy, "within_1pct_of_lb"] == pytest.approx(within)


def test_tail_command_writes_every_file(tmp_path):
    """Every frame; the four pictures are tests/test_command_outputs.py's (drawn, titled, redrawn)."""
    path = tmp_path / "s.toml"
    path.write_text('name = "cli_tail"\n[output]\nplots = false\n[shape]\nnk = 1\nnv = 2\ndk = 32\ndv = 32\n'
                    '[workload]\nbatch = 3\n[workload.distribution]\nkind = "uniform"\nmin = 1\nmax = 200\n'
                    '[study]\nbatches = 40\ncheck_batches = 1\nbootstrap = 20\n')
    res = CliRunner().invoke(main, ["tail", str(path), "--out", str(tmp_path / "o"), "--policy", "greedy",
                                    "--policy", "cost_lpt,minmax_contiguous", "--seed", "3"])
    assert res.exit_code == 0, res.output
    names = {"batches.parquet", "core_finish.parquet", "tail_summary.csv", "tail_summary.parquet", "checks.csv",
             "study.json"}
    assert names <= {p.name for p in (tmp_path / "o").iterdir()}
    assert "cost_lpt" in res.output and "check      batch" in res.output
    assert set(pd.read_parquet(tmp_path / "o" / "batches.parquet")["policy"]) == {"greedy", "cost_lpt",
                                                                                  "minmax_contiguous"}


@pytest.mark.parametrize(("argv", "message"), [
    (["--policy", "fifo"], "error: policy: got 'fifo'; one of greedy"),
    (["--batches", "0"], "error: --batches: got 0; an integer in [1, 1,000,000]"),
])
def test_tail_command_bad_input_is_one_line_exit_2(tmp_path, argv, message):
    res = CliRunner().invoke(main, ["tail", "scenarios/tail_lognormal.toml", "--out", str(tmp_path), *argv])
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1
    assert res.stderr.startswith(message) and "Traceback" not in res.output


def test_study_errors_name_the_field():
    with pytest.raises(InputError, match="workload.distribution"):
        run_study(Scenario.from_dict({"name": "x", "shape": SHAPE, "workload": {"lengths": [5, 6]}}))
    with pytest.raises(InputError, match="policy: got 'optimal'; batches of at most 20"):
        run_study(scenario(workload={"batch": 11}), policies=["optimal"])
    with pytest.raises(InputError, match="study.check_batches"):
        scenario(study={"check_batches": -1})


def test_a_check_beyond_the_bound_warns_and_the_command_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr("cgdr_des.tail.study.CHECK_BOUND", 0.0)  # any error at all is now beyond it
    with pytest.warns(UserWarning, match="off phase fidelity on a checked batch"):
        run_study(scenario(), batches=20, policies=["greedy"])
    path = tmp_path / "s.toml"
    path.write_text('name = "warn"\n[output]\nplots = false\n'  # what it says (test_command_outputs draws the pictures)
                    '[shape]\nnk = 1\nnv = 2\ndk = 32\ndv = 32\n[workload]\nbatch = 2\n'
                    '[workload.distribution]\nkind = "uniform"\nmin = 1\nmax = 90\n'
                    '[study]\nbatches = 10\ncheck_batches = 1\nbootstrap = 10\n')
    res = CliRunner().invoke(main, ["tail", str(path), "--out", str(tmp_path / "o"), "--policy", "greedy"])
    assert res.exit_code == 0 and "WARNING: tail surrogate is" in res.stderr


@pytest.mark.slow
def test_a_split_shape_s_warning_says_why(monkeypatch):
    monkeypatch.setattr("cgdr_des.tail.study.CHECK_BOUND", 0.0)
    with pytest.warns(UserWarning, match="splits V-tiles across cores, where the surrogate is measured within 0.2 %"):
        run_study(scenario(shape=SPLIT, study={"batches": 10, "check_batches": 1}), policies=["round_robin"])
    monkeypatch.setattr("cgdr_des.tail.study.CHECK_BOUND", 1.0)  # nothing beyond the bound: no warning at all
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_study(scenario(shape=SPLIT, study={"batches": 10, "check_batches": 1}), policies=["round_robin"])
