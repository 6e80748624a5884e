"""The op call's numbers in a forked child beside the replay (``processes=2``, cgdr_des/forked.py)
against both in this process one after the other (``processes=1``), by launch size.

long_t2048's shape (16 heads, dk = dv = 128, the 300I Duo, phase fidelity, kernel numerics) at one
sequence of T tokens, T from 64 (16 chunk items) to 2048 (512): for each, the two settings in turns
(best of ``--repeat``), their wall-time ratio, and the CPU seconds both processes spent (the child's
counted through RUSAGE_CHILDREN, since the parent waits for it). The op's ``"auto"`` forks from
``cgdr_des.simulation.FORK_MIN_ITEMS`` chunk items on, where this reads below 1 on the 2-core machine.
Both at one BLAS thread (the simulator's default; the child inherits it), set before numpy loads so
that drawing the inputs leaves no OpenBLAS thread spinning into the CPU figures.
"""
# ruff: noqa: E402 -- the BLAS thread count must be set before numpy is imported

from __future__ import annotations

import os

os.environ.update({var: "1" for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")})

import argparse
import time

from common import cpu_seconds

import cgdr_des
from cgdr_des.simulation import FORK_MIN_ITEMS
from cgdr_des.workload.tensors import make_inputs


def best_of(repeat: int, tokens: int) -> dict[int, tuple[float, float]]:
    """processes -> (best wall, best CPU) over ``repeat`` interleaved calls."""
    x = make_inputs([tokens], 16, 16, 128, 128, seed=0)
    best = {1: (float("inf"), float("inf")), 2: (float("inf"), float("inf"))}
    for _ in range(repeat):
        for processes in (1, 2):
            c0, t0 = cpu_seconds(), time.perf_counter()
            cgdr_des.chunk_gated_delta_rule(**x.kwargs(), processes=processes)
            wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
            best[processes] = (min(best[processes][0], wall), min(best[processes][1], cpu))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="interleaved calls of each setting; the best is kept")
    repeat = ap.parse_args().repeat
    print(f"{'tokens':>6s} {'items':>5s} {'1 process':>10s} {'2 processes':>11s} {'ratio':>5s}   "
          f"{'CPU 1':>6s} {'CPU 2':>6s}  (auto forks from {FORK_MIN_ITEMS} items)")
    for tokens in (64, 128, 256, 512, 1024, 2048):
        best = best_of(repeat, tokens)
        (w1, c1), (w2, c2) = best[1], best[2]
        items = -(-tokens // 64) * 16
        print(f"{tokens:6d} {items:5d} {w1 * 1e3:8.1f} ms {w2 * 1e3:8.1f} ms {w2 / w1:5.2f}   "
              f"{c1:6.3f} {c2:6.3f}")


if __name__ == "__main__":
    main()
