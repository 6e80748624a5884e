"""The record builders of kernel/emit.py: each AscendC idiom as the records the machine executes.

Builders that cache (scalar, vec, axpy_row) must hand back records equal to freshly built ones, so a
cache can never change what the machine sees; the slot-filled ScalarGm must equal the constructor's.
"""

from __future__ import annotations

import dataclasses

import pytest

from cgdr_des.isa import (
    HARD_EVENTS,
    DataCopyParams,
    Dma,
    EventHandle,
    FetchEventID,
    PipeBarrier,
    Scalar,
    ScalarGm,
    SetFlag,
    VecOp,
    WaitFlag,
    event_pipes,
    record_kind,
)
from cgdr_des.kernel import emit


def test_barriers_are_the_three_pipes_the_kernel_uses():
    assert (emit.PB_V, emit.PB_ALL, emit.PB_MTE3) == (PipeBarrier("V"), PipeBarrier("ALL"), PipeBarrier("MTE3"))


@pytest.mark.parametrize("event", HARD_EVENTS)
def test_tque_sync_is_a_set_then_wait_on_id_0(event):
    """TQueSync<SRC, DST>: SetFlag enters SRC, WaitFlag DST, always on the fixed id 0."""
    setf, waitf = emit.TQUE_SYNC[event]
    assert (setf, waitf) == (SetFlag(event, 0), WaitFlag(event, 0))
    src, dst = event_pipes(event)
    assert event == f"{src}_{dst}"


def test_s_v_and_v_s_pairs():
    assert emit.S_V == (SetFlag("S_V", 0), WaitFlag("S_V", 0))
    assert emit.V_S == (SetFlag("V_S", 0), WaitFlag("V_S", 0))
    assert [record_kind(r) for r in emit.V_S] == ["set_V_S", "wait_V_S"]


@pytest.mark.parametrize("kind, count", [("alu", 1), ("ub_load", 7), ("ub_store", 64), ("div", 3)])
def test_scalar_is_cached_and_equal_to_a_fresh_record(kind, count):
    rec = emit.scalar(kind, count)
    assert rec == Scalar(kind, count) and rec.arg == 0.0
    assert emit.scalar(kind, count) is rec


def test_scalar_constants():
    assert (emit.UB_LOAD, emit.UB_STORE, emit.ALU) == (Scalar("ub_load"), Scalar("ub_store"), Scalar("alu"))


def test_vec_ub_ranges_are_element_counts_times_widths():
    rec = emit.vec("Axpy", 128, 4096, 8192)
    assert rec == VecOp("Axpy", "fp32", 128, (4096, 512), ((8192, 512),))
    assert emit.vec("Axpy", 128, 4096, 8192) is rec
    cast = emit.vec("Cast", 100, 0, 1000, src_bytes=2)
    assert cast.dst == (0, 400) and cast.srcs == ((1000, 200),)
    narrow = emit.vec("Cast", 100, 0, 1000, dst_bytes=2)
    assert narrow.dst == (0, 200) and narrow.srcs == ((1000, 400),)
    dup = emit.vec("Duplicate", 64, 256)
    assert dup.srcs == () and dup.dst == (256, 256)
    sub = emit.vec("Sub", 64, 0, 256, 512)
    assert sub.srcs == ((256, 256), (512, 256))


def test_vec_cache_keys_every_field():
    """Records differing in any argument are different records (a cache keyed too coarsely would not be)."""
    base = dict(op="Muls", n=64, dst=0)
    variants = [emit.vec(**base), emit.vec(**{**base, "n": 65}), emit.vec(**{**base, "dst": 32}),
                emit.vec(**base, dtype="fp16"), emit.vec("Muls", 64, 0, 32), emit.vec("Adds", 64, 0)]
    assert len({id(v) for v in variants}) == len(variants)
    assert len(set(variants)) == len(variants)


def test_axpy_row_steps_dst_and_src():
    row = emit.axpy_row(128, 1000, 5000, 512, 0, 4)
    assert row == tuple(VecOp("Axpy", "fp32", 128, (1000 + 512 * d, 512), ((5000, 512),)) for d in range(4))
    assert emit.axpy_row(128, 1000, 5000, 512, 0, 4) is row
    other = emit.axpy_row(64, 0, 256, 0, 256, 3)
    assert [(r.dst[0], r.srcs[0][0]) for r in other] == [(0, 256), (0, 512), (0, 768)]


def test_fetch_sync_shares_one_handle():
    """FetchEventID, SetFlag, WaitFlag on the event the fetch returns (resolved only at run time)."""
    out: list = []
    emit.fetch_sync(out, "MTE2_V")
    fetch, setf, waitf = out
    assert type(fetch) is FetchEventID and type(setf) is SetFlag and type(waitf) is WaitFlag
    assert fetch.event == setf.event == waitf.event == "MTE2_V"
    assert type(fetch.handle) is EventHandle and setf.id is fetch.handle and waitf.id is fetch.handle
    again: list = []
    emit.fetch_sync(again, "MTE2_V")
    assert again[0].handle is not fetch.handle  # every use fetches afresh


@pytest.mark.parametrize("addr, nbytes", [(0, 2), (2 * 1024 * 1024 + 6, 2), (123456, 4)])
def test_gm_load_and_store_equal_the_constructor(addr, nbytes):
    load, store = emit.gm_load(addr, nbytes), emit.gm_store(addr, nbytes)
    assert load == ScalarGm(addr, nbytes, False) and store == ScalarGm(addr, nbytes, True)
    assert type(load) is ScalarGm and dataclasses.asdict(load) == {"addr": addr, "nbytes": nbytes, "store": False}
    assert hash(load) == hash(ScalarGm(addr, nbytes, False))
    assert record_kind(load) == "scalar_gm_load" and record_kind(store) == "scalar_gm_store"


def test_dma_directions_and_pipes():
    params = DataCopyParams(4, 8, 0, 0)
    rd, wr = emit.dma_in(1024, params, 4096, 64), emit.dma_out(1024, params, 4096, 64)
    assert rd == Dma("GM2UB", 1024, params, 4096, 64) and wr == Dma("UB2GM", 1024, params, 4096, 64)
    assert (rd.pipe, wr.pipe) == ("MTE2", "MTE3")
