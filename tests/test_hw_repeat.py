"""Repeat records (loops of like iterations) timed by extrapolation, against the same loops expanded.

The timer runs a Repeat's iterations until one leaves the pipes' relative state unchanged and adds the
rest at once (cgdr_des.hw.compute_run). Truth here is the timer (and the machine) on the expanded
records: every field, the data cache and the raise must be the same, for random bodies, nested
Repeats, every flag_double_set policy, and the kernel's own loops.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from kernel_cases import args
from test_hw_compute_run import (
    POLICIES,
    _issue,
    _outcome,
    cache_state,
    knobs,
    launch_phases,
    mixed,
    programs,
)
from test_hw_support import vec

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.hw import load_profile
from cgdr_des.hw.compute_run import time_compute_run
from cgdr_des.hw.dcache import DataCache
from cgdr_des.hw.phase import PhaseCompiler, PhaseRecorder
from cgdr_des.isa import (
    EventHandle,
    FetchEventID,
    PipeBarrier,
    Repeat,
    Scalar,
    ScalarGm,
    SetFlag,
    VecOp,
    WaitFlag,
    expand,
)
from cgdr_des.kernel.emit import scalar_exp_call
from cgdr_des.kernel.functional import build_launch
from cgdr_des.workload.tensors import make_inputs

P = load_profile("atlas-300i-duo")
HAND = P.vec_api_scalar_cycles + P.scalar_dispatch_cycles


def shifted(body: list, i: int) -> list:
    """``body`` with every VecOp's UB addresses moved by iteration i (the contract allows it)."""
    return [VecOp(r.op, r.dtype, r.n, (r.dst[0] + 64 * i, r.dst[1])) if type(r) is VecOp else r for r in body]


def counted(n: int, body_of):
    """A Repeat that also counts how many iterations were asked for."""
    calls = []
    return Repeat(n, lambda i: calls.append(i) or body_of(i)), calls


def timed_both(prof, records: list):
    """(timer on records, timer on expanded records, machine on expanded records), each with its cache."""
    out = []
    for fn in (lambda dc: time_compute_run(records, prof, dc), lambda dc: time_compute_run(expand(records), prof, dc)):
        dc = DataCache(prof.dcache_line_bytes, prof.dcache_bytes)
        out.append((_outcome(lambda fn=fn, dc=dc: fn(dc)), cache_state(dc)))
    exact = PhaseCompiler(prof, exact_machine=True)
    out.append((_outcome(lambda: exact.machine_macro(expand(records))), cache_state(exact.dcache)))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, programs, programs, st.integers(2, 60), st.integers(2, 5), st.booleans(), knobs)
def test_random_repeats_time_as_their_expansion(policy, pre, body, post, n, n_outer, nest, overrides):
    prof = load_profile("atlas-300i-duo", {**overrides, "flag_double_set": policy})
    inner = Repeat(n, lambda i: shifted(body, i))
    records = [*pre, Repeat(n_outer, lambda i: [*post, inner, *pre]) if nest else inner, *post]
    got, expanded, machine = timed_both(prof, records)
    assert got == expanded
    if got[0] != "raises":              # the machine's own raise texts and cache may differ on a raise
        assert got == machine


@pytest.mark.parametrize("rep", [Repeat(0, lambda i: [vec()]), Repeat(1, lambda i: [vec(), vec()]),
                                 Repeat(5, lambda i: [])])
def test_a_repeat_standing_for_too_little_is_left_to_the_expansion(rep):
    """Fewer than two iterations, or empty ones: the timer declines (the compiler then expands it, as
    test_compile_falls_back_... checks), so a Repeat never makes a Macro of fewer than two records."""
    with pytest.raises(KernelDiagnostic):
        time_compute_run([vec(), rep], P, DataCache(P.dcache_line_bytes, P.dcache_bytes))


def test_a_steady_loop_is_extrapolated_not_walked():
    rep, calls = counted(10_000, lambda i: shifted([vec("Mul", 64)], i))
    r = time_compute_run([rep], P, DataCache(P.dcache_line_bytes, P.dcache_bytes))
    assert len(calls) < 10
    N = 10_000                          # the closed form of N scalar-bound VecOps (test_hw_compute_run)
    assert (r.s_cycles, r.s_stall, r.v_start) == (N * HAND, 0, HAND)
    assert r.counts == (("vec", N),)


def test_a_vector_bound_loop_reaches_its_full_queue_then_extrapolates():
    n, N, d = 64 * 4 * HAND, 2_000, P.queue_depth
    rep, calls = counted(N, lambda i: [vec("Mul", n)])
    r = time_compute_run([rep], P, DataCache(P.dcache_line_bytes, P.dcache_bytes))
    assert d < len(calls) < 4 * d
    assert r.s_cycles == HAND + (N - 1 - d) * _issue(n) + P.scalar_dispatch_cycles
    assert r.s_stall == r.s_cycles - N * HAND


