"""Per-policy summary of a study: makespan percentiles with bootstrap intervals, balance, closeness to the bound.

Percentiles are numpy's default (linear interpolation between order statistics) of ``makespan_us``
over the policy's batches; each has a 95 % percentile-bootstrap interval (``n_boot`` resamples of the
batches with replacement, from a generator seeded by the study's seed, so it is reproducible).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

QUANTILES = (50, 90, 95, 99, 99.9)


def quantile_name(q: float) -> str:
    """``99.9`` -> ``p99_9`` (column-name friendly)."""
    return "p" + f"{q:g}".replace(".", "_")


def interval_text(row, name: str = "p99") -> str:
    """``[1,583,441.2, 1,818,934.0]``: the bootstrap interval of one percentile of a summary row."""
    return f"[{row[f'{name}_lo_us']:,.1f}, {row[f'{name}_hi_us']:,.1f}]"


def summarise(batches: pd.DataFrame, *, n_boot: int = 200, seed: int = 0) -> pd.DataFrame:
    """One row per policy (in the order they appear in ``batches``)."""
    rows = []
    for policy, grp in batches.groupby("policy", sort=False, observed=True):
        rows.append({"policy": policy, **_row(grp, n_boot, np.random.default_rng(seed))})
    return pd.DataFrame(rows)


def _row(grp: pd.DataFrame, n_boot: int, rng: np.random.Generator) -> dict:
    mk = grp["makespan_us"].to_numpy(np.float64)
    point = np.percentile(mk, QUANTILES)
    boot = np.empty((len(QUANTILES), n_boot))
    step = max(1, 2_000_000 // mk.size)  # resamples per block: memory stays ~16 MB for any study size
    for s in range(0, n_boot, step):
        idx = rng.integers(0, mk.size, (min(step, n_boot - s), mk.size))
        boot[:, s:s + idx.shape[0]] = np.percentile(mk[idx], QUANTILES, axis=1)
    lo, hi = np.percentile(boot, [2.5, 97.5], axis=1)
    row: dict = {"batches": int(mk.size), "makespan_mean_us": float(mk.mean())}
    for q, p, a, b in zip(QUANTILES, point, lo, hi, strict=True):
        name = quantile_name(q)
        row |= {f"{name}_us": float(p), f"{name}_lo_us": float(a), f"{name}_hi_us": float(b)}
    ratio = grp["makespan_over_lb"].to_numpy(np.float64)
    imb = grp["imbalance"].to_numpy(np.float64)
    row |= {"imbalance_mean": float(imb.mean()), "imbalance_p99": float(np.percentile(imb, 99)),
            "makespan_over_lb_mean": float(ratio.mean()), "within_1pct_of_lb": float((ratio <= 1.01).mean())}
    return row
