"""Tail-study estimates against phase-fidelity simulations of the same batches."""

from __future__ import annotations

import pytest

import cgdr_des
from cgdr_des.scenario import Scenario
from cgdr_des.tail import calibrate, estimate_batch, tail_study
from cgdr_des.workload.lengths import Lognormal

SHAPE = {"nk": 2, "nv": 4, "dk": 64, "dv": 64}


@pytest.fixture(scope="module")
def costs():
    return calibrate(**SHAPE)


def test_chunk_costs_are_quadratic_in_the_chunk_length(costs):
    assert costs.fit_residual < 0.01
    assert costs.middle[-1] > 0 and costs.first[-1] > costs.middle[-1] * 0.5


@pytest.mark.parametrize("lengths", [[300, 7, 64, 129], [1, 65, 640, 33, 200], [512]])
def test_estimate_matches_phase_fidelity_within_one_percent(costs, lengths):
    sc = Scenario.from_dict({"name": "tail", "shape": SHAPE, "workload": {"lengths": lengths},
                             "sim": {"numerics": "off"}})
    simulated = cgdr_des.simulate(sc).summary.makespan_cycles[0]
    estimated = estimate_batch(costs, lengths)["makespan_cycles"]
    assert abs(estimated - simulated) <= 0.01 * simulated


def test_tail_study_is_deterministic_and_complete(costs):
    dist = Lognormal(kind="lognormal", median=200, sigma=1.0, min=1, max=2000)
    a = tail_study(costs, dist, batch=8, n_batches=20, seed=4)
    b = tail_study(costs, dist, batch=8, n_batches=20, seed=4)
    assert a.equals(b) and len(a) == 20
    assert (a["makespan_cycles"] >= a["finish_p50_cycles"]).all() and (a["imbalance"] >= 1).all()
