"""The tail study's own arithmetic (tail/study.py, tail/checks.py) without a calibration run.

Sampled batches are a prefix-stable stream (batch i does not depend on how many are drawn); the
per-batch and per-core rows of a policy against loops over a made-up estimate; which policies a
study offers; which batches the self-check re-simulates.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from cgdr_des.errors import InputError
from cgdr_des.kernel.policies import OPTIMAL_MAX_ITEMS, POLICIES
from cgdr_des.tail import study
from cgdr_des.tail.checks import pick
from cgdr_des.tail.surrogate import Estimate
from cgdr_des.workload.lengths import DISTRIBUTIONS


def lognormal():
    return DISTRIBUTIONS["lognormal"](kind="lognormal", median=200, sigma=0.8, max=4000)


def test_sampled_batches_are_a_prefix_stable_seeded_stream():
    ten = study.sample_batches(lognormal(), 6, 10, seed=4)
    assert ten.shape == (10, 6) and ten.dtype == np.int64
    np.testing.assert_array_equal(study.sample_batches(lognormal(), 6, 3, seed=4), ten[:3])
    assert not np.array_equal(study.sample_batches(lognormal(), 6, 10, seed=5), ten)
    assert len({tuple(r) for r in ten}) == 10  # each row its own draw


def test_a_bad_distribution_field_is_named_under_workload():
    bad = DISTRIBUTIONS["bimodal"](kind="bimodal", long=9, short=1, n_long=5)
    with pytest.raises(InputError) as info:
        study.sample_batches(bad, 3, 2, seed=0)
    assert info.value.field.startswith("workload.distribution.")


def estimate(finish: np.ndarray, overhead: int = 10) -> Estimate:
    n, m = finish.shape
    busy = finish - overhead
    return Estimate(items=np.ones((n, m), np.int64), tokens=busy // 3, busy=busy, finish=finish,
                    item_cycles=np.maximum(busy, 1), overhead=np.full(n, overhead))


def test_batch_and_core_rows_by_loop():
    rng = np.random.default_rng(0)
    finish = rng.integers(100, 1000, (5, 4))
    lengths = rng.integers(0, 300, (5, 3))
    est = estimate(finish)
    costs = SimpleNamespace(clock_mhz=1000.0)
    batches, cores = study._frames("greedy", lengths, est, costs)
    lb = est.lower_bound(4)
    for i in range(5):
        row = batches.iloc[i]
        f = [float(x) for x in finish[i]]
        mk, mean = max(f), sum(f) / 4
        assert (row["batch_index"], row["policy"], row["tokens"], row["max_seqlen"]) == (i, "greedy",
                                                                                         sum(lengths[i]),
                                                                                         max(lengths[i]))
        assert row["makespan_cycles"] == mk and row["makespan_us"] == pytest.approx(mk / 1000.0)
        assert row["makespan_over_lb"] == pytest.approx(mk / lb[i]) and row["imbalance"] == pytest.approx(mk / mean)
        assert row["cv"] == pytest.approx((sum((x - mean) ** 2 for x in f) / 4) ** 0.5 / mean)
        assert row["tail_idle_share"] == pytest.approx(sum(mk - x for x in f) / (4 * mk))
        assert row["lengths"].tolist() == lengths[i].tolist()
    assert len(cores) == 5 * 4
    for _, c in cores.iterrows():
        b, k = int(c["batch_index"]), int(c["core"])
        assert c["finish_cycles"] == finish[b, k] and c["busy_cycles"] == est.busy[b, k]
        assert c["tokens"] == est.tokens[b, k] and c["items"] == 1


def costs_of(nv=2, split=False, v_tiles=1):
    return SimpleNamespace(nv=nv, split=split, v_tiles=v_tiles)


def test_every_policy_is_offered_and_optimal_only_for_small_batches():
    small_batch = OPTIMAL_MAX_ITEMS // 2
    assert study._policies(None, costs_of(nv=2), small_batch) == list(POLICIES)
    big = study._policies(None, costs_of(nv=2), small_batch + 1)
    assert big == [p for p in POLICIES if p != "optimal"]
    split = study._policies(None, costs_of(nv=2, split=True, v_tiles=2), small_batch)  # twice the items
    assert "optimal" not in split


def test_asking_for_optimal_on_big_batches_says_why():
    with pytest.raises(InputError, match="batch x nv x V-tiles") as info:
        study._policies(["greedy", "optimal"], costs_of(nv=OPTIMAL_MAX_ITEMS), 2)
    assert info.value.field == "policy"
    assert study._policies(["optimal"], costs_of(nv=1), OPTIMAL_MAX_ITEMS) == ["optimal"]


def test_requested_policies_are_checked_and_deduplicated_in_order():
    assert study._known(None) is None
    assert study._known(["cost_lpt", "greedy", "cost_lpt"]) == ["cost_lpt", "greedy"]
    with pytest.raises(InputError) as info:
        study._known(["greedy", "fifo"])
    assert info.value.value == "fifo"


@pytest.mark.parametrize("value", [0, -3, True, 2.0, "4", None])
def test_counts_must_be_positive_integers(value):
    with pytest.raises(InputError) as info:
        study._positive("batches", value)
    assert info.value.field == "batches"
    assert study._positive("batches", np.int64(7)) == 7


def test_the_checks_take_the_worst_then_the_median_then_seeded_random_batches():
    mk = np.array([50, 90, 10, 70, 30, 90])
    rng = np.random.default_rng(3)
    assert pick(mk, 0, rng) == ("worst", 1)  # the first of the largest
    order = sorted(range(len(mk)), key=lambda i: (mk[i], i))
    assert pick(mk, 1, rng) == ("median", order[len(mk) // 2])
    draws = [pick(mk, j, np.random.default_rng(8)) for j in (2, 3)]
    again = [pick(mk, j, np.random.default_rng(8)) for j in (2, 3)]
    assert draws == again and all(kind == "random" and 0 <= i < len(mk) for kind, i in draws)
