"""Instruction records: the contract between the kernel layer and the machine layer.

The kernel program (``cgdr_des.kernel``) yields these records in program order, one per AscendC call
that the scalar unit issues; the machine (``cgdr_des.hw``) executes them and gives each a start and an
end in integer core cycles. Records are plain data: no SimPy, no timing, no numbers of the delta rule.

Lifecycle of a record on the machine: *issued* by the scalar unit (in program order) -> *queued* in
its pipe's in-order queue (scalar records are executed by the scalar unit itself) -> *started* when
its pipe, barriers and flags allow -> *retired* at ``start + cost``.

Units: ``n`` is an element count, ``nbytes`` a byte count, UB offsets are byte offsets from the start
of the core's Unified Buffer, GM addresses are byte addresses in the simulated global memory.

Pipes are the strings ``S`` (scalar unit), ``V`` (vector), ``MTE2`` (GM -> UB), ``MTE3`` (UB -> GM);
``ALL`` names the barrier pseudo-pipe. HardEvents are the strings ``SRC_DST`` listed in
``HARD_EVENTS`` (``S_V``: the scalar unit sets, the vector pipe waits). The Cube side's pipes and
records are in :mod:`cgdr_des.isa_cube` and re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cgdr_des.isa_cube import (  # noqa: F401 -- the Cube side's records, re-exported from here
    CUBE_BARRIER_PIPES,
    CUBE_FRACTAL,
    CUBE_HARD_EVENTS,
    CUBE_PIPES,
    CUBE_RECORDS,
    FRACTAL_BYTES,
    L0cToUb,
    LoadData,
    Mmad,
    Nd2NzParams,
    UbCopy,
)

PIPES = ("S", "V", "MTE2", "MTE3")
BARRIER_PIPES = ("V", "MTE2", "MTE3", "ALL")
#: the vector core's HardEvents, then the Cube side's (``cgdr_des.isa_cube``)
HARD_EVENTS = (
    "S_V", "V_S", "MTE2_V", "V_MTE2", "MTE3_V", "V_MTE3", "S_MTE2", "MTE2_S",
    "S_MTE3", "MTE3_S", "MTE3_MTE2", "MTE2_MTE3", "V_V",
) + CUBE_HARD_EVENTS
EVENT_IDS_PER_HARD_EVENT = 8

SCALAR_KINDS = ("alu", "ub_load", "ub_store", "exp", "div")
UB_RANGE = tuple[int, int]  # (byte offset, byte length)


def event_pipes(event: str) -> tuple[str, str]:
    """``"V_MTE3"`` -> ``("V", "MTE3")``: the pipe that sets the flag, the pipe that waits on it."""
    src, _, dst = event.partition("_")
    return src, dst


class EventHandle:
    """An event id chosen by the machine at run time (``FetchEventID`` / ``AllocEventID``).

    The kernel cannot know which id TPipe will hand out, so it passes a handle; the machine fills in
    ``id`` when it executes the Fetch/Alloc record and resolves later Set/Wait records through it.
    """

    __slots__ = ("id",)

    def __init__(self) -> None:
        self.id: int | None = None

    def __repr__(self) -> str:
        return f"EventHandle(id={self.id})"


EventId = int | EventHandle


def resolve_event_id(eid: EventId) -> int | None:
    """The numeric event id: a handle's filled-in id (None before the machine fills it), else ``eid``."""
    return eid.id if isinstance(eid, EventHandle) else eid


# ---------------------------------------------------------------- scalar unit


@dataclass(frozen=True, slots=True)
class Scalar:
    """``count`` scalar operations of one kind executed by the scalar unit itself.

    kind: ``alu`` (index maths, compares, float add/mul), ``ub_load`` / ``ub_store``
    (LocalTensor GetValue / SetValue), ``exp`` (one ScalarExp call of argument ``arg``, which the
    kernel declares as ``alu`` ALU operations and ``div`` divisions: the machine costs it from those
    counts, knowing nothing of the routine), ``div`` (scalar division).
    """

    kind: str
    count: int = 1
    arg: float = 0.0
    alu: int = 0
    div: int = 0


@dataclass(frozen=True, slots=True)
class ScalarGm:
    """One scalar GlobalTensor GetValue (``store=False``) or SetValue (``store=True``).

    Goes through the core's data cache: a hit costs a scalar load/store, a miss a GM round trip.
    """

    addr: int
    nbytes: int
    store: bool = False


# ---------------------------------------------------------------- vector pipe


@dataclass(frozen=True, slots=True)
class VecOp:
    """One count-form vector API call (one V instruction plus its scalar-side mask set-up).

    op: ``Duplicate``, ``Muls``, ``Mul``, ``Add``, ``Sub``, ``Axpy``, ``Exp``, ``Cast``,
    ``WholeReduceSum``. ``dtype`` is the wider element type the op works in (``fp32`` or ``fp16``);
    ``n`` the element count (for WholeReduceSum: elements reduced = repeats * 64).
    ``dst`` and ``srcs`` are the UB ranges written and read.
    """

    op: str
    dtype: str
    n: int
    dst: UB_RANGE = (0, 0)
    srcs: tuple[UB_RANGE, ...] = ()


