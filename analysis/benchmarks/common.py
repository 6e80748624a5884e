"""Helpers shared by the benchmark scripts: timing, peak memory, scenario building."""

from __future__ import annotations

import resource
import time
from pathlib import Path

from cgdr_des.scenario import Scenario, load_scenario

ROOT = Path(__file__).resolve().parents[2]


def shipped(name: str) -> Scenario:
    return load_scenario(ROOT / "scenarios" / f"{name}.toml")


def scenario(**sections) -> Scenario:
    data = {"name": sections.pop("name", "bench"), **sections}
    return Scenario.from_dict(data)


def timed(fn, *args, repeat: int = 1, **kwargs):
    """Best wall time of ``repeat`` calls and the last result."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - t0)
    return best, out


def peak_rss_mib() -> float:
    """Peak resident set of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of the children it has waited for (the op
    call's forked numbers, cgdr_des/forked.py, among them)."""
    own, kids = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
