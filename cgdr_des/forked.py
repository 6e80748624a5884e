"""Work done in a forked child beside the caller's own, its arrays handed back through shared memory.

The op call at ``phase`` fidelity does two things that need nothing of each other: the head-batched
numbers (numpy products, kernel/batched.py) and the machine's replay of the records (pure Python,
under the GIL). A thread beside the replay gains nothing, since the replay never lets go of the GIL
(docs/speed.md §1); a child process does. :class:`beside` forks one that runs the numbers while the
caller's block runs the replay:

- **Hand-over.** The arrays the work fills (``out``, ``final_state``, ``workspace``) come back
  through anonymous shared memory mapped before the fork, not through a pipe: the child copies them
  in when its work is done, the parent copies them out into private arrays when the block ends. They
  hold the same bits as if the work had run here (the same code on the same inputs, BLAS at the same
  thread count).
- **Errors and warnings.** The child's exception is pickled back and raised in the caller when the
  block ends; the warnings it issued are issued again there, from the module that issued them and
  through its registry, so a warning shown once per place is shown once. Should the caller's block
  fail too, the child's exception wins when there is one: it is the one the work run first would
  have raised.
- **No orphans, no stray output.** Ctrl-C and SIGTERM are held back from the fork until the child's
  pipe is set up (``cgdr_des/interrupts.py``); the child ignores Ctrl-C (the parent ends it), dies
  with its parent (``PR_SET_PDEATHSIG``), never returns into the caller's code, never runs its
  ``atexit`` handlers or flushes its buffers (``os._exit``), and is killed and reaped when the
  caller's block is interrupted. A caller that ignores SIGCHLD (the kernel then reaps the child
  itself) gets its results all the same: they are read from the pipe, not from the exit status.
- **Where** (:func:`can_fork`): Linux (``fork``), two usable CPUs, not in a pool worker (those
  already use every core), a BLAS known to survive a fork, and no other thread in the calling
  process. A thread inside a BLAS product while the process forks can hang OpenBLAS's fork handler
  for good (measured: two runs in six with a thread multiplying 400 x 400 matrices), and any
  thread could be about to start one. macOS's system libraries are not fork-safe and Windows has no
  fork. Where it cannot fork the op runs the work in the caller, first; ``processes=2`` forks
  beside other threads and on one CPU all the same, at the caller's word, wherever ``os.fork``
  exists and the BLAS survives it.

OpenBLAS on pthreads (numpy's wheels) shuts its thread pool down around a fork and starts it again
on the next product, so a product in the child, or in the parent afterwards, is as safe and as exact
as without the fork; one release (0.3.30) could hang in a threaded call after a fork, and an OpenMP
build or MKL is not known to be safe: with those the op forks nothing (``cgdr_des/blas.py``,
``fork_safe``).
"""

from __future__ import annotations

import mmap
import os
import pickle
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Callable

import numpy as np

from cgdr_des.blas import fork_safe
from cgdr_des.interrupts import deferred
from cgdr_des.pool import die_with_parent, in_worker, usable_cpus

# Python 3.12+ warns at a fork while other threads run; OpenBLAS's idle pool counts, which
# fork_safe() has vetted, and a Python thread keeps "auto" from forking (module docstring)
warnings.filterwarnings("ignore", message=r"This process .* is multi-threaded, use of fork\(\)",
                        category=DeprecationWarning, module=r"cgdr_des\.forked")


def can_fork(*, asked: bool = False) -> bool:
    """True where :class:`beside` may fork: ``os.fork`` exists and the BLAS survives a fork. Where the
    op's ``"auto"`` forks (``asked`` False, module docstring) also Linux, two usable CPUs or more, not
    in a pool worker and no other thread in this process; ``processes=2`` (``asked``) waives those."""
    if not hasattr(os, "fork") or not fork_safe():
        return False
    return asked or (sys.platform.startswith("linux") and usable_cpus() >= 2 and not in_worker()
                     and threading.active_count() == 1)


