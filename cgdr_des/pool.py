"""The local process pool every parallel part of cgdr-des runs on: a sweep's points
(``cgdr_des/sweep/executors.py``, ``LocalPool``) and a tail study's self-checks (``cgdr_des/tail/checks.py``).

``WorkerPool(workers).completed(tasks, fn)`` yields ``(task, future)`` pairs as workers finish them.
The workers are forked from a multiprocessing *forkserver* that has imported what a worker runs
(:data:`PRELOAD`) once for the process: a spawned worker paid ~1-1.5 s of CPU importing pandas,
pyarrow, SimPy and the simulator, each worker of each pool (in a test process that starts many
pools, or a two-worker sweep, that was the larger part of the workers' start-up). A worker takes the
caller's environment and working directory as they are when the pool starts (the server's are those
of its own start) and limits BLAS to one thread (threadpoolctl; OMP/OpenBLAS/MKL set to 1 as well),
so N workers use N cores and do not oversubscribe them with BLAS threads. They never outlive their
parent: they ignore Ctrl-C (the terminal sends it to the whole process group; the parent ends them
instead, without a traceback), the parent terminates them when it is interrupted or stops early,
and each worker ends itself when the parent is gone (SIGKILL included): a watchdog thread checks
every half second that the parent still runs (``PR_SET_PDEATHSIG`` on Linux ends it with the
forkserver it was forked from, which exits once the parent and the workers are gone). The
multiprocessing resource tracker exits when the last of them has. A worker knows it is one
(:func:`in_worker`), so work that could start a pool of its own (a tail point of a sweep) runs in the
worker instead: pools never nest.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

from cgdr_des.interrupts import deferred
from cgdr_des.runtime import scoped_environ

BLAS_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
#: seconds between a worker's checks that its parent is still alive
WATCHDOG_INTERVAL = 0.5
#: the resource tracker (started with the pool) warns of "leaked semaphores" when the parent was
#: SIGKILLed; it removes them all the same, so the warning would only tell the user what they did
_QUIET_TRACKER = "ignore::UserWarning:multiprocessing.resource_tracker"
_PR_SET_PDEATHSIG = 1
#: set in a pool worker by its initializer (see :func:`in_worker`)
_IN_WORKER = False
#: what the forkserver imports before it forks any worker: the modules a sweep point or a tail check
#: runs (their own imports are lazy, so the heavy libraries are named too)
PRELOAD = ["numpy", "pandas", "pyarrow.parquet", "simpy", "threadpoolctl", "cgdr_des.simulation",
           "cgdr_des.item_costs", "cgdr_des.sweep.work", "cgdr_des.tail.checks", "cgdr_des.tail.surrogate"]


def in_worker() -> bool:
    """True in a :class:`WorkerPool` worker: what runs there does not start a pool of its own."""
    return _IN_WORKER


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the OS tells it, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def idle_cpus() -> int:
    """The usable CPUs other work leaves idle now, at least 1: :func:`usable_cpus` minus the 1-minute
    load average, this process aside (it counts itself there). A pool larger than this only shares the
    same cores and pays its workers' start-up (analysis/benchmarks/bench_tail_checks.py)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average here: every usable CPU
        return usable_cpus()
    return max(1, min(usable_cpus(), int(usable_cpus() - load + 1)))


class WorkerPool:
    """A pool of ``workers`` processes forked from a preloaded forkserver, with single-threaded BLAS (see
    the module docstring)."""

    def __init__(self, workers: int):
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def started(self) -> ProcessPoolExecutor:
        """The pool kept running across calls (the report's sweeps share one, each from its own thread):
        its workers started on the first call, under the same guards as :meth:`completed`, and every one
        up before Ctrl-C is let through. End it with :meth:`shutdown` (or :meth:`close` when interrupted)."""
        with self._lock:
            if self._pool is None:
                with self._starting() as pool:
                    for fut in [pool.submit(time.sleep, 0) for _ in range(self.workers)]:
                        fut.result()
            return self._pool

    def shutdown(self) -> None:
        """End a :meth:`started` pool once its work is done (terminated workers are reaped)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def completed(self, tasks: Iterable[Any], fn: Callable[[Any], Any]) -> Iterator[tuple[Any, Future]]:
        """Submit ``fn(task)`` for every task; yield ``(task, future)`` as each finishes (the caller
        reads ``future.result()``: a worker's exception is raised there)."""
        pool = None
        try:
            with self._starting() as pool:
                futures = {}
                for task in tasks:
                    futures[pool.submit(fn, task)] = task
            for fut in as_completed(futures):
                yield futures[fut], fut
        except BaseException:  # interrupted, or the caller stopped early: end the workers now
            self.close()
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    @contextmanager
    def _starting(self) -> Iterator[ProcessPoolExecutor]:
        """A new executor (also ``self._pool``) whose workers start in ``submit()`` inside this block.

        forkserver: the server, started here the first time (the BLAS variables set and Ctrl-C
        blocked, which its workers inherit from it), never ran BLAS work of this process; Ctrl-C stays
        blocked from the workers' first instruction on (:func:`starting_workers`)."""
        warnings = ",".join(filter(None, [os.environ.get("PYTHONWARNINGS"), _QUIET_TRACKER]))
        if "forkserver" in multiprocessing.get_all_start_methods():
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(PRELOAD)  # read when the server starts; a running one keeps its own
        else:  # Windows: fresh interpreters, each importing what it runs (the worker's parent is this one)
            ctx = multiprocessing.get_context("spawn")
        with scoped_environ({**BLAS_ENV, "PYTHONWARNINGS": warnings}), starting_workers():
            caller = (os.getpid(), dict(os.environ), os.getcwd())
            self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_worker_init,
                                             initargs=caller)
            yield self._pool

    def close(self) -> None:
        """Terminate the workers still running (none after a run that went to its end)."""
        procs = list((getattr(self._pool, "_processes", None) or {}).values())  # None once shut down
        for proc in procs:
            if proc.is_alive():
                proc.terminate()  # SIGTERM: a worker has no handler for it, so it ends quietly
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()


