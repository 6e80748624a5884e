"""Precision metrics for comparing kernel outputs with the float64 oracle.

Definitions (all computed in float64 over every element, shapes must match):

- ``cosine(a, b) = <a, b> / (|a| |b|)``; two all-zero arrays give 1.0, one all-zero array 0.0.
- ``nrmse(ref, x) = rms(ref - x) / rms(ref)``: the relative RMS error fla's ``assert_close`` uses
  (``get_err_ratio``, without its 1e-8 guard). The kernel's own test names the same quantity
  "nrmse" without its definition being recorded; a range normalisation
  ``rmse / (max(ref) - min(ref))`` would be a different (smaller) number, so it is not used.
  ``rms(ref) == 0`` gives 0.0 when ``x`` is identical and ``inf`` otherwise.
- ``rel_rms(a, b) = rms(a - b) / sqrt((rms(a)**2 + rms(b)**2) / 2)``: a symmetric relative RMS
  difference for two runs of which neither is the reference (two policies, two buffer counts).
- ``max_abs_diff(a, b) = max |a - b|``: the kernel test's "max |Δ|" checks.
"""

from __future__ import annotations

import numpy as np

from cgdr_des.errors import InputError


def _pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a64 = np.asarray(a, dtype=np.float64).ravel()
    b64 = np.asarray(b, dtype=np.float64).ravel()
    if np.shape(a) != np.shape(b):
        raise InputError("shape", (np.shape(a), np.shape(b)), "both arrays must have the same shape")
    return a64, b64


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x * x))) if x.size else 0.0


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of the flattened arrays (1.0 for two zero arrays)."""
    a64, b64 = _pair(a, b)
    na, nb = float(np.linalg.norm(a64)), float(np.linalg.norm(b64))
    if na == 0.0 or nb == 0.0:
        return 1.0 if na == nb else 0.0
    return float(np.dot(a64, b64) / (na * nb))


def nrmse(ref: np.ndarray, x: np.ndarray) -> float:
    """``rms(ref - x) / rms(ref)`` (fla's relative RMS error ratio)."""
    r64, x64 = _pair(ref, x)
    err = _rms(r64 - x64)
    scale = _rms(r64)
    if scale == 0.0:
        return 0.0 if err == 0.0 else float("inf")
    return err / scale


def rel_rms(a: np.ndarray, b: np.ndarray) -> float:
    """Symmetric relative RMS difference ``rms(a-b) / sqrt((rms(a)^2 + rms(b)^2) / 2)``."""
    a64, b64 = _pair(a, b)
    err = _rms(a64 - b64)
    scale = float(np.sqrt((_rms(a64) ** 2 + _rms(b64) ** 2) / 2))
    if scale == 0.0:
        return 0.0 if err == 0.0 else float("inf")
    return err / scale


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest elementwise absolute difference (0.0 for empty arrays)."""
    a64, b64 = _pair(a, b)
    return float(np.max(np.abs(a64 - b64))) if a64.size else 0.0
