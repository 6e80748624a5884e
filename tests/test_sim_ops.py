"""``[sim] ops = false``: no per-op rows kept, and nothing else changes.

The truth is the same scenario with ops kept: every cycle of the items, cores and summary frames and
the outputs, at both fidelities, on a launch whose V-tiles are split, and on the Cube-era kernel. The
ops frame without per-op rows is the one a launch past the row limit gets: one aggregated row per
phase span.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import SCENARIOS

import cgdr_des
from cgdr_des.scenario import Scenario

#: scenario_hash differs with the field itself; what the scenario is, not what it computed
PROVENANCE = ("scenario_hash",)


def both_scenarios(sc: Scenario) -> list[Scenario]:
    """``sc`` with and without per-op rows."""
    return [sc.with_changes({"sim": {"ops": keep}}) for keep in (True, False)]


def both(sc: Scenario):
    """``sc`` simulated with and without per-op rows."""
    return [cgdr_des.simulate(s) for s in both_scenarios(sc)]


#: two heads, a two-chunk and a one-chunk sequence, kernel numerics
SMALL = {"name": "two heads", "shape": {"nk": 1, "nv": 2, "dk": 64, "dv": 64}, "workload": {"lengths": [70, 9]},
         "sim": {"trace": False}}
CASES = {
    "instr, kernel numerics": lambda: Scenario.from_dict({**SMALL, "sim": {"fidelity": "instr", "trace": False}}),
    "phase, kernel numerics": lambda: Scenario.from_dict(SMALL),
    "split V-tiles, phase": lambda: Scenario.from_dict({
        "name": "split", "hardware": {"profile": "atlas-a2-910b2", "overrides": {"flag_double_set": "stall"}},
        "shape": {"nk": 1, "nv": 1, "dk": 64, "dv": 256}, "workload": {"lengths": [70, 9]},
        "sim": {"numerics": "off", "trace": False}}),
    "cube kernel, instr": lambda: Scenario.from_dict({
        "name": "cube", "shape": {"nk": 1, "nv": 2, "dk": 64, "dv": 64}, "workload": {"lengths": [70]},
        "kernel": {"kernel_version": "cube"}, "sim": {"fidelity": "instr", "numerics": "off", "trace": False}}),
}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c.startswith("instr") else c
                                  for c in CASES])
def test_every_frame_but_ops_is_the_same_without_per_op_rows(case):
    kept, dropped = both(CASES[case]())
    assert kept.meta["ops_kept"] and not dropped.meta["ops_kept"]
    for name in ("items", "cores"):
        pd.testing.assert_frame_equal(getattr(dropped, name), getattr(kept, name))
    pd.testing.assert_frame_equal(dropped.summary.drop(columns=list(PROVENANCE)),
                                  kept.summary.drop(columns=list(PROVENANCE)))
    for name, value in kept.outputs.items():
        assert (value is None and dropped.outputs[name] is None) or np.array_equal(dropped.outputs[name], value)
    ops = dropped.ops
    assert len(ops) < len(kept.ops) and ops["aggregated"].all() and not kept.ops["aggregated"].any()
    # one row per span: the spans' operations, the kept rows, counted again
    assert ops["n_ops"].sum() == len(kept.ops)


def test_the_estimate_counts_no_per_op_rows_without_them():
    from cgdr_des.estimate import scenario_estimate
    from cgdr_des.scenario.tiling_check import validate_tiling

    sc = cgdr_des.load_scenario(SCENARIOS / "small.toml").with_changes({"sim": {"fidelity": "instr"}})
    kept, dropped = (scenario_estimate(s, validate_tiling(s)) for s in both_scenarios(sc))
    assert dropped.rows < kept.rows and dropped.memory_bytes < kept.memory_bytes



def test_the_keyword_leaves_the_scenario_and_its_hash_as_they_are():
    """``simulate(sc, keep_ops=False)``, what a sweep point storing no ops frame runs: the summary whole,
    provenance included, is the one of the scenario as written."""
    sc = Scenario.from_dict({**SMALL, "sim": {"numerics": "off"}})
    kept, dropped = cgdr_des.simulate(sc), cgdr_des.simulate(sc, keep_ops=False)
    pd.testing.assert_frame_equal(dropped.summary, kept.summary)
    assert dropped.ops["aggregated"].all() and not dropped.meta["ops_kept"]


def test_the_gantt_of_a_run_without_per_op_rows_says_it_shows_phase_spans():
    from cgdr_des.results.plots import gantt_view

    sc = Scenario.from_dict({**SMALL, "sim": {"numerics": "off"}})
    for keep, unit in ((True, "operations"), (False, "phase spans")):
        res = cgdr_des.simulate(sc, keep_ops=keep)
        view = gantt_view(res.ops, res.items, res.cores, clock_mhz=float(res.meta["clock_mhz"]))
        assert view.spans is not keep and view.shows(1000.0).endswith(f" {unit}")
