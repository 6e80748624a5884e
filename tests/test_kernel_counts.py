"""Instruction counts per (chunk, V-tile) against the count formulas of docs/kernel.md §5."""

from __future__ import annotations

from collections import Counter

import pytest
from kernel_cases import AIV_310P, UB_310P, args, inputs

from cgdr_des.isa import Dma, Scalar, Tag, record_kind
from cgdr_des.kernel.functional import build_launch
from cgdr_des.kernel.program import core_program


def chunk_counts(lengths, dk, dv, chunk, nk=1, nv=1):
    """Records of chunk ``chunk`` of core 0, per (phase, kind), Scalar weighted by count."""
    x = inputs(lengths, nk, nv, dk, dv, seed=0)
    launch = build_launch(*args(x), numerics="off", ub_size=UB_310P, aiv_num=AIV_310P)
    counts, tag = Counter(), None
    for rec in core_program(launch, 0):
        if type(rec) is Tag:
            tag = rec
        elif tag.chunk == chunk:
            counts[(tag.phase, record_kind(rec))] += rec.count if type(rec) is Scalar else 1
            if type(rec) is Dma:
                counts[("bytes", rec.pipe)] += rec.nbytes
    return counts, launch


def tri(n):
    return n * (n + 1) // 2


def expected(L, dk, cv, *, c, last):
    """The per-phase formulas of docs/kernel.md §5 (vector, sync, scalar and DMA columns)."""
    full, tail = divmod(dk, 64)
    dot = {"vec": 1 + (full > 0), "set_V_S": 1, "scalar_ub_load": full + tail + 1, "scalar_ub_store": 1}
    e = {
        "P1_LoadChunkKey": {"vec": 1, "barrier_V": 1, "dma_MTE2": 1},
        "P1b_GCumsum": {"scalar_ub_store": L, "scalar_gm_load": L},
        "P2_KBeta": {"vec": L, "set_V_S": 1, "set_S_V": L + 1, "scalar_gm_load": L},
        "P3_DecayExp": {"vec": 2 + 3 * L, "barrier_V": 2 + 3 * L, "set_V_S": 1, "scalar_ub_load": L},
        "P3.5_QCache": {"vec": 2, "barrier_V": 2, "dma_MTE2": 1},
        "P4a_DotFp32": {k: v * tri(L - 1) for k, v in dot.items()},
        "P4b_Recursion": {"vec": (L - 1) * (L - 2) // 2, "barrier_V": (L - 1) * (L - 2) // 2,
                          "set_S_V": L - 1, "set_V_S": 1,
                          "scalar_ub_load": tri(L - 1) + (L - 1) * (L - 2) // 2,
                          "scalar_ub_store": tri(L - 1) + L},
        "P4c_DotFp32": {k: v * tri(L) for k, v in dot.items()},
        "P5_KCumdecay": {"vec": 2 * L + tri(L), "set_S_V": L + tri(L), "set_V_S": 2,
                         "barrier_V": L + tri(L), "scalar_ub_load": L + tri(L)},
        "S1_LoadVBeta": {"vec": 1 + 2 * L, "barrier_V": 1 + 2 * L, "set_S_V": L, "set_V_S": 1,
                         "scalar_gm_load": L, "dma_MTE2": 1},
        "S2_ValueNew": {"vec": 1 + tri(L), "barrier_V": 1 + tri(L), "set_S_V": tri(L), "scalar_ub_load": tri(L)},
        "S4_VNew": {"vec": L * (dk + 3), "barrier_V": L * (dk + 3), "set_S_V": L * dk, "scalar_ub_load": L * dk},
        "S5_AttnInter": {"vec": L * (dk + 1), "barrier_V": L * (dk + 1), "set_S_V": L * dk,
                         "scalar_ub_load": L, "scalar_gm_load": L * dk},
        "S6_AccumOutput": {"vec": tri(L), "barrier_V": tri(L), "set_S_V": tri(L), "scalar_ub_load": tri(L)},
        "S6b_WriteOut": {"vec": 2, "barrier_V": 2, "dma_MTE3": 1},
    }
    e["S3_LoadState"] = ({"vec": 1, "barrier_V": 1, "barrier_ALL": 2, "dma_MTE2": dk} if c > 0 else
                         {"vec": 1, "barrier_V": 1, "scalar_gm_load": dk * cv, "scalar_ub_store": dk * cv,
                          "set_S_V": 1})
    s7 = {"vec": dk + L * dk, "barrier_V": dk + L * dk, "set_S_V": 1 + L * dk, "scalar_ub_load": 1 + 2 * L,
          "scalar_gm_load": L * dk, "scalar_exp": L}
    if last:
        s7 = {**s7, "vec": s7["vec"] + 2, "barrier_V": s7["barrier_V"] + 2, "set_V_S": 1,
              "scalar_ub_load": s7["scalar_ub_load"] + dk * cv, "scalar_gm_store": dk * cv}
    else:
        s7 = {**s7, "dma_MTE3": dk, "barrier_ALL": 2}
    e["S7_UpdateState"] = s7
    return e


