"""MachineRun contents: rows, spans, per-core accounting and counts, checked against what they must
be by definition (recomputed from the rows and the programs), on random multi-core programs."""

import gc
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hw_support import copy_compute_copy, machine

from cgdr_des.hw import CORE_KEYS, OP_COLUMNS, SPAN_COLUMNS
from cgdr_des.hw.machine import ROW_WIDTH
from cgdr_des.isa import PipeBarrier, Scalar, ScalarGm, SetFlag, Tag, VecOp, WaitFlag, record_kind

LAUNCH = machine().profile.kernel_launch_cycles


def _tile_program(seed_ops, n_tiles, buffer_num, in_b, out_b, extra):
    """A copy-compute-copy program with scalar work mixed in, ending with PipeBarrier<ALL>."""
    prog = []
    for rec in copy_compute_copy(n_tiles, buffer_num, in_b, out_b, seed_ops):
        prog.append(rec)
        if isinstance(rec, Tag):
            prog.extend(extra)
    return prog + [PipeBarrier("ALL")]


core_program = st.builds(
    _tile_program,
    st.lists(st.builds(VecOp, st.sampled_from(["Mul", "Exp", "Axpy"]), st.just("fp32"), st.integers(1, 3000)),
             min_size=1, max_size=3),
    st.integers(1, 5), st.integers(1, 2), st.sampled_from([32, 1024, 8192]), st.sampled_from([64, 4096]),
    st.lists(st.one_of(st.builds(Scalar, st.just("alu"), st.integers(0, 5)),
                       st.builds(ScalarGm, st.integers(0, 4096), st.just(4)),
                       st.just(SetFlag("V_S")), st.just(WaitFlag("V_S"))), max_size=3)
    .filter(lambda xs: sum(isinstance(x, SetFlag) for x in xs) == sum(isinstance(x, WaitFlag) for x in xs))
    .map(lambda xs: sorted(xs, key=lambda x: isinstance(x, WaitFlag))),      # sets before waits
)
chip = st.lists(core_program, min_size=1, max_size=4)


def _union(intervals) -> int:
    total, cov = 0, None
    for s, e in sorted(intervals):
        if cov is None or s >= cov:
            total, cov = total + e - s, e
        elif e > cov:
            total, cov = total + e - cov, e
    return total


def _work_intervals(ops, core, pipe, f):
    """Occupied intervals by definition: instructions whole, flags their flag cycles, barriers none."""
    out = []
    for r in ops:
        if r[0] != core or r[1] != pipe:
            continue
        op, s, e = r[2], r[8], r[9]
        if op.startswith(("SetFlag:", "WaitFlag:")):
            out.append((e - f, e))
        elif not op.startswith("PipeBarrier:"):
            out.append((s, e))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chip)
def test_rows_spans_accounting_and_counts_are_consistent(programs):
    m = machine(flag_double_set="counter")
    r = m.run(programs)
    f = m.profile.flag_cycles
    assert all(len(row) == len(OP_COLUMNS) for row in r.ops)
    assert all(LAUNCH <= row[8] <= row[9] for row in r.ops)
    for c, prog in enumerate(programs):
        stats = r.cores[c]
        assert set(stats) == set(CORE_KEYS) and stats["n_records"] == len(prog)
        assert stats["finish"] == max([LAUNCH] + [row[9] for row in r.ops if row[0] == c])
        for pipe in ("V", "MTE2", "MTE3"):
            assert stats[f"busy_{pipe}"] == _union(_work_intervals(r.ops, c, pipe, f))
            assert stats[f"busy_{pipe}"] <= stats["finish"]
        # the scalar unit is sequential and the program ends with PipeBarrier<ALL>
        assert stats["busy_S"] + stats["stall_S"] == stats["finish"] - LAUNCH
        expected_counts = Counter()
        phase = ""
        for rec in prog:
            phase = rec.phase if isinstance(rec, Tag) else phase
            expected_counts[(phase, record_kind(rec))] += rec.count if isinstance(rec, Scalar) else 1
        assert r.counts[c] == expected_counts
    # spans: one per Tag segment with ops; start/end are the min/max of its rows (labels are unique)
    by_label = {}
    for row in r.ops:
        key = (row[0], *row[3:8])
        s, e, n = by_label.get(key, (row[8], row[9], 0))
        by_label[key] = (min(s, row[8]), max(e, row[9]), n + 1)
    assert all(len(sp) == len(SPAN_COLUMNS) for sp in r.spans)
    assert {(sp[:6]): sp[6:] for sp in r.spans} == by_label
    dma_bytes = [(row[1], row[11]) for row in r.ops if row[2].startswith("DataCopy")]
    assert r.gm_bytes_read == sum(b for p, b in dma_bytes if p == "MTE2")
    assert r.gm_bytes_written == sum(b for p, b in dma_bytes if p == "MTE3")
    assert r.makespan == max(s["finish"] for s in r.cores)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chip)
