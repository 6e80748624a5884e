"""Sequence-length distributions: how a batch's ``actual_seq_lengths`` are drawn.

Each distribution is a small frozen pydantic model (the ``[workload.distribution]`` table of a scenario,
tagged by ``kind``) plus one sampling function registered in ``SAMPLERS``. ``sample_lengths`` looks the
sampler up by kind, draws ``batch`` lengths from the caller's ``numpy.random.Generator`` (the caller owns
the seed: same generator state, same lengths) and returns them as ``int32`` tokens, each clipped to the
distribution's ``[min, max]`` where it has one and never below 0.

Choices where a distribution has several textbook readings:

- ``uniform``: integers uniform on the closed range ``[min, max]``.
- ``lognormal``: ``round(exp(N(ln median, sigma)))``, then clipped; ``median`` is the median before
  rounding and clipping (clipping and rounding keep the median when ``min <= median <= max``).
- ``zipf``: the bounded (truncated) Zipf law on the integers ``min..max``, ``P(k) ∝ k**-theta``; drawn
  exactly from that pmf (no rejection), so ``theta`` may be any positive number, including ``theta <= 1``.
- ``pareto``: the continuous Pareto law with scale ``min`` and shape ``alpha``
  (``P(X > x) = (min/x)**alpha``), floored to an integer and clipped at ``max`` (so the clip puts a point
  mass at ``max`` rather than resampling).
- ``bimodal``: ``n_long`` sequences of ``long`` tokens among ``batch - n_long`` of ``short`` tokens — the
  long-tail (docs/design-notes.md §2) example (one 2048-token sequence among 8-token ones). ``place`` puts the long ones
  first (the design notes' "batch0 is long" (docs/design-notes.md §2)), last, or at positions drawn from the generator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from cgdr_des.errors import InputError

MAX_LENGTH = 2**31 - 1  # actual_seq_lengths is int32 on the device
MAX_BATCH = 1_048_576  # sequences per launch: one work item per (sequence, head) is simulated
# The bounded zipf pmf is tabulated over its whole support; past this many integers a table is wasteful.
MAX_ZIPF_SUPPORT = 10_000_000
# exp(N(0, 50)) spans hundreds of decades; past this sigma a lognormal is a point mass at its clips.
MAX_SIGMA = 20.0

Length = Annotated[int, Field(ge=0, le=MAX_LENGTH)]
PositiveLength = Annotated[int, Field(ge=1, le=MAX_LENGTH)]


class _Dist(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, use_attribute_docstrings=True)


def _check_range(lo: int, hi: int | None) -> None:
    """Model validators raise InputError with the field relative to the distribution table."""
    if hi is not None and hi < lo:
        raise InputError("max", hi, f"must be >= min ({lo})")


class _Ranged(_Dist):
    """A distribution bounded by ``min`` and ``max`` (its subclasses declare both)."""

    @model_validator(mode="after")
    def _range(self):
        _check_range(self.min, self.max)
        return self


class Fixed(_Dist):
    """Every sequence has ``length`` tokens."""

    kind: Literal["fixed"]
    """Distribution kind: fixed (every sequence the same length)."""
    length: Length
    """Length of every sequence, in tokens."""


class Uniform(_Ranged):
    """Integers uniform on ``[min, max]`` (both inclusive)."""

    kind: Literal["uniform"]
    """Distribution kind: uniform integers."""
    min: Length
    """Shortest length, in tokens."""
    max: Length
    """Longest length, in tokens (>= min)."""


class Lognormal(_Ranged):
    """``round(exp(N(ln median, sigma)))`` clipped to ``[min, max]`` (``max=None``: no upper clip)."""

    kind: Literal["lognormal"]
    """Distribution kind: lognormal, rounded to tokens."""
    median: Annotated[float, Field(gt=0, le=MAX_LENGTH)]
    """Median length, in tokens (> 0)."""
    sigma: Annotated[float, Field(ge=0, le=MAX_SIGMA)]
    """Standard deviation of the length's natural logarithm (dimensionless)."""
    min: Length = 1
    """Shortest length, in tokens; shorter draws are clipped; default 1."""
    max: Length | None = None
    """Longest length, in tokens; longer draws are clipped; default none."""


class Zipf(_Ranged):
    """Bounded Zipf law on the integers ``min..max``: ``P(k) ∝ k**-theta``."""

    kind: Literal["zipf"]
    """Distribution kind: bounded Zipf law on the integers min..max."""
    theta: Annotated[float, Field(gt=0, le=1e6)]
    """Exponent of the Zipf law (> 0): larger means more short sequences."""
    min: PositiveLength
    """Shortest length, in tokens (>= 1)."""
    max: PositiveLength
    """Longest length, in tokens (>= min)."""

    @model_validator(mode="after")
    def _support(self):
        if self.max - self.min + 1 > MAX_ZIPF_SUPPORT:
            raise InputError("max", self.max, f"max - min + 1 must be <= {MAX_ZIPF_SUPPORT} for zipf")
        return self


