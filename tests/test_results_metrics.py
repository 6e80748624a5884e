"""Run metrics against closed forms and the standard library."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cgdr_des.results import metrics

finishes = st.lists(st.integers(1, 10**9), min_size=1, max_size=64)


def test_perfect_balance():
    assert metrics.imbalance([7, 7, 7]) == 1.0
    assert metrics.coefficient_of_variation([7, 7, 7]) == 0.0


def test_one_slow_core_of_n():
    # n-1 cores finish at 1, one at k: max/mean = k / ((n-1+k)/n)
    n, k = 8, 9
    assert metrics.imbalance([1] * (n - 1) + [k]) == pytest.approx(k * n / (n - 1 + k))


@given(finishes)
def test_cv_and_imbalance_match_statistics(xs):
    mean = statistics.fmean(xs)
    assert metrics.coefficient_of_variation(xs) == pytest.approx(statistics.pstdev(xs) / mean)
    assert metrics.imbalance(xs) == pytest.approx(max(xs) / mean)
    assert metrics.imbalance(xs) >= 1 - 1e-12


@given(finishes)
def test_percentiles_are_ordered_and_bounded(xs):
    p = metrics.tail_percentiles(xs)
    assert min(xs) <= p[50] <= p[95] <= p[99] <= max(xs)
    assert metrics.percentile(xs, 100) == max(xs) and metrics.percentile(xs, 0) == min(xs)


@given(finishes)
def test_tail_percentiles_are_the_single_percentiles(xs):
    # tail_percentiles asks numpy for all q at once: the numbers must be percentile()'s exactly
    assert metrics.tail_percentiles(xs, (0, 50, 95, 99, 100)) == {q: metrics.percentile(xs, q)
                                                                  for q in (0, 50, 95, 99, 100)}


def test_tail_percentiles_of_no_values_are_nan():
    assert all(math.isnan(v) for v in metrics.tail_percentiles([]).values())


def test_percentile_of_two_values_interpolates_linearly():
    assert metrics.percentile([0, 100], 99) == pytest.approx(99.0)


def test_lower_bound_closed_forms():
    assert metrics.lower_bound([10, 10, 10, 10], 2) == 20  # total / cores
    assert metrics.lower_bound([100, 1, 1], 8) == 100  # the longest item
    assert metrics.lower_bound([5, 5, 1], 2) == 6  # ceil(11 / 2)
    assert metrics.lower_bound([], 4) == 0


@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=50), st.integers(1, 64))
def test_lower_bound_is_below_any_greedy_schedule(durations, n):
    # list scheduling (each item to the least-loaded core) is a real schedule, so it can't beat the bound
    loads = [0] * n
    for d in durations:
        loads[loads.index(min(loads))] += d
    assert metrics.lower_bound(durations, n) <= max(loads)
    assert metrics.lower_bound(durations, n) >= math.ceil(sum(durations) / n)


def test_utilisation_and_degenerate_inputs():
    assert metrics.utilisation([50, 100], 100) == 0.75
    assert math.isnan(metrics.utilisation([1], 0))
    assert math.isnan(metrics.imbalance([0, 0]))
    assert math.isnan(metrics.percentile([], 50))
