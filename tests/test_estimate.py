"""The memory and wall-time estimate (estimate.py) against counts and measurements made here.

Work items against a loop over sequences, chunks, heads and V-tiles; the time model's shape (more
tokens never cost less, each extra chunk item costs the same, the trace cap bounds the trace's
share, what is not written costs nothing); the ``instr`` row model against the records the kernel
really emits for a small launch (the module promises a factor of ~2); the memory estimate against
the peak RSS of a real ``cgdr-des run`` in a child process; the memory cap at its boundary; the
console formats at theirs. How close the time is to real runs is measured, not tested:
analysis/benchmarks/bench_estimate.py prints estimate / measured for every shipped scenario.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from kernel_cases import AIV_310P, UB_310P, args, inputs

from cgdr_des import estimate as es
from cgdr_des.errors import InputError
from cgdr_des.kernel.functional import build_launch, count_records
from cgdr_des.kernel.program import core_program
from cgdr_des.scenario import Scenario, validate_tiling

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


def rows_kept(lengths) -> bool:
    """Whether an instr run of ``lengths`` in SHAPE keeps its ops rows (records under the cap)."""
    tiles = -(-SHAPE["dv"] // SHAPE["v_step"])
    return es._instr_records(es.np.asarray(lengths), SHAPE["dk"]) * SHAPE["nv"] * tiles <= es.OPS_ROW_LIMIT


@settings(max_examples=60, deadline=None, derandomize=True)
@given(lengths=st.lists(st.integers(0, 5000), min_size=1, max_size=6), extra=st.integers(1, 3000),
       where=st.integers(0, 5), fidelity=st.sampled_from(["phase", "instr"]),
       numerics=st.sampled_from(["off", "kernel", "exact"]), split=st.booleans())
def test_more_tokens_never_cost_less_time_or_memory(lengths, extra, where, fidelity, numerics, split):
    more = list(lengths)
    more[where % len(more)] += extra
    kw = dict(SHAPE, numerics=numerics, fidelity=fidelity, split=split)
    a, b = es.estimate(lengths, **kw), es.estimate(more, **kw)
    # at instr, past the cap on kept rows, only spans are written and kept: a launch just past it
    # needs less memory and writing time than one just below, so compare on one side of the cap
    assume(fidelity == "phase" or rows_kept(lengths) == rows_kept(more))
    assert b.seconds >= a.seconds and b.items >= a.items and b.memory_bytes >= a.memory_bytes


@pytest.mark.parametrize("split", [False, True])
def test_phase_time_and_memory_are_a_fixed_cost_plus_the_same_amount_per_chunk_item(split):
    kw = dict(SHAPE, numerics="off", fidelity="phase", split=split, max_trace_events=10**9)
    runs = [es.estimate([64] * n, **kw) for n in (1, 2, 5, 9)]
    per_item = [(b.seconds - a.seconds) / (b.items - a.items) for a, b in zip(runs, runs[1:], strict=False)]
    assert per_item == pytest.approx([per_item[0]] * 3)
    mem = [(b.memory_bytes - a.memory_bytes) / (b.items - a.items) for a, b in zip(runs, runs[1:], strict=False)]
    assert mem == pytest.approx([mem[0]] * 3)
    fixed = runs[0].seconds - runs[0].items * per_item[0]
    assert fixed == pytest.approx(es.START_SECONDS + es.PLOT_SECONDS)  # a run of nothing still starts and plots


def test_split_v_tiles_cost_more_per_item_and_only_the_simulation_differs():
    kw = dict(SHAPE, numerics="kernel", fidelity="phase")
    one, split = es.estimate([300, 40], **kw), es.estimate([300, 40], **kw, split=True)
    assert split.seconds > one.seconds and split.memory_bytes == one.memory_bytes
    assert split.seconds - one.seconds == pytest.approx(
        one.items * (es.SPLIT_SECONDS_PER_ITEM - es.PHASE_SECONDS_PER_ITEM))


def test_the_trace_share_stops_growing_at_the_event_cap_and_what_is_not_written_costs_nothing():
    kw = dict(SHAPE, numerics="off", fidelity="phase")
    lengths = [64 * 600]  # 600 chunks x 4 heads x 2 tiles: far more events than the cap below
    full = es.estimate(lengths, **kw, max_trace_events=10**9)
    capped = es.estimate(lengths, **kw, max_trace_events=1000)
    bare = es.estimate(lengths, **kw, trace=False)
    no_plots = es.estimate(lengths, **kw, trace=False, plots=False)
    assert bare.seconds < capped.seconds < full.seconds
    assert capped.seconds - bare.seconds == pytest.approx(1000 * es.TRACE_SECONDS_PER_ROW)
    assert bare.seconds - no_plots.seconds == pytest.approx(es.PLOT_SECONDS)
    # the peak is the simulation's or the trace's, whichever is larger: a small trace adds nothing
    simulating = bare.items * es.PHASE_BYTES_PER_ITEM
    assert 1000 * es.TRACE_BYTES_PER_ROW < simulating < full.rows * es.TRACE_BYTES_PER_ROW
    assert bare.memory_bytes == capped.memory_bytes == no_plots.memory_bytes
    assert full.memory_bytes - bare.memory_bytes == full.rows * es.TRACE_BYTES_PER_ROW - simulating


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


def test_instr_time_grows_with_the_records_and_rows_past_the_cap_are_not_kept():
    kw = dict(SHAPE, nv=1, dv=64, v_step=64, numerics="off", fidelity="instr", trace=False, plots=False)
    rows = 10 * 64 * 64 + 29 * 64 * 64
    one, two = es.estimate([64], **kw), es.estimate([64, 64], **kw)
    assert one.rows == rows and two.rows == 2 * rows
    assert two.seconds - one.seconds == pytest.approx(rows * (es.INSTR_SECONDS_PER_RECORD + es.WRITE_SECONDS_PER_ROW))
    kept = es.BASE_BYTES + 64 * 4 + rows * es.INSTR_BYTES_PER_ROW + es.SPAN_BYTES_PER_ITEM
    assert one.memory_bytes == kept
    n_chunks = es.OPS_ROW_LIMIT // rows + 1  # just past the cap: only the spans stay
    big = es.estimate([64] * n_chunks, **kw)
    assert big.memory_bytes == es.BASE_BYTES + n_chunks * 64 * 4 + n_chunks * es.SPAN_BYTES_PER_ITEM


def test_a_study_scenario_says_the_tail_study_is_not_estimated():
    doc = {"name": "t", "shape": {"nk": 1, "nv": 1, "dk": 64, "dv": 64}, "workload": {"lengths": [70]}}
    plain = Scenario.from_dict(doc)
    study = Scenario.from_dict({**doc, "study": {"batches": 10}})
    assert es.scenario_estimate(plain, validate_tiling(plain)).note == ""
    line = es.scenario_estimate(study, validate_tiling(study)).line()
    assert "'cgdr-des tail' study is not estimated" in line


RUN_AND_MEASURE = """
import json, resource, subprocess, sys
proc = subprocess.run([sys.executable, "-m", "cgdr_des", "run", sys.argv[1], "--out", sys.argv[2]],
                      capture_output=True, text=True)
