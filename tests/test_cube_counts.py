"""The Cube-era program's records counted against docs/kernel-cube.md §5 (per chunk, L = 64,
dk = dv = 128, Nv = 16, g present), its other buckets, its fallbacks' count formulas and the
pre-!1174 variant."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from cgdr_des.isa import (
    Dma,
    EventHandle,
    FetchEventID,
    L0cToUb,
    LoadData,
    Mmad,
    PipeBarrier,
    Repeat,
    Scalar,
    SetFlag,
    Tag,
    UbCopy,
    VecOp,
    WaitFlag,
)
from cgdr_des.isa import expand as expand_repeats
from cgdr_des.kernel.cube.launch import make_cube_launch
from cgdr_des.kernel.cube.program import core_program
from cgdr_des.kernel.launch import Shape
from cgdr_des.kernel.program import ReuseStage

KIB = 1024


def per_chunk(dk: int = 128, dv: int = 128, t: int = 192, nv: int = 16, ub: int = 253_952,
              version: str = "cube", g: bool = True) -> dict[int, Counter]:
    """Counts per chunk of head 0 on core 0 of a one-sequence launch."""
    shape = Shape(1, t, nv, nv, dk, dv, 1.0, g)
    launch = make_cube_launch(shape, np.array([t]), np.zeros((t, nv), np.float32) if g else None, None,
                              numerics="off", ub_size=ub, kernel_version=version)
    out: dict[int, Counter] = {}
    cur = None
    for rec in core_program(launch, 0):
        t_ = type(rec)
        if t_ is Tag:
            cur = out.setdefault(rec.chunk, Counter()) if rec.head == 0 and rec.chunk >= 0 else None
            continue
        if cur is None:
            continue
        cur[t_.__name__] += 1
        if t_ is Mmad:
            cur[("mmad", rec.m, rec.n, rec.k)] += 1
            cur["macs"] += rec.m * rec.n * rec.k
        elif t_ is Dma:
            cur["dma_" + rec.direction] += 1
            cur["bytes_" + rec.direction] += rec.nbytes
        elif t_ is PipeBarrier:
            cur["PB_" + rec.pipe] += 1
        elif t_ is SetFlag:
            cur["ev_" + rec.event] += 1
        elif t_ is Scalar:
            cur["S_" + rec.kind] += rec.count
        elif t_ in (LoadData, L0cToUb, UbCopy):
            cur["bytes_" + t_.__name__] += rec.nbytes
        elif t_ is VecOp:
            cur["vec_" + rec.op] += 1
    return out


@pytest.fixture(scope="module")
def d128():
    return per_chunk()


def test_mmads_by_shape(d128):
    """4 x (64,64,128), 4 x (64,128,128), 10 x (64,128,64), 8 x (32,32,32), 16 x (16,16,16): 11.86 M MACs.
    (The notes' total line says 44, but its own breakdown, its MAC total and its 42 M -> MTE1 events
    count 42.)"""
    c = d128[1]
    want = {(64, 64, 128): 4, (64, 128, 128): 4, (64, 128, 64): 10, (32, 32, 32): 8, (16, 16, 16): 16}
    assert {k[1:]: v for k, v in c.items() if isinstance(k, tuple)} == want
    assert c["Mmad"] == sum(want.values()) == c["ev_M_MTE1"]
    assert c["macs"] == sum(m * n * k * v for (m, n, k), v in want.items()) == 11_862_016


def test_middle_chunk_totals(d128):
    c = d128[1]
    assert c["VecOp"] == 2252 and c["PB_V"] == 341 and c["PB_ALL"] == 41
    assert (c["vec_Add"] - 7, c["vec_Duplicate"] - 12) == (1024, 379)  # 16-wide state Adds, triangle Dups
    assert (c["L0cToUb"], c["bytes_L0cToUb"]) == (13, 204 * KIB)
    assert (c["UbCopy"], c["bytes_UbCopy"]) == (448, 140 * KIB)
    assert (c["dma_GM2UB"], c["bytes_GM2UB"]) == (8, 150 * KIB)
    assert (c["dma_UB2GM"], c["bytes_UB2GM"]) == (48, 424 * KIB)
    assert (c["dma_GM2L1"], c["bytes_GM2L1"]) == (61, 388 * KIB)
    assert (c["LoadData"], c["bytes_LoadData"]) == (160, 388 * KIB)


def test_middle_chunk_events_and_scalar(d128):
    c = d128[1]
    literal = (c["ev_MTE2_MTE1"], c["ev_MTE1_M"], c["ev_M_MTE1"])
    fetched = tuple(c["ev_" + e] for e in ("M_V", "V_M", "V_MTE2", "MTE2_V", "MTE3_V", "V_MTE3", "MTE3_MTE2",
                                           "S_MTE2"))
    assert literal == (55, 43, 42)
    assert fetched == (13, 13, 8, 8, 20, 4, 2, 1)
    assert (c["ev_V_S"], c["ev_S_V"]) == (10, 6)
    # 44 hand-overs to MTE3: 25 EnQue/DeQue of an allocated tensor, 19 re-enqueues of a dequeued one
    assert (c["AllocTensor"], c["FreeTensor"], c["EnQue"], c["DeQue"], c["AllocEventID"]) == (27, 27, 44, 44, 0)
    assert (c["S_ub_load"], c["S_ub_store"], c["ScalarGm"]) == (194, 192, 0)


def test_first_and_last_chunk(d128):
    first, last = d128[0], d128[2]
    assert (first["VecOp"], first["PB_V"], first["PB_ALL"], first["bytes_GM2UB"]) == (2261, 343, 39, 118 * KIB)
    assert (last["VecOp"], last["PB_V"], last["PB_ALL"], last["bytes_UB2GM"]) == (2262, 344, 39, 392 * KIB)


@pytest.mark.parametrize(("d", "vec", "pa", "macs", "mte3", "l1"), [
    (64, 1230, 40, 4_521_984, 224 * KIB, 220 * KIB), (96, 1234, 40, 7_798_784, 318 * KIB, 300 * KIB)])
def test_other_buckets(d, vec, pa, macs, mte3, l1):
    c = per_chunk(dk=d, dv=d)[1]
    assert (c["VecOp"], c["PB_ALL"], c["macs"], c["bytes_UB2GM"], c["bytes_GM2L1"]) == (vec, pa, macs, mte3, l1)


def test_tail_chunk_runs_the_vector_path():
    """A chunk of L < 64 tokens: no Cube record; L² DotFp32 (each one WholeReduceSum at dk >= 64), the
    recursion's (L-1)(L-2)/2 Axpy, K_cd's L(L+1)/2 and the V-tile steps' Axpy chains."""
    L, dk = 40, 128
    c = per_chunk(t=64 + L)[1]
    tri = L * (L + 1) // 2
    assert c["Mmad"] == c["LoadData"] == c["L0cToUb"] == c["dma_GM2L1"] == 0
    assert c["vec_WholeReduceSum"] == L * L
    axpy = (L - 1) * (L - 2) // 2 + tri + tri + L * dk + L * dk + tri + L * dk
    assert c["vec_Axpy"] == axpy
    assert c["Scalar"] and c["ScalarGm"] == L * dk  # the state update's K reads