def canon(records: list) -> list:
    """Records with each EventHandle (compared by identity) replaced by its order of first appearance."""
    seen: dict[int, int] = {}

    def h(x):
        return ("handle", seen.setdefault(id(x), len(seen))) if type(x) is EventHandle else x

    out = []
    for r in records:
        if type(r) in (SetFlag, WaitFlag):
            r = (type(r).__name__, r.event, h(r.id))
        elif type(r) is FetchEventID:
            r = ("FetchEventID", r.event, h(r.handle))
        out.append(r)
    return out


def _phases(L: int, repeats: bool, dk=128, dv=128):
    x = make_inputs([L], 1, 1, dk, dv, seed=0)
    launch = build_launch(*args(x), numerics="off", ub_size=P.ub_bytes, aiv_num=P.aiv_num)
    return launch_phases_with(launch, PhaseRecorder(repeats=repeats))


def launch_phases_with(launch, recorder):
    from cgdr_des.kernel.program import core_program
    from cgdr_des.simulation import CompileStage

    for _ in core_program(launch, 0, stage=CompileStage(recorder)):
        pass
    return recorder.phases


@pytest.mark.slow
@pytest.mark.parametrize(("L", "dk", "dv"), [(1, 128, 128), (2, 128, 128), (3, 128, 128), (37, 128, 128),
                                            (64, 128, 128), (64, 63, 96), (19, 256, 64)])
def test_the_kernels_loops_compile_as_their_expansion(L, dk, dv):
    looped, flat = _phases(L, True, dk, dv), _phases(L, False, dk, dv)
    assert [canon(expand(p)) for p in looped] == [canon(p) for p in flat]   # it stands for the same records
    assert any(type(r) is Repeat for p in looped for r in p)
    fast, exact = PhaseCompiler(P), PhaseCompiler(P, exact_machine=True)
    for rep_form, records in zip(looped, flat, strict=True):
        assert canon(fast.compile(rep_form)) == canon(exact.compile(records))
        assert cache_state(fast.dcache) == cache_state(exact.dcache)


def test_launch_phases_without_repeats_by_default():
    x = make_inputs([64], 1, 1, 128, 128, seed=0)
    launch = build_launch(*args(x), numerics="off", ub_size=P.ub_bytes, aiv_num=P.aiv_num)
    assert not any(type(r) is Repeat for p in launch_phases(launch, [0]) for r in p)


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed, mixed, st.integers(0, 8), knobs)
def test_compile_falls_back_to_the_expansion_of_a_repeat_it_cannot_time(policy, pre, body, n, overrides):
    """A Repeat whose body holds a non-compute record, or that raises: the machine decides on the
    expanded records, exactly as it does for the same loop written out."""
    prof = load_profile("atlas-300i-duo", {**overrides, "flag_double_set": policy})
    records = [*pre, Repeat(n, lambda i: shifted(body, i)), *pre]
    fast, exact = PhaseCompiler(prof), PhaseCompiler(prof, exact_machine=True)
    assert canon(fast.compile(records)) == canon(exact.compile(expand(records)))
    assert cache_state(fast.dcache) == cache_state(exact.dcache)


def _declared(body: list, i: int, stride: int, exps: list[float]) -> list:
    """``body`` at iteration i: its ScalarGm addresses moved by ``stride * i``, its ScalarExp arguments
    taken from ``exps`` in turn (so hits, misses and exp costs vary from iteration to iteration)."""
    out, e = [], itertools.cycle(exps[i % len(exps):] + exps[:i % len(exps)])
    for r in shifted(body, i):
        if type(r) is ScalarGm:
            r = ScalarGm(r.addr + stride * i, r.nbytes, r.store)
        elif type(r) is Scalar and r.kind == "exp":
            r = scalar_exp_call(next(e))
        out.append(r)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, programs, st.integers(2, 80), st.sampled_from([0, 2, 8, 64, 200]),
       st.lists(st.sampled_from([0.5, 1.5, 3.0, 40.0]), min_size=1, max_size=3), st.booleans(), st.booleans(),
       knobs)
