"""The kernel's software exponential ``ScalarExp``, emulated bit for bit in float32.

Source: ``chunk_gated_delta_rule.h:263-284`` (docs/design-notes.md §5). The kernel calls it on the scalar unit
once per row of Step 7 (``UpdateAndWriteState``) with ``G_{L-1} - G_i`` to avoid a vector round trip:

1. ``reduced = |x|``; halve it while ``reduced > 1`` (``k`` halvings, each exact in binary float);
2. ``result = 1 + sum_{i=1..12} term_i`` with ``term_i = term_{i-1} * (reduced / i)`` (float32, in
   that order: the division first, then the multiply, then the add);
3. square ``result`` ``k`` times;
4. ``result = 1 / result`` if ``x < 0``.

Accuracy: the Taylor part is good to a few float32 ulps, but every squaring doubles the relative
error, so the error grows like ``2**k * eps32`` (docs/design-notes.md §5: ``|x| ~ 1e3`` would give ~1e-4). Results
beyond the float32 range overflow to ``inf`` during the squarings (then ``1/inf = 0`` for negative
``x``), exactly as float32 hardware arithmetic would.

Non-finite input: with ``x = ±inf`` the halving loop never ends on the device (``inf * 0.5`` is
``inf``); a NaN silently propagates. Neither is simulated as if fine: both raise
:class:`~cgdr_des.errors.KernelDiagnostic`.
"""

from __future__ import annotations

import numpy as np

from cgdr_des.errors import KernelDiagnostic

TAYLOR_TERMS = 12  # kExpTaylorTerms, chunk_gated_delta_rule.h:39

# Operation counts of one call (chunk_gated_delta_rule.h:263-284), what the machine is told it costs:
# abs/compare/select and the three initialisations; per halving: compare, multiply, increment; per
# Taylor term: int->float cast, multiply, add, loop compare (+ one division); per squaring: multiply
# and loop compare; the final sign test. A negative argument adds one reciprocal.
EXP_FIXED_ALU = 6
EXP_ALU_PER_HALVING = 3
EXP_ALU_PER_TERM = 4
EXP_DIV_PER_TERM = 1
EXP_ALU_PER_SQUARING = 2

_ONE = np.float32(1.0)
_HALF = np.float32(0.5)
_DIVISORS = tuple(np.float32(i) for i in range(1, TAYLOR_TERMS + 1))


def _diagnose_non_finite(x: object) -> None:
    raise KernelDiagnostic(
        f"ScalarExp argument {x!r} is not finite: the kernel's halving loop "
        "(chunk_gated_delta_rule.h:266-270) never terminates on ±inf and NaN propagates silently"
    )


def scalar_exp(x: float) -> np.float32:
    """``ScalarExp(x)`` as the kernel computes it, in float32; ``x`` is first rounded to float32."""
    val = np.float32(x)
    if not np.isfinite(val):
        _diagnose_non_finite(x)
    reduced = val if val >= 0 else -val
    k = 0
    while reduced > _ONE:
        reduced = reduced * _HALF
        k += 1
    result = _ONE
    term = _ONE
    for divisor in _DIVISORS:
        term = term * (reduced / divisor)
        result = result + term
    with np.errstate(over="ignore"):  # float32 overflow to inf is what the device does
        for _ in range(k):
            result = result * result
    if val < 0:
        result = _ONE / result
    return np.float32(result)


def scalar_exp_steps(x: float) -> int:
    """``k``: how many halvings (and squarings) ``ScalarExp(x)`` performs; the machine costs by it.

    ``k`` is the smallest non-negative integer with ``|x| <= 2**k`` (``x`` rounded to float32).
    """
    val = np.float32(x)
    if not np.isfinite(val):
        _diagnose_non_finite(x)
    return int(_steps(np.abs(np.asarray(val, dtype=np.float32))))


def scalar_exp_work(x: float) -> tuple[int, int]:
    """``(ALU operations, divisions)`` one ``ScalarExp(x)`` performs (KernelDiagnostic if ``x`` is
    not finite: the device would never return)."""
    return _work(scalar_exp_steps(x), 1 if x < 0 else 0)


def scalar_exp_work_array(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`scalar_exp_work` of every element of ``x`` at once (the same counts, element by element;
    the first non-finite element raises the same diagnostic): a chunk's L calls in one numpy pass
    rather than L passes over 0-d arrays."""
    x = np.asarray(x, dtype=np.float64)
    val = x.astype(np.float32)
    if not np.all(np.isfinite(val)):
        _diagnose_non_finite(float(x[~np.isfinite(val)].flat[0]))
    return _work(_steps(np.abs(val)), x < 0)


def _work(k, negative):
    """``(ALU operations, divisions)`` of calls with ``k`` halvings, ``negative`` (1 or True) adding the
    reciprocal: ints or arrays alike."""
    n_alu = EXP_FIXED_ALU + (EXP_ALU_PER_HALVING + EXP_ALU_PER_SQUARING) * k + EXP_ALU_PER_TERM * TAYLOR_TERMS
    return n_alu, EXP_DIV_PER_TERM * TAYLOR_TERMS + negative


def _steps(absval: np.ndarray) -> np.ndarray:
    """Halving count for non-negative finite float32 values, without a loop.

    ``frexp`` gives ``a = m * 2**e`` with ``m`` in [0.5, 1); ``a <= 2**k`` first holds at ``k = e``,
    or at ``k = e - 1`` when ``m == 0.5`` (``a`` a power of two). Values ``<= 1`` need no halving.
    """
    mant, expo = np.frexp(absval)
    k = np.where(mant == 0.5, expo - 1, expo)
    return np.where(absval > 1.0, k, 0)


def scalar_exp_array(x: np.ndarray) -> np.ndarray:
    """Elementwise ``ScalarExp``; bit-identical to :func:`scalar_exp` (same float32 operations).

    Returns a float32 array of the same shape. Used in the hot path (64 calls per chunk).
    """
    val = np.asarray(x, dtype=np.float32)
    if not np.all(np.isfinite(val)):
        bad = val[~np.isfinite(val)].flat[0]
        _diagnose_non_finite(float(bad))
    absval = np.abs(val)
    k = _steps(absval)
    # Halving is exact in binary floating point, so ldexp equals k successive "*= 0.5".
    reduced = np.ldexp(absval, -k).astype(np.float32)
    result = np.ones_like(reduced)
    term = np.ones_like(reduced)
    for divisor in _DIVISORS:
        term = term * (reduced / divisor)
        result = result + term
    with np.errstate(over="ignore"):
        for step in range(int(k.max(initial=0))):
            result = np.where(k > step, result * result, result)
    with np.errstate(divide="ignore"):
        result = np.where(val < 0, _ONE / result, result)
    return result.astype(np.float32, copy=False)
