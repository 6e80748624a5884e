"""Item costs measured once per (profile, overrides, shape, kernel variant) with one phase-fidelity run.

The cost-weighted dispatch policies need them (``simulation.run_launch``) and the tail studies time
batches from them (``tail/``), so this module sits below both: the launch runner that measures them is
passed in (``run_launch``, :func:`cgdr_des.simulation.run_launch`) rather than imported.

A work item's duration depends only on its sequence length and V-tile: a sequence of ``n`` tokens is
``ceil(n / 64)`` chunks, all full but the last, of length ``L`` (1..64). The calibration run holds
one sequence of every length 1..64 (every sole chunk: measured, not fitted, since the cost steps
with vector repeats and alignment). The probe run, a launch of its own, holds two-chunk sequences
``64 + L`` for a few ``L`` (a two-chunk item costs a sole chunk of ``L`` plus a nearly constant
first chunk: the difference, smooth in ``L`` and varying by under 0.1 % over it, is interpolated
linearly between the probes) and four-chunk sequences (a middle chunk is half the difference
between four and two chunks of the same ``L``). Every distinct chunk length is a new phase
signature to compile, which is what calibration costs.

Why the probes run apart: a chunk's time depends on what the other cores move over GM meanwhile
(``phase`` times a compute run against a busy V and keeps a DataCopy run's last calls apart, as
``instr`` does, so GM contention reaches the chunk call by call). Beside the 64 short items of the
calibration run, the probes' middle chunks met other cores' first chunks and measured 0.53 % dearer
than the middle chunks of a batch of long sequences, where every core runs middle chunks
(atlas-300i-duo, (16, 16, 128, 128): 1 367 473 against 1 360 208 cycles, the same between 2 and
12 chunks in a launch of multi-chunk sequences); the surrogate overestimated such batches by as
much (+0.53 % on ``bench_tail_study.py``'s worst batch, +0.009 % before that timing came in). In a
launch of multi-chunk items alone they read the steady value.
The calibration launches run the kernel variant asked for (``buffer_num`` and the other ``[kernel]``
fields of :mod:`cgdr_des.kernel.variants`), so a variant's items are timed on its own program.
Each item's duration is its ``end - start`` in the items frame, the median over the heads that ran
it (cores contend for GM as in any busy launch).

Around the items, each core walks every item and every batch entry (``IsCurrentBlock`` and the
length load), whoever owns them, so a core's finish is ``overhead(B, K) + the sum of its own item
durations``, with ``overhead = pre + K * per_item + B * per_batch`` for B batch entries and K work
items. ``per_item`` is the measured gap between consecutive items; ``pre`` and ``per_batch`` (which
also holds ComputeAvgload's read of every length) come from the overhead measured in two runs: the
calibration run and a one-sequence run (the probe run's items are not in it).

Split V-tiles (``ShouldSplitVTiles``): the tiles of one head run on different cores and read the same
K and Q rows with scalar GetValue. ``phase`` fidelity gives each core of such a launch its own data
cache (docs/architecture.md §2.5), so an item's duration no longer depends on whether its sibling
tiles run alongside, and one table per V-tile slot serves both. Together tables were measured by one
extra launch per two- and four-chunk probe while ``phase`` shared one cache across cores; they agreed
with the apart tables within 0.07 % (atlas-a2-910b2, (16, 32, 128, 128)) and are no longer measured
or kept (they were 33 of that calibration's 130 CPU seconds).

What the calibration does not measure, and why: no chunk length twice, no sequence longer than four
chunks (a further full chunk costs the same as the third), no second launch context for split tiles.
What it must measure: every sole chunk length (the cost steps), the two-chunk probes (the first
chunk of a longer item), the four-chunk probes (a middle chunk) and two overhead points, in a
launch of the real shape: the same shape with fewer heads (fewer busy cores, less GM contention)
gives durations 1.5-2.6 % off (nv = 4 and 8 for nv = 32 on atlas-a2-910b2), beyond the 0.5 % bound.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache

import numpy as np

from cgdr_des import cost_cache
from cgdr_des.errors import KernelDiagnostic
from cgdr_des.integers import ceil_div
from cgdr_des.kernel.functional import make_launch
from cgdr_des.kernel.launch import CHUNK_SIZE, Shape
from cgdr_des.workload.tensors import draw_g

#: Sequences of the calibration run (every sole chunk length) and of the probe run (two- and four-chunk
#: probes, a launch of their own: see the module docstring).
TWO_PROBES = (1, 16, 32, 48, 64)
MIDDLE_PROBES = (1, 32, 64)
CAL_LENGTHS = tuple(range(1, CHUNK_SIZE + 1))
PROBE_LENGTHS = (*(CHUNK_SIZE + L for L in TWO_PROBES), *(3 * CHUNK_SIZE + L for L in MIDDLE_PROBES))


@dataclass(frozen=True)
class ItemCosts:
    """Measured item durations (cycles) of one (profile, shape, buffer_num); see the module doc.

    ``sole[v, L]``: an item of L <= 64 tokens on V-tile slot v (slot 0 when tiles are not split);
    ``two[v, L]``: an item of 64 + L tokens; ``middle[v]``: each further full chunk;
    ``pre``, ``per_item``, ``per_batch``: the per-core overhead ``pre + K per_item + B per_batch``.
    """

    sole: np.ndarray
    two: np.ndarray
    middle: np.ndarray
    pre: int
    per_item: int
    per_batch: float
    nv: int
    dv: int
    v_step: int
    v_tiles: int
    split: bool
    block_dim: int
    clock_mhz: float
    profile: str

    def item_cycles(self, seqlen, vtile) -> np.ndarray:
        """Duration (int64 cycles) of items of ``seqlen`` tokens on ``vtile`` (-1: unsplit); 0 for length 0."""
        s = np.asarray(seqlen, np.int64)
        v = np.maximum(np.asarray(vtile, np.int64), 0)
        n = np.maximum(ceil_div(s, CHUNK_SIZE), 1)
        tail = s - CHUNK_SIZE * (n - 1)
        many = self.two[v, np.where(n > 1, tail, 1)] + np.maximum(n - 2, 0) * self.middle[v]
        return np.where(s <= 0, 0, np.where(n == 1, self.sole[v, np.clip(tail, 0, CHUNK_SIZE)], many))

    def overhead(self, batch_entries, n_items) -> np.ndarray:
        """Cycles of a core's finish that are not its own items (same for every core of a launch)."""
        cycles = self.pre + np.asarray(n_items, np.int64) * self.per_item + np.asarray(batch_entries) * self.per_batch
        return np.round(cycles).astype(np.int64)

    def to_json(self) -> dict:
        """Plain JSON types (arrays as nested lists), for the on-disk cache."""
        return cost_cache.canonical({f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_json(cls, doc: dict) -> ItemCosts:
        """The inverse of :meth:`to_json` (KeyError/TypeError/ValueError when ``doc`` is not one)."""
        return cls(**{f.name: (np.asarray(doc[f.name], np.int64) if f.name in _ARRAYS else doc[f.name])
                      for f in fields(cls)})


_ARRAYS = ("sole", "two", "middle")


def variant_key(kernel: dict | None) -> tuple:
    """The hashable form of a variant's ``[kernel]`` fields (``buffer_num`` aside): the fields whose
    value differs from the source's (:data:`cgdr_des.kernel.variants.BASELINE`; a field it does not
    list counts as set), sorted. ``()`` is the source kernel."""
    from cgdr_des.kernel.variants import BASELINE

    missing = object()
    return tuple(sorted((str(k), v) for k, v in (kernel or {}).items()
                        if k != "buffer_num" and BASELINE.get(k, missing) != v))


def launch_variant(launch) -> tuple:
    """:func:`variant_key` of the variant a launch runs (its tiling holds the ``[kernel]`` fields)."""
    from cgdr_des.kernel.variants import BASELINE

    return variant_key({k: getattr(launch.tiling, k) for k in BASELINE if hasattr(launch.tiling, k)})


@lru_cache(maxsize=32)
def measure_item_costs(prof, nk: int, nv: int, dk: int, dv: int, has_gamma: bool, buffer_num: int,
                       run_launch, variant: tuple = ()) -> ItemCosts:
    """The item costs of one shape and kernel variant on a loaded profile. Cached in the process (the
    key is the profile itself, overrides included) and on disk (:mod:`cgdr_des.cost_cache`, keyed by a
    fingerprint of the same inputs, the package version and its source). ``run_launch(launch, prof, *,
    policy, fidelity, keep_ops) -> Result`` times a launch. ``variant``: :func:`variant_key` of the other
    ``[kernel]`` fields (``()``, the source kernel, keeps the key it had before variants were keyed)."""
    shape = {"nk": int(nk), "nv": int(nv), "dk": int(dk), "dv": int(dv), "has_gamma": bool(has_gamma)}
    inputs = {"profile": prof, "shape": shape,
              "buffer_num": int(buffer_num), "runner": f"{run_launch.__module__}.{run_launch.__qualname__}"}
    if variant:
        inputs["kernel"] = dict(variant)
    value = cost_cache.cached(
        "item-costs", inputs,
        lambda: _calibrate(prof, nk, nv, dk, dv, has_gamma, buffer_num, run_launch, dict(variant)).to_json(),
        _why_not_costs)
    return ItemCosts.from_json(value)


def _why_not_costs(doc: dict) -> str | None:
    """None when a stored value is a whole ItemCosts, else what is wrong with it."""
    try:
        costs = ItemCosts.from_json(doc)
    except (KeyError, TypeError, ValueError) as exc:
        return f"not an item-cost table: {type(exc).__name__} {str(exc)[:40]}"
    slots = costs.sole.shape[0] if costs.sole.ndim == 2 else 0
    want = (slots, CHUNK_SIZE + 1)
    if not slots or costs.sole.shape != want or costs.two.shape != want or costs.middle.shape != (slots,):
        return "item-cost tables of the wrong size"
    return None


def _calibrate(prof, nk: int, nv: int, dk: int, dv: int, has_gamma: bool, buffer_num: int, run_launch,
               variant: dict | None = None) -> ItemCosts:
    """Measure the item costs (the phase-fidelity runs the module doc describes) of the kernel variant
    ``buffer_num`` and ``variant`` (further ``make_launch`` keyword arguments) make."""
    def run(lengths):
        """Time one phase-fidelity launch of ``lengths`` (numerics off); ``(Result, Launch)``."""
        lengths = np.asarray(lengths, np.int32)
        shape = Shape(int(lengths.size), int(lengths.sum()), nk, nv, dk, dv, 1.0 / np.sqrt(dk), has_gamma)
        g = draw_g(shape.t, nv, 0) if has_gamma else None
        launch = make_launch(shape, lengths, g, None, numerics="off", ub_size=prof.ub_usable_bytes,
                             aiv_num=prof.aiv_num, buffer_num=buffer_num, **(variant or {}))
        try:
            return run_launch(launch, prof, policy="greedy", fidelity="phase", keep_ops=False), launch
        except KernelDiagnostic as exc:
            raise KernelDiagnostic(_explain(prof, exc)) from None

    return _measure(*run(CAL_LENGTHS), run(PROBE_LENGTHS)[0], run([1])[0], prof)


def _explain(prof, exc: Exception) -> str:
    first = str(exc).partition("\n")[0]
    if prof.flag_double_set == "diagnostic" and "set" in first.lower():
        return (f"tail calibration on {prof.name}: {first}; this kernel sets its S->V flags again before "
                f"they are waited, so on this profile it needs [hardware] overrides = "
                f"{{ flag_double_set = \"counter\" }} (the softsync-flag reading the 310P profile uses)")
    return f"tail calibration on {prof.name}: {first}"


def _measure(result, launch, probes, one, prof) -> ItemCosts:
    """Item tables from the calibration run ``result`` (sole chunks) and the probe run ``probes`` (two and
    four chunks); the overhead from the calibration run and the one-item run ``one``."""
    import pandas as pd  # a Result's frames are pandas already; the module itself stays light to import

    items = pd.concat([result.items, probes.items], ignore_index=True)
    items["dur"] = items["end"] - items["start"]
    items["slot"] = items["vtile"].clip(lower=0)
    slots = int(items["slot"].max()) + 1
    med = items.groupby(["slot", "seqlen"])["dur"].median().round().astype(np.int64)
    sole = np.zeros((slots, CHUNK_SIZE + 1), np.int64)
    two = np.zeros((slots, CHUNK_SIZE + 1), np.int64)
    middle = np.zeros(slots, np.int64)
    for v in range(slots):
        sole[v, 1:] = [med[(v, L)] for L in range(1, CHUNK_SIZE + 1)]
        first = [med[(v, CHUNK_SIZE + L)] - med[(v, L)] for L in TWO_PROBES]
        two[v, 1:] = sole[v, 1:] + np.round(np.interp(np.arange(1, CHUNK_SIZE + 1), TWO_PROBES, first)).astype(np.int64)
        middle[v] = int(round(np.median([(med[(v, 3 * CHUNK_SIZE + L)] - med[(v, CHUNK_SIZE + L)]) / 2
                                         for L in MIDDLE_PROBES])))
    per_item = _item_gap(result.items)
    # overhead = pre + K per_item + B per_batch, known at (B, K) of both runs: two equations
    (k1, o1), (k2, o2) = _overhead(one), _overhead(result)
    b1, b2 = 1, len(launch.lengths)
    per_batch = (o2 - o1 - (k2 - k1) * per_item) / (b2 - b1)
    pre = int(round(o1 - k1 * per_item - b1 * per_batch))
    t, sh = launch.tiling, launch.shape
    split = bool((items["vtile"] >= 0).any())
    return ItemCosts(sole, two, middle, pre, per_item, float(per_batch), sh.nv, sh.dv, t.v_step, t.v_tile_count,
                     split, t.block_dim, float(prof.clock_mhz), prof.name)


def _overhead(result) -> tuple[int, float]:
    """(work items, median over the cores that ran items of finish - own item durations)."""
    items = result.items
    busy = (items["end"] - items["start"]).groupby(items["core"]).sum()
    finish = result.cores.set_index("core").loc[busy.index, "finish"]
    return len(items), float((finish - busy).median())


def _item_gap(items) -> int:
    """Median gap between consecutive own items of a core within one batch entry (``IsCurrentBlock``)."""
    it = items.sort_values(["core", "start"])
    same = (it["core"].shift(-1) == it["core"]) & (it["batch"].shift(-1) == it["batch"])
    gap = (it["start"].shift(-1) - it["end"])[same]
    return int(round(float(gap.median()))) if len(gap) else 0