class Pareto(_Ranged):
    """Pareto with scale ``min`` and shape ``alpha``, floored, clipped at ``max``."""

    kind: Literal["pareto"]
    """Distribution kind: Pareto, truncated to [min, max]."""
    alpha: Annotated[float, Field(gt=0, le=1e6)]
    """Tail index of the Pareto law (> 0): smaller means a heavier tail."""
    min: PositiveLength
    """Shortest length, in tokens (>= 1)."""
    max: PositiveLength
    """Longest length, in tokens (>= min)."""


class Bimodal(_Dist):
    """``n_long`` sequences of ``long`` tokens, the rest ``short``; ``place`` says where the long ones go."""

    kind: Literal["bimodal"]
    """Distribution kind: bimodal (n_long long sequences, the rest short)."""
    long: Length
    """Length of the long sequences, in tokens."""
    short: Length
    """Length of the short sequences, in tokens."""
    n_long: Annotated[int, Field(ge=0, le=MAX_LENGTH)] = 1
    """Number of long sequences in the batch; default 1."""
    place: Literal["first", "last", "random"] = "first"
    """Where the long sequences sit in the batch: first, last or random."""


Distribution = Annotated[
    Fixed | Uniform | Lognormal | Zipf | Pareto | Bimodal, Field(discriminator="kind")
]


def _fixed(d: Fixed, batch: int, rng: np.random.Generator) -> np.ndarray:
    return np.full(batch, d.length, dtype=np.int64)


def _uniform(d: Uniform, batch: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(d.min, d.max, size=batch, endpoint=True)


def _lognormal(d: Lognormal, batch: int, rng: np.random.Generator) -> np.ndarray:
    x = rng.lognormal(mean=np.log(d.median), sigma=d.sigma, size=batch)
    hi = MAX_LENGTH if d.max is None else d.max
    return np.rint(np.clip(x, d.min, hi)).astype(np.int64)


def _zipf(d: Zipf, batch: int, rng: np.random.Generator) -> np.ndarray:
    support = np.arange(d.min, d.max + 1, dtype=np.int64)
    # in log space, scaled so the largest weight is 1: k**-theta underflows to 0 for every k once
    # theta * ln(min) passes ~745, yet the law is still well defined (all mass near min)
    log_w = -d.theta * np.log(support.astype(np.float64))
    weights = np.exp(log_w - log_w.max())
    return rng.choice(support, size=batch, p=weights / weights.sum())


def _pareto(d: Pareto, batch: int, rng: np.random.Generator) -> np.ndarray:
    # numpy's pareto() is the Lomax law (shifted by one); (1 + lomax) * scale is the classical Pareto.
    x = (1.0 + rng.pareto(d.alpha, size=batch)) * d.min
    return np.floor(np.minimum(x, d.max)).astype(np.int64)


def _bimodal(d: Bimodal, batch: int, rng: np.random.Generator) -> np.ndarray:
    if d.n_long > batch:
        raise InputError("n_long", d.n_long, f"must be <= batch ({batch})")
    out = np.full(batch, d.short, dtype=np.int64)
    if d.place == "first":
        out[: d.n_long] = d.long
    elif d.place == "last":
        out[batch - d.n_long :] = d.long
    else:
        out[rng.choice(batch, size=d.n_long, replace=False)] = d.long
    return out


DISTRIBUTIONS: dict[str, type[_Dist]] = {
    "fixed": Fixed, "uniform": Uniform, "lognormal": Lognormal, "zipf": Zipf, "pareto": Pareto,
    "bimodal": Bimodal,
}

SAMPLERS: dict[str, Callable[[_Dist, int, np.random.Generator], np.ndarray]] = {
    "fixed": _fixed,
    "uniform": _uniform,
    "lognormal": _lognormal,
    "zipf": _zipf,
    "pareto": _pareto,
    "bimodal": _bimodal,
}


def sample_lengths(dist: _Dist, batch: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``batch`` sequence lengths (tokens, ``int32``, each >= 0) from ``dist`` using ``rng``.

    Raises InputError for a non-positive batch or a distribution kind with no sampler.
    """
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise InputError("batch", batch, "a positive integer")
    sampler = SAMPLERS.get(dist.kind)
    if sampler is None:
        raise InputError("kind", dist.kind, f"one of {sorted(SAMPLERS)}")
    lengths = np.clip(sampler(dist, int(batch), rng), 0, MAX_LENGTH)
    return lengths.astype(np.int32)
