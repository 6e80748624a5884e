"""The Cube-era kernel's outputs against the float64 token-by-token oracle, and its precision
building blocks against closed forms: the hi/lo split, the compensated and two-term products, the
blocked inverse and the Hillis-Steele scan."""

from __future__ import annotations

import numpy as np
import pytest

import cgdr_des
from cgdr_des.kernel.cube import numerics as cn
from cgdr_des.kernel.cube.launch import build_cube_launch
from cgdr_des.numerics.metrics import cosine, nrmse
from cgdr_des.numerics.oracle import recurrent_reference
from cgdr_des.workload.tensors import make_inputs

#: the op's published bounds (test_accuracy_recurrent_reference): cosine >= 0.999, nrmse <= 0.02
COS, NRMSE = 0.999, 0.02


def _run(lengths, nk, nv, dk, dv, numerics="kernel", ub=262144, seed=0, g=True):
    lens = np.array(lengths, np.int32)
    x = make_inputs(lens, nk, nv, dk, dv, seed=seed, has_gamma=g)
    launch = build_cube_launch(x.query, x.key, x.value, x.beta, x.initial_state, lens, x.g, dk ** -0.5,
                               numerics=numerics, ub_size=ub)
    cn.compute_outputs(launch)
    ref = recurrent_reference(x.query, x.key, x.value, x.beta, x.initial_state, lens, x.g, dk ** -0.5)
    return launch, ref


@pytest.mark.parametrize(("dk", "dv", "lengths"), [
    (64, 64, [64]), (63, 64, [130]), (65, 80, [64, 7]), (79, 64, [128]), (80, 80, [100]), (81, 96, [64]),
    (95, 96, [70]), (96, 128, [192]), (97, 128, [64]), (127, 64, [150]), (128, 128, [128, 64]),
    (128, 256, [128]), (144, 96, [128])])
def test_every_bucket_within_the_op_bounds(dk, dv, lengths):
    launch, (ref_out, ref_state) = _run(lengths, 2, 4, dk, dv)
    assert launch.out.dtype == np.float16
    for ref, got in ((ref_out, launch.out), (ref_state, launch.final_state)):
        assert cosine(ref, got) >= COS and nrmse(ref, got) <= NRMSE


def test_vector_fallback_when_ub_is_short():
    """240 KiB of UB: the 128 bucket runs every chunk on the vector path, same bounds."""
    launch, (ref_out, ref_state) = _run([128], 2, 2, 128, 128, ub=240 * 1024)
    assert launch.tiling.v_step == 112
    assert cosine(ref_out, launch.out) >= COS and nrmse(ref_state, launch.final_state) <= NRMSE


@pytest.mark.parametrize(("dk", "ub"), [(128, 262144), (80, 262144), (128, 240 * 1024), (63, 262144)])
def test_exact_numerics_match_the_oracle(dk, ub):
    """float64 with no fp16 rounding: the chunked algebra equals the recurrence to rounding."""
    launch, (ref_out, ref_state) = _run([140], 2, 2, dk, 64, numerics="exact", ub=ub)
    assert np.max(np.abs(launch.out - ref_out)) < 1e-9
    assert np.max(np.abs(launch.final_state - ref_state)) < 1e-9


def test_op_api_runs_the_cube_kernel_with_gqa():
    lens = np.array([96, 64], np.int32)
    x = make_inputs(lens, 2, 4, 128, 128, seed=5)
    r = cgdr_des.chunk_gated_delta_rule(x.query, x.key, x.value, x.beta, x.initial_state, lens, x.g, 0.088,
                                        fidelity="functional", kernel_version="cube")
    ref_out, ref_state = recurrent_reference(x.query, x.key, x.value, x.beta, x.initial_state, lens, x.g, 0.088)
    assert cosine(ref_out, r.out) >= COS and nrmse(ref_state, r.final_state) <= NRMSE
    mmads = sum(v for (_, kind), v in r.counts.items() if kind == "Mmad")
    assert mmads == 4 * 2 * 42  # 4 heads x 2 full chunks x 42 (the 32-token tail runs on V)


def test_op_api_rejects_unknown_kernel_version():
    lens = np.array([8], np.int32)
    x = make_inputs(lens, 1, 1, 16, 16, seed=0)
    with pytest.raises(cgdr_des.InputError, match="^kernel_version"):
        cgdr_des.chunk_gated_delta_rule(x.query, x.key, x.value, x.beta, x.initial_state, lens, x.g,
                                        fidelity="functional", kernel_version="tpu")


def test_hi_lo_split_closed_form():
    """hi = fp16(x) within 2^-11 relative; hi + lo within 2^-22 relative while lo stays a normal fp16
    number (|x| >= 2^-3: below that lo falls into fp16's subnormals and the split loses bits)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10_000).astype(np.float32)
    x = x[np.abs(x) >= 0.125]
    p = cn.Precision(np.float32)
    hi, lo = p.split(x)
    assert np.all(hi == x.astype(np.float16).astype(np.float32))
    assert np.all(np.abs(x - hi) <= np.abs(x) * 2.0 ** -11 + 1e-12)
    assert np.max(np.abs(x - hi - lo) / np.abs(x)) <= 2.0 ** -22


def test_products_error_bounds():
    """Two-term products keep fp32-level accuracy of A against an exact fp16 B; the compensated four-
    term product keeps it for both operands, where one fp16 rounding of B alone would not."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = rng.standard_normal((64, 64)).astype(np.float32)
    p = cn.Precision(np.float32)
    b16 = p.h16(b)
    exact2 = a.astype(np.float64) @ b16.astype(np.float64)
    exact4 = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    assert np.max(np.abs(p.pair(a, b16) - exact2) / scale) < 2e-6
    assert np.max(np.abs(p.compensated(a, b) - exact4) / scale) < 2e-6
    assert np.max(np.abs(p.pair(a, b16) - exact4) / scale) > 1e-5  # B's own rounding shows


@pytest.mark.parametrize("size", [16, 32, 64])
def test_blocked_inverse_equals_the_inverse(size):
    rng = np.random.default_rng(size)
    b = np.tril(rng.standard_normal((size, size)) * 0.2, -1)
    want = np.linalg.inv(np.eye(size) - b)
    got64 = cn.blocked_inverse(cn.Precision(np.float64), b, size)
    assert np.max(np.abs(got64 - want)) < 1e-12
    got32 = cn.blocked_inverse(cn.Precision(np.float32), b.astype(np.float32), size)
    assert np.max(np.abs(got32 - want)) / np.max(np.abs(want)) < 1e-5
    assert np.max(np.abs(cn.forward_inverse(b) - want)) < 1e-12


@pytest.mark.parametrize("L", [1, 5, 40, 64])
def test_prefix_scan_is_a_cumsum(L):
    g = np.random.default_rng(L).uniform(-1, 0, L)
    assert np.allclose(cn.g_prefix_scan(g), np.cumsum(g), rtol=0, atol=1e-12)
