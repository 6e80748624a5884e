"""The float64 token-by-token gated delta rule: the independent truth kernel outputs are checked against.

It follows the recurrent form of docs/math.md §1 only (never the chunk algebra the kernel uses),
with the kernel's interface and layouts (docs/kernel.md §2). Per sequence, per value head, with the
state ``S`` of shape ``[Dv, Dk]`` (value dim first, as ``initial_state`` stores it), per token t::

    S   <- exp(g_t) * S                 decay first (g is log-space; absent g means no decay)
    u   =  beta_t * (v_t - S k_t)       the delta uses the decayed state      [Dv]
    S   <- S + u k_tᵀ                   rank-1 write                           [Dv, Dk]
    o_t =  scale * S q_t                the read uses the updated state       [Dv]

GQA: value head h reads q/k head ``h // nvPerNk`` with ``nvPerNk = Nv // Nk`` if ``Nv >= Nk`` else 1,
exactly the kernel's ``ProcessHead`` rule. Sequences are packed along T in batch order
(``actual_seq_lengths``); each starts from its own ``initial_state[b]``.

Choices where the kernel is silent or would misbehave:
- a zero-length sequence processes no tokens and its final state is the initial state passed
  through (the kernel writes nothing at all for it: its final_state slice stays uninitialised);
- negative lengths, and lengths that do not sum to T, are rejected with InputError (the kernel
  checks neither: a negative length would shift every later sequence's start backwards);
- ``Nv >= Nk`` with ``Nv % Nk != 0`` is rejected (the kernel would read q/k heads out of range).

Cost: one Python iteration per token, every head at once; T=2048, Nv=16, Dk=Dv=128 takes about a
second.
"""

from __future__ import annotations

import numpy as np

from cgdr_des.errors import InputError


def _expect_shape(name: str, arr: np.ndarray, shape: tuple[int, ...]) -> None:
    if arr.shape != shape:
        raise InputError(name, arr.shape, f"expected shape {shape}")


def qk_head_index(nv: int, nk: int) -> np.ndarray:
    """For each value head, the q/k head it reads (the kernel's ``head_i / nvPerNk``)."""
    if nv >= nk and nv % nk != 0:
        raise InputError("value", f"Nv={nv}, Nk={nk}", "Nv must be a multiple of Nk (or smaller than Nk)")
    per = nv // nk if nv >= nk else 1
    return np.arange(nv) // per


def _validate_lengths(lengths: np.ndarray, t: int, batch: int) -> None:
    if lengths.ndim != 1 or lengths.shape[0] != batch:
        raise InputError("actual_seq_lengths", lengths.shape,
                         f"expected shape ({batch},), B taken from initial_state")
    if np.any(lengths < 0):
        raise InputError("actual_seq_lengths", lengths.tolist(), "lengths must be >= 0")
    if int(lengths.sum()) != t:
        raise InputError("actual_seq_lengths", lengths.tolist(), f"lengths must sum to T={t}")


def _as64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def recurrent_reference(query, key, value, beta, initial_state, actual_seq_lengths, g=None,
                        scale_value: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Outputs of the gated delta rule in float64.

    Args (any float dtype, converted to float64): query, key ``[T, Nk, Dk]``; value ``[T, Nv, Dv]``;
    beta ``[T, Nv]``; initial_state ``[B, Nv, Dv, Dk]``; actual_seq_lengths ``[B]`` ints;
    g ``[T, Nv]`` log-decay or None; scale_value multiplies ``S q``.
    Returns ``(out [T, Nv, Dv], final_state [B, Nv, Dv, Dk])``, both float64.
    """
    q, k, v, b, s0 = (_as64(x) for x in (query, key, value, beta, initial_state))
    if q.ndim != 3 or v.ndim != 3 or s0.ndim != 4:
        raise InputError("query/value/initial_state", (q.shape, v.shape, s0.shape), "expected 3-D, 3-D, 4-D")
    t, nk, dk = q.shape
    nv, dv = v.shape[1], v.shape[2]
    batch = s0.shape[0]
    _expect_shape("key", k, (t, nk, dk))
    _expect_shape("value", v, (t, nv, dv))
    _expect_shape("beta", b, (t, nv))
    _expect_shape("initial_state", s0, (batch, nv, dv, dk))
    decay = None
    if g is not None:
        g64 = _as64(g)
        _expect_shape("g", g64, (t, nv))
        decay = np.exp(g64)
    lengths = np.asarray(actual_seq_lengths).astype(np.int64)
    _validate_lengths(lengths, t, batch)
    heads = qk_head_index(nv, nk)
    out = np.zeros((t, nv, dv))
    final = s0.copy()
    starts = np.cumsum(lengths) - lengths
    for bi, (t0, n) in enumerate(zip(starts, lengths, strict=True)):
        final[bi] = _run_sequence(final[bi], q[t0:t0 + n][:, heads], k[t0:t0 + n][:, heads], v[t0:t0 + n],
                                  b[t0:t0 + n], None if decay is None else decay[t0:t0 + n],
                                  float(scale_value), out[t0:t0 + n])
    return out, final


def _run_sequence(state, q, k, v, beta, decay, scale, out):
    """Token loop of one sequence, all heads at once; writes ``out`` in place, returns the state.

    Shapes: state ``[Nv, Dv, Dk]``; q, k ``[n, Nv, Dk]`` (already mapped to value heads);
    v ``[n, Nv, Dv]``; beta, decay ``[n, Nv]``; out ``[n, Nv, Dv]``.
    """
    s = state.copy()
    outer = np.empty_like(s)  # reused: the rank-1 term dominates the cost of a token
    for i in range(q.shape[0]):
        if decay is not None:
            s *= decay[i][:, None, None]
        kt = k[i]
        sk = np.matmul(s, kt[:, :, None])[:, :, 0]
        u = beta[i][:, None] * (v[i] - sk)
        s += np.einsum("hv,hk->hvk", u, kt, out=outer)
        out[i] = scale * np.matmul(s, q[i][:, :, None])[:, :, 0]
    return s
