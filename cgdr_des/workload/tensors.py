"""Seeded synthetic inputs, drawn the way the kernel's own test draws them (docs/kernel.md §7.1).

- q and k: standard normal, L2-normalised per (token, head) as ``x / sqrt(sum(x^2) + 1e-6)``
  (eps inside the sqrt, as fla's and HF's l2norm; docs/math.md §1.1);
- value: standard normal;
- beta: ``sigmoid(randn)`` in (0, 1), or zeros with ``beta="zero"``;
- g: ``-(rand + 0.01)`` in [-1.01, -0.01), float32 always; None when ``has_gamma`` is false;
- initial_state: ``randn * 0.1`` (layout ``[B, Nv, Dv, Dk]``), or zeros;
- scale_value: ``1 / sqrt(dk)``.

Everything except g is cast to ``dtype`` (fp16, as the kernel takes it) after being drawn in float32.

Determinism: one ``numpy.random.default_rng(seed)`` draws, always in the order q, k, v, beta,
initial_state and always all of them, so switching ``beta``, ``has_gamma`` or ``initial_state``
leaves the other tensors bit-identical for the same seed. g comes from its own stream
(:func:`draw_g`), so a timing-only run, which draws g alone (ScalarExp's cost depends on it), sees
exactly the g of the full run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cgdr_des.errors import InputError

L2_EPS = 1e-6
BETA_MODES = ("sigmoid", "zero")
STATE_MODES = ("randn", "zeros")
DTYPES = (np.float16, np.float32, np.float64)
INT32_MAX = int(np.iinfo(np.int32).max)


@dataclass(frozen=True)
class KernelInputs:
    """The kernel's inputs in its layouts: query/key ``[T, Nk, Dk]``, value ``[T, Nv, Dv]``, beta ``[T, Nv]``,
    initial_state ``[B, Nv, Dv, Dk]``, actual_seq_lengths ``[B]`` int32, g ``[T, Nv]`` float32 or None."""

    query: np.ndarray
    key: np.ndarray
    value: np.ndarray
    beta: np.ndarray
    initial_state: np.ndarray
    actual_seq_lengths: np.ndarray
    g: np.ndarray | None
    scale_value: float

    def kwargs(self) -> dict:
        """Keyword arguments for ``recurrent_reference`` / ``chunk_gated_delta_rule``."""
        return {"query": self.query, "key": self.key, "value": self.value, "beta": self.beta,
                "initial_state": self.initial_state, "actual_seq_lengths": self.actual_seq_lengths,
                "g": self.g, "scale_value": self.scale_value}


def _l2_normalise(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + L2_EPS)


def _check(lengths, dims: dict[str, int], beta: str, initial_state: str, dtype) -> np.ndarray:
    arr = np.asarray(lengths)
    if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer) or np.any(arr < 0):
        raise InputError("lengths", lengths, "a non-empty 1-D list of integers >= 0")
    if int(arr.max()) > INT32_MAX:  # the kernel reads lengths as int32: a cast would wrap silently
        raise InputError("lengths", int(arr.max()), f"each length must fit int32 (<= {INT32_MAX})")
    for name, value in dims.items():
        if not isinstance(value, int | np.integer) or value < 1:
            raise InputError(name, value, "a positive integer")
    if beta not in BETA_MODES:
        raise InputError("beta", beta, f"one of {', '.join(BETA_MODES)}")
    if initial_state not in STATE_MODES:
        raise InputError("initial_state", initial_state, f"one of {', '.join(STATE_MODES)}")
    if np.dtype(dtype) not in [np.dtype(d) for d in DTYPES]:
        raise InputError("dtype", dtype, "float16, float32 or float64")
    return arr.astype(np.int32)


def draw_g(t: int, nv: int, seed: int = 0) -> np.ndarray:
    """The log-decay g ``[T, Nv]`` float32, ``-(rand + 0.01)``, from the stream ``(seed, 1)``."""
    return (-(np.random.default_rng((seed, 1)).random((t, nv)) + 0.01)).astype(np.float32)


def make_inputs(lengths, nk: int, nv: int, dk: int, dv: int, seed: int = 0, has_gamma: bool = True,
                beta: str = "sigmoid", initial_state: str = "randn", dtype=np.float16) -> KernelInputs:
    """Draw one launch's inputs for sequences of ``lengths`` tokens (T = sum(lengths), B = len(lengths)),
    exactly as a scenario with the same shape, ``[workload] seed`` and ``[workload.tensors]`` draws them
    (the module docstring says how), so ``cgdr_des.chunk_gated_delta_rule(**x.kwargs())`` sees a
    scenario's numbers. Public as ``cgdr_des.make_inputs``.

    Arguments: ``lengths`` any 1-D integers >= 0 that fit int32 (a list or an integer array);
    ``nk``/``nv`` the query-key and value heads (Nv a multiple of Nk for the op); ``dk``/``dv`` the head
    dims; ``seed`` an integer >= 0; ``has_gamma`` False gives ``g=None`` (no decay); ``beta`` "sigmoid"
    or "zero"; ``initial_state`` "randn" or "zeros"; ``dtype`` of the fp16 tensors (float16, the
    kernel's; float32/float64 for reference maths).

    Returns a :class:`KernelInputs` in the op's layouts and dtypes:
    ``query``, ``key`` ``[T, Nk, Dk]`` ``dtype`` (L2-normalised per token and head); ``value``
    ``[T, Nv, Dv]`` ``dtype``; ``beta`` ``[T, Nv]`` ``dtype``; ``initial_state`` ``[B, Nv, Dv, Dk]``
    ``dtype`` (value dim first); ``actual_seq_lengths`` ``[B]`` int32; ``g`` ``[T, Nv]`` float32 (<= 0)
    or None; ``scale_value`` a float, 1/sqrt(Dk). Tokens of all sequences are packed along T in order.
    """
    lens = _check(lengths, {"nk": nk, "nv": nv, "dk": dk, "dv": dv}, beta, initial_state, dtype)
    t, batch = int(lens.sum()), lens.size
    rng = np.random.default_rng(seed)
    f32 = np.float32  # every tensor ends as fp16: drawing in float32 halves the cost, loses nothing
    q = _l2_normalise(rng.standard_normal((t, nk, dk), dtype=f32))
    k = _l2_normalise(rng.standard_normal((t, nk, dk), dtype=f32))
    v = rng.standard_normal((t, nv, dv), dtype=f32)
    b = 1.0 / (1.0 + np.exp(-rng.standard_normal((t, nv), dtype=f32)))
    s0 = rng.standard_normal((batch, nv, dv, dk), dtype=f32) * f32(0.1)
    if beta == "zero":
        b = np.zeros_like(b)
    if initial_state == "zeros":
        s0 = np.zeros_like(s0)
    return KernelInputs(
        query=q.astype(dtype), key=k.astype(dtype), value=v.astype(dtype), beta=b.astype(dtype),
        initial_state=s0.astype(dtype), actual_seq_lengths=lens,
        g=draw_g(t, nv, seed) if has_gamma else None, scale_value=float(1.0 / np.sqrt(dk)),
    )
