"""The rule table (``cgdr_des/hw/rules.py``) against independent truth: busy time as a count of
covered cycles, issue cycles as a loop over repeats, ScalarExp's work against the float32 emulation's
own halving count."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from cgdr_des.hw import rules
from cgdr_des.numerics.scalar_exp import TAYLOR_TERMS as EXP_TAYLOR_TERMS
from cgdr_des.numerics.scalar_exp import scalar_exp_steps
from cgdr_des.numerics.scalar_exp import scalar_exp_work as exp_work

cycles = st.integers(0, 200)


@given(cycles, cycles, cycles)
def test_cover_adds_the_cycles_not_covered_yet(start, length, covered):
    end = start + length
    added, new_covered = rules.cover(start, end, covered)
    before = set(range(0, covered))
    assert added == len(set(range(start, end)) - before)
    assert new_covered == max(covered, end)


@given(cycles, cycles, st.integers(1, 5000), st.sampled_from([64, 128, 256]), st.integers(1, 8), cycles, cycles)
def test_vec_op_issues_one_repeat_per_width_and_completes_after_its_latency(free, issued, n, width, cpr,
                                                                           latency, covered):
    start, new_free, end, added, new_covered = rules.vec_op(free, issued, n, (width, cpr, latency), covered)
    repeats = 0
    while repeats * width < n:
        repeats += 1
    assert start == max(free, issued)
    assert new_free - start == max(1, repeats) * cpr
    assert end - new_free == latency
    assert (added, new_covered) == rules.cover(start, end, covered)


@given(cycles, cycles, cycles, st.integers(1, 5), cycles)
def test_a_set_fires_after_everything_before_it_and_holds_the_pipe_its_own_cycles(free, issued, done, f, covered):
    start, new_free, fire, added, new_covered = rules.flag_set(free, issued, done, f, covered)
    assert start == rules.arrival(free, issued) == max(free, issued)
    assert fire == max(start, done) + f and new_free == start + f
    assert (added, new_covered) == rules.cover(fire - f, fire, covered)


@given(cycles, cycles, cycles, st.integers(1, 5), cycles)
def test_a_wait_consumes_at_the_later_of_its_arrival_and_the_set(free, issued, fire, f, covered):
    start, consume, new_free, added, new_covered = rules.flag_wait(free, issued, fire, f, covered)
    assert start == rules.arrival(free, issued)
    assert consume == max(free, issued, fire) and new_free == consume + f
    assert (added, new_covered) == rules.cover(consume, new_free, covered)


@given(cycles, cycles, cycles)
def test_a_barrier_holds_its_pipe_until_everything_before_it_completed(free, issued, done):
    start, end = rules.barrier(free, issued, done)
    assert start == rules.arrival(free, issued)
    assert end == max(start, done) and end >= start


@given(cycles, cycles, st.integers(1, 5), st.booleans())
def test_a_scalar_set_stalls_only_under_the_stall_policy(t, last_consume, f, stall_policy):
    fire, stall = rules.scalar_flag_set(t, last_consume, f, stall_policy)
    assert stall == (max(0, last_consume - t) if stall_policy else 0)
    assert fire == t + stall + f


@given(cycles, cycles, st.integers(0, 5))
def test_hand_over_waits_for_the_slot_then_dispatches(t, slot_free, dispatch):
    issued, stall = rules.hand_over(t, slot_free, dispatch)
    assert stall == max(0, slot_free - t) and issued == max(t, slot_free) + dispatch


@given(st.booleans(), st.booleans(), st.integers(1, 9), st.integers(1, 9), st.integers(10, 99))
def test_scalar_gm_hits_at_ub_speed_and_misses_at_gm_speed(hit, store, load, store_cycles, miss):
    c = rules.scalar_gm_l2(hit, False, store, load, store_cycles, miss, 1)
    assert c == (miss if not hit else (store_cycles if store else load))


@given(st.floats(-60, 60, allow_nan=False, width=32))
def test_scalar_exp_work_halves_as_often_as_the_emulation(arg):
    """The ALU work grows by 5 per halving (3 for the halving, 2 for its squaring), the divisions are
    one per Taylor term plus the reciprocal of a negative argument."""
    alu, div = exp_work(arg)
    k = scalar_exp_steps(arg)
    assert alu - exp_work(0.0)[0] == 5 * k
    assert div == EXP_TAYLOR_TERMS + (arg < 0)
    assert rules.scalar_exp(alu, div, 1, 10) == alu + 10 * div


def test_set_while_set_and_first_byte():
    assert rules.set_while_set(5, 6) and not rules.set_while_set(6, 6)
    assert rules.dma_first_byte(100, 20, calls=3) == 360
    assert rules.barrier(3, 3, 9) == (3, 9) and rules.barrier(9, 4, 3) == (9, 9)
    assert math.isclose(rules.arrival(4, 7), 7)


@given(st.integers(2, 200), st.integers(32, 4096), st.floats(8.0, 200.0), st.integers(0, 500), st.integers(0, 50),
       st.integers(1, 8))
def test_a_merged_run_alone_takes_what_its_calls_take_one_after_the_other(calls, each, cap, latency, overhead,
                                                                         outstanding):
    """A burst's data phase at ``burst_cap`` (the GM bus rounds it up to whole cycles) ends, after its
    first call's first byte, when the calls would end one after the other: their first bytes
    (``dma_first_byte``) and each call's bytes at ``cap`` rounded up on its own."""
    run_first = rules.dma_first_byte(latency, overhead, calls, outstanding)
    first = rules.dma_first_byte(latency, overhead)
    rate = rules.burst_cap(calls * each, calls, run_first, first, cap)
    whole = lambda nbytes, r: max(1, math.ceil(nbytes / r - 1e-9))   # noqa: E731 -- the bus's rounding (hw/gm.py)
    assert rate <= cap * (1 + 1e-12)
    assert first + whole(calls * each, rate) == run_first + calls * whole(each, cap)
