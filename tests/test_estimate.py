"""The memory and wall-time estimate (estimate.py) against counts made here.

Work items against a loop over sequences, chunks, heads and V-tiles; the ``instr`` row model against
the records the kernel really emits for a small launch (the module promises a factor of ~2); the
memory cap at its boundary; the console formats at theirs.
"""

from __future__ import annotations

from collections import Counter

import pytest
from kernel_cases import AIV_310P, UB_310P, args, inputs

from cgdr_des import estimate as es
from cgdr_des.errors import InputError
from cgdr_des.kernel.functional import build_launch, count_records
from cgdr_des.kernel.program import core_program

SHAPE = {"nk": 2, "nv": 4, "dk": 64, "dv": 256, "v_step": 128, "ub_rest_bytes": 65536}


def items_by_loop(lengths, nv, dv, v_step) -> int:
    n = 0
    for seq in lengths:
        for _chunk in range(0, seq, 64):
            for _head in range(nv):
                n += len(range(0, dv, v_step))
    return n


@pytest.mark.parametrize("lengths", [[1], [64], [65], [100, 0, 300], [2048, 7, 129]])
@pytest.mark.parametrize("fidelity", ["phase", "instr"])
def test_items_are_chunks_times_heads_times_v_tiles(lengths, fidelity):
    est = es.estimate(lengths, **SHAPE, numerics="kernel", fidelity=fidelity)
    assert est.items == items_by_loop(lengths, SHAPE["nv"], SHAPE["dv"], SHAPE["v_step"])


def test_phase_memory_and_time_grow_by_a_fixed_amount_per_item():
    one = es.estimate([64], **SHAPE, numerics="off", fidelity="phase")
    two = es.estimate([128], **SHAPE, numerics="off", fidelity="phase")
    extra_items = two.items - one.items
    tensors = 64 * SHAPE["nv"] * 4  # numerics off: the 64 extra tokens' g only
    assert two.memory_bytes - one.memory_bytes == extra_items * es.PHASE_BYTES_PER_ITEM + tensors
    assert two.seconds - one.seconds == pytest.approx(extra_items * es.PHASE_SECONDS_PER_ITEM)
    assert one.memory_bytes > es.BASE_BYTES


def emitted_records(lengths, dk, dv) -> int:
    x = inputs(lengths, 1, 1, dk, dv, seed=0)
    launch = build_launch(*args(x), numerics="off", ub_size=UB_310P, aiv_num=AIV_310P)
    counts: Counter = Counter()
    for core in range(launch.block_dim):
        count_records(core_program(launch, core), counts)
    return sum(v for (_, kind), v in counts.items() if not kind.startswith("bytes"))


@pytest.mark.parametrize("lengths, dk", [([64], 64), ([40], 128), ([64, 17], 64)])
def test_instr_rows_are_within_a_factor_two_of_the_records_emitted(lengths, dk):
    rows = es._instr_records(es.np.asarray(lengths), dk)
    real = emitted_records(lengths, dk, 64)
    assert real / 2 <= rows <= 2 * real


def test_instr_time_is_rows_over_the_measured_rate_and_rows_past_the_cap_are_not_kept():
    kw = dict(SHAPE, nv=1, dv=64, v_step=64)
    small = es.estimate([64], **kw, numerics="off", fidelity="instr")
    rows = 10 * 64 * 64 + 29 * 64 * 64
    assert small.seconds == pytest.approx(rows / es.INSTR_ROWS_PER_SECOND)
    kept = es.BASE_BYTES + 64 * 4 + rows * es.INSTR_BYTES_PER_ROW + es.SPAN_BYTES_PER_ITEM
    assert small.memory_bytes == kept
    n_chunks = es.OPS_ROW_LIMIT // rows + 1  # just past the cap: only the spans stay
    big = es.estimate([64] * n_chunks, **kw, numerics="off", fidelity="instr")
    assert big.memory_bytes == es.BASE_BYTES + n_chunks * 64 * 4 + n_chunks * es.SPAN_BYTES_PER_ITEM


def test_exact_numerics_need_more_memory_than_kernel_and_off_the_least():
    mem = {n: es.estimate([300, 40], **SHAPE, numerics=n, fidelity="phase").memory_bytes
           for n in ("off", "kernel", "exact")}
    assert mem["off"] < mem["kernel"] < mem["exact"]


def test_check_memory_refuses_only_above_the_cap():
    est = es.Estimate(memory_bytes=5 * 2**30, seconds=1.0, items=3)
    es.check_memory(est, 5 * 2**30)  # equal: allowed
    es.check_memory(est, None)       # no cap
    with pytest.raises(InputError, match="5.0 GiB") as info:
        es.check_memory(est, 5 * 2**30 - 1)
    assert info.value.field == "--max-memory"


@pytest.mark.parametrize("n", [0, 1, 1023, 1024, 1536, 2**20 - 1, 2**20, 3 * 2**30, 2**40, 5 * 2**50])
def test_format_bytes_picks_the_largest_unit_below_1024(n):
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    power = 0
    while power < 4 and n >= 1024 ** (power + 1):
        power += 1
    value, unit = es.format_bytes(n).split()
    assert unit == units[power]
    assert float(value) == pytest.approx(n / 1024**power, abs=0.5 if power == 0 else 0.05)


@pytest.mark.parametrize("seconds, want", [(0.0, "0.1 s"), (12.34, "12.3 s"), (59.9, "59.9 s"), (90, "1.5 min"),
                                           (3599, "60.0 min"), (5400, "1.5 h")])
def test_format_seconds(seconds, want):
    assert es._format_seconds(seconds) == want


def test_the_console_line_names_memory_time_and_items():
    line = es.Estimate(memory_bytes=3 * 2**29, seconds=90.0, items=4768).line()
    assert line == "estimate   ~1.5 GiB peak memory, ~1.5 min (4,768 chunk items)"


@pytest.mark.parametrize("text", ["", "G", "-1G", "4X", "1.2.3M", "0", "0.0001"])
def test_bad_sizes_are_one_line_input_errors(text):
    with pytest.raises(InputError) as info:
        es.parse_size(text, field="--max-memory")
    assert info.value.field == "--max-memory" and "\n" not in str(info.value)
