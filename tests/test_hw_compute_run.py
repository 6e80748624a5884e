"""The one-pass compute-run timer (``cgdr_des.hw.compute_run``) against the machine it replaces.

Every check compares the fast timer with ``PhaseCompiler(exact_machine=True)``, which runs the
machine alone on each run: the kernel's own compiled runs (shipped scenarios and chunk lengths), random
compute programs under each ``flag_double_set`` policy, whole-phase compilation with the runs cut by
other records, and closed forms of the profile fields.
"""

from __future__ import annotations

import math

import pytest
from conftest import SCENARIOS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernel_cases import args
from test_hw_reference import OPS, SCALAR_COST
from test_hw_support import dma, vec

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.hw import load_profile
from cgdr_des.hw.compute_run import ComputeRunTimer, time_compute_run
from cgdr_des.hw.dcache import DataCache
from cgdr_des.hw.phase import PhaseCompiler, PhaseRecorder, balanced, is_compute
from cgdr_des.isa import EventHandle, PipeBarrier, Scalar, ScalarGm, SetFlag, VecOp, WaitFlag
from cgdr_des.kernel.emit import scalar_exp_call
from cgdr_des.kernel.functional import build_launch
from cgdr_des.kernel.program import core_program
from cgdr_des.scenario import load_scenario
from cgdr_des.simulation import CompileStage
from cgdr_des.workload.tensors import make_inputs

P = load_profile("atlas-300i-duo")
FIELDS = ("s_cycles", "v_start", "v_end", "counts", "s_stall", "v_busy", "v_stall")
POLICIES = ("counter", "stall", "diagnostic")


# ---------------------------------------------------------------- helpers


def launch_phases(launch, cores) -> list[list]:
    cap = PhaseRecorder()
    stage = CompileStage(cap)
    for i in cores:
        for _ in core_program(launch, i, stage=stage):
            pass
    return cap.phases


def compute_runs(records: list) -> list[list]:
    """The maximal compute runs of ``records`` that phase fidelity times (two records or more, balanced)."""
    runs, run = [], []
    for rec in [*records, None]:
        if rec is not None and is_compute(rec):
            run.append(rec)
            continue
        if len(run) >= 2 and balanced(run):
            runs.append(run)
        run = []
    return runs


def cache_state(dc: DataCache) -> tuple:
    return list(dc.lines), dc.hits, dc.misses


def fields(m) -> tuple:
    return tuple(getattr(m, name) for name in FIELDS)


def assert_runs_agree(prof, phases) -> int:
    """Each run of ``phases`` in order: same numbers and same data cache after it, machine vs timer."""
    exact, timer = PhaseCompiler(prof, exact_machine=True), ComputeRunTimer(prof)
    dcache = DataCache(prof.dcache_line_bytes, prof.dcache_bytes)
    n = 0
    for records in phases:
        for run in compute_runs(records):
            assert fields(timer.time(run, dcache)) == fields(exact.machine_macro(run))
            assert cache_state(dcache) == cache_state(exact.dcache)
            n += 1
    return n


def assert_compiles_agree(prof, phases) -> None:
    fast, exact = PhaseCompiler(prof), PhaseCompiler(prof, exact_machine=True)
    for records in phases:
        assert fast.compile(records) == exact.compile(records)
        assert cache_state(fast.dcache) == cache_state(exact.dcache)
    assert (fast.compiled_runs, fast.kept_runs) == (exact.compiled_runs, exact.kept_runs)


# ---------------------------------------------------------------- the kernel's runs


def _scenario_phases(name: str, lengths: list[int]):
    sc = load_scenario(SCENARIOS / f"{name}.toml").with_changes({"workload": {"lengths": lengths}})
    s, w = sc.shape, sc.workload
    prof = load_profile(sc.hardware.profile, dict(sc.hardware.overrides))
    x = make_inputs(sc.lengths(), s.nk, s.nv, s.dk, s.dv, seed=w.seed, has_gamma=s.has_gamma)
    launch = build_launch(*x.kwargs().values(), numerics="off", ub_size=prof.ub_bytes, aiv_num=prof.aiv_num,
                          buffer_num=sc.kernel.buffer_num)
    return prof, launch_phases(launch, range(launch.block_dim))


@pytest.mark.slow
@pytest.mark.parametrize(("name", "lengths"), [("small", [64]), ("representative", [40]), ("low_head_dv256", [24])])
def test_shipped_scenario_runs_time_identically(name, lengths):
    prof, phases = _scenario_phases(name, lengths)
    assert assert_runs_agree(prof, phases) >= 10
    assert_compiles_agree(prof, phases)


@pytest.mark.slow
@pytest.mark.parametrize("L", [1, 2, 3, 37, 64])
def test_kernel_chunk_runs_time_identically(L):
    x = make_inputs([L], 1, 1, 128, 128, seed=0)
    launch = build_launch(*args(x), numerics="off", ub_size=P.ub_bytes, aiv_num=P.aiv_num)
    phases = launch_phases(launch, [0])
    assert assert_runs_agree(P, phases) >= 10
    assert_compiles_agree(P, phases)


