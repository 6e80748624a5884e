"""Phase fidelity with kernel numerics on long_t2048 vs a vectorised numpy float64 chunked reference,
at the environment's default BLAS threads and at one BLAS thread, in one run of this script.

``--threads both`` (the default) runs this script twice in child processes, because the thread count
of OpenBLAS is set when numpy loads it: ``--threads default`` leaves the environment as it is (what a
user gets: the reference at OpenBLAS's default thread count, the simulator at its own default of one
BLAS thread, cgdr_des/blas.py), ``--threads 1`` sets ``OPENBLAS_NUM_THREADS=1`` (and the OpenMP and
MKL equivalents) before numpy loads, so both sides run BLAS at one thread. Other OPENBLAS_* variables
(OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE) pass through untouched.

The simulator is timed through the op API, as the reference is handed its tensors, at its defaults:
on this 2-core Linux machine that computes the head-batched numbers in a forked child while the
calling process replays the timing (``processes="auto"``, cgdr_des/forked.py), each process at one
BLAS thread. So that the figure is read for what it is, each child also times the op with
``processes=1`` (both parts in this process, one after the other) and prints both ratios, and the
CPU seconds of each side (the forked child's included, RUSAGE_CHILDREN): the reference at the
default threads keeps both cores busy through OpenBLAS, the simulator through its second process;
at one BLAS thread the reference has one core and the simulator still two processes. Each child
prints the wall times measured side by side on the same drawn inputs (best of ``--repeat``,
interleaved) and the ratio simulate / reference (goal <= 1.5 in both). The ``default`` child also
times the op once in one process with ``blas_threads=0`` (the environment's threads inside the
simulator too): what the one-thread limit saves.

The reference is the WY/UT chunked algorithm of docs/math.md §2, batched over heads (one einsum per
step for all 16 heads), float64, with no timing model: the floor a simulator that also computes the
outputs is measured against.
"""
# ruff: noqa: E402 -- the BLAS thread count must be set before numpy is imported

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _options() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    ap.add_argument("--threads", choices=("both", "default", "1"), default="both",
                    help="BLAS threads of both sides: the environment's default, one, or both in turn (default)")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved runs of each side; the best is kept")
    return ap.parse_args()


def run_both(repeat: int) -> None:
    """Each setting in its own child process (the thread count is fixed when numpy loads BLAS)."""
    ratios = {}
    for threads in ("default", "1"):
        out = subprocess.run([sys.executable, __file__, "--threads", threads, "--repeat", str(repeat)],
                             check=True, capture_output=True, text=True).stdout
        print(f"--- --threads {threads}")
        print(out, end="")
        ratios[threads] = re.search(r"ratio simulate / reference: ([\d.]+)", out).group(1)
    print(f"side by side: simulate / numpy = {ratios['default']} at the default BLAS threads, "
          f"{ratios['1']} at one thread (goal <= 1.5 in both)")


if __name__ == "__main__":
    OPTIONS = _options()
    if OPTIONS.threads == "both":
        run_both(OPTIONS.repeat)
        sys.exit(0)
    if OPTIONS.threads == "1":  # before numpy loads BLAS
        os.environ.update({var: "1" for var in THREAD_VARS})

import numpy as np
from common import cpu_seconds, shipped, timed
from threadpoolctl import threadpool_info

import cgdr_des
from cgdr_des.blas import blas_limit, resolve_threads
from cgdr_des.kernel.batched import compute_numbers
from cgdr_des.kernel.functional import build_launch
from cgdr_des.simulation import fork_pays
from cgdr_des.workload.tensors import make_inputs


def chunked_reference(q, k, v, beta, g, s0, scale, chunk=64):
    """One sequence, all heads at once: q,k [T,H,K], v [T,H,V], beta,g [T,H], s0 [H,V,K] -> out, S."""
    q, k, v = (np.moveaxis(x.astype(np.float64), 1, 0) for x in (q, k, v))  # [H,T,D]
    beta, g = beta.astype(np.float64).T, g.astype(np.float64).T  # [H,T]
    state = np.swapaxes(s0.astype(np.float64), 1, 2)  # [H,K,V]
    out = np.empty_like(v)
    for c0 in range(0, q.shape[1], chunk):
        sl = slice(c0, c0 + chunk)
        qc, kc, vc, bc = q[:, sl], k[:, sl], v[:, sl], beta[:, sl]
        gc = np.cumsum(g[:, sl], axis=1)
        n = gc.shape[1]
        decay = np.exp(np.tril(gc[:, :, None] - gc[:, None, :]))
        decay = np.tril(decay)
        a_kk = np.tril(bc[:, :, None] * (kc @ np.swapaxes(kc, 1, 2)) * decay, -1)
        a = np.linalg.inv(np.eye(n) + a_kk)
        w = a @ (kc * (bc * np.exp(gc))[:, :, None])
        u = a @ (vc * bc[:, :, None])
        v_new = u - w @ state
        attn = np.tril(qc @ np.swapaxes(kc, 1, 2) * decay)
        out[:, sl] = scale * ((qc * np.exp(gc)[:, :, None]) @ state + attn @ v_new)
        last = gc[:, -1]
        state = (state * np.exp(last)[:, None, None]
                 + np.swapaxes(kc * np.exp(last[:, None] - gc)[:, :, None], 1, 2) @ v_new)
    return np.moveaxis(out, 0, 1), np.swapaxes(state, 1, 2)


