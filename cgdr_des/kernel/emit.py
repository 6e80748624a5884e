"""Record builders shared by the kernel functions: the AscendC idioms as instruction records.

Records are immutable, so the ones that do not depend on the chunk (barriers, fixed-id TQueSync
pairs, vector ops on fixed UB ranges) are built once and reused: the program emits ~150 000 records
per chunk and building each afresh would dominate the run time.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from cgdr_des.isa import (
    HARD_EVENTS,
    DataCopyParams,
    Dma,
    EventHandle,
    FetchEventID,
    PipeBarrier,
    Repeat,
    Scalar,
    ScalarGm,
    SetFlag,
    VecOp,
    WaitFlag,
)
from cgdr_des.numerics.scalar_exp import scalar_exp_work, scalar_exp_work_array

PB_V = PipeBarrier("V")
PB_ALL = PipeBarrier("ALL")
PB_MTE3 = PipeBarrier("MTE3")

#: ``TQueSync<SRC, DST> s; s.SetFlag(0); s.WaitFlag(0);`` for every HardEvent.
TQUE_SYNC = {ev: (SetFlag(ev, 0), WaitFlag(ev, 0)) for ev in HARD_EVENTS}
S_V = TQUE_SYNC["S_V"]
V_S = TQUE_SYNC["V_S"]

_SCALARS: dict[tuple[str, int], Scalar] = {}
_VECOPS: dict[tuple, VecOp] = {}


def scalar(kind: str, count: int = 1) -> Scalar:
    """``count`` scalar operations of ``kind`` (cached: the same few records recur everywhere)."""
    rec = _SCALARS.get((kind, count))
    if rec is None:
        rec = _SCALARS[(kind, count)] = Scalar(kind, count)
    return rec


UB_LOAD = scalar("ub_load")
UB_STORE = scalar("ub_store")
ALU = scalar("alu")


def vec(op: str, n: int, dst: int, *srcs: int, dtype: str = "fp32", dst_bytes: int = 4,
        src_bytes: int = 4) -> VecOp:
    """A count-form vector call on ``n`` elements writing UB byte ``dst`` and reading ``srcs``."""
    key = (op, n, dst, srcs, dtype, dst_bytes, src_bytes)
    rec = _VECOPS.get(key)
    if rec is None:
        rec = _VECOPS[key] = VecOp(
            op, dtype, n, (dst, n * dst_bytes), tuple((s, n * src_bytes) for s in srcs))
    return rec


@lru_cache(maxsize=4096)
def axpy_row(n: int, dst: int, src: int, dst_step: int, src_step: int, count: int) -> tuple[VecOp, ...]:
    """``count`` Axpy calls on ``n`` elements, the d-th writing ``dst + d * dst_step`` from ``src + d *
    src_step`` (cached: ComputeAttnInter and UpdateState ask for the same rows in every chunk)."""
    return tuple(vec("Axpy", n, dst + d * dst_step, src + d * src_step) for d in range(count))


def scalar_exp_call(arg: float) -> Scalar:
    """One ScalarExp(arg) on the scalar unit, with the ALU and division work it declares."""
    alu, div = scalar_exp_work(arg)
    return Scalar("exp", 1, arg, alu, div)


def scalar_exp_calls(args) -> list[Scalar]:
    """:func:`scalar_exp_call` of each of ``args`` (a row of a chunk's arguments), the work counted at once."""
    args = np.asarray(args, dtype=np.float64).ravel()
    alu, div = scalar_exp_work_array(args)
    return [Scalar("exp", 1, a, n, d) for a, n, d in zip(args.tolist(), alu.tolist(), div.tolist(), strict=True)]


def loop(core, out: list, n: int, body, gm=None, exp=None) -> None:
    """``for i in range(n): out += body(i)``; for the phase compiler one Repeat(n, body, gm, exp)
    instead, so its timer builds and times only a few iterations. ``body(i)`` must keep the Repeat
    contract (isa.Repeat: iterations differ in addresses, ``gm(i)``, and ScalarExp arguments,
    ``exp(i)``, only)."""
    if core.compress and n > 2:
        out.append(Repeat(n, body, gm, exp))
    else:
        for i in range(n):
            out += body(i)


def fetch_sync(out: list, event: str) -> None:
    """``SetFlag/WaitFlag<event>(pipe_->FetchEventID(event))``: the DMA three-step idiom."""
    h = EventHandle()
    out.append(FetchEventID(event, h))
    out.append(SetFlag(event, h))
    out.append(WaitFlag(event, h))


_NEW = object.__new__
_SET_ADDR, _SET_NBYTES, _SET_STORE = ScalarGm.addr.__set__, ScalarGm.nbytes.__set__, ScalarGm.store.__set__


def gm_load(addr: int, nbytes: int) -> ScalarGm:
    """``ScalarGm(addr, nbytes, False)`` filled through its slots: a frozen dataclass's __init__ costs
    3x more, and a chunk's first build makes ~50 000 of these (every address differs, so no cache)."""
    rec = _NEW(ScalarGm)
    _SET_ADDR(rec, addr)
    _SET_NBYTES(rec, nbytes)
    _SET_STORE(rec, False)
    return rec


def gm_store(addr: int, nbytes: int) -> ScalarGm:
    """A GlobalTensor SetValue of ``nbytes`` at GM byte ``addr``."""
    rec = _NEW(ScalarGm)
    _SET_ADDR(rec, addr)
    _SET_NBYTES(rec, nbytes)
    _SET_STORE(rec, True)
    return rec


def dma_in(nbytes: int, params: DataCopyParams, gm_addr: int, ub_addr: int) -> Dma:
    """A DataCopy GM -> UB (MTE2)."""
    return Dma("GM2UB", nbytes, params, gm_addr, ub_addr)


def dma_out(nbytes: int, params, gm_addr: int, ub_addr: int) -> Dma:
    """A DataCopy UB -> GM (MTE3)."""
    return Dma("UB2GM", nbytes, params, gm_addr, ub_addr)