@pytest.mark.parametrize("policy", ["stall", "diagnostic"])
def test_kernel_chunk_compiles_identically_under_other_double_set_policies(policy):
    """The kernel sets S_V again before V consumed it: runs that stall, or are diagnosed and kept."""
    x = make_inputs([3], 1, 1, 128, 128, seed=0)
    launch = build_launch(*args(x), numerics="off", ub_size=P.ub_bytes, aiv_num=P.aiv_num)
    assert_compiles_agree(load_profile("atlas-300i-duo", {"flag_double_set": policy}), launch_phases(launch, [0]))


# ---------------------------------------------------------------- random programs

scalar = st.one_of(
    st.builds(Scalar, st.sampled_from(sorted(SCALAR_COST) + ["div"]), st.integers(0, 4)),
    st.builds(scalar_exp_call, st.floats(-40, 40, width=32)),
    st.builds(ScalarGm, st.integers(0, 2048), st.integers(0, 130), st.booleans()),
)
work = st.one_of(
    scalar,
    st.builds(lambda o, n: VecOp(o[0], o[1], n), st.sampled_from(OPS), st.integers(0, 2000)),
    st.just(PipeBarrier("V")),
)
middle = st.lists(work, max_size=4)
event = st.sampled_from(["S_V", "V_S", "V_V"])
flag_id = st.integers(0, 1)


def _pair(ev, i, mid):
    return [SetFlag(ev, i), *mid, WaitFlag(ev, i)]


def _double(ev, i, mid1, mid2):
    """Two sets before their waits: legal as a counter, a stall or a deadlock, or a double set."""
    return [SetFlag(ev, i), *mid1, SetFlag(ev, i), *mid2, WaitFlag(ev, i), WaitFlag(ev, i)]


def _again(ev, i, mid1, mid2):
    """One flag set and waited twice in a row: the second set may come before V consumed the first."""
    return _pair(ev, i, mid1) + _pair(ev, i, mid2)


def _crossed(e1, e2, mid):
    return [SetFlag(e1, 0), SetFlag(e2, 1), *mid, WaitFlag(e1, 0), WaitFlag(e2, 1)]


block = st.one_of(
    work.map(lambda r: [r]),
    st.builds(_pair, event, flag_id, middle),
    st.builds(_double, event, flag_id, middle, middle),
    st.builds(_again, event, flag_id, middle, middle),
    st.builds(_crossed, event, event, middle),
)
programs = st.lists(block, min_size=1, max_size=30).map(lambda bs: [r for b in bs for r in b])
knobs = st.fixed_dictionaries({
    "queue_depth": st.integers(1, 6), "flag_cycles": st.integers(0, 3), "vec_api_scalar_cycles": st.integers(0, 5),
    "scalar_dispatch_cycles": st.integers(0, 2), "dcache_bytes": st.sampled_from([128, 256, 32768]),
})


def _outcome(fn):
    try:
        return fields(fn())
    except KernelDiagnostic:
        return "raises"


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, knobs, st.lists(st.integers(0, 2048), max_size=6))
def test_random_compute_programs_time_identically(policy, program, overrides, warm):
    prof = load_profile("atlas-300i-duo", {**overrides, "flag_double_set": policy})
    exact = PhaseCompiler(prof, exact_machine=True)
    dcache = DataCache(prof.dcache_line_bytes, prof.dcache_bytes)
    for addr in warm:                   # start both from the same non-empty cache
        dcache.access(addr, 4)
        exact.dcache.access(addr, 4)
    got = _outcome(lambda: time_compute_run(program, prof, dcache))
    want = _outcome(lambda: exact.machine_macro(program))
    assert got == want
    if got != "raises":
        assert cache_state(dcache) == cache_state(exact.dcache)


separator = st.sampled_from([dma("GM2UB", 256), PipeBarrier("ALL"), SetFlag("V_MTE2", 0), WaitFlag("V_MTE2", 0),
                             SetFlag("S_V", EventHandle()), PipeBarrier("MTE3")])
loose = st.one_of(block, separator.map(lambda r: [r]), st.builds(lambda e: [SetFlag(e, 0)], event),
                  st.builds(lambda e: [WaitFlag(e, 0)], event))
mixed = st.lists(loose, min_size=1, max_size=30).map(lambda bs: [r for b in bs for r in b])


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed, knobs)
def test_compile_with_the_timer_equals_compile_with_the_machine(policy, records, overrides):
    """Runs cut by other records, unbalanced runs and diagnostics: same output, counters and cache."""
    prof = load_profile("atlas-300i-duo", {**overrides, "flag_double_set": policy})
    assert_compiles_agree(prof, [records, records[::-1]])


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed, knobs)
def test_macro_falls_back_to_the_machine(policy, records, overrides):
    """Whatever the timer cannot answer (not compute, unbalanced, a diagnostic), macro asks the machine."""
    prof = load_profile("atlas-300i-duo", {**overrides, "flag_double_set": policy})
    fast, exact = PhaseCompiler(prof), PhaseCompiler(prof, exact_machine=True)
    assert _outcome(lambda: fast.macro(records)) == _outcome(lambda: exact.macro(records))
    assert cache_state(fast.dcache) == cache_state(exact.dcache)


