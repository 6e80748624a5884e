"""One timing-only simulation per profile point, cached.

A point (parameter -> value) becomes profile overrides on top of the scenario's own; the scenario
runs at ``phase`` fidelity with ``numerics = "off"`` (timing needs no tensors but g, which sets
ScalarExp's cost and is still drawn), no trace and no per-op rows (``ops = false``). Runs are cached
by their overrides, so the nominal point and ends that coincide run once.
"""

from __future__ import annotations

import json

from cgdr_des.hw import load_profile
from cgdr_des.hw.ranges import merge_overrides, set_param

TIMING_SIM = {"fidelity": "phase", "numerics": "off", "trace": False, "ops": False}  # makespans only


class Evaluator:
    """Makespans of one scenario under profile points; ``runs`` counts the simulations done."""

    def __init__(self, scenario) -> None:
        base = dict(scenario.hardware.overrides)
        self.scenario = scenario.with_changes({"sim": TIMING_SIM})
        self.profile = load_profile(scenario.profile_ref(), base or None)
        self.base_overrides = base
        self.cache: dict[str, tuple[int, float]] = {}
        self.runs = 0

    def overrides(self, point: dict) -> dict:
        """The scenario's overrides with ``point`` applied on top."""
        parts = [self.base_overrides] + [set_param(self.profile, k, v) for k, v in point.items()]
        return merge_overrides(parts)

    def makespan(self, point: dict) -> tuple[int, float]:
        """``(cycles, µs)`` of the scenario with ``point`` applied (µs at the point's clock)."""
        ov = self.overrides(point)
        key = json.dumps(ov, sort_keys=True, default=str)
        hit = self.cache.get(key)
        if hit is None:
            from cgdr_des.simulation import simulate  # lazy: the simulation stack is heavy

            s = simulate(self.scenario.with_changes({"hardware": {"overrides": ov}})).summary.iloc[0]
            hit = self.cache[key] = (int(s["makespan_cycles"]), float(s["makespan_us"]))
            self.runs += 1
        return hit
