"""The time bound of the refusal tests (tests/test_bad_inputs*.py): a refusal comes before any work.

The bound is on this process's CPU time (``time.process_time``, every thread): a simulation, a
calibration or a sample drawn before refusing shows there, while other processes' load on a
shared machine does not (a wall-clock bound of 2 s failed under load with 0.4 s of CPU). The wall
clock is bounded only generously, to catch a refusal that waits (a lock, a pool) rather than works.
How fast the command line refuses, start-up included, is measured side by side with
``python -c "import click"`` in analysis/benchmarks/bench_startup.py, not here.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass

#: CPU seconds of this process a refusal may take (measured: at most ~0.4 s, the first case's imports)
CPU_S = 2.0
#: wall seconds: a refusal that waits, not one on a busy machine
WALL_S = 30.0


@dataclass
class Took:
    cpu: float = 0.0
    wall: float = 0.0


@contextmanager
def within(cpu_s: float = CPU_S, wall_s: float = WALL_S):
    """Assert that the block took under ``cpu_s`` of this process's CPU and ``wall_s`` of wall time."""
    took = Took()
    wall, cpu = time.perf_counter(), time.process_time()
    yield took
    took.cpu, took.wall = time.process_time() - cpu, time.perf_counter() - wall
    assert took.cpu < cpu_s, f"{took.cpu:.2f} s of CPU (bound {cpu_s} s): work done before refusing"
    assert took.wall < wall_s, f"{took.wall:.2f} s of wall time (bound {wall_s} s): a wait before refusing"