def test_same_programs_give_identical_results_and_keep_ops_changes_only_ops(programs):
    m = machine(flag_double_set="counter")
    a, b = m.run(programs), m.run(programs)
    assert a.ops == b.ops and a.spans == b.spans and a.cores == b.cores and a.counts == b.counts
    lean = machine(flag_double_set="counter", keep_ops=False).run(programs)
    assert lean.ops == []
    assert (lean.spans, lean.cores, lean.counts, lean.makespan) == (a.spans, a.cores, a.counts, a.makespan)


def test_programs_are_pulled_lazily_once_in_order():
    pulled = []

    def program():
        for k in range(5):
            pulled.append(k)
            yield Scalar("alu", k)

    machine().run([program()])
    assert pulled == [0, 1, 2, 3, 4]


def test_records_before_any_tag_have_an_empty_phase():
    r = machine().run([[Scalar("alu"), Tag("P1", 1, 2, 3, 4), Scalar("alu")]])
    assert [row[3:8] for row in r.ops] == [("", -1, -1, -1, -1), ("P1", 1, 2, 3, 4)]
    assert [sp[1:6] for sp in r.spans] == [("", -1, -1, -1, -1), ("P1", 1, 2, 3, 4)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chip, st.booleans())
def test_op_columns_and_ops_are_the_compact_rows_with_their_span_labels(programs, tuples_first):
    """Each compact row ``(core, pipe, op, span, start, end, elements, bytes)`` the processes keep becomes
    one OP_COLUMNS row with its span's five labels in its place: by column in ``op_columns`` (what the ops
    frame is built from), as tuples in ``ops``, whichever is read first."""
    r = machine().run(programs)
    want = [(c, p, op, s.phase, s.batch, s.head, s.vtile, s.chunk, a, b, el, nb)
            for c, p, op, s, a, b, el, nb in zip(*[iter(r.op_rows)] * ROW_WIDTH, strict=True)]
    if tuples_first:
        assert r.ops == want
    cols = r.op_columns()
    assert list(cols) == list(OP_COLUMNS)
    assert list(zip(*cols.values(), strict=True)) == want == r.ops


def test_read_rows_are_freed_by_reference_counting_not_left_to_the_cyclic_collector():
    """Once the ops are read (``op_columns``, as the ops frame is built) and the run dropped, no row is left:
    the cores' processes form reference cycles only the cyclic collector frees, and a row list they held
    kept every row and span of a run alive (and walked by each collection) until one ran."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        r = machine().run([copy_compute_copy(6, 2, 1024, 4096, [VecOp("Mul", "fp32", 512)]) for _ in range(3)])
        span = r.op_rows[3]
        assert len(r.op_rows) > 50 * ROW_WIDTH
        r.op_columns()
        del r
        assert not [o for o in gc.get_referrers(span) if isinstance(o, list)], "a row list outlived the run"
    finally:
        if was_enabled:
            gc.enable()
