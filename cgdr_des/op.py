"""``cgdr_des.chunk_gated_delta_rule``: the op's interface exactly as the kernel has it.

Inputs (docs/kernel.md §2): query/key ``[T, Nk, Dk]`` fp16, value ``[T, Nv, Dv]`` fp16, beta
``[T, Nv]`` fp16, initial_state ``[B, Nv, Dv, Dk]`` fp16 (value dimension first),
actual_seq_lengths ``[B]`` (any integers that fit int32: a list, int64 ``np.array([T])``; the kernel
reads int32, so they are converted), optional g ``[T, Nv]`` fp32 (absent: no decay), scale_value.
Outputs: out ``[T, Nv, Dv]`` and final_state ``[B, Nv, Dv, Dk]``, fp16 in ``kernel`` numerics,
float64 in ``exact``, None in ``off``.

Unlike the kernel (which checks neither), Nv must be a multiple of Nk and T the sum of the lengths:
a violation is an InputError, never a silently wrong result.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from cgdr_des.blas import limits_blas
from cgdr_des.errors import InputError
from cgdr_des.kernel.functional import build_launch, run_functional
from cgdr_des.kernel.output_check import check_outputs
from cgdr_des.numerics.finite import nonfinite
from cgdr_des.simulation import simulate_launch


@dataclass
class OpResult:
    """``.out`` and ``.final_state``; ``.counts`` per (phase, record kind); ``.result`` the timed
    Result (frames) when a machine fidelity ran, else None."""

    out: np.ndarray | None
    final_state: np.ndarray | None
    counts: object = None
    result: object = None
    tiling: object = None


def _check_array(name: str, arr, ndim: int, dtype) -> np.ndarray:
    if not isinstance(arr, np.ndarray):
        raise InputError(name, type(arr).__name__, "must be a numpy array")
    if arr.ndim != ndim:
        raise InputError(f"{name}.shape", arr.shape, f"must have {ndim} dimensions")
    if arr.dtype != dtype:
        raise InputError(f"{name}.dtype", str(arr.dtype), f"must be {np.dtype(dtype).name}")
    if arr.dtype.kind == "f" and not _all_finite(arr):
        raise InputError(name, "non-finite values", "NaN and inf are not allowed")
    return arr


#: the kernel reads actual_seq_lengths as int32
INT32_MAX = int(np.iinfo(np.int32).max)


def as_lengths(actual_seq_lengths) -> np.ndarray:
    """``actual_seq_lengths`` as the kernel's int32 ``[B]``: any 1-D integer array or list whose values
    fit int32 (0 .. 2^31-1); a float, bool or out-of-range value is an InputError naming the field."""
    if isinstance(actual_seq_lengths, list | tuple):
        arr = np.asarray(actual_seq_lengths) if len(actual_seq_lengths) else np.zeros(0, np.int32)
    elif isinstance(actual_seq_lengths, np.ndarray):
        arr = actual_seq_lengths
    else:
        raise InputError("actual_seq_lengths", type(actual_seq_lengths).__name__,
                         "must be a numpy array or a list of integers")
    if arr.dtype.kind not in "iu":  # bool is kind "b", floats "f", ints past int64 make "O"
        raise InputError("actual_seq_lengths.dtype", str(arr.dtype), "must be integers (any integer dtype)")
    if arr.ndim != 1:
        raise InputError("actual_seq_lengths.shape", arr.shape, "must have 1 dimensions")
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) > INT32_MAX):
        bad = int(arr.min()) if int(arr.min()) < 0 else int(arr.max())
        raise InputError("actual_seq_lengths", bad, f"lengths must be >= 0 and fit int32 (<= {INT32_MAX})")
    return arr if arr.dtype == np.int32 else arr.astype(np.int32)


def _all_finite(arr: np.ndarray) -> bool:
    """np.isfinite(arr).all(), fp16 read from its bits (:func:`~cgdr_des.numerics.finite.nonfinite`)."""
    return not nonfinite(arr).any()


def validate_inputs(query, key, value, beta, initial_state, actual_seq_lengths, g, scale_value) -> None:
    """Shapes, dtypes, GQA, lengths and finiteness, each failure naming the field."""
    q = _check_array("query", query, 3, np.float16)
    k = _check_array("key", key, 3, np.float16)
    v = _check_array("value", value, 3, np.float16)
    b = _check_array("beta", beta, 2, np.float16)
    s = _check_array("initial_state", initial_state, 4, np.float16)
    lens = as_lengths(actual_seq_lengths)
    t, nk, dk = q.shape
    _, nv, dv = v.shape
    if min(q.shape + v.shape[1:]) <= 0:
        raise InputError("query/value shape", (q.shape, v.shape), "every dimension must be positive")
    if k.shape != q.shape:
        raise InputError("key.shape", k.shape, f"must equal query.shape {q.shape}")
    if v.shape[0] != t:
        raise InputError("value.shape[0]", v.shape[0], f"must equal T = {t}")
    if nv % nk:
        raise InputError("value.shape[1] (Nv)", nv, f"must be a multiple of Nk = {nk}")
    if b.shape != (t, nv):
        raise InputError("beta.shape", b.shape, f"must be {(t, nv)}")
    if s.shape[1:] != (nv, dv, dk):
        raise InputError("initial_state.shape", s.shape, f"must be (B, {nv}, {dv}, {dk}) (value dim first)")
    if lens.shape != (s.shape[0],):
        raise InputError("actual_seq_lengths.shape", lens.shape, f"must be ({s.shape[0]},), one per batch")
    if int(lens.sum()) != t:
        raise InputError("actual_seq_lengths", int(lens.sum()), f"must sum to T = {t}")
    if g is not None:
        gg = _check_array("g", g, 2, np.float32)
        if gg.shape != (t, nv):
            raise InputError("g.shape", gg.shape, f"must be {(t, nv)}")
        if gg.size and float(gg.max()) > 0:
            raise InputError("g", float(gg.max()), "the log-decay must be <= 0 (exp(g) is a decay in (0, 1])")
    _check_scale(scale_value)


def _check_scale(scale_value) -> None:
    """A real number of magnitude <= fp16's max: past it q.k * scale overflows the fp16 outputs."""
    from cgdr_des.scenario import MAX_SCALE

    if isinstance(scale_value, bool) or not isinstance(scale_value, int | float | np.floating | np.integer):
        raise InputError("scale_value", type(scale_value).__name__, "must be a real number")
    try:  # float() first: np.isfinite refuses a Python int past int64 (2**70) with a TypeError
        magnitude = abs(float(scale_value))
    except OverflowError:  # a Python int past float's range (10**400)
        magnitude = float("inf")
    if not np.isfinite(magnitude) or magnitude > MAX_SCALE:
        raise InputError("scale_value", scale_value, f"must be finite with |scale_value| <= {MAX_SCALE:g}")


