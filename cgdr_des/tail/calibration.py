"""The tail study's item costs (:mod:`cgdr_des.item_costs`), measured by the simulation's launch runner."""

from __future__ import annotations

from cgdr_des.hw import load_profile
from cgdr_des.item_costs import ItemCosts, measure_item_costs, variant_key
from cgdr_des.simulation import run_launch

__all__ = ["ItemCosts", "calibrate", "costs_for"]


def calibrate(profile: str = "atlas-300i-duo", *, nk: int, nv: int, dk: int, dv: int, has_gamma: bool = True,
              buffer_num: int = 1, overrides: dict | None = None, kernel: dict | None = None) -> ItemCosts:
    """Measure the item costs with one phase-fidelity run (cached; see :mod:`cgdr_des.item_costs`).
    ``kernel``: the variant's other ``[kernel]`` fields (``prefetch``, ...; None: the source kernel)."""
    prof = load_profile(profile, overrides or None)
    return costs_for(prof, nk, nv, dk, dv, has_gamma, buffer_num, kernel)


def costs_for(prof, nk: int, nv: int, dk: int, dv: int, has_gamma: bool, buffer_num: int,
              kernel: dict | None = None) -> ItemCosts:
    """:func:`calibrate` for a loaded profile (the cache is :func:`~cgdr_des.item_costs.measure_item_costs`')."""
    return measure_item_costs(prof, nk, nv, dk, dv, has_gamma, buffer_num, run_launch, variant_key(kernel))
