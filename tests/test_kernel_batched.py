"""The head-batched numbers (kernel/batched.py) are the per-core program's numbers, bit for bit, and
taking them apart from the programs changes no timing."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import UB_310P, args, inputs, run
from test_kernel_outputs import KERNEL_SHAPES

from cgdr_des.hw import load_profile
from cgdr_des.kernel.batched import compute_numbers
from cgdr_des.kernel.functional import build_launch
from cgdr_des.simulation import run_launch

CASES = {
    **KERNEL_SHAPES,
    "dk63_tail_products": ([64, 3], 2, 2, 63, 32),
    "dk97_gqa4": ([70], 1, 4, 97, 48),
    "dv_split_tiles_and_short_last_chunk": ([65, 2], 1, 1, 128, 256),
}


def batched(x, numerics, **kw):
    launch = build_launch(*args(x), numerics=numerics, ub_size=UB_310P, **kw)
    compute_numbers(launch)
    return launch


@pytest.mark.parametrize("numerics", ["kernel", "exact"])
@pytest.mark.parametrize("name", list(CASES))
def test_batched_numbers_equal_the_per_core_programs_bit_for_bit(name, numerics):
    x = inputs(*CASES[name], seed=5)
    want, got = run(x, numerics), batched(x, numerics)
    np.testing.assert_array_equal(got.out, want.out)
    np.testing.assert_array_equal(got.final_state, want.final_state)
    assert np.any(got.out != 0)


@pytest.mark.parametrize("has_gamma, beta", [(False, "sigmoid"), (True, "zero"), (False, "zero")])
def test_batched_numbers_without_g_or_beta(has_gamma, beta):
    x = inputs([100, 29], 2, 4, 64, 64, seed=3, has_gamma=has_gamma, beta=beta)
    want, got = run(x, "kernel"), batched(x, "kernel")
    np.testing.assert_array_equal(got.out, want.out)
    np.testing.assert_array_equal(got.final_state, want.final_state)


def test_double_buffered_tiling_gives_the_same_batched_numbers():
    x = inputs([130, 20], 2, 4, 64, 64, seed=6)
    want = run(x, "kernel", buffer_num=2)
    got = batched(x, "kernel", buffer_num=2)
    np.testing.assert_array_equal(got.out, want.out)


@pytest.mark.parametrize("numerics", ["kernel", "exact"])
def test_numbers_apart_from_the_programs_change_no_timing(numerics):
    """ScalarExp's cost depends on its argument: without numbers the programs must derive the same
    arguments, so every frame is identical either way."""
    x = inputs([130, 9], 2, 4, 64, 64, seed=7)
    prof = load_profile("atlas-300i-duo")
    runs = []
    for apart in (True, False):
        launch = build_launch(*args(x), numerics=numerics, ub_size=prof.ub_bytes, aiv_num=prof.aiv_num)
        runs.append(run_launch(launch, prof, policy="greedy", fidelity="phase", batched_numbers=apart))
    one, two = runs
    for frame in ("ops", "items", "cores", "summary"):
        assert getattr(one, frame).equals(getattr(two, frame)), frame
    np.testing.assert_array_equal(one.out, two.out)
    np.testing.assert_array_equal(one.final_state, two.final_state)
