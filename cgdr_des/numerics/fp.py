"""fp16 rounding helpers: the precision at which the kernel reads inputs and writes outputs.

The kernel takes fp16 q/k/v/beta/initial_state, widens them to fp32 (``Cast`` fp16 -> fp32 is exact),
computes in fp32 and narrows ``out`` and ``final_state`` back to fp16 with ``Cast(..., CAST_NONE)``,
i.e. the hardware default rounding, round-to-nearest-even. numpy's ``astype(np.float16)`` rounds
the same way. Values beyond the fp16 range (|x| > 65504) become ±inf here; whether the device
saturates instead is not modelled (the notes do not say), so :func:`fp16_overflow` lets a caller
report it.
"""

from __future__ import annotations

import numpy as np

FP16_MAX = float(np.finfo(np.float16).max)  # 65504
FP16_EPS = float(np.finfo(np.float16).eps)  # 2**-10, spacing of fp16 numbers at 1.0


def to_fp16(x: np.ndarray) -> np.ndarray:
    """Round to fp16 (round-to-nearest-even); returns a float16 array."""
    with np.errstate(over="ignore"):
        return np.asarray(x).astype(np.float16)


def round_fp16(x: np.ndarray, dtype: type = np.float32) -> np.ndarray:
    """Round-trip through fp16: the value an fp16 store then fp32 load would give, as ``dtype``."""
    return to_fp16(x).astype(dtype)


def fp16_overflow(x: np.ndarray) -> bool:
    """True if some finite value of ``x`` lies outside the fp16 range (would round to ±inf)."""
    arr = np.asarray(x)
    return bool(np.any(np.isfinite(arr) & np.isinf(to_fp16(arr))))