@pytest.mark.slow
def test_small_ub_puts_the_128_bucket_on_the_vector_path():
    """240 KiB of UB: vStep 112 < dv, so two V-tile items per head, each its own vector chunk."""
    c = per_chunk(ub=240 * 1024, t=128)[1]
    assert c["Mmad"] == 0 and c["vec_WholeReduceSum"] == 2 * 64 * 64


@pytest.mark.slow
def test_dk_beyond_the_buckets_keeps_only_the_blocked_inverse():
    c = per_chunk(dk=144, dv=96, t=128, nv=2)[1]  # vStep 96: the inverse gate holds
    assert {k[1:] for k in c if isinstance(k, tuple)} == {(16, 16, 16), (32, 32, 32)}
    assert c["Mmad"] == 24 and c["L0cToUb"] == 6


def test_pre1174_has_no_l0c_events(d128):
    pre = per_chunk(version="cube-pre1174")[1]
    assert pre["ev_M_V"] == pre["ev_V_M"] == 0
    fixed = d128[1]
    assert pre["L0cToUb"] == fixed["L0cToUb"] == 13
    differ = ("ev_M_V", "ev_V_M", "FetchEventID", "SetFlag", "WaitFlag")
    same = {k: v for k, v in fixed.items() if k not in differ}
    assert {k: pre[k] for k in same} == same
    assert fixed["SetFlag"] - pre["SetFlag"] == 26


def test_compressed_loops_expand_to_the_same_records():
    """A stage that takes isa.Repeat gets the fallback loops compressed; expanded they are the records."""

    class RepeatStage(ReuseStage):
        repeats = True

    shape = Shape(1, 40, 2, 2, 64, 64, 1.0, True)
    launch = make_cube_launch(shape, np.array([40]), np.zeros((40, 2), np.float32), None, numerics="off")
    compressed = list(core_program(launch, 0, stage=RepeatStage()))
    assert any(type(r) is Repeat for r in compressed)
    assert _plain(expand_repeats(compressed)) == _plain(list(core_program(launch, 0)))


def _plain(records: list) -> list:
    """Records with their run-time event handles blanked (each build makes fresh handles)."""

    def norm(r):
        if type(r) is FetchEventID:
            return ("FetchEventID", r.event)
        if type(r) in (SetFlag, WaitFlag) and isinstance(r.id, EventHandle):
            return (type(r).__name__, r.event, "fetched")
        return r

    return [norm(r) for r in records]


def test_the_event_form_of_the_re_enqueue(monkeypatch):
    """The re-enqueue written as the flags TPipe inserts: 19 EnQue/DeQue pairs become 19 fetched-id
    V_MTE3 pairs, the other counts unchanged."""
    from cgdr_des.kernel.cube import blocks

    monkeypatch.setattr(blocks, "REENQUE_AS_EVENTS", True)
    c = per_chunk()[1]
    assert (c["AllocTensor"], c["EnQue"], c["DeQue"], c["AllocEventID"]) == (27, 25, 25, 19)
