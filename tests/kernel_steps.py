"""Helpers for the per-function kernel tests: one chunk of one head on core 0, run phase by phase,
and the float64 chunked form (docs/math.md §2) it is checked against."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from kernel_cases import AIV_310P, UB_310P, args, inputs

from cgdr_des.kernel.functional import build_launch
from cgdr_des.kernel.launch import CHUNK_SIZE, CoreState
from cgdr_des.kernel.program import ChunkInfo


@dataclass
class Chunk:
    x: object  # KernelInputs
    launch: object
    core: CoreState
    ch: ChunkInfo


def one_chunk(lengths, nk, nv, dk, dv, *, numerics="exact", b=0, head=0, chunk=0, seed=0,
              ub_size=UB_310P, **kw) -> Chunk:
    """Chunk ``chunk`` of sequence ``b``, value head ``head``, on a fresh core 0 (one lane)."""
    x = inputs(lengths, nk, nv, dk, dv, seed=seed, **kw)
    launch = build_launch(*args(x), numerics=numerics, ub_size=ub_size, aiv_num=AIV_310P)
    core = CoreState(launch, 0)
    seq0, n = int(sum(lengths[:b])), int(lengths[b])
    num_c = -(-n // CHUNK_SIZE)
    t_start = seq0 + chunk * CHUNK_SIZE
    L = min(CHUNK_SIZE, seq0 + n - t_start)
    ch = ChunkInfo(b, head, head // launch.shape.nv_per_nk, t_start, L, chunk, chunk + 1 == num_c, -1)
    return Chunk(x, launch, core, ch)


def buf(core: CoreState, name: str, cols: int, rows: int) -> np.ndarray:
    """``[rows, cols]`` copy of UB buffer ``name`` (lane 0) with row stride ``cols``."""
    return core.views[name][0, :rows * cols].reshape(rows, cols).copy()


@dataclass
class Reference:
    """The chunked form in float64 for one chunk, from the fp16 inputs."""

    q: np.ndarray  # [L, dk], scaled
    k: np.ndarray
    v: np.ndarray  # [L, dv]
    beta: np.ndarray
    G: np.ndarray  # cumulative log decay within the chunk
    D: np.ndarray  # exp(G_i - G_j), lower incl. diagonal (zero above)
    A: np.ndarray  # (I + tril(diag(beta) K K^T * D, -1))^-1
    M: np.ndarray  # (scale Q K^T) * D, lower incl. diagonal
    kcd: np.ndarray  # A (beta k * e^G)
    u: np.ndarray  # A (beta v)


def reference(c: Chunk) -> Reference:
    x, ch = c.x, c.ch
    sl = slice(ch.t_start, ch.t_start + ch.L)
    f = np.float64
    q = x.query[sl, ch.qk_head].astype(f) * x.scale_value
    k = x.key[sl, ch.qk_head].astype(f)
    v = x.value[sl, ch.head].astype(f)
    beta = x.beta[sl, ch.head].astype(f)
    g = np.zeros(ch.L) if x.g is None else x.g[sl, ch.head].astype(f)
    G = np.cumsum(g)
    lower = np.tri(ch.L)
    D = np.exp(np.minimum(G[:, None] - G[None, :], 0)) * lower
    A = np.linalg.inv(np.eye(ch.L) + np.tril((beta[:, None] * k) @ k.T * D, -1))
    M = (q @ k.T) * D
    kcd = A @ (beta[:, None] * k * np.exp(G)[:, None])
    u = A @ (beta[:, None] * v)
    return Reference(q, k, v, beta, G, D, A, M, kcd, u)
