"""The GM bus (hw/gm.py) on its own SimPy clock: closed forms, water-filling, and an exact fluid model.

Without any core in the way: transfers are submitted to a ``GmBus`` directly. The expected completions
are computed here: alone at ``ceil(bytes / min(cap, capacity))``, n equal ones sharing ``capacity / n``,
a capped one leaving the rest to the others, and for random sets an exact processor-sharing fluid model
in rational arithmetic (no cycle rounding), which the bus may trail by its rounding but never beat.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from cgdr_des.hw.gm import GmBus


def run_bus(capacity: float, transfers: list[tuple[int, int, float]], lead: int = 0) -> tuple[list[int], GmBus, list]:
    """Submit ``(start, nbytes, cap)`` transfers ``lead`` cycles before their start cycles (never before
    cycle 0; the machine submits a DMA's transfer its first-byte cycles ahead); their completion cycles."""
    env = simpy.Environment()
    bus = GmBus(env, capacity)
    calls: list = []
    done: dict[int, int] = {}

    def on_done(tr):
        calls.append((env.now, tr))
        done[id(tr)] = env.now

    handles = [None] * len(transfers)

    def submitter(i, start, nbytes, cap):
        yield env.timeout(max(start - lead, 0))
        handles[i] = bus.submit(start, nbytes, cap, on_done)

    for i, (start, nbytes, cap) in enumerate(transfers):
        env.process(submitter(i, start, nbytes, cap))
    env.run()
    return [done[id(h)] for h in handles], bus, calls


@pytest.mark.parametrize("nbytes, cap, capacity", [(1000, 16.0, 64.0), (1000, 64.0, 16.0), (1, 8.0, 8.0),
                                                   (65536, 32.0, 32.0), (999, 7.0, 100.0)])
def test_a_transfer_alone_moves_at_the_lower_of_its_cap_and_the_chip(nbytes, cap, capacity):
    (done,), bus, _ = run_bus(capacity, [(5, nbytes, cap)])
    assert done == 5 + math.ceil(nbytes / min(cap, capacity))
    assert bus.peak_active == 1


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_n_equal_transfers_share_the_chip_equally_and_finish_together(n):
    capacity, nbytes = 64.0, 1000
    done, bus, _ = run_bus(capacity, [(0, nbytes, 64.0)] * n)
    assert done == [math.ceil(n * nbytes / capacity)] * n
    assert bus.peak_active == n


def test_transfers_under_their_caps_do_not_share():
    """Caps summing to at most the chip: each runs at its cap as if alone."""
    caps = [10.0, 20.0, 30.0]
    done, _, _ = run_bus(60.0, [(0, 600, c) for c in caps])
    assert done == [math.ceil(600 / c) for c in caps]


def test_water_filling_gives_the_capped_transfer_its_cap_and_the_rest_to_the_others():
    capacity, small_cap, big = 120.0, 10.0, 10_000
    done, _, _ = run_bus(capacity, [(0, 100, small_cap), (0, big, 100.0), (0, big, 100.0)])
    t_small = math.ceil(100 / small_cap)                  # 10 bytes/cycle, below its fair 40
    share = (capacity - small_cap) / 2                    # the two others split what is left
    left = big - share * t_small
    t_big = t_small + math.ceil(left / min(100.0, capacity / 2))
    assert done == [t_small, t_big, t_big]


def test_a_late_joiner_slows_the_first_from_the_cycle_it_starts():
    capacity, nbytes, join = 100.0, 10_000, 30
    done, _, _ = run_bus(capacity, [(0, nbytes, 100.0), (join, nbytes, 100.0)])
    left_first = nbytes - capacity * join
    first = join + math.ceil(left_first / (capacity / 2))
    left_second = nbytes - capacity / 2 * (first - join)
    assert done == [first, first + math.ceil(left_second / capacity)]


def test_a_transfer_submitted_for_a_later_cycle_starts_then():
    env = simpy.Environment()
    bus = GmBus(env, 50.0)
    ends = []
    bus.submit(40, 500, 50.0, lambda tr: ends.append((env.now, tr.done)))
    env.run()
    assert ends == [(40 + 10, 50)]


def test_a_zero_byte_transfer_is_done_at_its_start_without_sharing():
    done, bus, _ = run_bus(64.0, [(7, 0, 64.0), (0, 640, 64.0)])
    assert done == [7, 10]  # the empty one takes nothing from the other


def test_on_done_is_called_once_per_transfer_at_its_completion_cycle():
    transfers = [(0, 3000, 50.0), (3, 100, 50.0), (3, 2000, 25.0), (60, 10, 5.0)]
    done, _, calls = run_bus(80.0, transfers)
    assert len(calls) == len(transfers) and len({id(tr) for _, tr in calls}) == len(transfers)
    assert all(now == tr.done for now, tr in calls)
    assert [now for now, _ in calls] == sorted(now for now, _ in calls)  # in time order
    assert sorted(done) == [now for now, _ in calls]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(capacity=st.integers(8, 128), transfers=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 5000),
                                                                  st.integers(1, 64)), min_size=1, max_size=8),
       lead=st.sampled_from([1, 7, 60, 10_000]))