# ---------------------------------------------------------------- DMA


@dataclass(frozen=True, slots=True)
class DataCopyParams:
    """AscendC ``DataCopyParams``: every field counts 32-byte blocks; all are uint16 on hardware."""

    block_count: int = 1
    block_len: int = 0
    src_stride: int = 0
    dst_stride: int = 0


@dataclass(frozen=True, slots=True)
class DataCopyExtParams:
    """AscendC ``DataCopyExtParams``: ``block_len`` in bytes (uint32), strides per the doc's rule."""

    block_count: int = 1
    block_len: int = 0
    src_stride: int = 0
    dst_stride: int = 0


@dataclass(frozen=True, slots=True)
class Dma:
    """One DataCopy. ``direction`` is ``GM2UB`` (runs on MTE2) or ``UB2GM`` (runs on MTE3).

    ``nbytes`` is the payload actually moved; ``params`` the DataCopy(Ext)Params as the kernel built
    them (the machine checks their hardware ranges); ``gm_addr``/``ub_addr`` the first byte.
    ``repeat`` > 1 stands for that many identical DataCopy calls issued back to back with nothing
    between them (``nbytes`` is their total): the kernel never emits it, ``phase`` fidelity merges
    such runs (the per-row state copies) so that each pays its first-byte cycles but moves its bytes
    as one transfer.
    """

    direction: str
    nbytes: int
    params: DataCopyParams | DataCopyExtParams
    gm_addr: int
    ub_addr: int
    repeat: int = 1

    @property
    def pipe(self) -> str:
        """The pipe that runs this DMA: MTE3 for UB -> GM; MTE2 for GM -> UB and for the Cube era's
        Nd2Nz loads GM -> L1."""
        return "MTE3" if self.direction == "UB2GM" else "MTE2"


# ---------------------------------------------------------------- synchronisation


@dataclass(frozen=True, slots=True)
class PipeBarrier:
    """``PipeBarrier<PIPE_X>``: later X instructions start after earlier ones retire.

    ``pipe == "ALL"``: the scalar unit waits until every pipe has drained.
    """

    pipe: str


@dataclass(frozen=True, slots=True)
class SetFlag:
    """``SetFlag<event>(id)``: enters the source pipe, fires when that pipe retired all before it."""

    event: str
    id: EventId = 0


@dataclass(frozen=True, slots=True)
class WaitFlag:
    """``WaitFlag<event>(id)``: blocks the destination pipe (or the scalar unit) until set; clears it."""

    event: str
    id: EventId = 0


@dataclass(frozen=True, slots=True)
class FetchEventID:
    """``TPipe::FetchEventID<event>()``: lowest free id, not marked used; stored into ``handle``."""

    event: str
    handle: EventHandle


@dataclass(frozen=True, slots=True)
class AllocEventID:
    """``TPipe::AllocEventID<event>()``: lowest free id, marked used; stored into ``handle``."""

    event: str
    handle: EventHandle


@dataclass(frozen=True, slots=True)
class ReleaseEventID:
    """``TPipe::ReleaseEventID<event>(id)``."""

    event: str
    id: EventId


# ---------------------------------------------------------------- TPipe buffers and queues


@dataclass(frozen=True, slots=True)
class InitBuffer:
    """``pipe.InitBuffer(que, num, len)`` (``position`` VECIN / VECOUT) or of a TBuf (``VECCALC``).

    Carves ``num`` buffers of ``nbytes`` (rounded up to 32 B) from UB, in call order.
    """

    name: str
    position: str
    num: int
    nbytes: int


@dataclass(frozen=True, slots=True)
class AllocTensor:
    """``que.AllocTensor()`` on TQue ``name``: the next free buffer; waits for its pending free flag (hw/tque.py)."""

    name: str


@dataclass(frozen=True, slots=True)
class EnQue:
    """``que.EnQue(t)`` on TQue ``name``: queue the buffer for the consumer; TPipe sets the data-direction flag."""

    name: str


@dataclass(frozen=True, slots=True)
class DeQue:
    """``que.DeQue()`` on TQue ``name``: take the oldest queued buffer; TPipe waits on its EnQue's flag."""

    name: str


@dataclass(frozen=True, slots=True)
class FreeTensor:
    """``que.FreeTensor(t)`` on TQue ``name``: free the buffer; TPipe sets the reverse flag its next Alloc waits on."""

    name: str


# ---------------------------------------------------------------- labels (cost nothing)


@dataclass(frozen=True, slots=True)
class Tag:
    """Labels stamped on every later record of this core until the next Tag (cost: zero cycles).

    ``phase`` names the kernel function (``P4a_DotFp32`` ...); batch/head/vtile/chunk locate the
    work item; -1 means "not applicable".
    """

    phase: str
    batch: int = -1
    head: int = -1
    vtile: int = -1
    chunk: int = -1


