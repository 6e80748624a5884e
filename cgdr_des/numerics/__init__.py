"""Numerics: the float64 recurrent oracle, the kernel's ScalarExp, fp16 rounding, precision metrics."""

from cgdr_des.numerics.fp import round_fp16, to_fp16
from cgdr_des.numerics.metrics import cosine, max_abs_diff, nrmse, rel_rms
from cgdr_des.numerics.oracle import recurrent_reference
from cgdr_des.numerics.scalar_exp import scalar_exp, scalar_exp_array, scalar_exp_steps

__all__ = [
    "cosine", "max_abs_diff", "nrmse", "recurrent_reference", "rel_rms", "round_fp16", "scalar_exp",
    "scalar_exp_array", "scalar_exp_steps", "to_fp16",
]
