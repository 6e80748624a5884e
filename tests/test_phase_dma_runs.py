"""A run of like DataCopy calls at ``phase`` fidelity: which calls merge, and how a merged run is timed.

``merge_dma_runs`` makes one Dma record (``repeat`` = k) of k like calls, but for the last
``queue_depth + 1``, kept apart so the scalar unit stalls on a full MTE queue as at ``instr``; a run
followed at once by PipeBarrier<ALL> (the state rows of Steps 3 and 7) is merged whole, as the scalar
unit waits there for the run's last byte whenever it handed the calls over. A merged run's bytes are
spread over what its calls would take one after the other (``burst_cap``), so alone it ends on the
cycle its last call would, and beside other cores it takes bandwidth as thinly as the calls do.
The expected cycles are the closed forms of docs/timing.md: each call pays its overhead and
latency, then its bytes at the core's peak rounded up to a whole cycle.
"""

from __future__ import annotations

import math

import pytest
from test_hw_support import dma, dma_cycles, run

from cgdr_des.hw import load_profile
from cgdr_des.hw.phase import merge_dma_runs
from cgdr_des.isa import PipeBarrier, Scalar

P = load_profile("atlas-300i-duo")
ROW = 512           # one state row: 128 fp32
SINGLES = P.queue_depth + 1


def _rows(k: int, read: bool = True) -> list:
    return [dma("GM2UB" if read else "UB2GM", ROW, gm_addr=i * 4096, ub_addr=i * ROW) for i in range(k)]


def test_a_run_before_pipe_barrier_all_is_merged_whole():
    (burst, bar) = merge_dma_runs([*_rows(70), PipeBarrier("ALL")], SINGLES)
    assert burst.repeat == 70 and burst.nbytes == 70 * ROW and bar == PipeBarrier("ALL")


@pytest.mark.parametrize("after", [PipeBarrier("MTE2"), PipeBarrier("V"), Scalar("alu", 1), None])
def test_a_run_before_anything_else_keeps_its_last_calls_apart(after):
    tail = [] if after is None else [after]
    out = merge_dma_runs([*_rows(70), *tail], SINGLES)
    assert [r.repeat for r in out[:len(out) - len(tail)]] == [70 - SINGLES] + [1] * SINGLES


@pytest.mark.parametrize("read", [True, False])
@pytest.mark.parametrize("k", [2, 7, 64])
def test_a_merged_run_alone_ends_when_its_calls_would_one_after_the_other(k, read):
    (merged,) = merge_dma_runs(_rows(k, read), 0)
    for program in ([merged], _rows(k, read)):
        r = run([[*program, PipeBarrier("ALL")]])
        assert r.makespan == P.kernel_launch_cycles + P.scalar_dispatch_cycles + k * dma_cycles(P, ROW, read)


def test_eight_cores_in_lockstep_contend_call_by_call_and_not_merged():
    """What spreading a merged run's bytes gives up, bounded: eight cores copy 64 rows at once, in
    lockstep to the cycle, and wait at PipeBarrier<ALL>. Call by call (``instr``) every call's data
    phase meets the seven others' and moves at the bus's share, ``8 ROW / capacity`` cycles instead of
    ``ROW / peak``; merged, the runs take a sliver of the bus each and end as alone. Launches are not
    in lockstep to the cycle, and there the calls rarely meet (representative: +0.003 % from
    ``instr`` spread, +0.035 % with a merged run's bytes all at the peak after its latencies)."""
    program = [*_rows(64), PipeBarrier("ALL")]
    calls = run([program] * 8)
    merged = run([merge_dma_runs(program, SINGLES)] * 8)
    alone = P.kernel_launch_cycles + P.scalar_dispatch_cycles + 64 * dma_cycles(P, ROW, True)
    shared = 64 * (math.ceil(8 * ROW / P.gm_bytes_per_cycle) - math.ceil(ROW / P.dma_read_peak_per_cycle))
    for c, m in zip(calls.cores, merged.cores, strict=True):
        assert m["finish"] == alone
        assert alone + shared <= c["finish"] <= alone + shared + 8, (c["finish"], alone, shared)
