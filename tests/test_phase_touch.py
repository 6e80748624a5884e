"""The per-core data cache's array path (:func:`cgdr_des.hw.phase.touch`,
:meth:`DataCache.pattern_of`) against the access-by-access walk it replaces (:func:`touch_walk`,
:meth:`DataCache.pattern`, itself tested against :meth:`DataCache.access` in test_hw_repeat.py).

Truth is the walk: for random mixes of explicit ScalarGm records, GmRows and GmStrided loops, loops declaring
their accesses as tuples and DataCopy calls (with and without L2 tracking), both must give the same
outcome bytes and leave the same cache: lines in LRU order, hit, miss and L2-hit counters, the last
miss's ``in_l2`` and the L2 lines.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cgdr_des
from cgdr_des.hw import gm_traffic
from cgdr_des.hw.dcache import DataCache, L2Lines
from cgdr_des.hw.phase import PhaseCompiler, touch, touch_walk
from cgdr_des.isa import DataCopyParams, Dma, GmRows, GmStrided, Repeat, Scalar, ScalarGm
from cgdr_des.scenario import Scenario


def _state(dc: DataCache) -> tuple:
    l2 = None if dc.l2 is None else list(dc.l2.lines)
    return list(dc.lines), dc.hits, dc.misses, dc.l2_hits, dc.in_l2, l2


def _cache(capacity: int, l2: bool) -> DataCache:
    return DataCache(64, capacity, L2Lines(512, 4096) if l2 else None)


addr = st.integers(0, 3000)
scalar_gm = st.builds(ScalarGm, addr, st.integers(0, 140), st.booleans())
rows = st.builds(lambda n, start, count, step, nbytes, stride, store: Repeat(
    n, lambda i: [Scalar("alu")],
    gm=GmRows(lambda i, s=start, c=count, d=step, k=stride: range(s + k * i, s + k * i + c * d, d), nbytes, store)),
    st.integers(0, 6), addr, st.integers(0, 40), st.sampled_from([1, 2, 4, 64, 100]), st.integers(1, 8),
    st.sampled_from([-130, 0, 70, 256]), st.booleans())
ragged = st.builds(lambda n, base: Repeat(n, lambda i: [Scalar("alu")],
                                          gm=GmRows(lambda i, b=base: range(b, b + 2 * (i % 3), 2), 2, False)),
                   st.integers(1, 6), addr)
tuples = st.builds(lambda n, base, nb: Repeat(
    n, lambda i: [Scalar("alu")], gm=lambda i, b=base, k=nb: ((b + 3 * i, k, False), (b + 90 * i, 2, True))),
    st.integers(0, 5), addr, st.integers(0, 70))
strided = st.builds(lambda n, start, step, nbytes, store: Repeat(n, lambda i: [Scalar("alu")],
                                                                 gm=GmStrided(start, step, nbytes, store)),
                    st.integers(0, 70), addr, st.sampled_from([-2, 0, 2, 6, 64]), st.integers(1, 8), st.booleans())
dma = st.builds(lambda a, blocks: Dma("GM2UB", 64 * blocks, DataCopyParams(blocks, 2, 1, 0), a, 0), addr,
                st.integers(1, 4))
records = st.lists(st.one_of(scalar_gm, rows, ragged, tuples, strided, dma, st.just(Scalar("alu"))), max_size=25)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(records, records, st.sampled_from([64, 256, 1024, 4096]), st.booleans())
def test_touch_by_arrays_is_the_walk(warm, batch, capacity, l2):
    """Same outcome bytes and the same cache afterwards, after a warm-up through the walk."""
    ref, mine = _cache(capacity, l2), _cache(capacity, l2)
    touch_walk(ref, warm)
    touch_walk(mine, warm)
    assert touch(mine, batch) == touch_walk(ref, batch)
    assert _state(mine) == _state(ref)


def test_a_row_loop_reads_one_line_in_32_and_counts_every_access():
    """A GmRows loop of 2-byte reads along 64-byte lines: one miss per line, every access counted."""
    rep = Repeat(4, lambda i: [], gm=GmRows(lambda i: range(1000 * i, 1000 * i + 256, 2), 2, False))
    dc = _cache(4096, False)
    got = touch(dc, [rep])
    line_starts = [k for k in range(4 * 128) if (1000 * (k // 128) + 2 * (k % 128)) % 64 == 0 or k % 128 == 0]
    assert len(got) == 4 * 128 and [k for k, o in enumerate(got) if o == 0] == line_starts
    assert (dc.hits, dc.misses) == (4 * 128 - len(line_starts), len(line_starts))


def test_the_last_miss_s_l2_answer_survives_a_later_hit_across_lines():
    """``in_l2`` is the last miss's: a miss found in L2, then a hit on two lines, leaves it True."""
    warm = [ScalarGm(64, 2, False), ScalarGm(128, 2, False)]          # lines 1, 2: misses, not in L2
    batch = [Dma("GM2UB", 512, DataCopyParams(1, 16, 0, 0), 0, 0), ScalarGm(0, 2, False), ScalarGm(120, 16, False)]
    ref, mine = _cache(1024, True), _cache(1024, True)
    for dc in (ref, mine):
        touch_walk(dc, warm)
    assert touch(mine, batch) == touch_walk(ref, batch) == bytes([2, 1])
    assert _state(mine) == _state(ref) and mine.in_l2 is True


