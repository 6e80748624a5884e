"""BLAS threads around the simulator's numeric work (cgdr_des/blas.py), read from threadpoolctl itself.

Inside the op call and simulate the BLAS libraries report the chosen thread count (seen from a hook
on the head-batched numbers, the work the limit is for); after the call, normal or raising, every
library reports exactly what it did before. The caller's own setting is made 2 first, so that the
default (1) and "leave as is" can be told apart on any machine.
"""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import cgdr_des
from cgdr_des import blas
from cgdr_des import simulation as simulation_module
from cgdr_des.errors import InputError
from cgdr_des.scenario import Scenario
from cgdr_des.workload.tensors import make_inputs

if not [lib for lib in threadpool_info() if lib["user_api"] == "blas"]:
    pytest.skip("threadpoolctl finds no BLAS library under numpy here", allow_module_level=True)


def blas_threads_now() -> dict[str, int]:
    return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


@pytest.fixture
def seen(monkeypatch):
    """The BLAS thread counts at each head-batched numbers call (the simulator's numeric work)."""
    calls: list[dict[str, int]] = []
    real = simulation_module.compute_numbers

    def spy(launch):
        calls.append(blas_threads_now())
        return real(launch)

    monkeypatch.setattr(simulation_module, "compute_numbers", spy)
    monkeypatch.delenv(blas.ENV_VAR, raising=False)
    return calls


def small_inputs():
    return make_inputs(np.array([70], np.int32), 1, 2, 64, 64, seed=3)


def op(**kw):
    return cgdr_des.chunk_gated_delta_rule(**small_inputs().kwargs(), fidelity="phase", **kw)


def sim(**kw):
    sc = Scenario.from_dict({"name": "blas", "shape": {"nk": 1, "nv": 2, "dk": 64, "dv": 64},
                             "workload": {"lengths": [70]}, "sim": {"fidelity": "phase", "numerics": "kernel"}})
    return cgdr_des.simulate(sc, **kw)


def only(counts: dict[str, int]) -> set[int]:
    return set(counts.values())


@pytest.mark.parametrize("call", [op, sim], ids=["op", "simulate"])
def test_the_call_runs_at_one_thread_and_leaves_the_callers_setting_as_it_was(call, seen):
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads_now()
        call()
        assert blas_threads_now() == before
    assert len(seen) == 1 and only(seen[0]) == {1}
    assert only(before) == {2}


@pytest.mark.parametrize("call", [op, sim], ids=["op", "simulate"])
def test_the_callers_setting_is_restored_when_the_call_raises(call, seen, monkeypatch):
    def boom(launch):
        seen.append(blas_threads_now())
        raise RuntimeError("inside the numbers")

    monkeypatch.setattr(simulation_module, "compute_numbers", boom)
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads_now()
        with pytest.raises(RuntimeError, match="inside the numbers"):
            call()
        assert blas_threads_now() == before
    assert only(seen[0]) == {1}


def test_a_refused_op_call_leaves_the_setting_too(seen):
    x = small_inputs()
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads_now()
        with pytest.raises(InputError, match="scale_value"):
            cgdr_des.chunk_gated_delta_rule(**{**x.kwargs(), "scale_value": float("nan")})
        assert blas_threads_now() == before


@pytest.mark.parametrize("value, outer, inside", [(0, 2, 2), ("default", 2, 2), (2, 1, 2), (1, 2, 1)])
@pytest.mark.parametrize("call", [op, sim], ids=["op", "simulate"])
def test_the_keyword_overrides_the_default(call, value, outer, inside, seen):
    with threadpool_limits(limits=outer, user_api="blas"):
        before = blas_threads_now()
        call(blas_threads=value)
        assert blas_threads_now() == before
    assert only(seen[0]) == {inside}


@pytest.mark.parametrize("env, outer, inside", [("0", 2, 2), ("default", 2, 2), ("2", 1, 2), (" 1 ", 2, 1)])
def test_the_environment_variable_overrides_the_default_and_the_keyword_overrides_it(env, outer, inside, seen,
                                                                                      monkeypatch):
    monkeypatch.setenv(blas.ENV_VAR, env)
    with threadpool_limits(limits=outer, user_api="blas"):
        op()
        op(blas_threads=outer)
    assert only(seen[0]) == {inside}
    assert only(seen[1]) == {outer}


@pytest.mark.parametrize("env", ["x", "-1", "1.5", "two"])
def test_a_bad_environment_value_is_one_line_naming_the_variable(env, seen, monkeypatch):
    monkeypatch.setenv(blas.ENV_VAR, env)
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads_now()
        with pytest.raises(InputError) as info:
            op()
        assert blas_threads_now() == before
    assert info.value.field == blas.ENV_VAR and "\n" not in str(info.value)
    assert not seen  # refused before any work


@pytest.mark.parametrize("value", [-1, 1.0, True, "lots", [1]])
def test_a_bad_keyword_value_is_an_input_error_naming_it(value, seen):
    with pytest.raises(InputError) as info:
        op(blas_threads=value)
    assert info.value.field == "blas_threads"
    assert not seen


def test_numeric_work_takes_the_default_alone_and_the_call_s_count_inside_a_call(seen):
    inside = []

    @blas.numeric_work
    def numbers():
        inside.append(blas_threads_now())

    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads_now()
        numbers()                      # on its own: the default, one thread
        with blas.blas_limit(2):       # inside a call that chose two: left at two
            numbers()
        with blas.blas_limit(0):       # inside a call that left the caller's: the caller's
            numbers()
        assert blas_threads_now() == before
    assert [only(c) for c in inside] == [{1}, {2}, {2}]


def test_the_functional_run_and_simulate_give_the_same_bits_whatever_the_caller_s_threads():
    """OpenBLAS splits a product differently at 1 and 2 threads; the numbers must not care."""
    from cgdr_des.kernel.functional import build_launch, run_functional

    x = make_inputs(np.array([130, 70], np.int32), 2, 4, 64, 128, seed=5)
    outs = []
    for outer in (1, 2):
        with threadpool_limits(limits=outer, user_api="blas"):
            launch = build_launch(*x.kwargs().values(), numerics="kernel", ub_size=262144, aiv_num=8)
            outs.append(run_functional(launch, "greedy", emit=False).out)
            outs.append(cgdr_des.chunk_gated_delta_rule(**x.kwargs(), fidelity="phase").out)
    for other in outs[1:]:
        np.testing.assert_array_equal(outs[0], other)
