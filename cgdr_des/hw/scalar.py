"""The scalar unit of one core: walks the program in order on its own clock.

It pulls each record from the program exactly once, in order (the kernel computes outputs as a side
effect of generating them), and either executes it itself or hands it to a pipe queue:

- itself: ``Scalar`` (count x per-kind cycles; ``exp`` costed from its argument), ``ScalarGm``
  (through the data cache), ``Tag`` (0 cycles: opens a new span), SetFlag with source S (fires
  ``flag_cycles`` later), WaitFlag with destination S (the scalar unit stalls until the flag's set is
  recorded and reached), ``PipeBarrier<ALL>`` (stalls until V, MTE2 and MTE3 have drained),
  TPipe/TQue bookkeeping and event ids (``tpipe_call_cycles`` each);
- to a pipe: ``VecOp`` (after ``vec_api_scalar_cycles`` of mask set-up) -> V; ``Dma`` -> MTE2/MTE3;
  ``Macro`` (``phase`` fidelity): its V part -> V, then the scalar unit is busy ``s_cycles``;
  SetFlag -> its source pipe; WaitFlag -> its destination pipe; ``PipeBarrier<X>`` -> X; the flags
  a TQue call inserts -> their pipes. Handing over costs ``scalar_dispatch_cycles``. When the queue
  already holds ``queue_depth`` entries that have not started by the scalar unit's cycle, it stalls
  until the oldest starts (the ring of dequeue cycles tells when).

The scalar unit is sequential, so ``busy + stall`` is exactly its last cycle minus the launch cycle.
"""

from __future__ import annotations

from cgdr_des.hw.costs import scalar_exp_cycles
from cgdr_des.hw.diagnostics import HwFault, at
from cgdr_des.hw.flags import double_set_message
from cgdr_des.hw.pipes import BAR, MAC, SET, VEC, WAIT
from cgdr_des.isa import (
    BARRIER_PIPES,
    HARD_EVENTS,
    SCALAR_KINDS,
    AllocEventID,
    AllocTensor,
    DeQue,
    Dma,
    EnQue,
    EventHandle,
    FetchEventID,
    FreeTensor,
    InitBuffer,
    Macro,
    PipeBarrier,
    ReleaseEventID,
    Scalar,
    ScalarGm,
    SetFlag,
    Tag,
    VecOp,
    WaitFlag,
    event_pipes,
    record_kind,
    resolve_event_id,
)

SCALAR_KEY = {k: "scalar_" + k for k in SCALAR_KINDS}
# event -> (source pipe, destination pipe, count key of SetFlag, of WaitFlag, op of SetFlag, of WaitFlag)
EVENTS = {ev: (*event_pipes(ev), "set_" + ev, "wait_" + ev, "SetFlag:" + ev, "WaitFlag:" + ev)
          for ev in HARD_EVENTS}
_QUEUE_TYPES = (AllocTensor, EnQue, DeQue, FreeTensor)