@pytest.mark.slow
@pytest.mark.parametrize("profile, shape, lengths, policy, l2", [
    ("atlas-a2-910b2", {"nk": 1, "nv": 2, "dk": 64, "dv": 256}, [70, 3, 130], "round_robin", False),
    ("atlas-300i-duo", {"nk": 1, "nv": 1, "dk": 64, "dv": 256}, [100, 66], "round_robin", True)])
def test_a_split_launch_s_frames_are_those_of_the_walk(monkeypatch, profile, shape, lengths, policy, l2):
    """Whole launches that split V-tiles (per-core caches): every frame equal, cycle for cycle."""
    overrides = {**({"flag_double_set": "counter"} if profile.startswith("atlas-a2") else {}), "l2_scalar_hits": l2}
    sc = Scenario.from_dict({"name": "t", "hardware": {"profile": profile, "overrides": overrides}, "shape": shape,
                             "workload": {"lengths": lengths}, "kernel": {"policy": policy},
                             "sim": {"numerics": "off", "trace": False, "fidelity": "phase"}})
    fast = cgdr_des.simulate(sc)
    monkeypatch.setattr(PhaseCompiler, "walk_accesses", True)
    exact = cgdr_des.simulate(sc)
    assert fast.meta["block_dim"] > 1 and (fast.items["vtile"] >= 0).any()     # split tiles on several cores
    for name in ("items", "cores", "summary"):
        pd.testing.assert_frame_equal(getattr(fast, name), getattr(exact, name))
    pd.testing.assert_frame_equal(fast.ops, exact.ops)


def test_restore_takes_a_snapshot_back_in_place():
    """snapshot() (tuples) and state() (copies) restore the same cache, into the same dict objects."""
    dc = _cache(512, True)
    moved = Dma("GM2UB", 256, DataCopyParams(2, 2, 1, 0), 0, 0)
    touch_walk(dc, [moved, *(ScalarGm(64 * k, 2, False) for k in range(12))])
    lines, l2_lines, before = dc.lines, dc.l2.lines, _state(dc)
    saved, copied = dc.snapshot(), dc.state()
    for back in (saved, copied):
        touch_walk(dc, [ScalarGm(64 * k, 2, False) for k in range(40, 50)])
        dc.restore(back)
        assert dc.lines is lines and dc.l2.lines is l2_lines and _state(dc)[:4] == before[:4]
        assert _state(dc)[5] == before[5]


def test_lookups_decided_together_keep_the_walk_s_order():
    """Eight resident lines read out of order all hit and end up most recent in that order; then
    ten lines never seen all miss and evict the oldest: as the walk does."""
    warm = [ScalarGm(64 * k, 2, False) for k in range(16)]
    hits = [ScalarGm(64 * k, 2, False) for k in (15, 3, 7, 1, 9, 11, 13, 5, 0)]
    misses = [ScalarGm(64 * k, 2, False) for k in range(100, 110)]
    ref, mine = _cache(64 * 20, False), _cache(64 * 20, False)
    for batch in (warm, hits, misses):
        assert touch(mine, batch) == touch_walk(ref, batch)
        assert _state(mine) == _state(ref)
    assert list(mine.lines)[:4] == [14, 15, 3, 7] and (mine.hits, mine.misses) == (9, 26)   # 2..12 evicted


@pytest.mark.parametrize("capacity", [256, 2048, 8192])
def test_row_loops_agree_with_the_walk_batch_after_batch(capacity):
    """Rows of 2-byte reads re-read, overlapping and evicting, batch after batch: outcomes and cache
    equal at every step (lookups decided together and one by one alike)."""
    rng = np.random.default_rng(5)
    ref, mine = _cache(capacity, False), _cache(capacity, False)
    for _ in range(60):
        starts = rng.choice(np.arange(0, 40_000, 128), size=rng.integers(1, 12))
        batch = [Repeat(len(starts), lambda i: [], gm=GmRows(lambda i, s=starts: range(int(s[i]), int(s[i]) + 256, 2),
                                                             2, False))]
        assert touch(mine, batch) == touch_walk(ref, batch)
        assert _state(mine) == _state(ref)
    assert 0 < ref.misses < ref.hits


