"""Work done in a forked child beside the caller's own, its arrays handed back through shared memory.

The op call at ``phase`` fidelity does two things that need nothing of each other: the head-batched
numbers (numpy products, kernel/batched.py) and the machine's replay of the records (pure Python,
under the GIL). A thread beside the replay gains nothing, since the replay never lets go of the GIL
(docs/speed.md §1); a child process does. :func:`beside` forks one that runs the numbers while the
caller's block runs the replay:

- **Hand-over.** The arrays the work fills (``out``, ``final_state``, ``workspace``) come back
  through anonymous shared memory mapped before the fork, not through a pipe: the child copies them
  in when its work is done, the parent copies them out into private arrays when the block ends. They
  hold the same bits as if the work had run here (the same code on the same inputs, BLAS at the same
  thread count).
- **Errors and warnings.** The child's exception is pickled back and raised in the caller when the
  block ends, the warnings it issued are issued again there. Should the caller's block fail too, the
  child's exception wins when there is one: it is the one the work run first would have raised.
- **No orphans, no stray output.** The child ignores Ctrl-C (the parent ends it), dies with its
  parent (``PR_SET_PDEATHSIG``), never runs the parent's ``atexit`` handlers or flushes its buffers
  (``os._exit``) and is killed and reaped when the caller's block is interrupted.
- **Where.** Linux only (``fork``), with two usable CPUs, never in a pool worker (those already use
  every core), and only beside a BLAS known to survive a fork: :func:`can_fork` says so. macOS's
  system libraries are not fork-safe and Windows has no fork; there the work runs in the caller,
  first.

OpenBLAS on pthreads (numpy's wheels) shuts its thread pool down around a fork and starts it again
on the next product, so a product in the child, or in the parent afterwards, is as safe and as exact
as without the fork; one release (0.3.30) could hang in a threaded call after a fork, and an OpenMP
build or MKL is not known to be safe: with those the op forks nothing (``cgdr_des/blas.py``,
``fork_safe``).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import pickle
import signal
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from cgdr_des.blas import fork_safe
from cgdr_des.pool import in_worker, usable_cpus

_PR_SET_PDEATHSIG = 1
#: Python 3.12+ warns on a fork while other threads run (OpenBLAS's idle pool counts); the child runs
#: numpy and this module only and takes no lock another thread could hold (module docstring)
_FORK_WARNING = r"This process .* is multi-threaded, use of fork\(\) may lead to deadlocks"


def can_fork() -> bool:
    """True where :func:`beside` forks: Linux, two usable CPUs or more, not inside a pool worker, and
    a BLAS that survives a fork (:func:`cgdr_des.blas.fork_safe`)."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork") and usable_cpus() >= 2 and not in_worker()
            and fork_safe())


@contextmanager
def beside(work: Callable[[], None], owner: object, fields: tuple[str, ...]) -> Iterator[None]:
    """Run ``work()`` in a forked child while the ``with`` block runs here; ``owner``'s array attributes
    ``fields`` (which ``work`` fills in place) hold the child's results once the block ends."""
    handover = _Handover(owner, fields)
    child = _fork(work, handover)
    if child is None:  # no fork now (out of processes or memory): the work here, first
        work()
        yield
        return
    pid, read = child
    with os.fdopen(read, "rb") as pipe:
        try:
            yield
        except Exception as exc:  # the child's exception first, if it has one (module docstring)
            error, _ = _report(pid, pipe)
            if error is not None:
                raise error from exc
            raise
        except BaseException:  # Ctrl-C, SystemExit: the child's numbers are no longer wanted
            _kill(pid)
            raise
        error, found = _report(pid, pipe)
    if error is None:
        handover.take()
    for message, category, filename, lineno in found:
        warnings.warn_explicit(message, category, filename, lineno)
    if error is not None:
        raise error


class _Handover:
    """Anonymous shared memory, one block per array attribute of ``owner``, mapped before the fork: the
    child copies its results in once its work is done, the parent copies them out into private arrays
    (a mapping shared with a later fork of the caller's would let that child's writes through)."""

    def __init__(self, owner: object, fields: tuple[str, ...]) -> None:
        self.owner = owner
        self.blocks = {name: mmap.mmap(-1, max(getattr(owner, name).nbytes, 1)) for name in fields}

    def _view(self, name: str) -> np.ndarray:
        arr = getattr(self.owner, name)
        return np.frombuffer(self.blocks[name], dtype=arr.dtype, count=arr.size).reshape(arr.shape)

    def put(self) -> None:
        """In the child: the results into the shared blocks."""
        for name in self.blocks:
            self._view(name)[...] = getattr(self.owner, name)

    def take(self) -> None:
        """In the parent: the results as private arrays, the shared blocks released."""
        for name in self.blocks:
            setattr(self.owner, name, self._view(name).copy())
        for block in self.blocks.values():
            block.close()


def _fork(work: Callable[[], None], handover: _Handover) -> tuple[int, int] | None:
    """Fork the child that runs ``work``; (its pid, the read end of its report pipe), None if the
    system refuses the fork."""
    parent = os.getpid()
    read, write = os.pipe()
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_FORK_WARNING, category=DeprecationWarning)
            pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return None
    if pid == 0:  # the child: never returns
        os.close(read)
        _child(parent, work, handover, write)
    os.close(write)
    return pid, read


def _child(parent: int, work: Callable[[], None], handover: _Handover, write: int) -> None:
    """Run ``work``, hand its results over, write ``(exception or None, warnings)`` to the pipe, exit
    without cleanup."""
    status = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler: SIGTERM ends the child
        _die_with(parent)
        with warnings.catch_warnings(record=True) as caught:
            try:
                work()
                handover.put()
                error = None
            except Exception as exc:  # handed to the parent, which raises it
                exc.add_note("".join(["raised in the forked numbers process:\n",
                                      *traceback.format_exception(exc)]).rstrip())
                error = exc
        _write_all(write, _pickled(error, caught))
        status = 0
    finally:
        os._exit(status)


def _die_with(parent: int) -> None:
    """SIGKILL this child when the parent dies (Linux), and exit now if it already has."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)


def _pickled(error: BaseException | None, caught: list) -> bytes:
    """The pickled report; an exception that does not pickle and unpickle goes as a RuntimeError
    naming it (a class whose ``__init__`` takes other arguments than its ``args`` fails the second)."""
    found = [(str(w.message), w.category, w.filename, w.lineno) for w in caught]
    try:
        data = pickle.dumps((error, found))
        pickle.loads(data)
    except Exception:
        stand_in = RuntimeError(f"{type(error).__name__}: {error}")
        stand_in.__notes__ = list(getattr(error, "__notes__", []))
        data = pickle.dumps((stand_in, found))
    return data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _report(pid: int, pipe) -> tuple[BaseException | None, list]:
    """Wait for the child; its exception (or None) and its warnings. Interrupted: the child is ended."""
    try:
        data = pipe.read()
        _, status = os.waitpid(pid, 0)
    except BaseException:
        _kill(pid)
        raise
    if not data:
        how = f"signal {-os.waitstatus_to_exitcode(status)}" if os.WIFSIGNALED(status) else "no report"
        return RuntimeError(f"the forked numbers process ended without a result ({how})"), []
    return pickle.loads(data)


def _kill(pid: int) -> None:
    """End the child now and reap it (it may have been reaped already)."""
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
