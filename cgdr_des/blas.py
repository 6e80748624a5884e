"""BLAS threads during the simulator's own numeric work: one by default, the caller's setting restored.

The head-batched numbers (kernel/batched.py) and the per-phase numbers are many small matrix
products. OpenBLAS at its default thread count hands each to all its threads, which spin and contend
for them: on a 2-core machine the op call on long_t2048 took 10-12 s at the default against 1.0 s
with one thread. So the op call and :func:`cgdr_des.simulate` run under ``threadpoolctl``'s
``threadpool_limits`` (the library scikit-learn uses for the same purpose), which sets the limit on
entry and puts back whatever the caller had on exit, also when the call raises: the caller's global
BLAS state is never changed for good.

Choosing the count, first match wins:

- the ``blas_threads=`` keyword of the op and of ``simulate``: a whole number >= 1 sets it; ``0`` or
  ``"default"`` leaves the caller's setting alone;
- the environment variable ``CGDR_DES_BLAS_THREADS`` (same values), read at each call;
- otherwise one thread.
"""

from __future__ import annotations

import functools
import os
from contextlib import contextmanager
from contextvars import ContextVar

from cgdr_des.errors import InputError

ENV_VAR = "CGDR_DES_BLAS_THREADS"
DEFAULT_THREADS = 1
_ALLOWED = "a whole number >= 1, or 0 or 'default' to leave the BLAS thread count as it is"


def _parse(value, field: str) -> int | None:
    """``value`` as a thread count, or None for 'leave as is'; anything else is an InputError on ``field``."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "default":
            return None
        if not text.isdigit():
            raise InputError(field, value, _ALLOWED)
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(field, value, _ALLOWED)
    return value or None


def resolve_threads(blas_threads=None) -> int | None:
    """The BLAS thread count a call runs with (None: the caller's, untouched); see the module docstring."""
    if blas_threads is not None:
        return _parse(blas_threads, "blas_threads")
    env = os.environ.get(ENV_VAR)
    if env is not None and env.strip():
        return _parse(env, ENV_VAR)
    return DEFAULT_THREADS


_controller = None


def _blas_controller():
    """One threadpoolctl controller for the process: making one scans the loaded libraries (~1 ms,
    which a sweep's many tiny points would feel); limiting through it reads each library's current
    count on entry and puts it back on exit (~10 µs). It holds the BLAS numpy loaded when it was
    made, the only one the simulator calls."""
    global _controller
    if _controller is None:
        import numpy  # noqa: F401 -- its BLAS must be loaded for the controller to find it
        from threadpoolctl import ThreadpoolController  # lazy: only a numeric call needs it

        _controller = ThreadpoolController()
    return _controller


#: OpenBLAS releases whose threaded calls can hang after a fork (OpenMathLib/OpenBLAS#5520, numpy#30092:
#: a regression of 0.3.30, fixed for 0.3.31 by OpenBLAS#5556)
FORK_HANG_OPENBLAS = ((0, 3, 30),)


def fork_safe() -> bool:
    """True when every BLAS numpy loaded is known to stay usable, in parent and child, after a fork:
    OpenBLAS on its own pthreads pool (which it shuts down around a fork and starts again on the next
    call; numpy's wheels), not a release of :data:`FORK_HANG_OPENBLAS`. An OpenMP build (GNU OpenMP
    does not survive a fork), MKL or an unknown version: False, and the caller forks nothing."""
    libs = [lib for lib in _blas_controller().lib_controllers if lib.user_api == "blas"]
    return bool(libs) and all(lib.internal_api == "openblas" and lib.threading_layer == "pthreads"
                              and _release(lib.version) not in (None, *FORK_HANG_OPENBLAS) for lib in libs)


def _release(version: str | None) -> tuple[int, ...] | None:
    """``"0.3.31.188.0"`` -> (0, 3, 31); None when it does not read as numbers."""
    try:
        return tuple(int(part) for part in (version or "").split(".")[:3])
    except ValueError:
        return None


#: True inside a blas_limit: the numeric functions below it then leave the count as the call set it
_ACTIVE: ContextVar[bool] = ContextVar("cgdr_des_blas_limit_active", default=False)


@contextmanager
def blas_limit(blas_threads=None):
    """Run the body with the resolved BLAS thread count, restoring the caller's on the way out."""
    n = resolve_threads(blas_threads)
    token = _ACTIVE.set(True)
    try:
        if n is None:
            yield
        else:
            with _blas_controller().limit(limits=n, user_api="blas"):
                yield
    finally:
        _ACTIVE.reset(token)


def numeric_work(fn):
    """Decorator for the functions that compute the kernel's numbers (the functional run, the
    head-batched numbers, the Cube-era outputs): inside an op call or ``simulate`` they run at the
    count the call chose; called on their own they take the default (one thread, or the environment
    variable's). Their products then give the same bits whichever way they are reached, whatever the
    machine's core count: OpenBLAS splits a product differently for 1 and 2 threads."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _ACTIVE.get():
            return fn(*args, **kwargs)
        with blas_limit():
            return fn(*args, **kwargs)

    return wrapper


def limits_blas(fn):
    """Decorator: run ``fn`` under :func:`blas_limit` of its ``blas_threads`` keyword (which ``fn``
    declares, keyword-only, for its signature and docs, and otherwise ignores)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with blas_limit(kwargs.get("blas_threads")):
            return fn(*args, **kwargs)

    return wrapper
