"""The TQue and event-id resources grant at once without scheduling an event, and behave otherwise as
the SimPy resources they extend: the same items in the same order, and a request of the opposite kind
that waits is still woken (truth: the plain simpy classes driven the same way)."""

from __future__ import annotations

import random

import pytest
import simpy

from cgdr_des.hw.grants import GrantPriorityStore, GrantResource, GrantStore

PAIRS = [(GrantStore, simpy.Store), (GrantPriorityStore, simpy.PriorityStore)]


@pytest.mark.parametrize(("fast", "plain"), PAIRS)
def test_a_store_hands_out_the_same_items_in_the_same_order_without_scheduling(fast, plain):
    rng = random.Random(5)
    ops = [("put", rng.randrange(100)) if rng.random() < 0.6 else ("get", None) for _ in range(400)]
    got = {}
    for cls in (fast, plain):
        env = simpy.Environment()
        store, out = cls(env, capacity=8), []
        for op, item in ops:
            if op == "put" and len(store.items) < 8:
                store.put(item)
            elif op == "get" and store.items:
                out.append(store.get().value)
        got[cls] = (out, list(store.items), len(env._queue))
    assert got[fast][:2] == got[plain][:2]
    assert got[fast][2] == 0 < got[plain][2]       # the plain store scheduled every grant


def test_a_resource_grants_in_place_and_serves_a_waiting_request_as_simpy_does():
    seen = {}
    for cls in (GrantResource, simpy.Resource):
        env = simpy.Environment()
        res = cls(env, capacity=2)
        a, b = res.request(), res.request()
        in_place = a.processed and b.processed and not env._queue
        c = res.request()                   # no slot: queued
        res.release(a)                      # c is served when the release is processed
        served_late = not c.triggered
        env.run()
        seen[cls] = (in_place, served_late, c.processed, res.users == [b, c])
    assert seen[GrantResource] == (True, True, True, True)
    assert seen[simpy.Resource] == (False, True, True, True)


@pytest.mark.parametrize(("fast", "plain"), PAIRS)
def test_a_process_waiting_on_a_get_is_woken_by_a_put(fast, plain):
    """With a get waiting, a put is scheduled as SimPy schedules it, so its callback wakes the get."""
    woke = {}
    for cls in (fast, plain):
        env = simpy.Environment()
        store = cls(env, capacity=4)

        def consumer(env=env, store=store, cls=cls):
            item = yield store.get()
            woke[cls] = (env.now, item)

        def producer(env=env, store=store):
            yield env.timeout(7)
            yield store.put(42)
            immediate = store.put(43)       # nobody waits now: granted in place (fast) or scheduled
            yield immediate
            assert immediate.value is None

        env.process(consumer())
        env.process(producer())
        env.run()
    assert woke[fast] == woke[plain] == (7, 42)
