"""Where the points run, behind one interface: ``executor.run(tasks)`` yields outcomes as they finish.

- ``InProcess``: a plain loop in the calling process (``--workers 0``; the benchmarks' bare loop).
- ``LocalPool`` (default): a process pool on this machine, ``--workers`` processes started fresh
  (``spawn``) with OMP/OpenBLAS/MKL limited to one thread, so N workers use N cores and do not
  oversubscribe them with BLAS threads. Its workers never outlive the sweep: they ignore Ctrl-C
  (the terminal sends it to the whole process group; the parent ends them instead, without a
  traceback), the parent terminates them when it is interrupted or stopped, and each worker ends
  itself when its parent is gone (SIGKILL), by ``PR_SET_PDEATHSIG`` on Linux and a watchdog thread
  that polls ``os.getppid()`` everywhere. The multiprocessing resource tracker exits when the last
  of them has.
- ``DaskExecutor``: ``--scheduler tcp://HOST:PORT`` submits to a Dask distributed cluster the user
  already runs (its workers need the same cgdr-des version installed: a worker with another version
  fails its points); ``--scheduler local-dask`` starts a ``LocalCluster`` of ``--workers``
  single-threaded worker processes for this sweep. Dask is imported only here, only when asked for.

Every executor runs the same ``run_point`` on the same pickled ``Task``; outcomes come back to the
caller, which writes them, so what is stored does not depend on the executor.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from multiprocessing import resource_tracker

from cgdr_des.errors import InputError
from cgdr_des.interrupts import deferred
from cgdr_des.runtime import scoped_environ
from cgdr_des.sweep.work import Outcome, Task, one_line, run_point

BLAS_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
#: seconds between a worker's checks that its parent is still alive
WATCHDOG_INTERVAL = 0.5
#: the resource tracker (started with the pool) warns of "leaked semaphores" when the sweep was
#: SIGKILLed; it removes them all the same, so the warning would only tell the user what they did
_QUIET_TRACKER = "ignore::UserWarning:multiprocessing.resource_tracker"
_PR_SET_PDEATHSIG = 1
RunPoint = Callable[[Task], Outcome]


class InProcess:
    """Runs the points one after the other in this process."""

    name = "in-process"

    def run(self, tasks: Iterable[Task], fn: RunPoint = run_point) -> Iterator[Outcome]:
        """Yield each task's outcome in order."""
        for task in tasks:
            yield fn(task)

    def close(self) -> None:
        """Nothing to release."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalPool(InProcess):
    """A pool of ``workers`` fresh processes with single-threaded BLAS (see the module docstring)."""

    def __init__(self, workers: int):
        self.workers = workers
        self.name = f"local pool ({workers} worker{'s' if workers != 1 else ''})"
        self._pool: ProcessPoolExecutor | None = None

    def run(self, tasks: Iterable[Task], fn: RunPoint = run_point) -> Iterator[Outcome]:
        """Yield outcomes as workers finish them; a crashed worker fails its points, not the sweep."""
        pool = None
        try:
            # spawn: a fresh interpreter reads the BLAS variables when it first loads numpy (a forked
            # child would inherit the parent's already-started BLAS threads). The workers start in
            # submit(), all inside this block, with Ctrl-C blocked from their first instruction on.
            warnings = ",".join(filter(None, [os.environ.get("PYTHONWARNINGS"), _QUIET_TRACKER]))
            with scoped_environ({**BLAS_ENV, "PYTHONWARNINGS": warnings}), _starting_workers():
                pool = self._pool = ProcessPoolExecutor(
                    self.workers, mp_context=multiprocessing.get_context("spawn"),
                    initializer=_worker_init, initargs=(os.getpid(),))
                futures = {}
                for task in tasks:
                    futures[pool.submit(fn, task)] = task
            for fut in as_completed(futures):
                yield _outcome(fut, futures[fut])
        except BaseException:  # interrupted, or the caller stopped early: end the workers now
            self.close()
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        """Terminate the workers still running (none after a sweep that ran to its end)."""
        procs = list((getattr(self._pool, "_processes", None) or {}).values())  # None once shut down
        for proc in procs:
            if proc.is_alive():
                proc.terminate()  # SIGTERM: a worker has no handler for it, so it ends quietly
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()


class SharedPool(LocalPool):
    """One pool of ``workers`` processes that several sweeps use side by side, each from its own thread
    (``run`` may be called concurrently): the workers start once and stay until :meth:`close`, so
    short sweeps do not each pay a pool start, and a sweep of one long point runs while the other
    worker takes another sweep's points. Outcomes come back to the thread that submitted the task."""

    def __init__(self, workers: int):
        super().__init__(workers)
        self.name = f"shared local pool ({workers} worker{'s' if workers != 1 else ''})"
        self._lock = threading.Lock()

    def _started(self) -> ProcessPoolExecutor:
        """The pool, its workers started (as :class:`LocalPool` starts them) on the first call."""
        with self._lock:
            if self._pool is None:
                warnings = ",".join(filter(None, [os.environ.get("PYTHONWARNINGS"), _QUIET_TRACKER]))
                with scoped_environ({**BLAS_ENV, "PYTHONWARNINGS": warnings}), _starting_workers():
                    self._pool = ProcessPoolExecutor(
                        self.workers, mp_context=multiprocessing.get_context("spawn"),
                        initializer=_worker_init, initargs=(os.getpid(),))
                    for fut in [self._pool.submit(time.sleep, 0) for _ in range(self.workers)]:
                        fut.result()  # every worker is up before Ctrl-C is let through
            return self._pool

    def run(self, tasks: Iterable[Task], fn: RunPoint = run_point) -> Iterator[Outcome]:
        """Submit every task now (the pool starts tasks in the order they were submitted, whichever
        thread submitted them), then yield this call's outcomes as the workers finish them."""
        pool = self._started()
        futures = {pool.submit(fn, task): task for task in tasks}
        return self._outcomes(futures)

    def _outcomes(self, futures: dict) -> Iterator[Outcome]:
        try:
            for fut in as_completed(futures):
                yield _outcome(fut, futures[fut])
        except BaseException:  # interrupted: end the workers now, as LocalPool does
            LocalPool.close(self)
            self.close()
            raise

    def close(self) -> None:
        """Shut the pool down once its work is done (terminated workers, when interrupted, are reaped)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None:  # interrupted or failed while sweeps were running: end the workers now
            LocalPool.close(self)
        self.close()


def _worker_init(parent: int) -> None:
    """In each pool worker, first: ignore Ctrl-C, then end with the parent (see the module docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # drops one that arrived while it started (blocked)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the watchdog alone
            pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="cgdr-des parent watchdog", daemon=True).start()


