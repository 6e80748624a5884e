"""A checked batch past ``[study] check_max_token_heads`` is checked as a stand-in: its lengths scaled
by one factor (at least a token each, empty ones kept empty), the surrogate evaluated on the stand-in
itself, and the row saying what was simulated. Held to the surrogate and to phase fidelity run here
on the stand-in's lengths, independently of the study."""

from __future__ import annotations

import numpy as np
import pytest
from test_tail import SHAPE, scenario

import cgdr_des
from cgdr_des.tail import run_study
from cgdr_des.tail.calibration import calibrate
from cgdr_des.tail.checks import stand_in
from cgdr_des.tail.surrogate import estimate


def test_a_stand_in_scales_every_length_by_one_factor_to_the_cap():
    lengths = np.array([1000, 500, 0, 3, 1], np.int32)
    assert stand_in(lengths, 4, 0) is lengths and stand_in(lengths, 4, 1504 * 4) is lengths  # fits / no cap
    got = stand_in(lengths, 4, 1504 * 4 // 10)            # a tenth of the work
    assert got.dtype == lengths.dtype and list(got) == [100, 50, 0, 1, 1]  # rounded, at least 1, 0 stays 0


@pytest.fixture(scope="module")
def study():
    # batches of 3 sequences of up to 300 tokens, 2 value heads: capped at 200 token-heads, every check
    # (the worst, the median, one random) is a stand-in
    sc = scenario(study={"batches": 50, "check_batches": 3, "bootstrap": 20, "check_max_token_heads": 200})
    return sc, run_study(sc, seed=3)


def test_each_check_is_a_stand_in_within_the_cap_and_says_so(study):
    sc, res = study
    for r in res.checks.itertuples():
        whole = int(res.batches[(res.batches["batch_index"] == r.batch_index)]["tokens"].iloc[0])
        assert r.stand_in_scale == pytest.approx(r.tokens_checked / whole) and r.stand_in_scale < 1
        assert r.tokens_checked * SHAPE["nv"] <= 200 + 3 * SHAPE["nv"]  # rounding: up to half a token each


def test_a_stand_in_is_timed_by_the_surrogate_and_by_phase_on_its_own_lengths(study):
    sc, res = study
    nv = SHAPE["nv"]
    lengths = res.batches.drop_duplicates("batch_index").set_index("batch_index")
    for r in res.checks.itertuples():
        batch = np.asarray(lengths.loc[r.batch_index, "lengths"], np.int32)
        small = stand_in(batch, nv, 200)
        assert int(small.sum()) == r.tokens_checked
        costs = calibrate(sc.hardware.profile, nk=SHAPE["nk"], nv=nv, dk=SHAPE["dk"], dv=SHAPE["dv"],
                          overrides=dict(sc.hardware.overrides))
        assert r.makespan_surrogate_cycles == int(estimate(costs, small[None, :], r.policy).makespan[0])
        # the study's scenario (its seed draws g, which ScalarExp's cost reads) on the stand-in's lengths
        one = sc.with_changes({"workload": {"lengths": small.tolist(), "distribution": None},
                               "kernel": {"policy": r.policy}, "sim": {"fidelity": "phase", "numerics": "off"}})
        assert r.makespan_phase_cycles == int(cgdr_des.simulate(one).summary["makespan_cycles"].iloc[0])
