"""The scalar unit's rare records: everything but Scalar, ScalarGm, VecOp, Set/WaitFlag,
PipeBarrier<V> and Macro, which :func:`~cgdr_des.hw.scalar.scalar_unit` handles in its loop.

- ``PipeBarrier<MTE2/MTE3/MTE1/M>``: handed to that pipe; ``PipeBarrier<ALL>``: the scalar unit waits
  until every pipe has drained (on each pipe's drain event in turn: a drained pipe stays drained
  while the scalar unit waits, and one event per pipe is cheaper than a SimPy ``AllOf``), then
  :func:`~cgdr_des.hw.rules.barrier` over their last ends;
- ``FetchEventID`` / ``AllocEventID`` / ``ReleaseEventID`` and ``InitBuffer``: TPipe bookkeeping on
  the core's event-id pool and UB (``tpipe_call_cycles`` each);
- ``AllocTensor`` / ``EnQue`` / ``DeQue`` / ``FreeTensor``: a TQue call (:mod:`.tque`), then the flag
  the call inserts, handed to its pipe;
- Cube-side records (LoadData, Mmad, L0C drains): handed to the pipe their class names with their
  fixed (issue, latency) cycles.

FetchEventID never waits and is done by :func:`fetch_event_id` (the scalar unit's loop opens Tags
itself); the others by the generator :func:`other_record`: a hand-over to a full queue or
PipeBarrier<ALL> waits on SimPy events.
"""

from __future__ import annotations

from cgdr_des.hw.diagnostics import HwFault
from cgdr_des.hw.flags import EVENTS
from cgdr_des.hw.pipes import FIXED_PIPES
from cgdr_des.hw.records import BAR, FIXED, SET, WAIT
from cgdr_des.hw.rules import barrier
from cgdr_des.isa import (
    BARRIER_PIPES,
    HARD_EVENTS,
    AllocEventID,
    AllocTensor,
    DeQue,
    EnQue,
    FetchEventID,
    FreeTensor,
    InitBuffer,
    PipeBarrier,
    ReleaseEventID,
    record_kind,
    resolve_event_id,
)

_QUEUE_TYPES = QUEUE_TYPES = (AllocTensor, EnQue, DeQue, FreeTensor)
FETCH_OP = {ev: "FetchEventID:" + ev for ev in HARD_EVENTS}


def fetch_event_id(su, rec: FetchEventID, t: int, idx: int) -> int:
    """FetchEventID (record ``idx``; one per DMA idiom, never waits) from cycle ``t``: the lowest free
    id into the record's handle; returns the cycle the scalar unit goes on."""
    su.idx = idx
    su.cnt["FetchEventID"] += 1
    store = su.core.pool.free.get(rec.event)
    if store is not None and store.items:       # EventIdPool.fetch, inline: one in seven phase records
        rec.handle.id = store.items[0]
    else:
        try:
            rec.handle.id = su.core.pool.fetch(rec.event)
        except HwFault as exc:
            raise su.fail(str(exc)) from None
    end = t + su.prof.tpipe_call_cycles
    su.did(FETCH_OP[rec.event], t, end)
    return end


def other_record(su, rec, typ):
    """Barriers on MTE pipes and ALL, TPipe bookkeeping and Cube-side records (after
    the scalar unit's loop and :func:`fetch_event_id` declined ``rec``)."""
    if typ is PipeBarrier:
        yield from _barrier(su, rec)
    elif isinstance(getattr(typ, "pipe", None), str):      # a Cube-side record names its pipe
        su.cnt[record_kind(rec)] += 1
        yield from _fixed_record(su, rec, typ)
    else:
        su.cnt[record_kind(rec)] += 1
        yield from _tpipe_record(su, rec)


def _fixed_record(su, rec, typ):
    """A fixed-cost Cube-side record (LoadData, Mmad, an L0C drain): handed to the pipe its class
    names, with its (issue, latency) cycles and the buffer versions it reads and writes."""
    core = su.core
    try:
        P = core.pipe(typ.pipe)
        cost = core.fixed_cost(rec)
    except HwFault as exc:
        raise su.fail(str(exc)) from None
    access = core.buffers.hand_over(rec)
    yield from su.push(P, FIXED, rec, cost, access, su.prof.scalar_dispatch_cycles)


def _barrier(su, rec):
    """PipeBarrier<V/MTE2/MTE3> (handed over) or <ALL> (the scalar unit waits for every pipe to drain)."""
    pname, core = rec.pipe, su.core
    if pname not in BARRIER_PIPES and pname not in FIXED_PIPES:
        raise su.fail(f"PipeBarrier pipe {pname!r} not one of {', '.join(BARRIER_PIPES + FIXED_PIPES)}")
    su.cnt["barrier_" + pname] += 1
    if pname != "ALL":
        P = core.pipe(pname)
        yield from su.push(P, BAR, rec, None, None, su.prof.scalar_dispatch_cycles)
        return
    plist = core.pipe_list
    su.run_pipes()
    for pipe in plist:      # one pipe at a time: a drained pipe stays drained, the scalar unit hands nothing
        while not pipe.drained:
            su.wait_kind, su.wait_on = "drain", plist     # the deadlock report names the undrained ones
            yield pipe.when_drained(su.env)
    t0 = su.t
    _, su.t = barrier(t0, t0, max(p.done for p in plist))
    su.stall += su.t - t0
    su.did("PipeBarrier:ALL", t0, su.t)


def _tpipe_record(su, rec):
    """TPipe / TQue bookkeeping records (rare), with the flag a TQue call inserts handed over."""
    flag = tpipe_call(su, rec, type(rec))
    if flag is not None:        # the queue call's bookkeeping is done; its flag may wait for a slot
        P, code, fl = flag
        yield from su.push(P, code, rec, fl, None, su.prof.scalar_dispatch_cycles)


def tpipe_call(su, rec, typ):
    """A TPipe / TQue bookkeeping record from the scalar unit's clock ``su.t`` (advanced past its
    ``tpipe_call_cycles``); returns the flag a TQue call inserts as ``(pipe, code, Flag)``, for the
    caller to hand over, or None. Never waits (the scalar unit's loop calls it for the TQue calls)."""
    core = su.core
    flag = None
    try:
        if typ in _QUEUE_TYPES:
            flag_op = core.ub.queue(rec.name).apply(typ.__name__, core.pool)
            if flag_op is not None:
                is_set, info = flag_op.kind == "set", EVENTS[flag_op.event]
                flag = (core.pipes[info.src if is_set else info.dst], SET if is_set else WAIT,
                        core.flags.get(flag_op.event, flag_op.id))
            op = f"{typ.__name__}:{rec.name}"
        else:
            op = _pool_record(core, rec, typ)
    except HwFault as exc:
        raise su.fail(str(exc)) from None
    su.t += su.prof.tpipe_call_cycles
    su.did(op, su.t - su.prof.tpipe_call_cycles, su.t)
    return flag


def _pool_record(core, rec, typ) -> str:
    """InitBuffer and the event-id records; returns the ops label."""
    if typ is InitBuffer:
        core.ub.init_buffer(rec.name, rec.position, rec.num, rec.nbytes)
        return f"InitBuffer:{rec.name}"
    if typ is AllocEventID:     # (FetchEventID is done by fetch_event_id)
        rec.handle.id = core.pool.alloc(rec.event)
        return f"AllocEventID:{rec.event}"
    if typ is ReleaseEventID:
        core.pool.release(rec.event, resolve_event_id(rec.id))
        return f"ReleaseEventID:{rec.event}"
    raise HwFault(f"unknown record type {typ.__name__}")
