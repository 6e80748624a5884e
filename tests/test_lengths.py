"""Sequence-length distributions: determinism, bounds, and closed-form statistical properties.

Statistical checks draw a large seeded sample and compare with the law's closed form within four
standard errors (so a correct sampler fails with probability ~1e-4 per check, and being seeded the
outcome is fixed); a wrong law (e.g. numpy's Lomax instead of Pareto, or an off-by-one range) is many
standard errors away at these sample sizes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import TypeAdapter

from cgdr_des.errors import InputError
from cgdr_des.workload.lengths import Distribution, sample_lengths

N = 40_000
DIST = TypeAdapter(Distribution)


def dist(**kw):
    return DIST.validate_python(kw)


def draw(d, batch=N, seed=1):
    return sample_lengths(d, batch, np.random.default_rng(seed))


EXAMPLES = [
    dict(kind="fixed", length=77),
    dict(kind="uniform", min=3, max=900),
    dict(kind="lognormal", median=1024, sigma=1.0, min=16, max=4096),
    dict(kind="zipf", theta=1.2, min=8, max=4096),
    dict(kind="pareto", alpha=1.5, min=32, max=8192),
    dict(kind="bimodal", long=2048, short=8, n_long=3),
]


@pytest.mark.parametrize("spec", EXAMPLES, ids=lambda s: s["kind"])
def test_seeded_determinism_dtype_and_bounds(spec):
    d = dist(**spec)
    a, b = draw(d, 500, seed=5), draw(d, 500, seed=5)
    assert a.dtype == np.int32 and a.shape == (500,)
    np.testing.assert_array_equal(a, b)
    lo = spec.get("min", 0)
    hi = spec.get("max", max(spec.get("length", 0), spec.get("long", 0)))
    assert a.min() >= lo and a.max() <= hi and a.min() >= 0


@pytest.mark.parametrize("spec", EXAMPLES[1:5], ids=lambda s: s["kind"])
def test_different_seeds_differ(spec):
    d = dist(**spec)
    assert not np.array_equal(draw(d, 200, seed=1), draw(d, 200, seed=2))


def test_fixed_is_constant():
    assert set(draw(dist(kind="fixed", length=0), 10).tolist()) == {0}


def test_uniform_covers_closed_range_with_closed_form_mean():
    lo, hi = 10, 19
    x = draw(dist(kind="uniform", min=lo, max=hi))
    assert set(x.tolist()) == set(range(lo, hi + 1))  # both ends reachable
    n = hi - lo + 1
    sd = math.sqrt((n * n - 1) / 12)
    assert abs(x.mean() - (lo + hi) / 2) < 4 * sd / math.sqrt(N)


def test_lognormal_median_in_log_space():
    median, sigma = 1000.0, 0.5
    x = draw(dist(kind="lognormal", median=median, sigma=sigma, min=1, max=None))
    # Standard error of a sample median of N(mu, sigma): sqrt(pi/2) * sigma / sqrt(N); rounding to
    # integers moves log(x) by at most 0.5/x ~ 1e-3 near the median.
    tol = 4 * math.sqrt(math.pi / 2) * sigma / math.sqrt(N) + 1e-3
    assert abs(np.median(np.log(x)) - math.log(median)) < tol
    assert abs(np.std(np.log(x)) - sigma) < 0.02


def test_lognormal_clip_mass_at_max_matches_tail_probability():
    median, sigma, hi = 1024.0, 1.0, 4096
    x = draw(dist(kind="lognormal", median=median, sigma=sigma, max=hi))
    z = (math.log(hi) - math.log(median)) / sigma
    p_tail = 0.5 * math.erfc(z / math.sqrt(2))  # P(X > max) for the lognormal
    se = math.sqrt(p_tail * (1 - p_tail) / N)
    assert abs((x == hi).mean() - p_tail) < 4 * se + 1 / N


def test_zipf_mean_matches_bounded_zipf():
    theta, lo, hi = 1.1, 1, 200
    k = np.arange(lo, hi + 1, dtype=np.float64)
    p = k**-theta / np.sum(k**-theta)
    mean, var = np.sum(k * p), np.sum(k * k * p) - np.sum(k * p) ** 2
    x = draw(dist(kind="zipf", theta=theta, min=lo, max=hi))
    assert abs(x.mean() - mean) < 4 * math.sqrt(var / N)
    # and the most likely value is the smallest one, with its exact probability
    assert abs((x == lo).mean() - p[0]) < 4 * math.sqrt(p[0] * (1 - p[0]) / N)


@pytest.mark.parametrize("threshold", [64, 100, 500])
def test_pareto_survival_function(threshold):
    alpha, lo, hi = 1.5, 32, 1000
    x = draw(dist(kind="pareto", alpha=alpha, min=lo, max=hi))
    p = (lo / threshold) ** alpha  # P(floor(X) >= t) = P(X >= t) for integer t
    assert abs((x >= threshold).mean() - p) < 4 * math.sqrt(p * (1 - p) / N)


def test_pareto_point_mass_at_max():
    alpha, lo, hi = 1.0, 10, 100
    x = draw(dist(kind="pareto", alpha=alpha, min=lo, max=hi))
    p = (lo / hi) ** alpha
    assert abs((x == hi).mean() - p) < 4 * math.sqrt(p * (1 - p) / N)


@pytest.mark.parametrize("place", ["first", "last", "random"])
def test_bimodal_has_exactly_n_long(place):
    x = draw(dist(kind="bimodal", long=2048, short=8, n_long=3, place=place), batch=32)
    assert (x == 2048).sum() == 3 and (x == 8).sum() == 29
    where = np.flatnonzero(x == 2048).tolist()
    if place == "first":
        assert where == [0, 1, 2]
    elif place == "last":
        assert where == [29, 30, 31]


def test_bimodal_default_is_one_long_first():
    x = draw(dist(kind="bimodal", long=2048, short=8), batch=32)
    assert x[0] == 2048 and (x[1:] == 8).all()


def test_bimodal_more_long_than_batch_is_input_error():
    with pytest.raises(InputError) as e:
        draw(dist(kind="bimodal", long=10, short=1, n_long=5), batch=4)
    assert e.value.field == "n_long"


@pytest.mark.parametrize("batch", [0, -3, 2.5, True])
def test_bad_batch_is_input_error(batch):
    with pytest.raises(InputError) as e:
        draw(dist(kind="fixed", length=1), batch=batch)
    assert e.value.field == "batch"