@dataclass(frozen=True, slots=True)
class Macro:
    """A run of scalar + vector work timed once, in isolation, by the machine's own cost model
    (``phase`` fidelity): it stands for the records it replaced.

    Executed as: the scalar unit is busy ``s_cycles`` from its issue time ``t``; the vector pipe is
    occupied for ``v_end - v_start`` cycles starting at ``max(t + v_start, vector pipe free)``.
    ``counts`` holds ``(record_kind, n)`` pairs of the replaced records (Scalar weighted by count).
    """

    name: str
    s_cycles: int
    v_start: int
    v_end: int
    counts: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Repeat:
    """``n`` back-to-back iterations of a loop body of compute records, given as ``body(i) -> list``:
    a phase's first build hands it to the phase compiler instead of the n bodies (docs/kernel.md §5
    loops run to L^2 or L*dk iterations).

    The emitter's contract: every iteration's records cost the same but for what is declared (they
    may differ in UB and GM addresses and ScalarExp arguments only; equal VecOp op/dtype/n), so the
    compiler's timer can run iterations until one leaves the pipes' relative state unchanged and
    extrapolate the rest (:mod:`cgdr_des.hw.compute_run`). Declared: ``gm(i)`` lists the
    ``(addr, nbytes, store)`` of iteration i's ScalarGm records in order, ``exp(i)`` the declared
    ``(alu, div)`` work of its ScalarExp calls (count 1 each); without them there are none. The
    timer extrapolates only over iterations whose cache hits and ScalarExp costs match the steady
    one's, or, for a body of scalar work only, adds each iteration's declared costs to the rest of
    its scalar time.
    Nothing else takes a Repeat: :func:`expand` gives the records.
    """

    n: int
    body: Callable[[int], list]
    gm: Callable[[int], tuple[tuple[int, int, bool], ...]] | None = None
    exp: Callable[[int], tuple[tuple[int, int], ...]] | None = None


class GmRows:
    """A :class:`Repeat`'s ``gm`` whose iteration ``i`` makes one scalar access of ``nbytes`` at each
    address of ``row(i)`` (a ``range``), all loads or all stores (``store``): ``gm(i)`` lists them as
    the Repeat contract says, and a consumer that wants only the addresses of many iterations (the
    per-core data cache of ``phase`` fidelity) reads ``row`` instead of building a tuple per access."""

    __slots__ = ("row", "nbytes", "store")

    def __init__(self, row: Callable[[int], range], nbytes: int, store: bool) -> None:
        self.row, self.nbytes, self.store = row, nbytes, store

    def __call__(self, i: int) -> tuple[tuple[int, int, bool], ...]:
        nbytes, store = self.nbytes, self.store
        return tuple((a, nbytes, store) for a in self.row(i))


class GmStrided:
    """A :class:`Repeat`'s ``gm`` whose iteration ``i`` makes one scalar access of ``nbytes`` at
    ``start + i * step`` (a row read one element per iteration): ``gm(i)`` as the Repeat contract
    says, and the addresses of all iterations at once from ``start`` and ``step``."""

    __slots__ = ("start", "step", "nbytes", "store")

    def __init__(self, start: int, step: int, nbytes: int, store: bool) -> None:
        self.start, self.step, self.nbytes, self.store = start, step, nbytes, store

    def __call__(self, i: int) -> tuple[tuple[int, int, bool], ...]:
        return ((self.start + i * self.step, self.nbytes, self.store),)


def expand(records: list) -> list:
    """``records`` with every Repeat (nested too) replaced by its iterations' records."""
    if not any(type(r) is Repeat for r in records):
        return records
    out: list = []
    for rec in records:
        if type(rec) is Repeat:
            for i in range(rec.n):
                out += expand(rec.body(i))
        else:
            out.append(rec)
    return out


Record = (
    Scalar | ScalarGm | VecOp | Dma | PipeBarrier | SetFlag | WaitFlag | FetchEventID | AllocEventID
    | ReleaseEventID | InitBuffer | AllocTensor | EnQue | DeQue | FreeTensor | Tag | Macro
)


def record_kind(rec: Record) -> str:
    """The count category of a record, as the kernel notes tabulate them."""
    t = type(rec)
    if t is Scalar:
        return "scalar_" + rec.kind
    if t is ScalarGm:
        return "scalar_gm_store" if rec.store else "scalar_gm_load"
    if t is VecOp:
        return "vec"
    if t is Dma:
        return "dma_L1" if rec.direction == "GM2L1" else "dma_" + rec.pipe
    if t is PipeBarrier:
        return "barrier_" + rec.pipe
    if t is SetFlag:
        return "set_" + rec.event
    if t is WaitFlag:
        return "wait_" + rec.event
    return t.__name__

