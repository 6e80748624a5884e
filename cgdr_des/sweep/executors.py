"""Where the points run, behind one interface: ``executor.run(tasks)`` yields outcomes as they finish.

- ``InProcess``: a plain loop in the calling process (``--workers 0``; the benchmarks' bare loop).
- ``LocalPool`` (default): ``--workers`` processes on this machine, the shared
  :class:`cgdr_des.pool.WorkerPool` (single-threaded BLAS; workers that ignore Ctrl-C, are ended by
  the parent when it stops, and end themselves when it is gone: no orphan, see ``cgdr_des/pool.py``).
- ``DaskExecutor``: ``--scheduler tcp://HOST:PORT`` submits to a Dask distributed cluster the user
  already runs (its workers need the same cgdr-des version installed: a worker with another version
  fails its points); ``--scheduler local-dask`` starts a ``LocalCluster`` of ``--workers``
  single-threaded worker processes for this sweep. Dask is imported only here, only when asked for.

Every executor runs the same ``run_point`` on the same pickled ``Task``; outcomes come back to the
caller, which writes them, so what is stored does not depend on the executor.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import as_completed
from contextlib import closing

from cgdr_des.errors import InputError
from cgdr_des.pool import WorkerPool
from cgdr_des.sweep.work import Outcome, Task, one_line, run_point

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
    """A pool of ``workers`` processes (:class:`cgdr_des.pool.WorkerPool`, see the module docstring)."""

    def __init__(self, workers: int):
        self.workers = workers
        self.name = f"local pool ({workers} worker{'s' if workers != 1 else ''})"
        self._pool = WorkerPool(workers)

    def run(self, tasks: Iterable[Task], fn: RunPoint = run_point) -> Iterator[Outcome]:
        """Yield outcomes as workers finish them; a crashed worker fails its points, not the sweep."""
        with closing(self._pool.completed(tasks, fn)) as finished:  # closed here, however this one ends
            for task, fut in finished:
                yield _outcome(fut, task)

    def close(self) -> None:
        """Terminate the workers still running (none after a sweep that ran to its end)."""
        self._pool.close()


class SharedPool(LocalPool):
    """One pool of ``workers`` processes that several sweeps use side by side, each from its own thread
    (``run`` may be called concurrently): the workers start once and stay until :meth:`close`, so
    short sweeps do not each pay a pool start, and a sweep of one long point runs while the other
    worker takes another sweep's points. Outcomes come back to the thread that submitted the task."""

    def __init__(self, workers: int):
        super().__init__(workers)
        self.name = f"shared local pool ({workers} worker{'s' if workers != 1 else ''})"

    def run(self, tasks: Iterable[Task], fn: RunPoint = run_point) -> Iterator[Outcome]:
        """Submit every task now (the pool starts tasks in the order they were submitted, whichever
        thread submitted them), then yield this call's outcomes as the workers finish them."""
        pool = self._pool.started()
        futures = {pool.submit(fn, task): task for task in tasks}
        return self._outcomes(futures)

    def _outcomes(self, futures: dict) -> Iterator[Outcome]:
        try:
            for fut in as_completed(futures):
                yield _outcome(fut, futures[fut])
        except BaseException:  # interrupted: end the workers now, as LocalPool does
            self._pool.close()
            self._pool.shutdown()
            raise

    def close(self) -> None:
        """Shut the pool down once its work is done."""
        self._pool.shutdown()

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None:  # interrupted or failed while sweeps were running: end the workers now
            self._pool.close()
        self.close()


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