def blas_threads() -> str:
    """``openblas: 2`` for each BLAS library numpy loaded, as threadpoolctl sees it now."""
    return ", ".join(f"{lib['internal_api']}: {lib['num_threads']}" for lib in threadpool_info()
                     if lib["user_api"] == "blas") or "none found"


def best_of(repeat: int, calls: dict) -> dict:
    """name -> (best wall, best CPU, last result) of each zero-argument call, the calls interleaved
    (the machine is shared and noisy)."""
    best = {name: (float("inf"), float("inf"), None) for name in calls}
    for _ in range(repeat):
        for name, call in calls.items():
            c0 = cpu_seconds()
            t, out = timed(call)
            wall, cpu, _ = best[name]
            best[name] = (min(wall, t), min(cpu, cpu_seconds() - c0), out)
    return best


def main(threads: str, repeat: int = 5) -> None:
    sc = shipped("long_t2048")
    s = sc.shape
    x = make_inputs(sc.lengths(), s.nk, s.nv, s.dk, s.dv, seed=sc.workload.seed)
    ref_args = (x.query, x.key, x.value, x.beta, x.g, x.initial_state[0], x.scale_value)
    op_kw = dict(hardware=sc.hardware.profile, fidelity="phase", policy=sc.kernel.policy,
                 buffer_num=sc.kernel.buffer_num)
    best = best_of(repeat, {
        "reference": lambda: chunked_reference(*ref_args),
        "simulate": lambda: cgdr_des.chunk_gated_delta_rule(**x.kwargs(), **op_kw),
        "one process": lambda: cgdr_des.chunk_gated_delta_rule(**x.kwargs(), **op_kw, processes=1)})
    (t_ref, c_ref, (ref_out, _)), (t_sim, c_sim, res), (t_one, c_one, _) = best.values()
    t_scen, _ = timed(cgdr_des.simulate, sc)
    with blas_limit():  # the head-batched numbers at the simulator's thread count, as inside the op
        t_num = min(timed(compute_numbers, build_launch(**x.kwargs()))[0] for _ in range(repeat))
    err = np.sqrt(np.mean((res.out.astype(np.float64) - ref_out) ** 2) / np.mean(ref_out ** 2))
    set_by = ", ".join(f"{v}={os.environ[v]}" for v in THREAD_VARS if v in os.environ) or "none set"
    launch = build_launch(**x.kwargs())
    forks = "2 processes (its numbers in a forked child beside the replay" if fork_pays(launch) else "1 process ("
    print(f"BLAS threads: the reference at {blas_threads()} ({set_by}); the simulator at its default "
          f"(cgdr_des/blas.py: {resolve_threads()}), in {forks}, cgdr_des/forked.py)")
    print(f"numpy float64 chunked reference (16 heads batched):  {t_ref:8.3f} s")
    print(f"cgdr-des phase fidelity, kernel numerics, same input: {t_sim:8.3f} s "
          f"(makespan {int(res.result.summary.makespan_cycles[0]):,} cycles; out nrmse vs reference {err:.1e})")
    print(f"  in one process (processes=1), one after the other: {t_one:8.3f} s, ratio {t_one / t_ref:.2f}: "
          f"the head-batched numbers (kernel/batched.py) {t_num:.3f} s, the timing (phase compile, replay, "
          f"frames) {t_one - t_num:.3f} s")
    print(f"  (the scenario end to end, drawing its inputs too, one process: {t_scen:8.3f} s)")
    if threads == "default":
        t_env, _ = timed(cgdr_des.chunk_gated_delta_rule, **x.kwargs(), **op_kw, blas_threads=0, processes=1)
        print(f"  (one process with blas_threads=0, the environment's threads inside it too: {t_env:8.3f} s, once)")
    # CPU time counts every thread's and the waited-for child's: what the work costs, whatever its wall time
    print(f"  (CPU seconds, best of {repeat}: reference {c_ref:.3f} s, simulate {c_sim:.3f} s (ratio "
          f"{c_sim / c_ref:.2f}), one process {c_one:.3f} s; the reference kept {c_ref / t_ref:.2f} cores "
          f"busy, the simulator {c_sim / t_sim:.2f}, CPU / wall)")
    print(f"ratio simulate / reference: {t_sim / t_ref:.2f}  (goal <= 1.5)")

if __name__ == "__main__":
    main(OPTIONS.threads, OPTIONS.repeat)
