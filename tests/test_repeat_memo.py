"""A plain Repeat met again in a relative state met before takes the first meeting's outcome
(cgdr_des.hw.repeat_memo): every field of the run's timing must be what walking it gives (the timer
with the memo off) and what the expanded loop gives, on random bodies met after random gaps, on gaps
that leave V's cycles above, at and below S's clock, and on the kernel's launches.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hw_compute_run import OPS, POLICIES, SCALAR_COST, _pair, event, flag_id, knobs, programs
from test_hw_repeat import shifted
from test_hw_support import vec

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.hw import load_profile, repeat_memo
from cgdr_des.hw.compute_run import ComputeRunTimer, time_compute_run
from cgdr_des.hw.dcache import DataCache
from cgdr_des.isa import PipeBarrier, Repeat, Scalar, ScalarGm, SetFlag, VecOp, WaitFlag, expand

P = load_profile("atlas-300i-duo")

#: plain work: Scalar of fixed cost, VecOps, PipeBarrier<V> (no ScalarGm, no ScalarExp)
plain_work = st.one_of(
    st.builds(Scalar, st.sampled_from(sorted(SCALAR_COST) + ["div"]), st.integers(0, 4)),
    st.builds(lambda o, n: VecOp(o[0], o[1], n), st.sampled_from(OPS), st.integers(0, 2000)),
    st.just(PipeBarrier("V")),
)
plain_bodies = st.lists(st.one_of(plain_work.map(lambda r: [r]),
                                  st.builds(_pair, event, flag_id, st.lists(plain_work, max_size=3))),
                        min_size=1, max_size=6).map(lambda bs: [r for b in bs for r in b])


@contextlib.contextmanager
def memo(on: bool):
    """The timer with a fresh memo (``on``) or walking every Repeat; the setting restored after."""
    if on:
        repeat_memo._MEMOS.clear()
    before = ComputeRunTimer.memo_repeats
    ComputeRunTimer.memo_repeats = on
    try:
        yield
    finally:
        ComputeRunTimer.memo_repeats = before


def timing(prof, records: list):
    """The run's whole RunTiming, or "raises"."""
    try:
        return tuple(time_compute_run(records, prof, DataCache(prof.dcache_line_bytes, prof.dcache_bytes)))
    except KernelDiagnostic:
        return "raises"


def three_ways(prof, records: list) -> tuple:
    """(memo on, memo off, expanded records) and the memo's hits. With the memo on the run is timed
    twice: the second time every Repeat takes an outcome the first kept (as a calibration's later
    launches and chunk lengths do), and both timings must be the one returned."""
    with memo(True):
        on = timing(prof, records)
        hits = repeat_memo.memo_for(prof).hits
        assert timing(prof, records) == on
    with memo(False):
        off = timing(prof, records)
        expanded = timing(prof, expand(records))
    return on, off, expanded, hits


def widened(body: list) -> list:
    """``body`` with every VecOp 64 elements longer: another cost, the same records otherwise."""
    return [VecOp(r.op, r.dtype, r.n + 64, r.dst) if type(r) is VecOp else r for r in body]


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain_bodies, programs, programs, st.integers(2, 40), knobs)
def test_a_repeat_met_again_after_any_gap_times_as_walked_and_as_expanded(policy, body, gap1, gap2, n, overrides):
    prof = load_profile("atlas-300i-duo", {**overrides, "flag_double_set": policy})
    rep, other = Repeat(n, lambda i: shifted(body, i)), Repeat(n, lambda i: shifted(widened(body), i))
    records = [rep, *gap1, other, rep, *gap2, rep, Scalar("alu", 64), rep, other, Scalar("alu", 64), other]
    on, off, expanded, _ = three_ways(prof, records)
    assert on == off == expanded


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, programs, programs, st.integers(2, 40), st.integers(2, 4), st.booleans(), knobs)
def test_one_memo_shared_by_many_runs_times_each_as_expanded(policy, pre, body, post, n, n_outer, nest, overrides):
    """The memo as a process keeps it: one per profile, filled by every run before this one (the
    examples share the knobs' few values, so later ones meet outcomes earlier ones kept), nested
    Repeats included; each run is the expanded one walked without the memo."""
    prof = load_profile("atlas-300i-duo", {**overrides, "flag_double_set": policy})
    inner = Repeat(n, lambda i: shifted(body, i))
    records = [*pre, Repeat(n_outer, lambda i: [*post, inner, *pre]) if nest else inner, *post]
    with_memo = timing(prof, records)
    with memo(False):
        assert with_memo == timing(prof, expand(records))


