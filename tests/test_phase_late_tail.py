"""The late scan's shortcut for a run ending in scalar loops (late_scan.scalar_tail) against the full scan.

A compute run whose tail is Repeats of scalar work only has its late numbers from two scans of the
head (idle and busy) plus the idle tail's length. The truth here is the full busy scan of the whole
run from the same data cache (what the compiler did before the shortcut; tests/test_phase_late.py
holds that scan to the machine), on runs whose tails hit and miss the cache, with S waiting for V
before the tail or not.
"""

from __future__ import annotations

import pytest

from cgdr_des.hw import load_profile
from cgdr_des.hw.late_scan import late_numbers, late_start, scalar_tail
from cgdr_des.hw.phase import PhaseCompiler
from cgdr_des.isa import GmStrided, Repeat, Scalar, ScalarGm, SetFlag, VecOp, WaitFlag

P = load_profile("atlas-300i-duo")
BASE = 1 << 20


def gm_loop(n: int, step: int) -> Repeat:
    """n iterations of ALU work and one GM load ``step`` bytes past the last (misses past a line)."""
    return Repeat(n, lambda i: [Scalar("alu", 3), ScalarGm(BASE + step * i, 4), Scalar("div")],
                  gm=GmStrided(BASE, step, 4, False))


def alu_loop(n: int) -> Repeat:
    return Repeat(n, lambda i: [Scalar("alu", 2)])


RUNS = {
    "S waits for V, then GM loop": [VecOp("Exp", "fp32", 4000), SetFlag("V_S"), WaitFlag("V_S"), gm_loop(200, 4)],
    "S waits, misses every line": [VecOp("Exp", "fp32", 4000), SetFlag("V_S"), WaitFlag("V_S"), Scalar("alu"),
                                   gm_loop(100, 256), ScalarGm(BASE, 4), alu_loop(40)],
    "S never waits": [VecOp("Muls", "fp32", 512), VecOp("Exp", "fp32", 4000), Scalar("alu", 5), alu_loop(300)],
    "S_V then V_S": [SetFlag("S_V"), WaitFlag("S_V"), VecOp("Exp", "fp32", 9000), SetFlag("V_S"), WaitFlag("V_S"),
                     gm_loop(64, 64)],
}


@pytest.mark.parametrize("name", list(RUNS))
@pytest.mark.parametrize("warm", [False, True])
def test_tail_shortcut_matches_full_late_scan(name: str, warm: bool) -> None:
    run = RUNS[name]
    assert scalar_tail(run, 0, len(run)) < len(run)     # the shortcut applies
    comp = PhaseCompiler(P)
    if warm:        # lines of the tail already in the cache: hits where a cold cache misses
        comp.dcache.pattern([(BASE + 64 * k, 4, False) for k in range(40)])
    saved = comp.dcache.state()
    macro = comp.macro(run)
    after = comp.dcache.state()
    timer = comp.timer
    comp.dcache.restore(saved)
    idle = timer.time(run, comp.dcache)
    assert comp.dcache.state() == after         # the cache is left as the idle scan leaves it
    comp.dcache.restore(saved)
    x = late_start(idle)
    busy, _ = timer.scan(run, 0, comp.dcache, x, x)
    assert macro.late == late_numbers(idle, x, busy)
    assert macro.late[1] is not None
    assert idle.v_free <= idle.v_end and busy.v_free <= busy.v_end     # V's last issue is before its end


def test_no_shortcut_without_a_scalar_loop_tail() -> None:
    run = [VecOp("Exp", "fp32", 64), Scalar("alu"), alu_loop(4), VecOp("Exp", "fp32", 64)]
    assert scalar_tail(run, 0, len(run)) == len(run)       # V work after the loop
    run = [alu_loop(4), VecOp("Exp", "fp32", 64), alu_loop(4)]
    assert scalar_tail(run, 0, len(run)) == len(run)       # a loop in the head: scanning it twice costs
    run = [VecOp("Exp", "fp32", 64), Scalar("alu", 9)]
    assert scalar_tail(run, 0, len(run)) == len(run)       # no loop to leave out