def scalar_unit(core, program):
    """The scalar-unit automaton.

    This loop runs once per record of the whole program, so it keeps its state in locals and
    handles the frequent records inline; a record that hands an instruction to a pipe falls through
    to the shared hand-over at the bottom with ``P`` (pipe), ``code``, ``pre`` (scalar cycles before
    the hand-over) and the entry fields ``ea``/``eb``. The V queue's push count lives in the local
    ``nv`` (synchronised with ``V.n_push`` around the rare paths that push elsewhere).
    """
    prof = core.profile
    f, api, disp, depth = prof.flag_cycles, prof.vec_api_scalar_cycles, prof.scalar_dispatch_cycles, prof.queue_depth
    diag_double, stall_policy = prof.flag_double_set == "diagnostic", prof.flag_double_set == "stall"
    vp, kc, keep, cid = core.vec_params, core.scalar_costs, core.keep_ops, core.cid
    rows_append, ready_append = core.rows.append, core.ready.append
    pipes, flags, dcache, pool, tpc = core.pipes, core.flags.table, core.dcache, core.pool, prof.tpipe_call_cycles
    macs = core.macro_counts
    V, me = pipes["V"], core.s_gen
    vq_append, vring, vgen, nv = V.q.append, V.ring, V.gen, 0
    gm_ld, gm_st, gm_miss = prof.scalar_ub_load_cycles, prof.scalar_ub_store_cycles, prof.dcache_miss_cycles
    t, stall, idx = core.t0, 0, -1
    seg, cnt = core.open_span(None)
    for rec in program:
        idx += 1
        typ = type(rec)
        if typ is Scalar:
            k = rec.kind
            c = kc.get(k)
            if c is not None:
                c *= rec.count
            else:
                c = _exp_cycles(core, rec, idx, seg)
            if c < 0:
                raise at(cid, idx, seg, f"Scalar count {rec.count!r} is negative")
            cnt[SCALAR_KEY[k]] += rec.count
            if keep:
                rows_append((cid, "S", k, seg[0], seg[1], seg[2], seg[3], seg[4], t, t + c, rec.count, 0))
            if t < seg[5]:
                seg[5] = t
            t += c
            if t > seg[6]:
                seg[6] = t
            seg[7] += 1
            continue
        if typ is VecOp:
            cnt["vec"] += 1
            try:
                w, cpr, lat = vp[rec.dtype][rec.op]
            except KeyError:
                raise at(cid, idx, seg, f"VecOp {rec.op!r} / {rec.dtype!r} has no cost in profile "
                         f"{prof.name} (ops: {', '.join(prof.vec_width)}; dtypes fp32, fp16)") from None
            n = rec.n
            P = V
            code = VEC
            pre = api
            ea = (-(-n // w) if n > w else 1) * cpr
            eb = lat
        elif typ is SetFlag or typ is WaitFlag:
            ev, rid = rec.event, rec.id
            if type(rid) is EventHandle:
                rid = rid.id
            try:
                fl = flags[ev][rid]
                if rid < 0:
                    raise IndexError
            except (KeyError, IndexError, TypeError):
                fl = _flag(core, ev, rid, idx, seg)
            info, op = EVENTS[ev], None
            if typ is WaitFlag:
                cnt[info[3]] += 1
                if info[1] != "S":
                    P, code, pre, ea, eb = pipes[info[1]], WAIT, 0, fl, None
                else:
                    t0, sets = t, fl.sets
                    while not sets:
                        fl.waiter, core.s_block = me, ("flag", fl, idx, seg)
                        yield
                    c = sets.popleft()
                    if t > c:
                        c = t
                    if sets and diag_double and sets[0] < c:
                        raise at(cid, idx, seg, double_set_message(fl, sets[0], c) + " (seen at this WaitFlag)")
                    fl.last_consume = c
                    stall += c - t
                    t, op = c + f, info[5]
            else:
                cnt[info[2]] += 1
                if info[0] != "S":
                    P, code, pre, ea, eb = pipes[info[0]], SET, 0, fl, None
                else:
                    t0 = t
                    while stall_policy and fl.sets:
                        fl.set_waiter, core.s_block = me, ("set", fl, idx, seg)
                        yield
                    if stall_policy and fl.last_consume > t:
                        stall, t = stall + fl.last_consume - t, fl.last_consume
                    t += f
                    if diag_double and not fl.sets and t < fl.last_consume:
                        raise at(cid, idx, seg, double_set_message(fl, t, fl.last_consume))
                    fl.sets.append(t)
                    if fl.waiter is not None:
                        ready_append(fl.waiter)
                        fl.waiter = None
                    op = info[4]
            if op is not None:  # the scalar unit did it itself (an S-side set or wait) from t0 to t
                if keep:
                    rows_append((cid, "S", op, seg[0], seg[1], seg[2], seg[3], seg[4], t0, t, fl.id, 0))
                if t0 < seg[5]:
                    seg[5] = t0
                if t > seg[6]:
                    seg[6] = t
                seg[7] += 1
                continue
        elif typ is PipeBarrier:
            pname = rec.pipe
            if pname == "V":
                cnt["barrier_V"] += 1
                P, code, pre, ea, eb = V, BAR, 0, None, None
            else:
                V.n_push = nv
                t, stall = yield from _other_barrier(core, rec, idx, seg, t, stall, cnt)
                continue
        elif typ is Tag:
            seg, cnt = core.open_span(rec)
            cnt["Tag"] += 1
            continue
        elif typ is ScalarGm:
            store = rec.store
            cnt["scalar_gm_store" if store else "scalar_gm_load"] += 1
            c = (gm_st if store else gm_ld) if dcache.access(rec.addr, rec.nbytes) else gm_miss
            if keep:
                rows_append((cid, "S", "gm_store" if store else "gm_load", seg[0], seg[1], seg[2], seg[3],
                             seg[4], t, t + c, 1, rec.nbytes))
            _span(seg, t, t + c)
            t += c
            continue
        elif typ is Dma:
            cnt["dma_" + rec.pipe] += rec.repeat
            P, code, pre, ea, eb = core.dma_entry(rec, idx, seg)
        elif isinstance(rec, Macro):
            # A Macro (``phase`` fidelity), inline as it is every third record of a replay: its V part
            # enters the V queue (waiting for a slot like any instruction) to start ``v_start`` after
            # the scalar unit's cycle; the scalar unit is then busy ``s_cycles`` (of which ``s_stall``
            # count as stall for a TimedMacro). Its counts stand for the records it replaced.
            key = (id(cnt), id(rec.counts))     # tallied per phase; core.counter() adds them up
            tally = macs.get(key)
            if tally is None:
                macs[key] = [cnt, rec.counts, 1]
            else:
                tally[2] += 1
            vs, ve = rec.v_start, rec.v_end
            if ve > vs:
                n = nv
                if n >= depth:
                    while n - V.n_deq >= depth:
                        V.s_waiting, core.s_block = True, ("room", V, idx, seg)
                        yield
                    tf = vring[n % depth]
                    if tf > t:
                        stall += tf - t
                        t = tf
                vq_append((MAC, t + vs, rec, seg, idx, vs, ve - vs))
                nv = n + 1
                if V.idle:
                    V.idle = False
                    ready_append(vgen)
            t0 = t
            t += rec.s_cycles
            stall += getattr(rec, "s_stall", 0)
            if keep:
                rows_append((cid, "S", "Macro:" + rec.name, seg[0], seg[1], seg[2], seg[3], seg[4], t0, t, 0, 0))
            _span(seg, t0, t)
            continue
        elif typ is FetchEventID:  # inline: one per DMA idiom, and it never waits
            cnt["FetchEventID"] += 1
            try:
                rec.handle.id = pool.fetch(rec.event)
            except HwFault as exc:
                raise at(cid, idx, seg, str(exc)) from None
            t0 = t
            t += tpc
            if keep:
                rows_append((cid, "S", "FetchEventID:" + rec.event, seg[0], seg[1], seg[2], seg[3], seg[4], t0, t,
                             0, 0))
            _span(seg, t0, t)
            continue
        else:
            cnt[record_kind(rec)] += 1
            V.n_push = nv
            t, stall = yield from _tpipe_record(core, rec, idx, seg, t, stall)
            nv = V.n_push
            continue
        # hand-over to pipe P: wait for a free slot (the entry ``depth`` places back must have started)
        if P is V:
            n = nv
            if n >= depth:
                while n - V.n_deq >= depth:
                    V.s_waiting, core.s_block = True, ("room", V, idx, seg)
                    yield
                t += pre
                tf = vring[n % depth]
                if tf > t:
                    stall += tf - t
                    t = tf
            else:
                t += pre
            t += disp
            vq_append((code, t, rec, seg, idx, ea, eb))
            nv = n + 1
            if V.idle:
                V.idle = False
                ready_append(vgen)
            continue
        n = P.n_push
        if n >= depth:
            while n - P.n_deq >= depth:
                P.s_waiting, core.s_block = True, ("room", P, idx, seg)
                yield
            t += pre
            tf = P.ring[n % depth]
            if tf > t:
                stall += tf - t
                t = tf
        else:
            t += pre
        t += disp
        P.q.append((code, t, rec, seg, idx, ea, eb))
        P.n_push = n + 1
        if P.idle:
            P.idle = False
            ready_append(P.gen)
    V.n_push = nv
    core.finish_scalar(t, stall, idx + 1)
    while True:
        yield


def _other_barrier(core, rec, idx, seg, t, stall, cnt):
    """PipeBarrier<MTE2/MTE3> (handed over) or <ALL> (the scalar unit waits for every pipe to drain)."""
    pname = rec.pipe
    if pname not in BARRIER_PIPES:
        raise at(core.cid, idx, seg, f"PipeBarrier pipe {pname!r} not one of {', '.join(BARRIER_PIPES)}")
    cnt["barrier_" + pname] += 1
    if pname != "ALL":
        P = core.pipes[pname]
        tf = yield from _wait_room(core, P, idx, seg)
        return _hand_over(core, P, (BAR, None), rec, idx, seg, t, stall, tf)
    t0, plist = t, core.pipe_list
    while not all(not p.q and not p.outstanding for p in plist):    # PipeState.drained, inline
        for p in plist:
            p.drain_waiting = not p.drained
        core.s_block = ("drain", [p.name for p in plist if not p.drained], idx, seg)
        yield
    t = max(t, *(p.done for p in plist))
    if core.keep_ops:
        core.rows.append((core.cid, "S", "PipeBarrier:ALL", seg[0], seg[1], seg[2], seg[3], seg[4], t0, t, 0, 0))
    _span(seg, t0, t)
    return t, stall + t - t0


def _hand_over(core, P, entry, rec, idx, seg, t, stall, tf):
    """Append ``entry = (code, a)`` to ``P`` at the scalar unit's cycle (slow paths); returns (t, stall)."""
    if tf is not None and tf > t:
        stall += tf - t
        t = tf
    t += core.profile.scalar_dispatch_cycles
    P.q.append((entry[0], t, rec, seg, idx, entry[1], None))
    P.n_push += 1
    if P.idle:
        P.idle = False
        core.ready.append(P.gen)
    return t, stall


def _span(seg, s: int, end: int) -> None:
    if s < seg[5]:
        seg[5] = s
    if end > seg[6]:
        seg[6] = end
    seg[7] += 1


def _exp_cycles(core, rec, idx, seg) -> int:
    if rec.kind != "exp":
        raise at(core.cid, idx, seg, f"Scalar kind {rec.kind!r} not one of {', '.join(SCALAR_KINDS)}")
    prof = core.profile
    try:
        return rec.count * scalar_exp_cycles(rec.arg, prof.scalar_alu_cycles, prof.scalar_div_cycles)
    except ValueError as exc:
        raise at(core.cid, idx, seg, f"Scalar exp(arg={rec.arg}): {exc}") from None


def _flag(core, ev, eid, idx, seg):
    """The Flag a Set/WaitFlag record names when the fast lookup failed: an EventHandle, or an error."""
    try:
        return core.flags.get(ev, resolve_event_id(eid))
    except HwFault as exc:
        raise at(core.cid, idx, seg, str(exc)) from None


def _wait_room(core, P, idx, seg):
    """Yield until ``P`` has a free slot; return the cycle the slot was freed (or None: never full)."""
    n, depth = P.n_push, core.profile.queue_depth
    if n < depth:
        return None
    while n - P.n_deq >= depth:
        P.s_waiting, core.s_block = True, ("room", P, idx, seg)
        yield
    return P.ring[n % depth]


def _tpipe_record(core, rec, idx, seg, t, stall):
    """TPipe / TQue bookkeeping records (rare): returns the scalar unit's new (t, stall)."""
    typ, prof = type(rec), core.profile
    cost, entry, P, tf = prof.tpipe_call_cycles, None, None, None
    try:
        if typ in _QUEUE_TYPES:
            que = core.ub.queue(rec.name)
            plan = que.plan(typ.__name__)
            if plan is not None:
                kind, ev = plan
                P = core.pipes[EVENTS[ev][0] if kind == "set" else EVENTS[ev][1]]
                tf = yield from _wait_room(core, P, idx, seg)
            flag_op = que.apply(typ.__name__, core.pool)
            if flag_op is not None:
                kind, ev, eid = flag_op
                entry = (SET if kind == "set" else WAIT, core.flags.get(ev, eid))
            op = f"{typ.__name__}:{rec.name}"
        elif typ is InitBuffer:
            core.ub.init_buffer(rec.name, rec.position, rec.num, rec.nbytes)
            op = f"InitBuffer:{rec.name}"
        elif typ is FetchEventID or typ is AllocEventID:
            rec.handle.id = (core.pool.fetch if typ is FetchEventID else core.pool.alloc)(rec.event)
            op = f"{typ.__name__}:{rec.event}"
        elif typ is ReleaseEventID:
            core.pool.release(rec.event, resolve_event_id(rec.id))
            op = f"ReleaseEventID:{rec.event}"
        else:
            raise HwFault(f"unknown record type {typ.__name__}")
    except HwFault as exc:
        raise at(core.cid, idx, seg, str(exc)) from None
    t0 = t
    t += cost
    if core.keep_ops:
        core.rows.append((core.cid, "S", op, seg[0], seg[1], seg[2], seg[3], seg[4], t0, t, 0, 0))
    _span(seg, t0, t)
    if entry is None:
        return t, stall
    return _hand_over(core, P, entry, rec, idx, seg, t, stall, tf)
