"""The vector path of a Cube-era chunk: what runs when a §3.3 gate is false (a tail chunk shorter
than 64, a vStep below the bucket width, dk above it). docs/kernel-cube.md §3.3.

The loops are the vector-only kernel's (DotFp32 per attention element, Axpy chains), with two
differences of the Cube era: the coefficients are immediates, so no Axpy waits on a TQueSync<S,V>
of its own, and the loaders stay vectorised (LoadPaddedRows, LoadVBeta, the 2-D state DMAs). The
state update reads K by scalar from GM and computes its decays with ScalarExp, as !1108 did.
"""

from __future__ import annotations

import numpy as np

from cgdr_des.kernel.cube import blocks as bk
from cgdr_des.kernel.cube.numerics import g_prefix_scan
from cgdr_des.kernel.cube.phases import scale_k_beta_rows
from cgdr_des.kernel.cube.vtile import write_state
from cgdr_des.kernel.emit import ALU, PB_V, UB_LOAD, UB_STORE, V_S, gm_load, loop, scalar, scalar_exp_calls, vec
from cgdr_des.kernel.tiling import CHUNK_SIZE as CS
from cgdr_des.kernel.tiling import FP32_BYTES

REDUCE_WIDTH = 64


def _dot_store(core, lhs: int, rhs: int) -> list:
    """DotFp32 (Mul, WholeReduceSum of the full 64-wide repeats, V -> S, the scalar partial sums)
    and the scalar store of the element."""
    dk, dp = core.shape.dk, core.ub["dotProduct"]
    full, tail = divmod(dk, REDUCE_WIDTH)
    recs = [vec("Mul", dk, dp, lhs, rhs)]
    if full:
        recs.append(vec("WholeReduceSum", full * REDUCE_WIDTH, dp, dp))
    return recs + [*V_S, scalar("ub_load", full + tail), scalar("alu", full + tail), UB_LOAD, ALU, UB_STORE]


def attn_matrix_vector(core, ch, out: list) -> None:
    """ComputeAttnMatrix's vector branch (.h:991-1026): L(L-1)/2 DotFp32 for B and L(L+1)/2 for M,
    each ending in V -> S."""
    a_k, ub = core.tiling.align_k, core.ub
    for i in range(ch.L):
        kb = ub["kCumdecay"] + FP32_BYTES * i * a_k
        q = ub["attnOut"] + FP32_BYTES * i * a_k
        if i:
            loop(core, out, i, lambda j, kb=kb: _dot_store(core, kb, ub["chunkK"] + FP32_BYTES * j * a_k))
        loop(core, out, i + 1, lambda j, q=q: _dot_store(core, q, ub["chunkK"] + FP32_BYTES * j * a_k))


def inverse_recursion(core, ch, out: list) -> None:
    """The Axpy recursion (.h:645-662): per row i, i scalar copy pairs then i-1 Axpy of lengths
    1..i-1, each behind a PipeBarrier<V>; one V -> S at the end."""
    s0 = core.ub["scores"]
    out.extend(V_S)
    for i in range(1, ch.L):
        out += [scalar("ub_load", i), scalar("ub_store", i)]
        row = s0 + FP32_BYTES * i * CS
        loop(core, out, i - 1, lambda k, row=row: [UB_LOAD, vec("Axpy", k + 1, row,
                                                                s0 + FP32_BYTES * (k + 1) * CS), PB_V])
    out.extend(V_S)


def k_cumdecay_vector(core, ch, out: list) -> None:
    """ComputeKCumdecay's vector branch (.h:1205): K_cd rows as Axpy chains over kβ·e^G."""
    dk, a_k, ub = core.shape.dk, core.tiling.align_k, core.ub
    scale_k_beta_rows(core, ch, out)
    for i in range(ch.L):
        row = ub["chunkK"] + FP32_BYTES * i * a_k
        out += [vec("Duplicate", dk, row), PB_V]
        loop(core, out, i + 1, lambda k, row=row: [UB_LOAD, vec("Axpy", dk, row,
                                                                ub["kCumdecay"] + FP32_BYTES * k * a_k), PB_V])


def value_new_vector(core, ch, v_i: int, cv: int, out: list) -> None:
    """ComputeValueNew: U = T·vβ, T(L) Axpy rows into attnOut."""
    V, ub = core.tiling.v_step_aligned, core.ub
    out += [vec("Duplicate", ch.L * V, ub["attnOut"]), PB_V]
    for i in range(ch.L):
        row = ub["attnOut"] + FP32_BYTES * i * V
        loop(core, out, i + 1, lambda k, row=row: [UB_LOAD, vec("Axpy", V, row, ub["chunkV"] + FP32_BYTES * k * V),
                                                   PB_V])