KERNEL_VERSIONS = ("vector", "cube", "cube-pre1174")


@limits_blas
def chunk_gated_delta_rule(query, key, value, beta, initial_state, actual_seq_lengths, g=None,
                           scale_value=1.0, *, numerics="kernel", hardware="atlas-300i-duo",
                           buffer_num=1, policy="greedy", fidelity="phase",
                           kernel_version="vector", blas_threads=None, processes=None) -> OpResult:
    """Run the op on ``hardware``: ``"phase"`` (default) or ``"instr"`` fidelity time the kernel
    programs and attach the frames as ``.result``; ``"functional"`` runs the same programs with no
    machine (outputs and per-phase instruction counts in ``.counts``, no timing).
    ``kernel_version``: ``"vector"`` (the vector-only kernel), ``"cube"`` (the Cube-era kernel,
    docs/kernel-cube.md) or ``"cube-pre1174"`` (the same before its L0C events were added).
    ``blas_threads``: BLAS threads during the call (None: ``CGDR_DES_BLAS_THREADS`` or 1; 0 or
    ``"default"``: the caller's), the caller's setting restored afterwards (cgdr_des/blas.py).
    ``processes``: ``2`` computes the numbers of a ``phase`` call in a forked child while this process
    times the kernel (wherever ``os.fork`` exists and the BLAS survives a fork), ``1`` does both here,
    one after the other; None: ``CGDR_DES_OP_PROCESSES`` or ``"auto"``, which is 2 where
    :func:`cgdr_des.forked.can_fork` (Linux, two CPUs, not in a pool worker, no other thread, a
    fork-safe BLAS) and the launch has ``cgdr_des.simulation.FORK_MIN_ITEMS`` chunk items or more.
    The results are the same bits either way."""
    actual_seq_lengths = as_lengths(actual_seq_lengths)  # a list or int64 array: the kernel's int32 from here
    processes = resolve_processes(processes)
    validate_inputs(query, key, value, beta, initial_state, actual_seq_lengths, g, scale_value)
    if fidelity not in ("functional", "phase", "instr"):
        raise InputError("fidelity", fidelity, "one of functional, phase, instr")
    if kernel_version not in KERNEL_VERSIONS:
        raise InputError("kernel_version", kernel_version, f"one of {', '.join(KERNEL_VERSIONS)}")
    if kernel_version != "vector":
        if buffer_num != 1:
            raise InputError("buffer_num", buffer_num, "1 with a Cube-era kernel (BUFFER_NUM = 1)")
        args = (query, key, value, beta, initial_state, actual_seq_lengths, g, scale_value)
        return _cube_op(args, numerics=numerics, hardware=hardware, policy=policy, fidelity=fidelity,
                        kernel_version=kernel_version)
    if fidelity == "functional":
        from cgdr_des.hw.profile import load_profile

        prof = load_profile(hardware)
        launch = build_launch(query, key, value, beta, initial_state, actual_seq_lengths, g, scale_value,
                              numerics=numerics, ub_size=prof.ub_usable_bytes, aiv_num=prof.aiv_num,
                              buffer_num=buffer_num)
        fr = run_functional(launch, policy)
        check_outputs(launch)  # an inf/NaN output is a KernelDiagnostic naming where it started
        return OpResult(fr.out, fr.final_state, fr.counts, None, launch.tiling)
    launch, result = simulate_launch(query, key, value, beta, initial_state, actual_seq_lengths, g, scale_value,
                                     numerics=numerics, hardware=hardware, buffer_num=buffer_num,
                                     policy=policy, fidelity=fidelity, processes=processes)
    return OpResult(launch.out, launch.final_state, None, result, launch.tiling)


