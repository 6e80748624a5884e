"""L2 hits of scalar GM reads (docs/timing.md §2.5): ``l2_scalar_hits``, ``l2_hit_cycles``, ``l2_bytes``.

A scalar read that misses the DCache costs ``l2_hit_cycles`` when every line it touches was moved by
an earlier DataCopy of the same core (and is still among that core's ``l2_bytes / aiv_num`` most
recent L2 lines), else ``dcache_miss_cycles``. Off by default: every miss to GM, as before.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_hw_support import rows, run

from cgdr_des.hw import Machine, load_profile
from cgdr_des.hw.dcache import L2_HIT, DataCache, L2Lines, data_cache, dma_gm_spans
from cgdr_des.hw.phase import PhaseCompiler
from cgdr_des.hw.rules import scalar_gm_l2
from cgdr_des.isa import DataCopyExtParams, DataCopyParams, Dma, ScalarGm
from cgdr_des.kernel.functional import build_launch
from cgdr_des.kernel.program import core_program
from cgdr_des.workload.tensors import make_inputs

P = load_profile()
ON = {"l2_scalar_hits": True}
#: four 64-byte blocks 1024 bytes apart: L2 lines (512 B) 0, 2, 4 and 6 only
STRIDED = Dma("GM2UB", 256, DataCopyParams(4, 2, 30, 0), 0, 0)


def test_the_rule_is_the_old_one_without_l2_and_an_l2_round_trip_with_it():
    for hit in (True, False):
        for store in (True, False):
            assert scalar_gm_l2(hit, False, store, 6, 4, 300, 50) == (300 if not hit else 4 if store else 6)
    assert scalar_gm_l2(False, True, False, 6, 4, 300, 50) == 50
    assert scalar_gm_l2(True, True, True, 6, 4, 300, 50) == 4        # a DCache hit never asks L2


def test_a_dma_s_gm_footprint_follows_its_strides():
    assert dma_gm_spans(STRIDED) == [(0, 64), (1024, 64), (2048, 64), (3072, 64)]
    write = Dma("UB2GM", 96, DataCopyExtParams(3, 32, 0, 100), 5000, 0)   # Ext: bytes, GM stride dst
    assert dma_gm_spans(write) == [(5000, 32), (5132, 32), (5264, 32)]


def test_l2_keeps_the_most_recently_moved_lines_of_its_capacity():
    l2 = L2Lines(512, 2 * 512)
    l2.moved([(0, 10), (512, 10), (0, 4)])      # line 0 moved again: line 1 is now the oldest
    l2.moved([(1024, 1)])
    assert l2.holds(0, 2) and l2.holds(1024, 2) and not l2.holds(512, 2)
    assert not l2.holds(1000, 100)               # spans lines 1 and 2: one is not resident


def _scalar_costs(program, **overrides) -> list[int]:
    return [d["end"] - d["start"] for d in rows(run([program], **overrides), pipe="S") if d["op"] == "gm_load"]


def test_scalar_reads_cost_an_l2_hit_only_on_lines_a_dma_moved():
    line = P.dcache_line_bytes
    reads = [ScalarGm(a, 2) for a in (0, 2, 512, 1024 + line, 3072, 8192)]
    prog = [STRIDED, *reads]
    hit, miss, l2 = P.scalar_ub_load_cycles, P.dcache_miss_cycles, P.l2_hit_cycles
    # 0: L2 line 0 moved; 2: same DCache line; 512: line 1 not moved; 1024+64: line 2 moved (its
    # block is 1024-1088, but L2 holds whole lines); 3072: line 6; 8192: never moved
    assert _scalar_costs(prog, **ON) == [l2, hit, miss, l2, l2, miss]
    assert _scalar_costs(prog) == [miss, hit, miss, miss, miss, miss]
    assert _scalar_costs(reads + [STRIDED], **ON) == [miss, hit, miss, miss, miss, miss]   # moved after


def test_a_core_s_share_of_l2_evicts_its_oldest_lines():
    share_lines = 4
    over = {**ON, "l2_bytes": share_lines * 512 * P.aiv_num}
    moves = [Dma("GM2UB", 512, DataCopyParams(1, 16, 0, 0), k * 512, 0) for k in range(share_lines + 1)]
    costs = _scalar_costs([*moves, ScalarGm(0, 2), ScalarGm(512, 2)], **over)
    assert costs == [P.dcache_miss_cycles, P.l2_hit_cycles]


def _kernel_programs(prof, lengths=(100, 30)):
    x = make_inputs(np.array(lengths), 1, 2, 64, 64, seed=1)
    launch = build_launch(*x.kwargs().values(), numerics="off", ub_size=prof.ub_usable_bytes, aiv_num=prof.aiv_num)
    return [core_program(launch, i) for i in range(launch.block_dim)]


@pytest.mark.slow
def test_on_the_kernel_the_scalar_unit_saves_exactly_its_l2_hits_times_the_difference():
    """Busy scalar time (stalls excluded) differs by l2_hits x (miss - hit cost) and by nothing else:
    the DCache's hits and misses do not depend on timing."""
    off, on = load_profile(), load_profile(overrides=ON)
    caches = {name: [data_cache(prof) for _ in range(8)] for name, prof in (("off", off), ("on", on))}
    runs = {name: Machine(prof, keep_ops=False).run(_kernel_programs(prof), dcaches=caches[name])
            for name, prof in (("off", off), ("on", on))}
    assert sum(c.l2_hits for c in caches["off"]) == 0
    saved = on.dcache_miss_cycles - on.l2_hit_cycles
    for core_off, core_on, cache in zip(runs["off"].cores, runs["on"].cores, caches["on"], strict=False):
        assert core_off["busy_S"] - core_on["busy_S"] == cache.l2_hits * saved
    assert sum(c.l2_hits for c in caches["on"]) > 100      # K and Q rows moved by MTE2, read by scalar
    assert runs["on"].makespan < runs["off"].makespan


def test_the_compiler_s_timer_and_the_machine_agree_with_l2():
    prof = load_profile(overrides=ON)
    reads = [ScalarGm(a, 2) for a in range(0, 4096, 64)]
    phase = [STRIDED, *reads, STRIDED]
    fast, exact = PhaseCompiler(prof), PhaseCompiler(prof, exact_machine=True)
    assert fast.compile(list(phase)) == exact.compile(list(phase))
    in_l2 = 4 * 512 // 64           # the DCache lines inside the four moved L2 lines
    assert (fast.dcache.hits, fast.dcache.misses, fast.dcache.l2_hits) == (0, 64, in_l2)
    assert (exact.dcache.hits, exact.dcache.misses, exact.dcache.l2_hits) == (0, 64, in_l2)


def test_outcomes_name_l2_hits():
    cache = DataCache(64, 1024, L2Lines(512, 4096))
    cache.moved(STRIDED)
    assert tuple(cache.pattern([(0, 2), (2, 2), (600, 2)])) == (L2_HIT, True, False)
    assert cache.pattern([(1024, 2), (7000, 2)]) == bytes([L2_HIT, 0])
