"""A variant's item costs: the two numbers that decide the tail, and the tables at another profile point.

The two numbers (from the calibrated :class:`~cgdr_des.item_costs.ItemCosts`, V-tile slot 0):

- **per-item fixed cost**: the 1-token item (``sole[1]``), the work every item pays however short
  (Init of its V-tile, the c == 0 state load, the write-back): a batch of many short items is a sum
  of these;
- **per-chunk cost**: a middle full chunk (``middle``), what every further 64 tokens of a long item
  add.

Profile points (the ranged fields' one-at-a-time ends and joint samples) need each variant's item costs
at that point. A full calibration per point (every chunk length, 80 sequences) would cost several
times a probe; instead one *probe* launch per (variant, point) times ten items, of 1, 2, 4, 8, 16,
32, 48, 64, 128 and 256 tokens, at phase fidelity on the scenario's shape, and the calibrated tables
are shifted by what the probe moved between the nominal profile and the point (:func:`shifted`):

- ``sole[L]`` scaled by the ratio point / nominal of the sole-chunk probes (1 ... 64 tokens),
  interpolated linearly in L (an additive shift was up to 1.2 % off at dk = 16, the ratio 0.5 %);
- ``two[L]`` (first chunk of a longer item, plus its sole last chunk) by that plus the change of the
  first full chunk (128 tokens minus 64);
- ``middle`` by half the change of two further chunks (256 minus 128 tokens);
- ``pre`` (the per-core overhead) by the change of the probe's overhead.

The tiling is held at the nominal profile's (``ub_usable_bytes`` moves vStep, which the tables
cannot follow), so that field's ends change nothing here. ``docs/advise.md`` gives the measured error
of the shift against a full calibration at a profile end.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from cgdr_des.item_costs import ItemCosts
from cgdr_des.kernel.launch import CHUNK_SIZE

#: sole-chunk probe lengths (tokens): the sole table is shifted piecewise linearly between them
SOLE_PROBES = (1, 2, 4, 8, 16, 32, 48, CHUNK_SIZE)
#: the probe launch's sequences: the sole chunks, then two and four full chunks
PROBE_LENGTHS = (*SOLE_PROBES, 2 * CHUNK_SIZE, 4 * CHUNK_SIZE)


def two_numbers(costs: ItemCosts) -> dict[str, float]:
    """Per-item fixed cost and per-chunk cost (cycles and µs) of slot 0 (see the module docstring)."""
    fixed, chunk = int(costs.sole[0, 1]), int(costs.middle[0])
    return {"item_fixed_cycles": fixed, "chunk_cycles": chunk,
            "item_fixed_us": fixed / costs.clock_mhz, "chunk_us": chunk / costs.clock_mhz}


@dataclass(frozen=True)
class Probe:
    """Median item durations of one probe launch, ``dur[slot, i]`` for ``PROBE_LENGTHS[i]``, and its
    per-core overhead (cycles)."""

    dur: np.ndarray
    overhead: float

    def to_json(self) -> dict:
        """Plain JSON types (the calibration cache stores them)."""
        return {"dur": self.dur.tolist(), "overhead": float(self.overhead)}

    @classmethod
    def from_json(cls, doc: dict) -> Probe:
        """The inverse of :meth:`to_json` (KeyError/TypeError/ValueError when ``doc`` is not one)."""
        return cls(np.asarray(doc["dur"], np.float64), float(doc["overhead"]))


def probe(sc, prof, ub_size: int) -> Probe:
    """Time the probe launch of scenario ``sc``'s shape and kernel on profile ``prof`` (phase fidelity,
    numerics off), tiled for ``ub_size`` bytes of UB. Kept in the calibration cache
    (:mod:`cgdr_des.cost_cache`, kind ``advise-probes``) like item costs: a probe depends on the profile,
    the shape and the kernel, not on the lengths, so every length law of one shape (the report's advise
    sweep has seven) shares its probes."""
    from cgdr_des import cost_cache

    s = sc.shape
    inputs = {"profile": prof, "ub_size": int(ub_size),
              "shape": {"nk": s.nk, "nv": s.nv, "dk": s.dk, "dv": s.dv, "has_gamma": bool(s.has_gamma)},
              "kernel": sc.kernel.tiling_options(), "lengths": list(PROBE_LENGTHS)}
    value = cost_cache.cached("advise-probes", inputs, lambda: _measure(sc, prof, ub_size).to_json(), _why_not)
    return Probe.from_json(value)


def _why_not(doc: dict) -> str | None:
    """None when a stored value is a whole probe, else what is wrong with it."""
    try:
        p = Probe.from_json(doc)
    except (KeyError, TypeError, ValueError) as exc:
        return f"not a probe: {type(exc).__name__} {str(exc)[:40]}"
    return None if p.dur.ndim == 2 and p.dur.shape[1] == len(PROBE_LENGTHS) else "not a probe: wrong shape"


def _measure(sc, prof, ub_size: int) -> Probe:
    """:func:`probe` without the cache: one phase-fidelity launch."""
    from cgdr_des.kernel.functional import make_launch
    from cgdr_des.kernel.launch import Shape
    from cgdr_des.simulation import run_launch
    from cgdr_des.workload.tensors import draw_g

    s = sc.shape
    lengths = np.asarray(PROBE_LENGTHS, np.int32)
    shape = Shape(int(lengths.size), int(lengths.sum()), s.nk, s.nv, s.dk, s.dv, 1.0 / np.sqrt(s.dk), s.has_gamma)
    g = draw_g(shape.t, s.nv, 0) if s.has_gamma else None
    launch = make_launch(shape, lengths, g, None, numerics="off", ub_size=ub_size, aiv_num=prof.aiv_num,
                         **sc.kernel.tiling_options())
    result = run_launch(launch, prof, policy="greedy", fidelity="phase", keep_ops=False)  # items read only
    items = result.items.assign(dur=result.items["end"] - result.items["start"],
                                slot=result.items["vtile"].clip(lower=0))
    med = items.groupby(["slot", "seqlen"])["dur"].median()
    slots = int(items["slot"].max()) + 1
    dur = np.array([[float(med[(v, n)]) for n in PROBE_LENGTHS] for v in range(slots)])
    busy = (result.items["end"] - result.items["start"]).groupby(result.items["core"]).sum()
    finish = result.cores.set_index("core").loc[busy.index, "finish"]
    return Probe(dur, float((finish - busy).median()))


def shifted(costs: ItemCosts, nominal: Probe, point: Probe, clock_mhz: float) -> ItemCosts:
    """``costs`` moved by what the probe moved from ``nominal`` to ``point`` (the module docstring)."""
    slots = costs.sole.shape[0]
    d = point.dur - nominal.dur                       # (probe slots, probes)
    if d.shape[0] != slots:  # the probe's few items may not split V-tiles as the calibration's did
        d = np.repeat(d[:1], slots, axis=0)
    k = len(SOLE_PROBES)
    # a sole chunk scales by the probes' ratio, interpolated in L (the cost steps with L, the ratio is smooth)
    ratio = point.dur / nominal.dur
    if ratio.shape[0] != slots:
        ratio = np.repeat(ratio[:1], slots, axis=0)
    scale = np.array([np.interp(np.arange(CHUNK_SIZE + 1), SOLE_PROBES, row[:k]) for row in ratio])
    sole_shift = np.rint(costs.sole * scale).astype(np.int64) - costs.sole
    first = np.rint(d[:, k] - d[:, k - 1]).astype(np.int64)[:, None]      # 128 tokens minus 64
    middle = np.rint((d[:, k + 1] - d[:, k]) / 2).astype(np.int64)       # (256 - 128) / 2
    return replace(costs, sole=costs.sole + sole_shift, two=costs.two + sole_shift + first,
                   middle=costs.middle + middle,
                   pre=int(round(costs.pre + point.overhead - nominal.overhead)), clock_mhz=float(clock_mhz))