CASES = {
    "scalar-bound": ([], [vec("Mul", 64)], []),        # V idle at each meeting
    "vector-bound": ([], [vec("Mul", 64 * 40)], []),   # V's cycles ahead of S's clock
    # ComputeKCumdecay's row loop: a UB read, S_V set by S and waited by V, an Axpy, a barrier
    "row loop": ([], [Scalar("ub_load"), SetFlag("S_V", 0), WaitFlag("S_V", 0), vec("Axpy", 64), PipeBarrier("V"),
                      vec("Add", 512)], []),
    # V consumes S_V behind a long op: the consume is still ahead of S's clock as the Repeat ends
    "late consume": ([], [SetFlag("S_V", 0), vec("Mul", 64 * 40), WaitFlag("S_V", 0)], []),
    # a set carried from one iteration into the next: a fire pending as the Repeat begins and ends,
    # S's own set firing exactly at S's clock
    "carried set": ([SetFlag("S_V", 1)], [WaitFlag("S_V", 1), vec("Add", 256), SetFlag("S_V", 1)],
                    [WaitFlag("S_V", 1)]),
    "carried V set": ([SetFlag("V_S", 0)], [WaitFlag("V_S", 0), vec("Add", 64 * 20), SetFlag("V_S", 0)],
                      [WaitFlag("V_S", 0)]),
}


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_gaps_across_v_s_clock_meet_the_memo_and_keep_every_field(case, policy):
    """The same Repeat after gaps of 0..60 scalar cycles: V's free, done and cover cycles, its
    consumes and pending fires sit above, at and below S's clock at the next meeting (what the key
    and the outcome tell apart); the memo is met and every field is the walked and the expanded one."""
    prof = load_profile("atlas-300i-duo", {"flag_double_set": policy})
    prelude, body, coda = CASES[case]
    met = 0
    for gap in range(0, 61, 3):
        rep = Repeat(40, lambda i: shifted(body, i))
        records = [*prelude, rep, Scalar("alu", gap), rep, Scalar("alu", gap), rep, Scalar("alu", gap + 1), rep, rep,
                   *coda]
        on, off, expanded, hits = three_ways(prof, records)
        assert on == off == expanded, gap
        met += hits
    assert met >= 20 or on == "raises"


def test_an_outcome_names_every_scalar_kind_of_its_body_even_at_count_0():
    """A run's counts name each Scalar kind it met, count 0 included: an outcome recorded where an
    earlier record had already named the kind must still name it where the Repeat is the first to
    (hypothesis found this one across examples sharing a memo)."""
    rep = Repeat(3, lambda i: [Scalar("ub_store", 0), vec()])
    with memo(True):
        timing(P, [Scalar("ub_store", 0), rep])           # recorded with the kind named before
        got = timing(P, [rep])                              # applied where it is not
    with memo(False):
        assert got == timing(P, [rep]) == timing(P, expand([rep]))
    assert ("scalar_ub_store", 0) in got[3]


def test_a_body_with_declared_or_scalar_gm_work_is_never_kept():
    """ScalarGm (the data cache) and ScalarExp (declared costs) make a Repeat's outcome depend on
    more than the relative state: such bodies are walked every time."""
    kinds = ComputeRunTimer(P).consts.scalar_kinds
    assert repeat_memo.body_costs([vec(), Scalar("alu")], kinds) is not None
    assert repeat_memo.body_costs([vec(), ScalarGm(0, 4, False)], kinds) is None
    assert repeat_memo.body_costs([vec(), Repeat(2, lambda i: [vec()])], kinds) is None
    rep = Repeat(5, lambda i: [ScalarGm(64 * i, 4, False), vec()])
    on, off, expanded, hits = three_ways(P, [rep, rep, rep])
    assert on == off == expanded and hits == 0


def test_a_full_memo_starts_afresh(monkeypatch):
    monkeypatch.setattr(repeat_memo, "LIMIT", 2)
    m = repeat_memo.RepeatMemo()
    for k in range(5):
        m.put(("k", k), None)
        assert len(m.outcomes) <= 2


@pytest.mark.slow
def test_kernel_launches_time_identically_with_and_without_the_memo():
    """Phase fidelity on a launch of every chunk kind (a sole short chunk, c == 0, middle and last
    chunks) on two profiles: every row of the items and cores frames is the same, and the memo is met."""
    import cgdr_des
    from cgdr_des.scenario import Scenario

    for profile, overrides in (("atlas-300i-duo", {}), ("atlas-a2-910b2", {"flag_double_set": "counter"})):
        sc = Scenario.from_dict({"name": "m", "hardware": {"profile": profile, "overrides": overrides},
                                 "shape": {"nk": 2, "nv": 4, "dk": 64, "dv": 64},
                                 "workload": {"lengths": [5, 150, 64, 33]},
                                 "sim": {"numerics": "off", "trace": False, "fidelity": "phase"}})
        frames = {}
        for on in (True, False):
            with memo(on):
                r = cgdr_des.simulate(sc)
                frames[on] = (r.items.to_csv(), r.cores.to_csv())
                if on:
                    assert repeat_memo.memo_for(load_profile(profile, overrides or None)).hits > 100
        assert frames[True] == frames[False], profile