PROCESSES_VAR = "CGDR_DES_OP_PROCESSES"
_PROCESSES_ALLOWED = "1, 2 or 'auto'"


def resolve_processes(processes=None) -> int | str:
    """``processes`` (else the environment variable, else ``"auto"``) as 1, 2 or ``"auto"``."""
    field = "processes"
    if processes is None:
        processes, field = os.environ.get(PROCESSES_VAR, "").strip() or "auto", PROCESSES_VAR
    if isinstance(processes, str) and processes.strip().lower() in ("auto", "1", "2"):
        text = processes.strip().lower()
        return text if text == "auto" else int(text)
    if processes in (1, 2) and not isinstance(processes, bool):
        return int(processes)
    raise InputError(field, processes, _PROCESSES_ALLOWED)


def _cube_op(args, *, numerics, hardware, policy, fidelity, kernel_version) -> OpResult:
    """The Cube-era kernel through the op API: functional (outputs and record counts) or timed."""
    from collections import Counter

    from cgdr_des.hw.profile import load_profile
    from cgdr_des.kernel.cube import numerics as cube_numerics
    from cgdr_des.kernel.cube import program as cube_program
    from cgdr_des.kernel.cube.launch import build_cube_launch
    from cgdr_des.kernel.functional import count_records
    from cgdr_des.kernel.program import ReuseStage

    prof = load_profile(hardware)
    launch = build_cube_launch(*args, numerics=numerics, ub_size=prof.ub_usable_bytes, aiv_num=prof.aiv_num,
                               kernel_version=kernel_version)
    if fidelity != "functional":
        from cgdr_des.simulation import run_cube_launch

        result = run_cube_launch(launch, prof, policy=policy, fidelity=fidelity,
                                 meta={"scenario_name": "api", "scenario_hash": "", "hardware": prof.name})
        return OpResult(launch.out, launch.final_state, None, result, launch.tiling)
    cube_numerics.compute_outputs(launch)
    cube_numerics.check_finite(launch)
    counts: Counter = Counter()
    stage = ReuseStage()
    for core, assigned in enumerate(cube_program.core_assignments(launch, policy)):
        count_records(cube_program.core_program(launch, core, assigned=assigned, stage=stage), counts)
    return OpResult(launch.out, launch.final_state, counts, None, launch.tiling)