contiguous = st.builds(lambda n, starts, count, nbytes, store: Repeat(
    n, lambda i: [Scalar("alu")],
    gm=GmRows(lambda i, s=starts, c=count, k=nbytes: range(s[i % len(s)], s[i % len(s)] + c * k, k), nbytes, store)),
    st.integers(1, 6), st.lists(st.integers(0, 600), min_size=1, max_size=4), st.integers(1, 70),
    st.sampled_from([1, 2, 4, 8, 64, 3]), st.booleans())
contiguous_strided = st.builds(lambda n, start, nbytes: Repeat(n, lambda i: [Scalar("alu")],
                                                               gm=GmStrided(start, nbytes, nbytes, False)),
                               st.integers(0, 200), addr, st.sampled_from([1, 2, 4, 8, 3]))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(contiguous, contiguous_strided, scalar_gm, dma), max_size=12),
       st.sampled_from([64, 512, 4096]), st.booleans())
def test_contiguous_rows_kept_one_access_a_line_are_the_walk(batch, capacity, l2):
    """Rows and strided loops of contiguous accesses, which :func:`touch` keeps one access per line of
    (aligned or not, rows meeting in a line or not, next to single accesses and DataCopy calls): the
    walk's outcome bytes and cache, the left-out accesses counted as hits; through the cache's array
    path and through its walk alike (``SMALL_BLOCKS``: below it, few accesses take the walk)."""
    ref = _cache(capacity, l2)
    want = touch_walk(ref, batch)
    for small in (0, 10**6):
        mine = _cache(capacity, l2)
        with _small_blocks(small):
            assert touch(mine, batch) == want
        assert _state(mine) == _state(ref)


@contextmanager
def _small_blocks(n: int):
    old, gm_traffic.SMALL_BLOCKS = gm_traffic.SMALL_BLOCKS, n
    try:
        yield
    finally:
        gm_traffic.SMALL_BLOCKS = old


access_lists = st.lists(st.tuples(st.integers(0, 1500), st.sampled_from([0, 1, 2, 3, 8, 64, 70, 200]), st.booleans()),
                        max_size=40)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(access_lists, access_lists, st.sampled_from([64, 128, 256, 1024]), st.booleans(), st.integers(0, 10 ** 6))
def test_pattern_if_is_pattern_on_a_match_and_nothing_otherwise(warm, batch, capacity, l2, where):
    """DataCache.pattern_if against pattern: on the outcomes pattern gives, True and the cache pattern
    leaves (lines in LRU order, counters, the last miss's in_l2); on outcomes differing in one access,
    False and the cache as it was. Capacities of one line up make evictions reach lines the batch
    itself touched."""
    ref, mine = _cache(capacity, l2), _cache(capacity, l2)
    for dc in (ref, mine):
        if dc.l2 is not None:
            dc.l2.moved([(a, n) for a, n, _ in warm[::2]])
        dc.pattern(warm)
    before = _state(mine)
    want = ref.pattern(batch)
    if batch:
        k = where % len(batch)
        wrong = want[:k] + bytes([(want[k] + 1) % 3]) + want[k + 1:]
        assert not mine.pattern_if(batch, wrong)
        assert _state(mine) == before
    assert not mine.pattern_if(batch, want + b"\x01") and _state(mine) == before
    assert mine.pattern_if(batch, want)
    assert _state(mine) == _state(ref)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(access_lists, st.integers(0, 1500), st.integers(-70, 140), st.integers(0, 90),
       st.sampled_from([0, 1, 2, 3, 4, 8, 64, 70, 200]), st.sampled_from([64, 128, 256, 1024]), st.booleans())
def test_pattern_row_is_pattern_of_the_row_s_accesses(warm, start, step, n, nbytes, capacity, l2):
    """DataCache.pattern_row against pattern on the row's accesses as tuples: the same outcome bytes,
    lines in LRU order, counters and in_l2, for steps below, at and above the access size (reads
    meeting in a line, overlapping, crossing lines, skipping lines; 0 and negative steps too)."""
    row = range(start, start + n * step, step) if step else range(start, start + n)
    ref, mine = _cache(capacity, l2), _cache(capacity, l2)
    for dc in (ref, mine):
        if dc.l2 is not None:
            dc.l2.moved([(a, k) for a, k, _ in warm[::2]])
        dc.pattern(warm)
    assert mine.pattern_row(row, nbytes) == ref.pattern([(a, nbytes) for a in row])
    assert _state(mine) == _state(ref)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(access_lists, st.integers(0, 1500), st.integers(-70, 140), st.integers(0, 90),
       st.sampled_from([0, 1, 2, 3, 4, 8, 64, 70, 200]), st.sampled_from([64, 128, 256, 1024]), st.booleans(),
       st.integers(0, 10 ** 6))
