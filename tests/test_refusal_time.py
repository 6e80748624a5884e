"""The refusal tests' time bound (tests/refusal_time.py) fails on work and on waiting, not on load."""

from __future__ import annotations

import time

import pytest
from refusal_time import within


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_work_before_refusing_fails_the_cpu_bound():
    with pytest.raises(AssertionError, match="of CPU"), within(cpu_s=0.05):
        _burn(0.15)


def test_waiting_fails_only_the_wall_bound():
    with pytest.raises(AssertionError, match="wall time"), within(cpu_s=0.1, wall_s=0.05) as took:
        time.sleep(0.15)
    assert took.cpu < 0.1 <= took.wall  # asleep: no CPU, so a loaded machine cannot trip the CPU bound


def test_a_quick_block_passes_and_reports_what_it_took():
    with within() as took:
        _burn(0.01)
    assert 0.01 <= took.cpu < 1.0 and took.wall >= took.cpu * 0.5
