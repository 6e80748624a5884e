"""The scalar loop and address work per vector call (``vec_call_loop_cycles``) against its closed form.

A count-form vector call costs the scalar unit its mask set-up (``vec_api_scalar_cycles``), the loop
and address work around the call (``vec_call_loop_cycles``) and the hand-over
(``scalar_dispatch_cycles``); short vector ops are therefore handed over one per sum of the three.
"""

import pytest
from test_hw_compute_run import args, assert_compiles_agree, launch_phases
from test_hw_support import rows, run, vec

from cgdr_des.hw import load_profile
from cgdr_des.kernel.functional import build_launch
from cgdr_des.workload.tensors import make_inputs

P = load_profile("atlas-300i-duo")


def test_default_adds_nothing():
    assert P.vec_call_loop_cycles == 0


@pytest.mark.parametrize("loop", [0, 3, 12])
def test_short_ops_are_handed_over_once_per_api_loop_and_dispatch(loop):
    n_ops = 12
    r = run([[vec("Mul", 128) for _ in range(n_ops)]], vec_call_loop_cycles=loop)
    v = rows(r, pipe="V")
    per_op = P.vec_api_scalar_cycles + loop + P.scalar_dispatch_cycles
    assert v[0]["start"] == P.kernel_launch_cycles + per_op
    assert [b["start"] - a["start"] for a, b in zip(v, v[1:], strict=False)] == [per_op] * (n_ops - 1)


def test_the_scalar_unit_is_busy_for_it():
    n_ops, loop = 20, 5
    base = run([[vec("Mul", 128) for _ in range(n_ops)]]).cores[0]["busy_S"]
    more = run([[vec("Mul", 128) for _ in range(n_ops)]], vec_call_loop_cycles=loop).cores[0]["busy_S"]
    assert more - base == n_ops * loop


def test_the_compute_run_timer_applies_it_as_the_machine_does():
    prof = load_profile("atlas-300i-duo", {"vec_call_loop_cycles": 7})
    x = make_inputs([5], 1, 1, 128, 128, seed=0)
    launch = build_launch(*args(x), numerics="off", ub_size=prof.ub_usable_bytes, aiv_num=prof.aiv_num)
    assert_compiles_agree(prof, launch_phases(launch, [0]))