print(json.dumps({"rc": proc.returncode, "err": proc.stderr[-500:],
                  "rss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""


@pytest.mark.slow
def test_the_memory_estimate_is_within_a_factor_two_of_a_real_run_s_peak(tmp_path):
    doc = ('name = "mem"\n[shape]\nnk = 4\nnv = 4\ndk = 128\ndv = 128\n[workload]\nlengths = [700, 90]\n'
           '[sim]\nfidelity = "phase"\nnumerics = "kernel"\n')
    path = tmp_path / "mem.toml"
    path.write_text(doc)
    sc = Scenario.from_dict({"name": "mem", "shape": {"nk": 4, "nv": 4, "dk": 128, "dv": 128},
                             "workload": {"lengths": [700, 90]}, "sim": {"fidelity": "phase", "numerics": "kernel"}})
    est = es.scenario_estimate(sc, validate_tiling(sc))
    out = subprocess.run([sys.executable, "-c", RUN_AND_MEASURE, str(path), str(tmp_path / "o")],
                         capture_output=True, text=True, timeout=300)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["rc"] == 0, got["err"]
    assert got["rss"] / 2 <= est.memory_bytes <= 2 * got["rss"], (est.memory_bytes, got["rss"])


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
    assert es.Estimate(memory_bytes=3 * 2**29, seconds=90.0, items=4768).line(share=es.BUSY_SHARE) == line


def test_on_a_busy_machine_the_line_divides_the_time_by_the_share_of_a_core():
    line = es.Estimate(memory_bytes=3 * 2**29, seconds=90.0, items=4768).line(share=0.25)
    assert line == ("estimate   ~1.5 GiB peak memory, ~6.0 min on this busy machine (~1.5 min of CPU; "
                    "25% of a core free now) (4,768 chunk items)")


def test_the_share_of_a_core_is_cpu_time_over_wall_time_of_a_busy_loop(monkeypatch):
    assert 0 < es.cpu_share(0.01) <= 1.0
    clock = {"wall": 0.0}

    def wall():
        clock["wall"] += 0.01
        return clock["wall"]

    monkeypatch.setattr("time.perf_counter", wall)
    monkeypatch.setattr("time.process_time", lambda: 0.4 * clock["wall"])  # another job takes 60 % of the core
    assert es.cpu_share(0.05) == pytest.approx(0.4)


@pytest.mark.parametrize("text", ["", "G", "-1G", "4X", "1.2.3M", "0", "0.0001"])
def test_bad_sizes_are_one_line_input_errors(text):
    with pytest.raises(InputError) as info:
        es.parse_size(text, field="--max-memory")
    assert info.value.field == "--max-memory" and "\n" not in str(info.value)
