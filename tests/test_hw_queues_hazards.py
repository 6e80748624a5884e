"""The issue queue (a SimPy resource of ``queue_depth`` slots) and the buffer-hazard log, unit by unit.

Expected hand-over cycles are written out from the rule's definition: an entry is issued at
``max(scalar ready, dequeue cycle of the entry depth places back) + dispatch``.
"""

from __future__ import annotations

import simpy

from cgdr_des.hw.hazards import Access, BufferLog, Timed
from cgdr_des.hw.queues import IssueQueue
from cgdr_des.hw.records import VEC

FIELDS = (VEC, None, None, 0, None, None)     # code, rec, span, idx, a, b


def test_hand_over_stamps_the_issue_cycle_from_the_ring():
    q = IssueQueue(simpy.Environment(), 2, 100)
    assert q.hand(FIELDS, 90, 3) == (103, 10)          # slot free at launch cycle 100: stall 10
    assert q.hand(FIELDS, 110, 3) == (113, 0)
    q.items.popleft()
    q.took(0, 200)                                     # entry 0 started at 200: its slot frees then
    assert q.hand(FIELDS, 150, 1) == (201, 50)
    assert [e.issue for e in q.items] == [113, 201] and q.n_push == 3


def test_a_macro_part_is_issued_its_offset_after_the_hand_over():
    q = IssueQueue(simpy.Environment(), 4, 0)
    q.hand(FIELDS, 10, 2, offset=7)
    assert q.items[0].issue == 19


def test_a_full_queue_makes_the_scalar_unit_wait_until_the_oldest_entry_starts():
    env = simpy.Environment()
    q = IssueQueue(env, 1, 0)
    got = []

    def scalar(env):
        q.hand(FIELDS, 0, 1)
        got.append((yield q.put(FIELDS, 5, 1)))         # full: accepted only when entry 0 leaves

    def pipe(env):
        yield env.timeout(0)
        assert len(q.put_queue) == 1 and not got
        q.items.popleft()
        q.took(0, 40)

    env.process(scalar(env))
    env.process(pipe(env))
    env.run()
    assert got == [(41, 35)] and len(q.items) == 1 and q.items[0].issue == 41


def test_an_empty_queue_makes_the_pipe_wait_for_the_next_hand_over():
    env = simpy.Environment()
    q = IssueQueue(env, 2, 0)
    seen = []

    def pipe(env):
        yield q.get()
        seen.append(len(q.items))                      # the entry stays queued for the pipe to take

    env.process(pipe(env))
    env.run()
    assert not seen and len(q.get_queue) == 1
    q.hand(FIELDS, 0, 1)
    env.run()
    assert seen == [1] and not q.get_queue


def _t(idx: int, start: int, end: int, pipe: str = "V") -> Timed:
    return Timed(idx, f"r{idx}", pipe, start, end)


def test_read_after_write_and_write_after_read_are_found_and_ordered_accesses_pass():
    log = BufferLog()

    class Rec:
        def __init__(self, reads=(), writes=()):
            self.reads, self.writes = reads, writes

    w0 = log.hand_over(Rec(writes=("L0C:0",)))
    r0 = log.hand_over(Rec(reads=("L0C:0",)))
    w1 = log.hand_over(Rec(writes=("L0C:0",)))
    assert (w0, r0, w1) == (Access((), (("L0C:0", 1),)), Access((("L0C:0", 1),), ()),
                            Access((), (("L0C:0", 2),)))
    log.executed(w0, _t(0, 0, 100, "M"))
    log.executed(r0, _t(1, 100, 130))
    log.executed(w1, _t(2, 130, 200, "M"))
    assert log.hazards() == []
    early = BufferLog()
    a, b, c = (early.hand_over(x) for x in (Rec(writes=("X",)), Rec(reads=("X",)), Rec(writes=("X",))))
    early.executed(a, _t(0, 0, 100, "M"))
    early.executed(b, _t(1, 50, 90))                   # reads before the write completed
    early.executed(c, _t(2, 80, 120, "M"))             # overwrites before the read completed
    found = early.hazards()
    assert len(found) == 2
    assert found[0].startswith("hazard: r1 on V (record #1) reads X from cycle 50") and "cycle 100" in found[0]
    assert found[1].startswith("hazard: r2 on M (record #2) overwrites X from cycle 80") and "cycle 90" in found[1]


def test_a_read_of_the_initial_contents_has_nothing_to_wait_for():
    log = BufferLog()

    class Rec:
        reads, writes = ("L1:0",), ()

    log.executed(log.hand_over(Rec()), _t(0, 0, 5))
    assert log.hazards() == []
