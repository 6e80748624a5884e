"""Run-level metrics as plain functions of per-core and per-item numbers (cycles in, floats out).

Choices: percentiles use numpy's default linear interpolation between order statistics (with 8
cores p99 sits between the two slowest cores, close to the max); ``cv`` is the population coefficient
of variation (std with ddof=0, over the cores that ran); a metric of an empty or all-zero input is NaN
rather than an exception, so a degenerate run still yields a summary row.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from cgdr_des.integers import ceil_div


def _array(values: Iterable[float]) -> np.ndarray:
    return np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=np.float64)


def percentile(values: Iterable[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation; NaN for no values."""
    a = _array(values)
    return float(np.percentile(a, q)) if a.size else math.nan


def tail_percentiles(values: Iterable[float], qs: Sequence[float] = (50, 95, 99)) -> dict[float, float]:
    """``{q: percentile}`` for each q (one numpy call for all of them: the same numbers, less overhead)."""
    a = _array(values)
    if not a.size:
        return {q: math.nan for q in qs}
    return {q: float(v) for q, v in zip(qs, np.percentile(a, list(qs)), strict=True)}


def imbalance(finish: Iterable[float]) -> float:
    """max / mean of the core finish times: 1.0 is perfect balance; NaN when the mean is 0."""
    a = _array(finish)
    mean = a.mean() if a.size else 0.0
    return float(a.max() / mean) if mean > 0 else math.nan


def coefficient_of_variation(finish: Iterable[float]) -> float:
    """Population std / mean of the core finish times; NaN when the mean is 0."""
    a = _array(finish)
    mean = a.mean() if a.size else 0.0
    return float(a.std() / mean) if mean > 0 else math.nan


def lower_bound(item_durations: Iterable[float], n_cores: int) -> int:
    """Cycles no schedule of these items on ``n_cores`` cores can beat: max(total / cores, longest item).

    Durations are integer cycles; total / cores is rounded up (a makespan is a whole number of cycles).
    """
    a = np.asarray(list(item_durations) if not isinstance(item_durations, np.ndarray) else item_durations,
                   dtype=np.int64)
    if not a.size or n_cores <= 0:
        return 0
    return int(max(ceil_div(int(a.sum()), n_cores), int(a.max())))


def utilisation(busy: Iterable[float], makespan: float) -> float:
    """Mean over cores of busy / makespan (0..1); NaN for a zero makespan."""
    a = _array(busy)
    return float(a.mean() / makespan) if makespan > 0 and a.size else math.nan
