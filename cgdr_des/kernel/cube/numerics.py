"""The Cube-era kernel's numbers, chunk by chunk, with its precision design (docs/kernel-cube.md §6).

The 310P Cube multiplies fp16 operands into fp32 L0C. Every fp32 A operand is split on V into
``hi = fp16(x)`` and ``lo = fp16(x - hi)``; a product is ``hi·B + lo·B`` accumulated in fp32 (two
Mmads), and the inverse's off-diagonal blocks use all four terms ``hi·hi + lo·hi + hi·lo + lo·lo``.
B operands other than Kᵀ (exact: K is an fp16 input) are rounded to fp16, the carried state included.
The vector fallback (tail chunks, vStep < D, dk > D) computes the same algebra in fp32 on V, as the
vector-only kernel does. ``exact`` numerics run both in float64 without any fp16 rounding.

Each function takes one (head, V-tile) of one chunk as 2-D arrays in the working dtype: K and Q
``[L, dk]``, V ``[L, cv]``, β and g ``[L]``, the state ``[dk, cv]`` (key dim first, as stateIn holds it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cgdr_des.blas import numeric_work
from cgdr_des.errors import KernelDiagnostic
from cgdr_des.kernel.cube import tiling as ct
from cgdr_des.kernel.tiling import CHUNK_SIZE
from cgdr_des.numerics.finite import first_nonfinite
from cgdr_des.numerics.scalar_exp import scalar_exp_array

DIAG_BLOCK = 16  # DiagonalBlock's size (.h:531-567)


@dataclass(frozen=True)
class Precision:
    """The working dtype and whether fp16 rounding applies (``kernel``) or not (``exact``)."""

    ft: type

    @property
    def exact(self) -> bool:
        return self.ft is np.float64

    def h16(self, x: np.ndarray) -> np.ndarray:
        """An fp16 operand as the Cube reads it (identity in exact numerics)."""
        return x if self.exact else x.astype(np.float16).astype(self.ft)

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``StageHalfWithResidual``: hi = fp16(x), lo = fp16(x - hi)."""
        if self.exact:
            return x, np.zeros_like(x)
        hi = self.h16(x)
        return hi, self.h16(x - hi)

    def pair(self, a: np.ndarray, b16: np.ndarray, acc: np.ndarray | None = None) -> np.ndarray:
        """Two Mmads into one L0C: ``acc + a_hi·b + a_lo·b`` (``b`` already an fp16 operand)."""
        hi, lo = self.split(a)
        c = hi @ b16 if acc is None else acc + hi @ b16
        return c + lo @ b16

    def compensated(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``MatmulBlockFp32Compensated``: hi·hi + lo·hi + hi·lo + lo·lo, in that order."""
        ah, al = self.split(a)
        bh, bl = self.split(b)
        return ((ah @ bh + al @ bh) + ah @ bl) + al @ bl


def g_prefix_scan(g: np.ndarray) -> np.ndarray:
    """The g cumsum as the kernel computes it: a Hillis-Steele scan, 6 steps for 64 tokens."""
    x = g.copy()
    step = 1
    while step < CHUNK_SIZE:
        x[step:] = x[step:] + x[:-step].copy()
        step *= 2
    return x


def diagonal_block(b: np.ndarray) -> np.ndarray:
    """``DiagonalBlock``: (I - B)^-1 of a strictly lower 16x16 block by forward elimination on V:
    starting from I, rows k+1.. += B[k+1.., k] ⊗ row k (Gather, Brcb, MulAddDst), in fp32."""
    n = b.shape[0]
    x = np.eye(n, dtype=b.dtype)
    for k in range(n - 1):
        x[k + 1:] += b[k + 1:, k:k + 1] * x[k]
    return x


def blocked_inverse(p: Precision, b: np.ndarray, size: int) -> np.ndarray:
    """``ComputeRecursiveAttnBlocked64/32``: U = (I - B)^-1 by 2x2 blocks, U10 = U11·B10·U00 with both
    products compensated (4 Mmads each), down to 16x16 diagonal blocks solved on V."""
    if size == DIAG_BLOCK:
        return diagonal_block(b)
    h = size // 2
    u = np.zeros_like(b)
    u[:h, :h] = blocked_inverse(p, b[:h, :h], h)
    u[h:, h:] = blocked_inverse(p, b[h:, h:], h)
    prod = p.compensated(b[h:, :h], u[:h, :h])
    u[h:, :h] = p.compensated(u[h:, h:], prod)
    return u


def forward_inverse(b: np.ndarray) -> np.ndarray:
    """The vector fallback's recursion (.h:645-662): (I - B)^-1 by Axpy rows, in the working dtype."""
    L = b.shape[0]
    x = np.eye(L, dtype=b.dtype)
    for i in range(1, L):
        x[i, :i] += b[i, :i] @ x[:i, :i]
    return x


@dataclass(frozen=True)
class Gates:
    """Which parts of one chunk run on the Cube (docs/kernel-cube.md §3.3)."""

    attn: bool
    inverse: bool
    k_cumdecay: bool
    fast: bool


@dataclass
class ChunkIn:
    """One (head, V-tile) of one chunk: the inputs widened to the working dtype."""

    k: np.ndarray
    q: np.ndarray
    v: np.ndarray
    beta: np.ndarray
    g: np.ndarray | None
    scale: float


def chunk_prologue(p: Precision, x: ChunkIn, gates: Gates) -> dict:
    """Phases 1-7: G, the decay mask, k_beta, the attention matrices, T = (I - B)^-1 and K_cd."""
    ft, L = p.ft, x.k.shape[0]
    gg = np.zeros(L, dtype=ft) if x.g is None else x.g
    G = g_prefix_scan(gg)
    exp_g = np.exp(G)
    low = np.tri(L, L, 0, dtype=bool)
    with np.errstate(over="ignore"):
        decay = np.where(low, np.exp(G[:, None] - G[None, :]), ft(1))
    kb = x.k * x.beta[:, None]
    qs = x.q * ft(x.scale)
    kt = x.k.T  # fp16 input: exact as a Cube operand
    if gates.attn:
        a, qk = p.pair(kb, kt), p.pair(qs, kt)
    else:
        a, qk = kb @ kt, qs @ kt
    b = np.where(np.tri(L, L, -1, dtype=bool), -(a * decay), ft(0))
    m = np.where(low, qk * decay, ft(0))
    t = blocked_inverse(p, b, L) if gates.inverse else forward_inverse(b)
    kbe = kb * exp_g[:, None]
    k_cd = p.pair(t, p.h16(kbe)) if gates.k_cumdecay else t @ kbe
    return {"G": G, "exp_g": exp_g, "t": t, "m": m, "k_cd": k_cd, "qs": qs}


def chunk_epilogue(p: Precision, x: ChunkIn, pro: dict, s_prev: np.ndarray, fast: bool):
    """Steps 8a-8e: v_new, the output tile and the new state. Returns ``(out [L, cv], S [dk, cv])``."""
    ft = p.ft
    G, t, m, k_cd = pro["G"], pro["t"], pro["m"], pro["k_cd"]
    vb = x.v * x.beta[:, None]
    q_dec = pro["qs"] * pro["exp_g"][:, None]
    g_last = G[-1]
    if fast:
        s16 = p.h16(s_prev)
        v_new = p.pair(-k_cd, s16, acc=p.pair(t, p.h16(vb)))
        v16 = p.h16(v_new)
        out = p.pair(m, v16, acc=p.pair(q_dec, s16))
        delta = np.exp(g_last - G)
        s_new = s_prev * np.exp(g_last) + p.pair((x.k * delta[:, None]).T, v16)
        return out, s_new
    v_new = t @ vb - k_cd @ s_prev
    out = q_dec @ s_prev + m @ v_new
    if p.exact:
        delta, e_last = np.exp(g_last - G), np.exp(g_last)
    else:
        delta, e_last = scalar_exp_array(g_last - G), scalar_exp_array(np.array([g_last]))[0]
    s_new = s_prev * ft(e_last) + (x.k * delta[:, None].astype(ft)).T @ v_new
    return out, s_new


def gates_for(tiling, L: int) -> Gates:
    """The four §3.3 gates of a chunk of ``L`` tokens under ``tiling``."""
    return Gates(ct.attn_matrix_cube(tiling, L), ct.blocked_inverse_cube(tiling, L),
                 ct.k_cumdecay_cube(tiling, L), ct.is_cube_fast_path(tiling, L))


@numeric_work
def compute_outputs(launch) -> None:
    """Every (batch, head, V-tile) of the launch, chunk after chunk: fills ``launch.out``,
    ``launch.final_state`` and the fp32 workspace state, as the Cube-era kernel computes them."""
    if launch.numerics == "off":
        return
    sh, t = launch.shape, launch.tiling
    p = Precision(launch.ft)
    starts = np.cumsum(launch.lengths) - launch.lengths
    for b, (seq0, n) in enumerate(zip(starts.tolist(), launch.lengths.tolist(), strict=True)):
        if n <= 0:
            continue
        for h in range(sh.nv):
            for tile in range(t.v_tile_count):
                v_i = tile * t.v_step
                cv = min(t.v_step, sh.dv - v_i)
                _run_item(launch, p, b, h, seq0, n, v_i, cv)


def _run_item(launch, p: Precision, b: int, h: int, seq0: int, n: int, v_i: int, cv: int) -> None:
    """One work item: its chunks in order, the state carried in the workspace between them."""
    sh, w = launch.shape, launch.wide
    qk = h // sh.nv_per_nk
    s = w["initial_state"][b, h, v_i:v_i + cv, :].T.copy()
    for c0 in range(seq0, seq0 + n, CHUNK_SIZE):
        c1 = min(c0 + CHUNK_SIZE, seq0 + n)
        g = None if w["g"] is None else w["g"][c0:c1, h]
        x = ChunkIn(w["key"][c0:c1, qk], w["query"][c0:c1, qk], w["value"][c0:c1, h, v_i:v_i + cv],
                    w["beta"][c0:c1, h], g, sh.scale)
        gates = gates_for(launch.tiling, c1 - c0)
        pro = chunk_prologue(p, x, gates)
        out, s = chunk_epilogue(p, x, pro, s, gates.fast)
        launch.out[c0:c1, h, v_i:v_i + cv] = out
        if c1 < seq0 + n:
            launch.workspace[b, h, :, v_i:v_i + cv] = s
    launch.final_state[b, h, v_i:v_i + cv, :] = s.T


def check_finite(launch, scenario=None) -> dict[str, str]:
    """A KernelDiagnostic naming the first inf/NaN of out or final_state (``{"nonfinite": ...}`` for
    the run's meta when the scenario keeps going); ``{}`` when every output is finite."""
    for name in ("out", "final_state"):
        where = first_nonfinite(getattr(launch, name))
        if where is not None:
            text = f"non-finite output: first at {name}{list(where)} (Cube-era kernel)"
            if getattr(getattr(scenario, "sim", None), "nonfinite", "error") == "keep":
                return {"nonfinite": text}
            raise KernelDiagnostic(f"{text}; check scale_value, beta and the inputs' range")
    return {}
