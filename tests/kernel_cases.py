"""Shared helpers for the kernel tests: build inputs as the kernel's tests draw them and run them."""

from __future__ import annotations

import numpy as np

from cgdr_des.kernel.functional import build_launch, run_functional
from cgdr_des.numerics.metrics import cosine, nrmse, rel_rms
from cgdr_des.numerics.oracle import recurrent_reference
from cgdr_des.workload.tensors import make_inputs

UB_310P, AIV_310P = 262144, 8


def inputs(lengths, nk, nv, dk, dv, **kw):
    return make_inputs(lengths, nk, nv, dk, dv, **kw)


def args(x):
    return (x.query, x.key, x.value, x.beta, x.initial_state, x.actual_seq_lengths, x.g, x.scale_value)


def run(x, numerics="kernel", emit=False, policy="greedy", **kw):
    launch = build_launch(*args(x), numerics=numerics, ub_size=kw.pop("ub_size", UB_310P),
                          aiv_num=kw.pop("aiv_num", AIV_310P), **kw)
    return run_functional(launch, policy, emit=emit)


def oracle(x):
    return recurrent_reference(*args(x)[:7], scale_value=x.scale_value)


def assert_kernel_bounds(res, ref_out, ref_state):
    """The kernel's own test bound: cosine >= 0.999 and nrmse <= 0.02 for both outputs."""
    for got, ref in ((res.out, ref_out), (res.final_state, ref_state)):
        got = got.astype(np.float64)
        assert cosine(ref, got) >= 0.999
        assert nrmse(ref, got) <= 0.02


def assert_exact(res, ref_out, ref_state):
    assert rel_rms(ref_out, res.out) <= 1e-10
    assert rel_rms(ref_state, res.final_state) <= 1e-10