def test_a_transfer_submitted_ahead_completes_as_one_submitted_at_its_start(capacity, transfers, lead):
    """Submitted ahead (as the machine submits a DMA's data phase, its first-byte cycles early), a transfer
    waits pending for its start's timer: the completions are those of transfers submitted at their starts,
    and each ``on_done`` runs at its completion cycle."""
    spec = [(s, n, float(c)) for s, n, c in transfers]
    at_start, _, _ = run_bus(float(capacity), spec)
    ahead, bus, calls = run_bus(float(capacity), spec, lead=lead)
    assert ahead == at_start
    assert all(now == tr.done for now, tr in calls) and len(calls) == len(spec)


def test_submitting_for_a_cycle_already_past_is_refused():
    env = simpy.Environment()
    bus = GmBus(env, 10.0)
    env.run(until=5)
    with pytest.raises(RuntimeError, match="cycle 4 at env time 5"):
        bus.submit(4, 10, 10.0, lambda tr: None)


def fluid_completions(capacity: int, transfers: list[tuple[int, int, int]]) -> list[Fraction]:
    """Exact processor sharing with max-min fair (water-filling) rates, in rationals, no rounding."""
    rem = {i: Fraction(n) for i, (_, n, _) in enumerate(transfers)}
    done: dict[int, Fraction] = {}
    now = Fraction(0)
    while len(done) < len(transfers):
        active = [i for i in rem if i not in done and transfers[i][0] <= now]
        for i in [i for i in active if rem[i] == 0]:
            done[i] = now
        active = [i for i in active if i not in done]
        rates, left = {}, Fraction(capacity)
        for k, i in enumerate(sorted(active, key=lambda i: (transfers[i][2], i))):
            rates[i] = min(Fraction(transfers[i][2]), left / (len(active) - k))
            left -= rates[i]
        events = [Fraction(s) for i, (s, _, _) in enumerate(transfers) if i not in done and s > now]
        events += [now + rem[i] / rates[i] for i in active]
        if not events:
            break
        nxt = min(events)
        for i in active:
            rem[i] -= rates[i] * (nxt - now)
        now = nxt
    return [done[i] for i in range(len(transfers))]


transfer = st.tuples(st.integers(0, 200), st.integers(1, 5000), st.integers(1, 64))


@settings(max_examples=120, deadline=None, derandomize=True)
@given(capacity=st.integers(8, 128), transfers=st.lists(transfer, min_size=1, max_size=7))
def test_the_bus_trails_the_exact_fluid_model_only_by_its_rounding(capacity, transfers):
    """Rounding a completion up to a whole cycle only ever delays: never before the fluid completion,
    and at most one cycle per completion or start behind it."""
    got, _, _ = run_bus(float(capacity), [(s, n, float(c)) for s, n, c in transfers])
    want = fluid_completions(capacity, transfers)
    for g, w in zip(got, want, strict=True):
        assert w - Fraction(1, 10**6) <= g <= math.ceil(w) + 2 * len(transfers)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(capacity=st.integers(8, 128), sizes=st.lists(st.integers(1, 5000), min_size=1, max_size=8))
def test_the_chip_is_never_idle_while_work_is_left(capacity, sizes):
    """Transfers uncapped and all present from cycle 0: the last ends when the total has moved at the
    chip's rate, up to one rounded cycle per completion."""
    got, _, _ = run_bus(float(capacity), [(0, n, float(capacity)) for n in sizes])
    least = math.ceil(sum(sizes) / capacity)
    assert least <= max(got) <= least + len(sizes)
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    assert [got[i] for i in order] == sorted(got)  # equal shares: the smaller finishes no later
