"""The scalar unit's bookkeeping against independent truth: counts per phase (kept in locals between
Tags), the data cache's hits against a plain LRU list, the ops labels of every kind of V entry, the
flag lookups' diagnostics, and a Macro handed over with room in the V queue timed like one handed
over after waiting for a slot.

Expected values come from the records the tests write and from profile fields, never from the
machine's own cost code.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hw_support import PROFILE, dma, dma_cycles, machine, rows, run, vec, vec_issue, vec_latency

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.hw import load_profile
from cgdr_des.hw.dcache import DataCache
from cgdr_des.isa import (
    AllocEventID,
    EventHandle,
    FetchEventID,
    Macro,
    PipeBarrier,
    Scalar,
    ScalarGm,
    SetFlag,
    Tag,
    WaitFlag,
)

# ----------------------------------------------------------------- counts per phase


def _expected_counts(program) -> dict:
    """(phase, kind) counts written out from the program: the phase is the last Tag's."""
    out, phase = {}, ""
    kinds = {"VecOp": "vec", "Scalar": None}
    for rec in program:
        name = type(rec).__name__
        if name == "Tag":
            phase = rec.phase
            key, n = "Tag", 1
        elif name == "PipeBarrier":
            key, n = "barrier_" + rec.pipe, 1
        elif name == "Scalar":
            key, n = "scalar_" + rec.kind, rec.count
        elif name == "Dma":
            key, n = "dma_" + ("MTE2" if rec.direction == "GM2UB" else "MTE3"), 1
        else:
            key, n = kinds[name], 1
        out[(phase, key)] = out.get((phase, key), 0) + n
    return out


phase_block = st.lists(st.sampled_from(["vec", "bar", "alu", "dma"]), max_size=8)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["A", "B", "C"]), phase_block), min_size=1, max_size=6))
def test_vector_ops_and_barriers_are_counted_in_the_phase_of_their_tag(blocks):
    """VecOp and PipeBarrier<V> counts wait in the scalar unit's locals until the next rare record
    (a Tag, a DMA) or the end: they must still land in the phase of the Tag they followed."""
    make = {"vec": lambda: vec(), "bar": lambda: PipeBarrier("V"), "alu": lambda: Scalar("alu", 2),
            "dma": lambda: dma("GM2UB", 512)}
    program = []
    for phase, kinds in blocks:
        program.append(Tag(phase))
        program.extend(make[k]() for k in kinds)
    got = run([program]).counts[0]
    assert {k: v for k, v in got.items() if v} == _expected_counts(program)


# ----------------------------------------------------------------- data cache against a plain LRU


class PlainLru:
    """A list of resident lines, most recent last: the textbook LRU the data cache must equal."""

    def __init__(self, line_bytes: int, n_lines: int) -> None:
        self.line_bytes, self.n_lines, self.lines = line_bytes, n_lines, []

    def access(self, addr: int, nbytes: int) -> bool:
        first, last = addr // self.line_bytes, (addr + max(nbytes, 1) - 1) // self.line_bytes
        hit = True
        for line in range(first, last + 1):
            if line in self.lines:
                self.lines.remove(line)
            else:
                hit = False
                if len(self.lines) == self.n_lines:
                    self.lines.pop(0)
            self.lines.append(line)
        return hit


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_data_cache_hits_exactly_where_a_plain_lru_does(seed):
    rng = random.Random(seed)
    cache, ref = DataCache(64, 64 * 8), PlainLru(64, 8)
    for _ in range(3000):
        addr = rng.randrange(0, 64 * 24)
        nbytes = rng.choice([0, 1, 2, 4, 8, 60, 64, 130])
        assert cache.access(addr, nbytes) == ref.access(addr, nbytes), (addr, nbytes)
    assert cache.hits + cache.misses == 3000
    assert list(cache.lines) == ref.lines


