"""The kernel program's outputs against the independent float64 token-by-token recurrence."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import assert_exact, assert_kernel_bounds, inputs, oracle, run

# (lengths, nk, nv, dk, dv): the kernel's test shapes (B, H, T, Dk, Dv) with nk = nv = H.
KERNEL_SHAPES = {
    "small": ([64], 8, 8, 64, 64),
    "representative": ([128], 16, 16, 128, 128),
    "low_head_dv256_vtile_split": ([128], 1, 1, 128, 256),
    "long_t512_batch2": ([512, 512], 8, 8, 128, 128),
    "gqa_qwen3_next": ([64], 16, 32, 128, 128),
    "varlen_with_zero": ([37, 0, 130, 1, 64], 2, 4, 64, 64),
}


@pytest.mark.parametrize("name", list(KERNEL_SHAPES))
def test_kernel_numerics_within_kernel_test_bound(name):
    x = inputs(*KERNEL_SHAPES[name], seed=1)
    ref_out, ref_state = oracle(x)
    assert_kernel_bounds(run(x, "kernel"), ref_out, ref_state)


@pytest.mark.parametrize("name", list(KERNEL_SHAPES))
def test_exact_numerics_match_recurrence(name):
    x = inputs(*KERNEL_SHAPES[name], seed=2)
    ref_out, ref_state = oracle(x)
    assert_exact(run(x, "exact"), ref_out, ref_state)


@pytest.mark.parametrize("dk", [63, 65, 79, 80, 81, 95, 96, 97, 127])
def test_non_multiple_reduce_width(dk):
    x = inputs([64], 2, 2, dk, 32, seed=dk)
    ref_out, ref_state = oracle(x)
    assert_kernel_bounds(run(x, "kernel"), ref_out, ref_state)
    assert_exact(run(x, "exact"), ref_out, ref_state)


def test_g_absent_means_no_decay():
    x = inputs([100, 29], 2, 2, 64, 64, seed=3, has_gamma=False)
    assert x.g is None
    ref_out, ref_state = oracle(x)
    assert_kernel_bounds(run(x, "kernel"), ref_out, ref_state)
    assert_exact(run(x, "exact"), ref_out, ref_state)


def test_beta_zero_without_g_reads_the_initial_state():
    """beta = 0 and no g: S never changes, so out_t = scale * S0 q_t and final_state = S0."""
    x = inputs([70, 58], 2, 4, 64, 32, seed=4, has_gamma=False, beta="zero")
    s0 = x.initial_state.astype(np.float64)  # [B, Nv, Dv, Dk]
    q = x.query.astype(np.float64)
    expected = np.empty(x.value.shape)
    seq0 = 0
    for b, n in enumerate(x.actual_seq_lengths):
        for h in range(4):
            expected[seq0:seq0 + n, h] = x.scale_value * q[seq0:seq0 + n, h // 2] @ s0[b, h].T
        seq0 += n
    res = run(x, "kernel")
    assert np.max(np.abs(res.out.astype(np.float64) - expected)) < 5e-3
    np.testing.assert_array_equal(res.final_state, x.initial_state)
    exact = run(x, "exact")
    np.testing.assert_allclose(exact.out, expected, rtol=0, atol=1e-12)


def test_zero_initial_state_and_zero_length_batch_passes_state_through():
    x = inputs([0, 40], 1, 1, 64, 64, seed=5)
    res = run(x, "kernel")
    np.testing.assert_array_equal(res.final_state[0], x.initial_state[0])
    ref_out, ref_state = oracle(x)
    assert_kernel_bounds(res, ref_out, ref_state)


def test_emitting_records_does_not_change_the_numbers():
    x = inputs([70], 1, 2, 64, 64, seed=6)
    quiet, loud = run(x, "kernel", emit=False), run(x, "kernel", emit=True)
    np.testing.assert_array_equal(quiet.out, loud.out)
    np.testing.assert_array_equal(quiet.final_state, loud.final_state)
    assert sum(loud.counts.values()) > 0 and not quiet.counts.get(("P4a_DotFp32", "vec"))


@pytest.mark.parametrize("policy", ["round_robin", "float_share", "longest_first"])
def test_every_policy_computes_the_same_outputs(policy):
    x = inputs([37, 200, 5, 64], 2, 4, 64, 64, seed=7)
    base = run(x, "kernel")
    other = run(x, "kernel", policy=policy)
    np.testing.assert_array_equal(base.out, other.out)
    np.testing.assert_array_equal(base.final_state, other.final_state)


def test_192k_ub_two_vtiles_without_overlap():
    """dk = dv = 128 on a 192 KiB UB: vStep 64, two V-tiles per chunk, scores and state apart."""
    x = inputs([130], 16, 16, 128, 128, seed=8)
    res = run(x, "kernel", ub_size=196608)
    assert res.launch.tiling.v_step == 64 and not res.launch.tiling.overlap_scores_state
    ref_out, ref_state = oracle(x)
    assert_kernel_bounds(res, ref_out, ref_state)