def test_repeats_declaring_gm_and_exp_time_as_their_expansion(policy, pre, body, n, stride, exps, nest, lead,
                                                              overrides):
    """Iterations that hit and miss differently, and whose ScalarExp costs differ: extrapolated only
    over iterations that match the steady one, or (``lead``: every ScalarExp call at the head of the
    body, as UpdateAndWriteState's token loop has it) that are the steady one delayed, so still
    exactly the expansion's numbers and cache."""
    prof = load_profile("atlas-300i-duo", {**overrides, "flag_double_set": policy})
    if lead:
        body = [Scalar("ub_load", 2), scalar_exp_call(1.0),
                *(r for r in body if not (type(r) is Scalar and r.kind == "exp"))]

    def it(i):
        return _declared(body, i, stride, exps)

    def gm(i):
        return tuple((r.addr, r.nbytes, r.store) for r in it(i) if type(r) is ScalarGm)

    def exp(i):
        return tuple((r.alu, r.div) for r in it(i) if type(r) is Scalar and r.kind == "exp")

    rep = Repeat(n, it, gm, exp)
    records = [*pre, Repeat(3, lambda i: [*pre, rep]) if nest else rep, *pre]
    got, expanded, machine = timed_both(prof, records)
    assert got == expanded
    if got[0] != "raises":
        assert got == machine


def test_scalarexp_costs_that_vary_in_the_lead_are_extrapolated_as_delays():
    """UpdateAndWriteState's token loop: a ScalarExp at the head of each iteration, its cost varying
    with its argument, then V work gated by S. V has caught up before the ScalarExp ends, so every
    iteration is the steady one delayed by its own ScalarExp: a few walked, and the expansion's numbers."""
    arg = [0.5, 3.0, 40.0, 1.5, 12.0]
    calls = [scalar_exp_call(a) for a in arg]
    assert len({(c.alu, c.div) for c in calls}) > 2

    def it(i):
        return [Scalar("ub_load", 2), calls[i * 7 % 5], SetFlag("S_V", 0), WaitFlag("S_V", 0), vec("Axpy", 128),
                PipeBarrier("V")]

    def exp(i):
        return ((calls[i * 7 % 5].alu, calls[i * 7 % 5].div),)

    walked: list = []
    rep = Repeat(300, lambda i: walked.append(i) or it(i), exp=exp)
    got = time_compute_run([rep], P, DataCache(P.dcache_line_bytes, P.dcache_bytes))
    assert len(walked) < 10
    assert got == time_compute_run(expand([rep]), P, DataCache(P.dcache_line_bytes, P.dcache_bytes))


accesses = st.lists(st.tuples(st.integers(0, 600), st.integers(0, 80), st.booleans()), max_size=40)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(accesses, accesses, st.sampled_from([64, 128, 256, 4096]))
@example([], [(0, 1, False), (64, 0, False)], 4096)     # a 0-byte access at the end of the previous line
def test_the_data_cache_helpers_agree_with_access(warm, batch, capacity):
    """pattern is access() in turn; hit_all touches like access() when all hit and leaves the cache
    alone otherwise; restore() puts back a state() in place."""
    def fresh():
        dc = DataCache(64, capacity)
        for addr, nb, _ in warm:
            dc.access(addr, nb)
        return dc

    ref, dc = fresh(), fresh()
    lines_obj, saved = dc.lines, dc.state()
    assert tuple(dc.pattern(batch)) == tuple(ref.access(a, nb) for a, nb, _ in batch)
    assert cache_state(dc) == cache_state(ref)
    dc.restore(saved)
    assert dc.lines is lines_obj and cache_state(dc) == cache_state(fresh())
    before, all_hit = cache_state(dc), all(fresh().pattern(batch))
    assert dc.hit_all(batch) == all_hit
    assert cache_state(dc) == (cache_state(ref) if all_hit else before)


def test_a_scalar_only_loop_adds_its_declared_costs_without_walking():
    """Scalar reads along a row: S alone, so each iteration costs its own hit or miss plus the rest
    of its scalar work; closed form: one miss per 64-byte line, hits elsewhere."""
    n = 100                                   # 2-byte reads at 0, 2, ..., 198: lines 0-3

    def body(i):
        return [ScalarGm(2 * i, 2, False), Scalar("alu")]

    rep, calls = counted(n, body)
    rep = Repeat(n, rep.body, gm=lambda i: ((2 * i, 2, False),))
    dc = DataCache(P.dcache_line_bytes, P.dcache_bytes)
    r = time_compute_run([vec(), rep], P, dc)
    lines = 200 // P.dcache_line_bytes + (200 % P.dcache_line_bytes > 0)
    want = HAND + lines * P.dcache_miss_cycles + (n - lines) * P.scalar_ub_load_cycles + n * P.scalar_alu_cycles
    assert r.s_cycles == want and (dc.hits, dc.misses) == (n - lines, lines)
    assert dict(r.counts)["scalar_gm_load"] == n and len(calls) <= 2
    assert timed_both(P, [vec(), rep])[0] == timed_both(P, expand([vec(), rep]))[0]