def test_scalar_gm_reads_cost_a_hit_or_a_miss_as_the_lru_says():
    p = load_profile(PROFILE)
    addrs = [0, 4, 64, 0, 4096, 8, 60]     # 60..63 is in line 0; 4096 is a new line
    program = [Tag("g"), *(ScalarGm(a, 4) for a in addrs)]
    ref = PlainLru(p.dcache_line_bytes, p.dcache_bytes // p.dcache_line_bytes)
    expected = [p.scalar_ub_load_cycles if ref.access(a, 4) else p.dcache_miss_cycles for a in addrs]
    got = [r["end"] - r["start"] for r in rows(run([program]), pipe="S", op="gm_load")]
    assert got == expected


# ----------------------------------------------------------------- ops labels of V entries


def test_every_kind_of_v_entry_gets_its_own_label_and_elements():
    program = [Tag("x"), vec("Mul", 256), PipeBarrier("V"), SetFlag("S_V", 1), WaitFlag("S_V", 1),
               SetFlag("V_S", 2), WaitFlag("V_S", 2)]
    v_rows = rows(run([program]), pipe="V")
    assert [(r["op"], r["elements"]) for r in v_rows] == [
        ("Mul", 256), ("PipeBarrier:V", 0), ("WaitFlag:S_V", 1), ("SetFlag:V_S", 2)]
    assert all(r["phase"] == "x" for r in v_rows)


# ----------------------------------------------------------------- flag lookups


@pytest.mark.parametrize("record, message", [
    (SetFlag("S_X", 0), "unknown HardEvent 'S_X'"),
    (WaitFlag("S_V", 9), "event id 9 outside 0..7"),
    (SetFlag("V_S", -1), "event id -1 outside 0..7"),
    (WaitFlag("S_V", EventHandle()), "event id not filled in"),
])
def test_a_flag_record_naming_no_flag_is_a_diagnostic_at_its_record(record, message):
    program = [Tag("x"), Scalar("alu"), record]
    with pytest.raises(KernelDiagnostic, match=message) as exc:
        run([program])
    assert "[core 0, record #2 (tag x" in str(exc.value)


# ----------------------------------------------------------------- Macro hand-over


def _macro(v_start: int, v_end: int, s_cycles: int) -> Macro:
    return Macro("m", s_cycles=s_cycles, v_start=v_start, v_end=v_end, counts=(("vec", 1),))


@pytest.mark.parametrize("depth", [1, 2, 8])
def test_a_macro_holds_v_for_its_span_whether_or_not_it_waited_for_a_slot(depth):
    """Each Macro's V part starts v_start cycles after its hand-over at the earliest and holds V for
    v_end - v_start cycles; the scalar unit is busy s_cycles after handing it over. With a queue of
    one slot every Macro after the first waits for the slot; the closed form is the same."""
    p = load_profile(PROFILE, {"queue_depth": depth})
    program = [Tag("m"), *(_macro(3, 50, 10) for _ in range(6))]
    r = machine(queue_depth=depth).run([program])
    v = rows(r, pipe="V")
    assert [x["end"] - x["start"] for x in v] == [47] * 6
    free = s = p.kernel_launch_cycles
    slots = [p.kernel_launch_cycles] * depth
    for k, row in enumerate(v):
        handed = max(s, slots[k % depth])        # the slot frees when entry k - depth starts
        start = max(free, handed + 3)
        assert row["start"] == start
        free, slots[k % depth] = start + 47, start
        s = handed + 10
    assert r.counts[0][("m", "vec")] == 6


# ----------------------------------------------------------------- PipeBarrier<ALL> and event ids


@pytest.mark.parametrize("busy", [(), ("V",), ("MTE2",), ("MTE3",), ("V", "MTE2"), ("V", "MTE2", "MTE3")])
def test_pipe_barrier_all_holds_the_scalar_unit_until_the_last_pipe_is_done(busy):
    """The scalar unit hands each pipe one instruction, reaches PipeBarrier<ALL> and waits for every
    pipe in turn; it goes on at the latest end among them (or at once with nothing in flight), and
    its next Scalar starts there."""
    p = load_profile(PROFILE)
    work = {"V": vec("Mul", 4096), "MTE2": dma("GM2UB", 8192), "MTE3": dma("UB2GM", 4096, gm_addr=1 << 20)}
    program = [Tag("x"), *(work[name] for name in busy), PipeBarrier("ALL"), Scalar("alu")]
    r = run([program])
    ends = [row["end"] for name in busy for row in rows(r, pipe=name) if not row["op"].startswith("PipeBarrier")]
    barrier = rows(r, pipe="S", op="PipeBarrier:ALL")[0]
    after = rows(r, pipe="S", op="alu")[0]
    assert barrier["end"] == max([barrier["start"], *ends])
    assert after["start"] == barrier["end"] and after["end"] == after["start"] + p.scalar_alu_cycles
    if "V" in busy:
        assert max(ends) >= rows(r, pipe="V")[0]["start"] + vec_issue(p, "Mul", "fp32", 4096) \
            + vec_latency(p, "Mul", "fp32")
    if busy == ("MTE2",):
        assert max(ends) - rows(r, pipe="MTE2")[0]["start"] == dma_cycles(p, 8192, read=True)


def test_fetch_event_id_costs_one_tpipe_call_and_reads_the_lowest_free_id():
    p = load_profile(PROFILE)
    first, second = EventHandle(), EventHandle()
    program = [Tag("x"), FetchEventID("S_MTE2", first), AllocEventID("S_MTE2", second),
               SetFlag("S_MTE2", second), WaitFlag("S_MTE2", second)]
    r = run([program])
    fetch = rows(r, pipe="S", op="FetchEventID:S_MTE2")[0]
    assert fetch["end"] - fetch["start"] == p.tpipe_call_cycles
    assert (first.id, second.id) == (0, 0)      # Fetch leaves id 0 free, Alloc then takes it
    assert r.counts[0][("x", "FetchEventID")] == 1


def test_fetch_event_id_with_every_id_allocated_is_a_diagnostic():
    n = load_profile(PROFILE).event_ids_per_hard_event
    program = [Tag("x"), *(AllocEventID("V_MTE2", EventHandle()) for _ in range(n)),
               FetchEventID("V_MTE2", EventHandle())]
    with pytest.raises(KernelDiagnostic, match=rf"event ids exhausted: FetchEventID<V_MTE2> with all {n} ids"):
        run([program])
