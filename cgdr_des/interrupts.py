"""Ctrl-C and SIGTERM held back while a few lines run that must not be cut half-way.

The command line turns both signals into an exception (``cgdr_des/cli/app.py``) so that every
``with`` block cleans up on the way out. A few steps must not be cut in the middle: starting a pool
worker (cut, the worker is left reading a pipe its parent never wrote), or replacing one directory
by another with two renames (cut, neither is in place). Run them inside :func:`deferred`: a signal
that arrives meanwhile is recorded and raised again, to the handler that was there before, when
the block ends. Off the main thread, where Python cannot change handlers, nothing is deferred.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def deferred(signals=SIGNALS):
    """Hold ``signals`` back for the block; raise each that arrived, once, when it ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    handlers = {}
    for s in signals:
        if signal.getsignal(s) not in (signal.SIG_IGN, None):  # an ignored signal stays ignored
            handlers[s] = signal.signal(s, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
        for signum in dict.fromkeys(caught):
            signal.raise_signal(signum)
