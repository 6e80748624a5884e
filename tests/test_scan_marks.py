"""The busy-V scan stopped where it meets the idle scan (``cgdr_des.hw.scan_marks``) against the whole scan.

The truth here is the busy scan run to the end of the run (no marks): every field of its timing, where
the run ends, and the data cache the compiler leaves, on the kernel's own runs and on random compute
programs under each ``flag_double_set`` policy.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hw_compute_run import POLICIES, knobs, programs
from test_hw_repeat import shifted
from test_phase_late import P, kernel_runs

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.hw import load_profile, scan_marks
from cgdr_des.hw.compute_run import ComputeRunTimer
from cgdr_des.hw.dcache import data_cache
from cgdr_des.hw.late_scan import late_start
from cgdr_des.hw.phase import PhaseCompiler
from cgdr_des.hw.scan_marks import BusyMatch, IdleMarks
from cgdr_des.isa import Repeat


def both_busy_scans(timer: ComputeRunTimer, run: list, warm: tuple | None = None):
    """The busy scan of ``run`` whole and stopped by its idle scan's marks, each from the cache ``warm``
    (None: empty); None where the idle scan is diagnosed; else ((timing, stop) whole, (timing, stop)
    stopped, where it stopped: None for the end of the run)."""
    dc = data_cache(timer.profile)
    start = warm or dc.state()
    marks = IdleMarks()
    try:
        idle, _ = timer.scan(run, 0, dc, marks=marks)
    except KernelDiagnostic:
        return None
    x = late_start(idle)
    out = []
    for match in (None, BusyMatch(marks)):
        dc.restore(start)
        try:
            out.append(timer.scan(run, 0, dc, x, x, match))
        except KernelDiagnostic:
            out.append("raises")
    return out[0], out[1], match.where


@pytest.mark.parametrize("variant", ["baseline", "all_same"])
def test_the_kernel_runs_stopped_early_time_as_scanned_whole(variant):
    """Stopped at a top-level WaitFlag<V_S> or between the iterations of a top-level Repeat (both kinds
    met here: the cases under test)."""
    timer, where = ComputeRunTimer(P), []
    for run in kernel_runs(variant, repeats=True):
        whole, stopped, at = both_busy_scans(timer, run)
        assert stopped == whole, run[:3]
        where.append(at)
    assert sum(type(w) is int for w in where) >= 3 and sum(type(w) is tuple for w in where) >= 2


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, knobs)
def test_random_programs_stopped_early_time_as_scanned_whole(policy, program, overrides):
    timer = ComputeRunTimer(load_profile("atlas-300i-duo", {**overrides, "flag_double_set": policy}))
    got = both_busy_scans(timer, program)
    if got is not None:
        whole, stopped, _ = got
        assert stopped == whole


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, programs, programs, st.integers(2, 40), st.integers(2, 4), st.booleans(), knobs)
def test_random_loops_stopped_early_time_as_scanned_whole(policy, pre, body, post, n, n_outer, nest, overrides):
    """Random programs around a Repeat (nested in another or not, as tests/test_hw_repeat.py builds
    them): a busy scan stopped between the iterations of a top-level Repeat times as the whole one."""
    timer = ComputeRunTimer(load_profile("atlas-300i-duo", {**overrides, "flag_double_set": policy}))
    inner = Repeat(n, lambda i: shifted(body, i))
    run = [*pre, Repeat(n_outer, lambda i: [*post, inner, *pre]) if nest else inner, *post]
    got = both_busy_scans(timer, run)
    if got is not None:
        whole, stopped, _ = got
        assert stopped == whole


def test_the_compiler_leaves_every_macro_and_the_cache_as_without_marks(monkeypatch):
    """With the marks, the compiler's late numbers are those of the whole busy scans, and after each
    run it leaves the data cache as the idle scan alone leaves it (put back from a snapshot where the
    busy scan stopped early)."""
    runs = kernel_runs("baseline", repeats=True)
    assert any(type(r).__name__ == "ScalarGm" or getattr(r, "gm", None) for run in runs for r in run)

    def compiled() -> list:
        pc, idle = PhaseCompiler(P), data_cache(P)
        out = []
        for run in runs:
            out.append(pc.compile(run))
            pc.timer.scan(run, 0, idle)
            assert pc.dcache.state() == idle.state(), run[:3]
        return out

    with_marks = compiled()
    monkeypatch.setattr(scan_marks, "MARKS", 0)     # no mark noted: every busy scan runs whole
    assert compiled() == with_marks
