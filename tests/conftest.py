"""What many test files share: the repository's paths, the tiny scenario, and results worth computing once.

Test modules import the constants (``from conftest import TINY, SCENARIOS``; pytest puts ``tests/`` on
``sys.path``) and request the fixtures by name. Tests that take over ~10 s carry ``@pytest.mark.slow``:
``python -m pytest -m "not slow"`` is the inner loop, CI runs everything.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "cgdr_des"
SCENARIOS = REPO / "scenarios"
SWEEPS = SCENARIOS / "sweeps"

if str(REPO) not in sys.path:  # analysis/ is a top-level folder of the repository, not an installed package
    sys.path.insert(0, str(REPO))

#: The tiny scenario of the CLI, sweep, override and bad-input tests: one K/Q head, two 16-wide value
#: heads, two sequences (8 and 3 tokens), timing only; a run takes milliseconds. This one writes a
#: run's every output (trace and plots at their defaults); :data:`TINY` writes neither.
TINY_OUTPUTS = """
name = "tiny"
[shape]
nk = 1
nv = 2
dk = 16
dv = 16
[workload]
lengths = [8, 3]
[sim]
numerics = "off"
"""
TINY = TINY_OUTPUTS + 'trace = false\n[output]\nplots = false\n'
#: The two as the mappings ``Scenario.from_dict`` takes (shared: change a copy, ``{**TINY_DICT, ...}``).
TINY_DICT, TINY_OUTPUTS_DICT = tomllib.loads(TINY), tomllib.loads(TINY_OUTPUTS)


@pytest.fixture
def tiny_file(tmp_path) -> Path:
    """:data:`TINY` written to ``tmp_path/tiny.toml``."""
    path = tmp_path / "tiny.toml"
    path.write_text(TINY, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tiny_result():
    """The simulation of :data:`TINY` (one per session: treat it as read-only)."""
    from cgdr_des import simulate
    from cgdr_des.scenario import Scenario

    return simulate(Scenario.from_dict(TINY_DICT))


@pytest.fixture(scope="session")
def shipped_result():
    """``shipped_result(name)``: the simulation of ``scenarios/<name>.toml`` as shipped, computed once per
    session and shared by the tests that read it (golden times, attribution, outputs; read-only)."""
    import cgdr_des

    done: dict = {}

    def get(name: str):
        if name not in done:
            done[name] = cgdr_des.simulate(cgdr_des.load_scenario(SCENARIOS / f"{name}.toml"))
        return done[name]

    return get