def assert_matches(counts, exp):
    for phase, kinds in exp.items():
        for kind, n in kinds.items():
            assert counts[(phase, kind)] == n, (phase, kind, counts[(phase, kind)], n)
    for (phase, kind), n in counts.items():  # nothing counted that the formulas do not list
        if kind in ("vec", "barrier_V", "set_S_V", "set_V_S", "dma_MTE2", "dma_MTE3", "scalar_gm_load"):
            assert exp.get(phase, {}).get(kind, 0) == n, (phase, kind, n)


def test_l64_dk128_middle_chunk_equals_the_notes_table():
    counts, _ = chunk_counts([192], 128, 128, chunk=1)
    assert_matches(counts, expected(64, 128, 128, c=1, last=False))
    total = Counter()
    for (_, kind), n in counts.items():
        total[kind] += n
    # The "total" row of docs/kernel.md §5.x (L=64, dk=128, vStep=128, c > 0, not last).
    assert total["vec"] == 41867
    assert total["set_V_S"] == 4102
    assert total["set_S_V"] == 31073
    assert total["barrier_V"] == 33547
    assert (total["scalar_ub_load"], total["scalar_ub_store"]) == (31010, 6240)
    assert total["scalar_gm_load"] == 16576
    assert counts[("P4a_DotFp32", "set_V_S")] + counts[("P4c_DotFp32", "set_V_S")] == 64 * 64
    assert counts[("P4b_Recursion", "vec")] == 1953



def test_dma_bytes_of_a_middle_chunk():
    """K, Q, V tiles of L*128 fp16 and the fp32 state tile in; out tile and state out (§5.x)."""
    counts, _ = chunk_counts([192], 128, 128, chunk=1)
    assert counts[("bytes", "MTE2")] == 3 * 64 * 128 * 2 + 128 * 128 * 4 == 112 * 1024
    assert counts[("bytes", "MTE3")] == 64 * 128 * 2 + 128 * 128 * 4 == 80 * 1024


def test_l37_last_chunk():
    counts, _ = chunk_counts([101], 128, 128, chunk=1)
    assert_matches(counts, expected(37, 128, 128, c=1, last=True))


def test_dk96_first_chunk_reads_initial_state_by_scalar():
    counts, _ = chunk_counts([128], 96, 128, chunk=0)
    assert_matches(counts, expected(64, 96, 128, c=0, last=False))


@pytest.mark.parametrize("L", [1, 2, 3])
def test_tiny_last_chunks(L):
    counts, _ = chunk_counts([64 + L], 64, 64, chunk=1)
    assert_matches(counts, expected(L, 64, 64, c=1, last=True))


@pytest.mark.parametrize("dk", [64, 96])
def test_the_functional_run_tallies_every_record_of_every_core_once(dk):
    """``count_records`` (what run_functional and the op's counts use) against a plain tally of every
    core's records, record by record: per (phase, kind), Scalar weighted by count, DMA bytes per pipe
    (dk = 96: the scalar reads of the first chunk's state)."""
    from cgdr_des.kernel.functional import run_functional

    x = inputs([70, 9], 1, 1, dk, 64, seed=1)
    launch = build_launch(*args(x), numerics="off", ub_size=UB_310P, aiv_num=AIV_310P)
    want, phase = Counter(), ""
    for core in range(launch.block_dim):
        for rec in core_program(launch, core):
            if type(rec) is Tag:
                phase = rec.phase
                continue
            want[(phase, record_kind(rec))] += rec.count if type(rec) is Scalar else 1
            if type(rec) is Dma:
                want[(phase, "bytes_" + rec.pipe)] += rec.nbytes
    got = run_functional(build_launch(*args(x), numerics="off", ub_size=UB_310P, aiv_num=AIV_310P)).counts
    assert got == want and sum(want.values()) > 10_000