# ---------------------------------------------------------------- closed forms and edge cases


def _issue(n):
    return max(1, math.ceil(n / P.vec_width["Mul"]["fp32"])) * P.vec_cycles_per_repeat["Mul"]


LAT = P.vec_delay_cycles["Mul"]["fp32"] + P.vec_pipe_delay_cycles
HAND = P.vec_api_scalar_cycles + P.scalar_dispatch_cycles      # scalar cycles per VecOp hand-over


def _time(run):
    return time_compute_run(run, P, DataCache(P.dcache_line_bytes, P.dcache_bytes))


def test_independent_vecops_scalar_bound():
    n, N = 64, 100                          # each issues within its hand-over: V keeps up with S
    assert _issue(n) <= HAND < _issue(n) + LAT
    r = _time([vec("Mul", n)] * N)
    assert (r.s_cycles, r.s_stall, r.v_start, r.v_stall) == (N * HAND, 0, HAND, 0)
    assert r.v_end == N * HAND + _issue(n) + LAT
    assert r.v_busy == r.v_end - r.v_start  # overlapping completions: one interval
    assert r.counts == (("vec", N),)


def test_independent_vecops_vector_bound_within_the_queue():
    n, N = 64 * 4 * HAND, P.queue_depth     # issue 4x the hand-over; the queue never fills
    r = _time([vec("Mul", n)] * N)
    assert (r.s_cycles, r.s_stall, r.v_start) == (N * HAND, 0, HAND)
    assert r.v_end == HAND + N * _issue(n) + LAT and r.v_busy == N * _issue(n) + LAT


def test_independent_vecops_vector_bound_with_a_full_queue():
    n, N, d = 64 * 4 * HAND, 200, P.queue_depth
    r = _time([vec("Mul", n)] * N)
    # the last hand-over waits for the entry d places back to start, at HAND + (N-1-d) issues
    assert r.s_cycles == HAND + (N - 1 - d) * _issue(n) + P.scalar_dispatch_cycles
    assert r.s_stall == r.s_cycles - N * HAND
    assert r.v_end == HAND + N * _issue(n) + LAT


@pytest.mark.parametrize("policy", POLICIES)
def test_a_set_after_a_late_consume(policy):
    """S sets S_V again before V, still busy, consumed the first set: fine, a stall, or a diagnostic."""
    prof = load_profile("atlas-300i-duo", {"flag_double_set": policy})
    run = [SetFlag("S_V"), VecOp("Exp", "fp32", 2000), WaitFlag("S_V"), SetFlag("S_V"), WaitFlag("S_V")]
    want = _outcome(lambda: PhaseCompiler(prof, exact_machine=True).macro(run))
    assert _outcome(lambda: time_compute_run(run, prof, DataCache(64, 4096))) == want
    assert (want == "raises") == (policy == "diagnostic")
    if policy == "stall":
        assert want[FIELDS.index("s_stall")] > 0


def test_a_run_that_is_not_all_compute_or_not_balanced_raises():
    for run in ([vec(), dma("GM2UB", 64)], [vec(), SetFlag("V_S")], [WaitFlag("S_V"), SetFlag("S_V")],
                [SetFlag("S_V", 8), WaitFlag("S_V", 8)], [VecOp("Nope", "fp32", 8)], [Scalar("exp", 1, math.inf)],
                # S waits V_S with nothing set, once with an S_V of the same id pending (a shortcut looking
                # at the flag S sets rather than the one it waits would pop an empty deque: tried, caught here)
                [Scalar("alu"), WaitFlag("V_S")], [SetFlag("S_V"), WaitFlag("V_S"), WaitFlag("S_V")]):
        with pytest.raises(KernelDiagnostic):
            _time(run)


def test_scan_stops_at_the_first_other_record():
    recs = [dma("GM2UB", 64), vec(), Scalar("alu"), SetFlag("S_V", EventHandle()), vec()]
    timing, stop = ComputeRunTimer(P).scan(recs, 1, DataCache(P.dcache_line_bytes, P.dcache_bytes))
    assert stop == 3 and timing.counts == (("scalar_alu", 1), ("vec", 1))
    assert ComputeRunTimer(P).scan(recs, 4, DataCache(64, 4096))[1] == len(recs)


def test_zero_count_scalars_are_counted_like_the_machine():
    run = [Scalar("alu", 0), vec(), Scalar("div", 2)]
    assert _time(run).counts == PhaseCompiler(P, exact_machine=True).macro(run).counts
