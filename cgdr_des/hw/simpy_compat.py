"""Every use the machine makes of SimPy beyond its public API, in one place.

SimPy 4 is pinned below 5 (pyproject.toml); each name here is held to the behaviour the machine relies on
by ``tests/test_hw_simpy_compat.py``, so an upgrade that changes one fails there, not in a makespan.

- :func:`grant_in_place`: an event marked triggered *and* processed without being scheduled (what
  :meth:`simpy.core.Environment.step` would leave behind at the same simulated time); SimPy has no
  public call for it, and scheduling costs an event per TQue and event-id request (``hw/grants.py``).
- :func:`trigger_put`: a resource retries its waiting puts (``BaseResource._trigger_put``), what a
  granted get does inside SimPy; the V pipe frees an issue-queue slot without a get event
  (``hw/queues.py``, ``hw/pipes.py``).
- :func:`close_process`: a finished run closes each process's generator, whose frame refers back to
  its core, so no reference cycle is left for the collector (``hw/core.py``); a Process exposes no
  generator.
- :func:`schedule_call`: a callback at a later simulated time, as a Timeout would run it, without a
  Timeout's checks and bound-class lookup: the GM bus sets ~5 500 timers in long_t2048's op call
  (``hw/gm.py``). It leans on what :meth:`simpy.core.Environment.step` reads of an event
  (``callbacks``, ``_ok``) and on :meth:`~simpy.core.Environment.schedule`.

The resources also override ``_do_put`` / ``_do_get``, the hooks ``simpy.resources.base.BaseResource``
documents for subclasses to implement; the test holds that puts and gets still reach them.
"""

from __future__ import annotations

from simpy.events import NORMAL
from simpy.resources.base import BaseResource

#: ``trigger_put(resource, None)``: the resource's waiting puts are tried again, in order.
trigger_put = BaseResource._trigger_put


def grant_in_place(event, value) -> None:
    """Mark ``event`` succeeded with ``value`` and already processed: its callbacks are dropped, so
    only an event no process waits on may be granted so (:func:`cgdr_des.hw.grants.grant` checks)."""
    event._ok, event._value, event.callbacks = True, value, None


def close_process(proc) -> None:
    """Close ``proc``'s generator (its ``finally`` blocks run; it can never be resumed)."""
    proc._generator.close()


class _Call:
    """What :meth:`simpy.core.Environment.step` needs of an event: its callbacks, and that it succeeded."""

    __slots__ = ("callbacks",)
    _ok = True
    _value = None

    def __init__(self, callback) -> None:
        self.callbacks = [callback]


def schedule_call(env, delay: int, callback):
    """Call ``callback(event)`` ``delay`` cycles from now, after the events already scheduled for that
    time (as a Timeout's callback runs); returns the event, which the callback receives."""
    event = _Call(callback)
    env.schedule(event, NORMAL, delay)
    return event
