"""Each SimPy internal the machine leans on (cgdr_des/hw/simpy_compat.py), held to what the machine
needs from it, so a SimPy release that changes one fails here rather than in a makespan; and no module
of the package but simpy_compat.py reaches into a SimPy object's private attributes."""

from __future__ import annotations

import ast
from pathlib import Path

import simpy
from simpy.resources.base import BaseResource, Get, Put

from cgdr_des.hw.simpy_compat import close_process, grant_in_place, schedule_call, trigger_put

PACKAGE = Path(__file__).resolve().parents[1] / "cgdr_des"


def test_an_event_granted_in_place_is_processed_and_resumes_its_yielder_at_once():
    env = simpy.Environment()
    ev = env.event()
    grant_in_place(ev, 7)
    assert ev.triggered and ev.processed and ev.ok and ev.value == 7
    got = []

    def proc():
        got.append((yield ev))
        got.append(env.now)

    env.process(proc())
    env.run()
    assert got == [7, 0]
    assert env.peek() == float("inf")  # nothing was scheduled for the granted event itself


def test_a_scheduled_call_runs_at_its_time_after_what_was_scheduled_there_before_it_as_a_timeout_would():
    env, got = simpy.Environment(), []

    def proc(name, delay):
        yield env.timeout(delay)
        got.append((name, env.now))

    env.process(proc("timeout before", 5))
    env.run(until=1)
    ev = schedule_call(env, 4, lambda e: got.append(("call", env.now, e)))
    env.process(proc("timeout after", 4))
    env.run()
    assert got == [("timeout before", 5), ("call", 5, ev), ("timeout after", 5)]


class _Recording(BaseResource):
    """A resource whose hooks record the calls BaseResource makes."""

    def __init__(self, env):
        super().__init__(env, 1)
        self.calls = []

    def _do_put(self, event):
        self.calls.append("put")
        event.succeed()
        return True

    def _do_get(self, event):
        self.calls.append("get")
        event.succeed()
        return True


def test_puts_and_gets_reach_the_subclass_hooks_and_trigger_put_retries_the_waiting_puts():
    env = simpy.Environment()
    res = _Recording(env)
    res.put()
    res.get()
    assert res.calls == ["put", "get"]
    waiting = Put.__new__(Put)
    simpy.Event.__init__(waiting, env)
    waiting.resource, waiting.proc = res, None
    res.put_queue.append(waiting)
    trigger_put(res, None)
    assert res.calls[-1] == "put" and waiting.triggered and not res.put_queue
    assert issubclass(Get, simpy.Event)


def test_closing_a_process_runs_its_finally_and_it_never_resumes():
    env = simpy.Environment()
    closed = []

    def proc():
        try:
            yield env.timeout(5)
            closed.append("resumed")
        finally:
            closed.append("closed")

    p = env.process(proc())
    env.step()  # the process starts and waits on its timeout
    close_process(p)
    assert closed == ["closed"]


def _private_simpy_uses(path: Path) -> list[str]:
    """``obj._name`` where the name is one SimPy's events, processes, resources or environment define
    privately (on ``self`` too: a subclass of a SimPy resource reaches into its base that way)."""
    private = {n for cls in (simpy.Event, simpy.Process, BaseResource, simpy.Resource, simpy.Store,
                             simpy.Environment) for n in vars(cls) if n.startswith("_") and not n.startswith("__")}
    private |= {"_ok", "_value", "_generator", "_env", "_capacity", "_target", "_queue", "_now"}
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in private:
            found.append(f"{path.name}:{node.lineno} .{node.attr}")
    return found


def test_no_module_but_simpy_compat_touches_a_private_simpy_attribute():
    hits = [h for p in sorted(PACKAGE.rglob("*.py")) if p.name != "simpy_compat.py" for h in _private_simpy_uses(p)]
    assert hits == []
    assert _private_simpy_uses(PACKAGE / "hw" / "simpy_compat.py")  # the scan does see them
