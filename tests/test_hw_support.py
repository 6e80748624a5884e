"""Shared builders for the machine tests (``test_hw_*.py``): synthetic record programs and helpers.

Expected values in the tests are computed from profile fields with the closed forms written in the
tests themselves (cost formulas of docs/architecture.md §2 / docs/hardware.md), never from the machine's own
cost module.
"""

from __future__ import annotations

import math

from cgdr_des.hw import Machine, load_profile
from cgdr_des.isa import (
    AllocTensor,
    DataCopyParams,
    DeQue,
    Dma,
    EnQue,
    FreeTensor,
    InitBuffer,
    PipeBarrier,
    Tag,
    VecOp,
)

PROFILE = "atlas-300i-duo"


def machine(profile: str = PROFILE, keep_ops: bool = True, **overrides) -> Machine:
    return Machine(load_profile(profile, overrides or None), keep_ops=keep_ops)


def run(programs, profile: str = PROFILE, **overrides):
    """Run ``programs`` (one list per core) on ``profile`` with field overrides."""
    return machine(profile, **overrides).run([list(p) for p in programs])


def rows(result, pipe=None, op=None, core=None, **labels):
    """The ops rows as dicts, filtered by pipe / op (exact or prefix ending in ':') / core / labels."""
    cols = ("core", "pipe", "op", "phase", "batch", "head", "vtile", "chunk", "start", "end", "elements",
            "bytes")
    out = []
    for r in result.ops:
        d = dict(zip(cols, r, strict=True))
        if pipe is not None and d["pipe"] != pipe:
            continue
        if op is not None and not (d["op"] == op or (op.endswith(":") and d["op"].startswith(op))):
            continue
        if core is not None and d["core"] != core:
            continue
        if any(d[k] != v for k, v in labels.items()):
            continue
        out.append(d)
    return sorted(out, key=lambda d: (d["start"], d["end"]))


# ---------------------------------------------------------------- closed forms from profile fields


def vec_issue(p, op: str, dtype: str, n: int) -> int:
    return max(1, math.ceil(n / p.vec_width[op][dtype])) * p.vec_cycles_per_repeat[op]


def vec_latency(p, op: str, dtype: str) -> int:
    return p.vec_delay_cycles[op][dtype] + p.vec_pipe_delay_cycles


def dma_cycles(p, nbytes: int, read: bool, rate: float | None = None) -> int:
    """A lone DMA: first byte (latency + overhead) then the bytes at ``rate`` (default: the peak)."""
    if read:
        first, peak = p.dma_read_latency_cycles + p.dma_read_overhead_cycles, p.dma_read_peak_per_cycle
    else:
        first, peak = p.dma_write_latency_cycles + p.dma_write_overhead_cycles, p.dma_write_peak_per_cycle
    return first + math.ceil(nbytes / (rate or peak))


# ---------------------------------------------------------------- programs


def dma(direction: str, nbytes: int, gm_addr: int = 0, ub_addr: int = 0) -> Dma:
    return Dma(direction, nbytes, DataCopyParams(1, math.ceil(nbytes / 32), 0, 0), gm_addr, ub_addr)


def copy_compute_copy(n_tiles: int, buffer_num: int, in_bytes: int, out_bytes: int, vec_ops: list,
                      close_compute: bool = True):
    """The TPipe double-buffering pattern: CopyIn(i) -> Compute(i) -> CopyOut(i) through a VECIN and a
    VECOUT TQue of ``buffer_num`` buffers; ``vec_ops`` are separated by PipeBarrier<V>, and with
    ``close_compute`` one more barrier ends each compute. Tag chunk = i."""
    yield InitBuffer("inQ", "VECIN", buffer_num, in_bytes)
    yield InitBuffer("outQ", "VECOUT", buffer_num, out_bytes)
    for i in range(n_tiles):
        yield Tag("tile", 0, 0, -1, i)
        yield AllocTensor("inQ")
        yield dma("GM2UB", in_bytes, gm_addr=i * 65536)
        yield EnQue("inQ")
        yield DeQue("inQ")
        yield AllocTensor("outQ")
        for k, op in enumerate(vec_ops):
            if k:
                yield PipeBarrier("V")
            yield op
        if close_compute:
            yield PipeBarrier("V")
        yield EnQue("outQ")
        yield FreeTensor("inQ")
        yield DeQue("outQ")
        yield dma("UB2GM", out_bytes, gm_addr=(1 << 30) + i * 65536)
        yield FreeTensor("outQ")


def vec(op: str = "Mul", n: int = 128, dtype: str = "fp32") -> VecOp:
    return VecOp(op, dtype, n)


def test_rows_helper_filters_by_prefix():
    r = run([[vec(), PipeBarrier("V"), vec("Add")]])
    assert [d["op"] for d in rows(r, pipe="V", op="PipeBarrier:")] == ["PipeBarrier:V"]
    assert len(rows(r, pipe="V")) == 3