def test_row_goes_as_is_hit_all_or_pattern_if_of_the_row_s_accesses(warm, start, step, n, nbytes, capacity, l2,
                                                                     where):
    """DataCache.row_goes_as (a GmRows row read as a range, the phase compiler's test of each iteration
    it adds to a Repeat) against hit_all / pattern_if on the row's accesses as tuples, as the compiler
    asked before: the same answer and the same cache after (lines in LRU order, counters, in_l2), on
    the outcomes pattern gives and on outcomes differing in one access."""
    row = range(start, start + n * step, step) if step else range(start, start + n)
    accesses = [(a, nbytes) for a in row]
    probe = _cache(capacity, l2)
    if probe.l2 is not None:
        probe.l2.moved([(a, k) for a, k, _ in warm[::2]])
    probe.pattern(warm)
    right = probe.copy_of(probe.state()).pattern(accesses)
    wants = [right]
    if accesses:
        k = where % len(accesses)
        wants.append(right[:k] + bytes([(right[k] + 1) % 3]) + right[k + 1:])
    for want in wants:
        ref, mine = probe.copy_of(probe.state()), probe.copy_of(probe.state())
        asked = ref.hit_all(accesses) if want.count(1) == len(want) else ref.pattern_if(accesses, want)
        assert mine.row_goes_as(row, nbytes, want) == asked
        assert _state(mine) == _state(ref)


@settings(max_examples=60, deadline=None)
@given(access_lists, access_lists, st.booleans(), st.booleans())
def test_a_copy_or_scratch_of_a_saved_state_is_the_restored_cache_and_leaves_the_original(warm, more, l2, snap):
    """copy_of (a snapshot or a state, L2 lines its own) and scratch (a state, taken over): the lines,
    counters and L2 lines restore() would give, in a new object; the original cache stays as it is,
    whatever is then done to the copies (the phase compiler's scans from an earlier state)."""
    dc = _cache(256, l2)
    if dc.l2 is not None:
        dc.l2.moved([(a, k) for a, k, _ in warm[::2]])
    dc.pattern(warm)
    saved = dc.snapshot() if snap else dc.state()
    dc.pattern(more)
    now = _state(dc)
    ref = _cache(256, l2)
    ref.restore(saved)
    copies = [dc.copy_of(saved)] + ([] if snap else [dc.scratch(saved)])
    for other in copies:
        assert other is not dc and other.lines is not dc.lines
        assert _state(other)[:4] == _state(ref)[:4]
    assert _state(copies[0])[5] == _state(ref)[5]
    for other in copies:
        other.pattern(more[::-1] + warm)
    if copies[0].l2 is not None:
        copies[0].l2.moved([(0, 4096)])
    assert _state(dc) == now


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(access_lists, st.one_of(rows, ragged, tuples, strided), st.integers(0, 80), st.integers(0, 80),
       st.sampled_from([64, 256, 1024]), st.booleans())
def test_a_loop_s_declared_accesses_cost_at_once_what_they_cost_one_by_one(warm, rep, a, b, capacity, l2):
    """DeclaredCosts.gm_span (the iterations a scalar-only loop adds without walking them, GmRows and
    GmStrided loops through one DataCache.pattern_of call) against DeclaredCosts.gm iteration by
    iteration: the same cycles, and the cache after (lines in LRU order, counters, in_l2)."""
    from cgdr_des.hw import load_profile
    from cgdr_des.hw.compute_run import ComputeRunTimer

    declared = ComputeRunTimer(load_profile("atlas-300i-duo")).declared
    first, stop = sorted((a % (rep.n + 1), b % (rep.n + 1)))
    ref, mine = _cache(capacity, l2), _cache(capacity, l2)
    for dc in (ref, mine):
        if dc.l2 is not None:
            dc.l2.moved([(x, k) for x, k, _ in warm[::2]])
        dc.pattern(warm)
    want = sum(declared.gm(rep.gm, k, ref) for k in range(first, stop))
    assert declared.gm_span(rep.gm, first, stop, mine) == want
    assert _state(mine) == _state(ref)