class beside:  # noqa: N801 -- used as a function: ``with beside(work, owner, fields):``
    """Run ``work()`` in a forked child while the ``with`` block runs here; ``owner``'s array attributes
    ``fields`` (which ``work`` fills in place) hold the child's results once the block ends. If the
    system refuses the fork, ``work()`` runs here, before the block."""

    def __init__(self, work: Callable[[], None], owner: object, fields: tuple[str, ...]) -> None:
        self.work, self.handover = work, _Handover(owner, fields)
        self.pid: int | None = None
        self.pipe = None

    def __enter__(self) -> beside:
        try:
            with deferred():  # Ctrl-C raised only once the child and its pipe are known here
                self._fork()
        except BaseException:
            self._abandon()
            raise
        if self.pid is None:
            self.handover.close()
            self.work()
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if self.pid is None:
            return False
        if kind is not None and not issubclass(kind, Exception):  # Ctrl-C, SystemExit: results unwanted
            self._abandon()
            return False
        try:
            error, found = self._report()
        finally:
            self.pipe.close()
        if kind is not None:  # the child's exception first, if it has one (module docstring)
            self.handover.close()
            if error is not None:
                raise error from exc
            return False
        self.handover.take()
        _reissue(found)
        if error is not None:
            raise error
        return False

    def _fork(self) -> None:
        """Fork the child (``self.pid``, and the read end of its report pipe); no fork, pid None."""
        parent = os.getpid()
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            return
        if pid == 0:
            try:  # whatever happens, the child never returns into the caller's code
                os.close(read)
                _child(parent, self.work, self.handover, write)
            finally:
                os._exit(1)
        self.pid = pid
        os.close(write)
        self.pipe = os.fdopen(read, "rb")

    def _report(self) -> tuple[BaseException | None, list]:
        """Wait for the child; its exception (or None) and its warnings. Interrupted: the child is ended."""
        try:
            data = self.pipe.read()
            status = _reap(self.pid)
        except BaseException:
            self._abandon()
            raise
        self.pid = None
        if not data:
            how = f"signal {-os.waitstatus_to_exitcode(status)}" if status and os.WIFSIGNALED(status) else "no report"
            return RuntimeError(f"the forked numbers process ended without a result ({how})"), []
        return pickle.loads(data)

    def _abandon(self) -> None:
        """End the child now and reap it, close its pipe and the shared blocks (a second Ctrl-C waits)."""
        with deferred():
            if self.pid is not None:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _reap(self.pid)
                self.pid = None
            if self.pipe is not None:
                self.pipe.close()
            self.handover.close()


def _reap(pid: int) -> int | None:
    """Wait for ``pid``; its wait status, or None when it was reaped already (SIGCHLD ignored)."""
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return None


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
        self.close()

    def close(self) -> None:
        """Release the shared blocks (again: nothing)."""
        for block in self.blocks.values():
            block.close()
        self.blocks = {}


def _child(parent: int, work: Callable[[], None], handover: _Handover, write: int) -> None:
    """Run ``work``, hand its results over, write ``(exception or None, warnings)`` to the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler: SIGTERM ends the child
    die_with_parent()
    if os.getppid() != parent:  # gone before prctl took effect
        os._exit(1)
    with warnings.catch_warnings(record=True) as caught:
        try:
            work()
            handover.put()
            error = None
        except BaseException as exc:  # handed to the parent, which raises it
            exc.add_note("".join(["raised in the forked numbers process:\n",
                                  *traceback.format_exception(exc)]).rstrip())
            error = exc
    _write_all(write, _pickled(error, caught))
    os._exit(0)




def _pickled(error: BaseException | None, caught: list) -> bytes:
    """The pickled report. A warning category or an exception that does not survive pickling (a class
    whose ``__init__`` takes other arguments than its ``args`` fails to unpickle) goes as its nearest
    stand-in: UserWarning, or a RuntimeError naming it."""
    found = [(str(w.message), _portable(w.category, UserWarning), w.filename, w.lineno) for w in caught]
    if _portable(error, None) is None and error is not None:
        stand_in = RuntimeError(f"{type(error).__name__}: {error}")
        stand_in.__notes__ = list(getattr(error, "__notes__", []))
        error = stand_in
    return pickle.dumps((error, found))


def _portable(value, stand_in):
    """``value`` if it pickles and unpickles, else ``stand_in``."""
    try:
        pickle.loads(pickle.dumps(value))
    except Exception:
        return stand_in
    return value


def _write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd`` (a pipe takes a large report in several writes)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _reissue(found: list) -> None:
    """The child's warnings, issued again from the module each came from (found by its file) through
    that module's registry: filters match its name, and "once per place" counts the child's showing."""
    modules = {getattr(m, "__file__", None): m for m in list(sys.modules.values())} if found else {}
    for message, category, filename, lineno in found:
        module = modules.get(filename)
        name = module.__name__ if module is not None else filename
        registry = module.__dict__.setdefault("__warningregistry__", {}) if module is not None else None
        warnings.warn_explicit(message, category, filename, lineno, module=name, registry=registry)