def v_new_vector(core, ch, v_i: int, cv: int, out: list) -> None:
    """ComputeVNew: v_new = U - K_cd·S, per row dk Axpy, Muls(-1), Add."""
    V, dk, ub = core.tiling.v_step_aligned, core.shape.dk, core.ub

    def one_row(i: int) -> list:
        row = ub["chunkV"] + FP32_BYTES * i * V
        recs = [vec("Duplicate", V, row), PB_V]
        loop(core, recs, dk, lambda d: [UB_LOAD, vec("Axpy", V, row, ub["stateIn"] + FP32_BYTES * d * V), PB_V])
        return recs + [vec("Muls", V, row, row), PB_V, vec("Add", V, row, row, ub["attnOut"] + FP32_BYTES * i * V),
                       PB_V]

    loop(core, out, ch.L, one_row)


def attn_inter_vector(core, ch, v_i: int, cv: int, out: list) -> None:
    """ComputeAttnInter: O1 = (Q·scale·e^G)·S, Q reloaded by LoadPaddedRows, dk Axpy per row."""
    sh, V, ub = core.shape, core.tiling.v_step_aligned, core.ub
    bk.load_padded_rows(core, out, ch.L, core.row_addr("query", ch.t_start, ch.qk_head), sh.nk * sh.dk,
                        ub["kCumdecay"], ub["chunkK"])

    def one_row(i: int) -> list:
        row = ub["attnOut"] + FP32_BYTES * i * V
        recs = [vec("Duplicate", V, row), PB_V, UB_LOAD]
        loop(core, recs, sh.dk, lambda d: [UB_LOAD, ALU, vec("Axpy", V, row, ub["stateIn"] + FP32_BYTES * d * V), PB_V])
        return recs

    loop(core, out, ch.L, one_row)


def accum_output_vector(core, ch, v_i: int, cv: int, out: list) -> None:
    """AccumOutput: out = O1 + M·v_new, T(L) Axpy."""
    V, ub = core.tiling.v_step_aligned, core.ub
    for i in range(ch.L):
        row = ub["attnOut"] + FP32_BYTES * i * V
        loop(core, out, i + 1, lambda j, row=row: [UB_LOAD, vec("Axpy", V, row, ub["chunkV"] + FP32_BYTES * j * V),
                                                   PB_V])


def _exp_args(core, ch) -> np.ndarray:
    """G_L - G_i for the chunk's tokens, G the kernel's scan of g (zeros without g)."""
    g = core.launch.g
    if g is None:
        return np.zeros(ch.L, dtype=np.float32)
    G = g_prefix_scan(np.asarray(g[ch.t_start:ch.t_start + ch.L, ch.head], dtype=np.float32))
    return G[-1] - G


def state_update_vector(core, ch, v_i: int, cv: int, out: list) -> None:
    """The vector state update (.h:2311-2328): dk Muls, then per token a ScalarExp and dk Axpy whose
    coefficients are K read by scalar from GM."""
    sh, V, ub = core.shape, core.tiling.v_step_aligned, core.ub
    s0 = ub["stateIn"]
    out.append(UB_LOAD)
    out += [x for d in range(sh.dk) for x in (vec("Muls", V, s0 + FP32_BYTES * d * V, s0 + FP32_BYTES * d * V), PB_V)]
    exps = scalar_exp_calls(_exp_args(core, ch))

    def k_row(i: int) -> range:
        return range(core.row_addr("key", ch.t_start + i, ch.qk_head), core.row_addr("key", ch.t_start + i,
                                                                                      ch.qk_head) + 2 * sh.dk, 2)

    def one_token(i: int) -> list:
        recs = [scalar("ub_load", 2), exps[i]]
        for d, a in enumerate(k_row(i)):
            recs += [gm_load(a, 2), ALU, vec("Axpy", V, s0 + FP32_BYTES * d * V,
                                             ub["chunkV"] + FP32_BYTES * i * V), PB_V]
        return recs

    loop(core, out, ch.L, one_token, gm=lambda i: tuple((a, 2, False) for a in k_row(i)),
         exp=lambda i: ((exps[i].alu, exps[i].div),))


def update_and_write_state(core, ch, v_i: int, cv: int, out: list) -> None:
    """UpdateAndWriteState on the vector path: the update, then the state's write-out (shared with
    the Cube path)."""
    state_update_vector(core, ch, v_i, cv, out)
    write_state(core, ch, v_i, cv, out)