def _watch_parent(parent: int) -> None:
    """End this worker at once when its parent is gone (it is re-parented, so getppid changes)."""
    while os.getppid() == parent:
        time.sleep(WATCHDOG_INTERVAL)
    os._exit(1)


@contextmanager
def _starting_workers():
    """Start pool workers inside this block: Ctrl-C and SIGTERM wait until it ends.

    SIGINT is blocked in this thread, so processes and threads started inside inherit the mask: a
    pool worker drops it once it can (``_worker_init``), the pool's threads keep it blocked for good.
    The handlers are deferred too (``cgdr_des/interrupts.py``): Python runs them in the main thread
    whichever thread the kernel hands the signal to (the progress bar's thread may take it), and
    one raising while a worker starts would leave the worker reading a pipe the parent never wrote.
    The resource tracker is started first: starting it unblocks SIGINT and SIGTERM in this thread.
    """
    resource_tracker.ensure_running()
    with deferred():
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


class DaskExecutor(InProcess):
    """Points as Dask futures on an existing cluster (``tcp://...``) or a ``LocalCluster`` (``local-dask``)."""

    def __init__(self, scheduler: str, workers: int):
        distributed = _import_distributed(scheduler)
        self.cluster = None
        if scheduler == "local-dask":
            self.cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                    dashboard_address=None, silence_logs=logging.ERROR)
            self.client = distributed.Client(self.cluster)
            self.name = f"Dask LocalCluster ({workers} worker{'s' if workers != 1 else ''})"
        else:
            try:
                self.client = distributed.Client(scheduler, timeout="10s")
            except (OSError, TimeoutError) as exc:
                raise InputError("--scheduler", scheduler, f"address of a running Dask scheduler ({exc})") from None
            self.name = f"Dask cluster at {scheduler}"
        self._as_completed = distributed.as_completed

    def run(self, tasks: Iterable[Task], fn: RunPoint = run_point) -> Iterator[Outcome]:
        """Yield outcomes as the cluster finishes them (``pure=False``: every point runs)."""
        tasks = list(tasks)
        futures = self.client.map(fn, tasks, pure=False)
        by_key = {f.key: t for f, t in zip(futures, tasks, strict=True)}
        for fut in self._as_completed(futures):
            yield _outcome(fut, by_key[fut.key])
            fut.release()

    def close(self) -> None:
        """Disconnect, and stop the LocalCluster if this executor started it."""
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def make_executor(scheduler: str | None, workers: int) -> InProcess:
    """The executor for ``--scheduler``/``--workers`` (``workers = 0``: in this process)."""
    if workers < 0:
        raise InputError("--workers", workers, "a non-negative integer (0 runs the points in this process)")
    if scheduler is None:
        return InProcess() if workers == 0 else LocalPool(workers)
    if scheduler != "local-dask" and "://" not in scheduler:
        raise InputError("--scheduler", scheduler, "local-dask, or a Dask scheduler address such as tcp://HOST:8786")
    return DaskExecutor(scheduler, max(workers, 1))


def _import_distributed(scheduler: str):
    try:
        import distributed
    except ImportError:
        raise InputError("--scheduler", scheduler,
                         "Dask, which is not installed: pip install 'cgdr-des[dask]'") from None
    return distributed


def _outcome(fut, task: Task) -> Outcome:
    try:
        return fut.result()
    except Exception as exc:  # noqa: BLE001 -- a lost worker fails its point, the sweep goes on
        return Outcome(task.point, error=one_line(exc))