def _worker_init(parent: int, env: dict, cwd: str) -> None:
    """In each pool worker, first: ignore Ctrl-C, then end with the process it was forked from (see the
    module docstring); then the caller's environment, working directory and one BLAS thread."""
    global _IN_WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # drops one that arrived while it started (blocked)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _IN_WORKER = True
    server = os.getppid()   # the forkserver (module docstring)
    die_with_parent()  # no prctl: the watchdog alone
    if server == 1 or not _alive(parent):  # gone before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent, server), name="cgdr-des parent watchdog",
                     daemon=True).start()
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # for good in this process: a server started elsewhere may have loaded BLAS wider


def die_with_parent() -> None:
    """Have Linux SIGKILL this process when the thread that forked it ends (``PR_SET_PDEATHSIG``); a
    no-op elsewhere. The caller then checks that the parent had not gone already."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass


def _alive(pid: int) -> bool:
    """``pid`` runs (a zombie, dead but not yet reaped by its own parent, does not). Not POSIX (Windows,
    where signal 0 is CTRL_C_EVENT and the workers are the parent's own children): True, getppid decides."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: the pid was reused, ours is gone
        return False
    fields = proc_stat(pid)
    return fields is None or fields[0] != "Z"  # no /proc here: kill(0) is all there is


def proc_stat(pid: int | None) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after ``pid (comm)``: state at 0, ppid at 1, utime, stime,
    cutime, cstime (clock ticks) at 11-14; None where there is no such file."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace") if pid else None
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split() if stat else None


def forkserver_pid() -> int | None:
    """The pid of this process's forkserver, the parent of its pool workers (None before the first pool)."""
    from multiprocessing import forkserver

    return getattr(forkserver._forkserver, "_forkserver_pid", None)


class WorkerPeak:
    """The largest resident set (VmHWM, bytes) of each pool worker, read from ``/proc`` every ``interval``
    seconds while they run, from construction to :meth:`stop` (Linux; benchmarks and tests: a worker is
    the forkserver's child, so the caller's ``RUSAGE_CHILDREN`` never sees it)."""

    def __init__(self, interval: float = 0.02) -> None:
        self.peaks: dict[int, int] = {}
        self._interval, self._stop = interval, threading.Event()
        self._thread = threading.Thread(target=self._watch, name="cgdr-des worker peak", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(self._interval):
            server = forkserver_pid()
            for entry in Path("/proc").iterdir() if server else ():
                try:
                    status = (entry / "status").read_text() if entry.name.isdigit() else ""
                except OSError:
                    continue
                if f"\nPPid:\t{server}\n" in status and "VmHWM:" in status:
                    peak = int(status.split("VmHWM:")[1].split()[0]) * 1024
                    self.peaks[int(entry.name)] = max(self.peaks.get(int(entry.name), 0), peak)

    def stop(self) -> dict[int, int]:
        """Stop watching; worker pid -> its largest resident set seen."""
        self._stop.set()
        self._thread.join()
        return self.peaks


def _watch_parent(parent: int, server: int) -> None:
    """End this worker at once when the parent is gone. Watched directly: the forkserver this worker was
    forked from outlives the parent while any worker holds the server's pipe, which every worker does."""
    while os.getppid() == server and _alive(parent):
        time.sleep(WATCHDOG_INTERVAL)
    os._exit(1)


@contextmanager
def starting_workers():
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
