"""Executors: the same sweep in this process, on the local process pool and on a real Dask
LocalCluster stores byte-identical ``summary.parquet`` files; pool workers run with one BLAS thread;
a missing Dask is one clear line."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner
from sweep_cases import GRID, report_blas_env, report_blas_threads, report_caller, write_sweep

from cgdr_des.cli import main
from cgdr_des.pool import BLAS_ENV
from cgdr_des.sweep import expand, load_sweep
from cgdr_des.sweep.executors import LocalPool, SharedPool
from cgdr_des.sweep.runner import tasks_for

SWEEP = GRID.replace('"shape.dv" = [16, 24, 32]', '"shape.dv" = [16, 24]')  # 16 points, failures included


def run(folder, *args):
    path = write_sweep(folder, SWEEP)
    result = CliRunner().invoke(main, ["sweep", str(path), "--out", str(folder / "out"), *map(str, args)])
    assert result.exit_code == 1 and "12 of 16 points failed" in result.stderr, result.output
    return (folder / "out" / "summary.parquet").read_bytes(), sorted((folder / "out" / "manifest").iterdir())


@pytest.mark.slow
def test_pool_and_local_dask_give_identical_bytes(tmp_path):
    """Same bytes, not only equal frames: every executor returns the same DataFrames and the writing
    process alone turns them into Parquet, sorted by point id, so nothing executor-specific is stored."""
    pytest.importorskip("distributed")
    loop, loop_manifests = run(tmp_path / "loop", "--workers", 0)
    pool, _ = run(tmp_path / "pool", "--workers", 2)
    dask, dask_manifests = run(tmp_path / "dask", "--scheduler", "local-dask", "--workers", 2)
    assert loop == pool == dask
    assert [m.name for m in loop_manifests] == [m.name for m in dask_manifests]


@pytest.mark.slow
def test_pool_workers_use_one_blas_thread(tmp_path):
    spec = load_sweep(write_sweep(tmp_path, SWEEP))
    tasks = tasks_for(spec, expand(spec)[:2])
    outcomes = list(LocalPool(2).run(tasks, report_blas_env))
    want = ",".join(f"{k}={v}" for k, v in BLAS_ENV.items())
    assert [o.error for o in outcomes] == [want, want]
    # the libraries themselves, whatever environment the pool's forkserver started with
    assert [o.error for o in LocalPool(2).run(tasks, report_blas_threads)] == ["1", "1"]


@pytest.mark.slow
def test_workers_take_the_environment_and_directory_of_each_pool_s_start(tmp_path, monkeypatch):
    """The workers are forked from one server per process, started with the first pool: each later pool's
    workers still see the caller's environment and working directory as they are when it starts."""
    spec = load_sweep(write_sweep(tmp_path, SWEEP))
    tasks = tasks_for(spec, expand(spec)[:2])
    seen = []
    for mark in ("first", "second"):
        folder = tmp_path / mark
        folder.mkdir()
        monkeypatch.chdir(folder)
        monkeypatch.setenv("CGDR_DES_TEST_MARK", mark)
        seen.append({o.error for o in LocalPool(2).run(tasks, report_caller)})
    assert seen == [{f"first@{tmp_path / 'first'}"}, {f"second@{tmp_path / 'second'}"}]


@pytest.mark.slow
def test_a_shared_pool_runs_two_sweeps_side_by_side_into_identical_bytes(tmp_path):
    """Two sweeps run at once from two threads on one SharedPool (as analysis/report runs its sweeps):
    each gets its own outcomes and stores the bytes the in-process loop stores."""
    from concurrent.futures import ThreadPoolExecutor

    from cgdr_des.sweep import run_sweep
    from cgdr_des.sweep.executors import InProcess

    spec = load_sweep(write_sweep(tmp_path, SWEEP))
    run_sweep(spec, tmp_path / "loop", InProcess())
    with SharedPool(2) as pool, ThreadPoolExecutor(2) as threads:
        reports = list(threads.map(lambda name: run_sweep(spec, tmp_path / name, pool), ["a", "b"]))
    assert [(r.ran, len(r.status.failed)) for r in reports] == [(16, 12), (16, 12)]
    stored = [(tmp_path / name / "summary.parquet").read_bytes() for name in ("loop", "a", "b")]
    assert stored[0] == stored[1] == stored[2]


def test_missing_dask_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # makes `import distributed` raise ImportError
    path = write_sweep(tmp_path, SWEEP)
    result = CliRunner().invoke(main, ["sweep", str(path), "--out", str(tmp_path / "o"), "--scheduler", "local-dask"])
    assert result.exit_code == 2
    assert result.stderr.strip() == ("error: --scheduler: got 'local-dask'; Dask, which is not installed: "
                                     "pip install 'cgdr-des[dask]'")


@pytest.mark.slow
def test_an_existing_cluster_by_address(tmp_path):
    """``--scheduler tcp://HOST:PORT``: a cluster cgdr-des did not start (and leaves running)."""
    distributed = pytest.importorskip("distributed")
    import logging

    small = SWEEP.replace('"kernel.policy" = ["greedy", "round_robin"]', '"kernel.policy" = ["greedy"]')
    path = write_sweep(tmp_path, small)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster:
        result = CliRunner().invoke(main, ["sweep", str(path), "--out", str(tmp_path / "tcp"),
                                           "--scheduler", cluster.scheduler_address])
        assert f"Dask cluster at {cluster.scheduler_address}" in result.output
        assert cluster.scheduler_info["workers"]  # still running after the sweep
    loop = CliRunner().invoke(main, ["sweep", str(path), "--out", str(tmp_path / "loop"), "--workers", "0"])
    assert result.exit_code == loop.exit_code == 1
    assert (tmp_path / "tcp" / "summary.parquet").read_bytes() == (tmp_path / "loop" / "summary.parquet").read_bytes()


@pytest.mark.skipif(sys.platform != "linux", reason="zombies read from /proc")
def test_a_worker_s_watchdog_sees_a_dead_parent_even_unreaped():
    """The watchdog's test of the parent (cgdr_des/pool.py): a running process is alive; one that has
    exited is not, whether its own parent has reaped it yet (a zombie) or not."""
    import os
    import time

    from cgdr_des.pool import _alive

    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        assert _alive(os.getpid())
        deadline = time.monotonic() + 5
        while _alive(pid) and time.monotonic() < deadline:  # exits at once; a zombie until reaped below
            time.sleep(0.01)
        assert not _alive(pid)
    finally:
        os.waitpid(pid, 0)
    assert not _alive(pid)
