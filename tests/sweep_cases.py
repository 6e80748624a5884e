"""Tiny sweeps shared by the sweep tests, over conftest's TINY scenario (seconds each)."""

from __future__ import annotations

from pathlib import Path

from conftest import TINY

# 2 policies x dv {16, 24 (raises in WriteAttnTileToGm when run), 32} x nv {2, 3 (not a multiple of
# nk = 2: fails validation)} x 2 replications = 24 points, 8 of them good
GRID = """
name = "tiny_grid"
base = "tiny.toml"
replications = 2
seed = 5
[set]
"shape.nk" = 2
[grid]
"kernel.policy" = ["greedy", "round_robin"]
"shape.dv" = [16, 24, 32]
"shape.nv" = [2, 3]
"""

# 8 good points, each long enough that a sweep of them takes a few seconds
SLOW = """
name = "tiny_slow"
base = "tiny.toml"
replications = 2
[set]
"workload.lengths" = [192, 160]
[grid]
"kernel.policy" = ["greedy", "round_robin"]
"kernel.buffer_num" = [1, 2]
"""


def write_sweep(folder: Path, text: str, name: str = "sweep.toml") -> Path:
    """Write the tiny base scenario and the sweep file ``text`` into ``folder``; returns the sweep path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tiny.toml").write_text(TINY, encoding="utf-8")
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def report_blas_env(task):
    """A point function for pool workers: reports the worker's BLAS thread variables as its 'error'."""
    import os

    from cgdr_des.sweep.work import Outcome

    names = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    return Outcome(task.point, error=",".join(f"{n}={os.environ.get(n)}" for n in names))


def report_blas_threads(task):
    """A point function for pool workers: the thread counts of the BLAS libraries numpy loaded, as read
    from the libraries themselves (threadpoolctl), as its 'error'."""
    from threadpoolctl import threadpool_info

    from cgdr_des.sweep.work import Outcome

    return Outcome(task.point, error=",".join(sorted({str(lib["num_threads"]) for lib in threadpool_info()
                                                      if lib["user_api"] == "blas"})))


def report_caller(task):
    """A point function for pool workers: the worker's CGDR_DES_TEST_MARK and working directory."""
    import os

    from cgdr_des.sweep.work import Outcome

    return Outcome(task.point, error=f"{os.environ.get('CGDR_DES_TEST_MARK')}@{os.getcwd()}")
