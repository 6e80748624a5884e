"""The scalar unit of one core: a SimPy process walking the program in order on its own clock.

It pulls each record from the program exactly once, in order (the kernel computes outputs as a side
effect of generating them), and either executes it itself or hands it to a pipe queue:

- itself: ``Scalar`` (count x per-kind cycles; ``exp`` from the ALU and division work the record
  declares, :func:`~cgdr_des.hw.rules.scalar_exp`), ``ScalarGm`` (through the data cache,
  :func:`~cgdr_des.hw.rules.scalar_gm_l2`), ``Tag`` (0 cycles: opens a new span), SetFlag with
  source S (:func:`~cgdr_des.hw.rules.scalar_flag_set`), WaitFlag with destination S (stalls until
  the flag's set is recorded, then :func:`~cgdr_des.hw.rules.flag_wait`), ``PipeBarrier<ALL>``
  (stalls until V, MTE2 and MTE3 have drained, :func:`~cgdr_des.hw.rules.barrier`), TPipe/TQue
  bookkeeping and event ids (``tpipe_call_cycles`` each);
- to a pipe: ``VecOp`` (after ``vec_api_scalar_cycles`` of mask set-up) -> V; ``Dma`` -> MTE2/MTE3;
  ``Macro`` (``phase`` fidelity): its V part -> V, then the scalar unit is busy ``s_cycles``;
  SetFlag -> its source pipe; WaitFlag -> its destination pipe; ``PipeBarrier<X>`` -> X; the flags
  a TQue call inserts -> their pipes. Each hand-over is :func:`~cgdr_des.hw.rules.hand_over`: when
  the queue already holds ``queue_depth`` entries that have not started, the scalar unit stalls until
  the oldest starts (the ring of dequeue cycles tells when).

It yields a SimPy event only to wait: a full queue (:meth:`~cgdr_des.hw.queues.IssueQueue.put`), a
WaitFlag on S whose set is not recorded yet (:meth:`~cgdr_des.hw.flags.Flag.wait_set`), a SetFlag under
``stall`` whose previous set is pending (:meth:`~cgdr_des.hw.flags.Flag.wait_consumed`), and
PipeBarrier<ALL> (each undrained pipe's :meth:`~cgdr_des.hw.pipes.PipeState.when_drained` in turn).

The scalar unit is sequential, so ``busy + stall`` is exactly its last cycle minus the launch cycle.
"""

from __future__ import annotations

from cgdr_des.hw.compute_state import late_cycle
from cgdr_des.hw.diagnostics import HwFault, at
from cgdr_des.hw.flags import DOUBLE_SET, EVENTS, double_set_at_wait, record_set
from cgdr_des.hw.records import (
    BAR,
    ENTRY_TYPES,
    MAC,
    SET,
    VEC,
    WAIT,
    MacroEntry,
    MacroStart,
    MacroTally,
    Span,
    new_entry,
)
from cgdr_des.hw.rules import (
    flag_wait,
    hand_over,
    scalar_exp,
    scalar_flag_set,
    scalar_gm_l2,
    set_while_set,
    vec_call_scalar,
)
from cgdr_des.hw.scalar_rare import QUEUE_TYPES, fetch_event_id, other_record, tpipe_call
from cgdr_des.isa import (
    SCALAR_KINDS,
    Dma,
    EventHandle,
    FetchEventID,
    Macro,
    PipeBarrier,
    Scalar,
    ScalarGm,
    SetFlag,
    Tag,
    VecOp,
    WaitFlag,
    resolve_event_id,
)

SCALAR_KEY = {k: "scalar_" + k for k in SCALAR_KINDS}


class ScalarUnit:
    """The scalar unit's clock and totals, and how it executes each kind of record."""

    __slots__ = ("core", "prof", "t", "stall", "idx", "span", "cnt", "V", "kinds", "vp", "keep",
                 "rows_extend", "env", "wait_kind", "wait_on", "rule", "checked", "stall_policy", "f", "routes",
                 "depth", "disp", "api", "dirty")

    def __init__(self, core) -> None:
        self.core, self.prof = core, core.profile
        self.t, self.stall, self.idx = core.t0, 0, -1
        self.span, self.cnt = core.open_span(None)
        self.V, self.vp = core.pipes["V"], core.vec_params
        #: kind -> (cycles per count, count key) of the fixed-cost Scalar kinds (``exp`` is costed per call)
        self.kinds = {kind: (c, SCALAR_KEY[kind]) for kind, c in core.scalar_costs.items()}
        #: HardEvent -> (the core's flags of it by id, its EventInfo): one lookup per Set/WaitFlag
        self.routes = {ev: (row, EVENTS[ev]) for ev, row in core.flags.table.items()}
        self.keep, self.rows_extend, self.env = core.keep_ops, core.rows.extend, core.env
        self.rule = rule = DOUBLE_SET[self.prof.flag_double_set]
        self.checked, self.stall_policy = rule.check, rule.stall
        self.f = self.prof.flag_cycles
        #: queue depth, cycles per hand-over, and the scalar cycles of a vector call before it
        self.depth, self.disp = self.prof.queue_depth, self.prof.scalar_dispatch_cycles
        self.api = vec_call_scalar(self.prof.vec_api_scalar_cycles, self.prof.vec_call_loop_cycles)
        #: what it waits for when it yields (deadlock diagnostics): ``flag`` (a WaitFlag's set, on the
        #: Flag), ``set`` (a set's previous consume), ``room`` (a free slot, on the pipe) or ``drain``
        #: (PipeBarrier<ALL>, on the core's pipes)
        self.wait_kind, self.wait_on = None, None
        #: the pumps of idle pipes the scalar unit's loop handed an entry to, not run yet: they run
        #: (:meth:`run_pipes`) before the scalar unit reads a pipe's state or waits, so a pipe drains
        #: a run of entries in one pass instead of one pass per entry
        self.dirty: list = []

    def run_pipes(self) -> None:
        """Run the pumps of the pipes handed entries since the last call (in hand-over order)."""
        dirty = self.dirty
        while dirty:
            dirty.pop(0).succeed()     # a Pump runs; a Cube-era pipe's get event is scheduled

    def fail(self, msg: str):
        """A KernelDiagnostic about the current record (core, record index, last Tag)."""
        return at(self.core.cid, self.idx, self.span, msg)

    def did(self, op: str, t0: int, t1: int, elements: int = 0, nbytes: int = 0) -> None:
        """The scalar unit did ``op`` itself from ``t0`` to ``t1``."""
        span = self.span
        if self.keep:
            self.rows_extend((self.core.cid, "S", op, span, t0, t1, elements, nbytes))
        if t0 < span.start:     # Span.add, inline
            span.start = t0
        if t1 > span.end:
            span.end = t1
        span.n += 1

    # ---------------------------------------------------------------- records it executes itself

    def scalar(self, rec: Scalar, t: int, idx: int) -> int:
        """``count`` operations of one kind from cycle ``t`` (record ``idx``), when the scalar unit's
        loop does not do it inline (``exp``, ops kept, a bad count); returns the cycle it is done."""
        self.t, self.idx = t, idx
        kind = self.kinds.get(rec.kind)
        c = kind[0] * rec.count if kind is not None else self._exp_cycles(rec)
        if c < 0:
            raise self.fail(f"Scalar count {rec.count!r} is negative")
        self.cnt[SCALAR_KEY[rec.kind]] += rec.count
        self.t = end = t + c
        self.did(rec.kind, t, end, rec.count)
        return end

    def scalar_gm(self, rec: ScalarGm, t: int) -> int:
        """A GlobalTensor GetValue/SetValue through the core's data cache, from cycle ``t``; returns
        the cycle it is done."""
        p, store, dcache = self.prof, rec.store, self.core.dcache
        self.cnt["scalar_gm_store" if store else "scalar_gm_load"] += 1
        hit = dcache.access(rec.addr, rec.nbytes)
        end = t + scalar_gm_l2(hit, dcache.in_l2, store, p.scalar_ub_load_cycles, p.scalar_ub_store_cycles,
                               p.dcache_miss_cycles, p.l2_hit_cycles)
        span = self.span
        if self.keep:
            self.rows_extend((self.core.cid, "S", "gm_store" if store else "gm_load", span, t, end, 1, rec.nbytes))
        if t < span.start:      # Span.add, inline
            span.start = t
        if end > span.end:
            span.end = end
        span.n += 1
        return end

    def _exp_cycles(self, rec: Scalar) -> int:
        if rec.kind != "exp":
            raise self.fail(f"Scalar kind {rec.kind!r} not one of {', '.join(SCALAR_KINDS)}")
        p = self.prof
        if rec.alu <= 0 and rec.div <= 0:
            raise self.fail(f"Scalar exp(arg={rec.arg}) declares no ALU or division work")
        return rec.count * scalar_exp(rec.alu, rec.div, p.scalar_alu_cycles, p.scalar_div_cycles)

    def wait_flag(self, fl, t: int) -> int:
        """WaitFlag with destination S at cycle ``t``, its set recorded: consume it; returns the
        cycle the scalar unit goes on."""
        sets = fl.sets
        _, c, free, _, _ = flag_wait(t, t, sets.popleft(), self.f)
        if sets and self.checked and set_while_set(sets[0], c):
            msg = double_set_at_wait(fl, c, self.rule)
            if msg is not None:
                raise self.fail(msg)
        fl.last_consume = c
        self.stall += c - t
        self.did(EVENTS[fl.event].wait_op, t, free, fl.id)
        return free

    def set_flag(self, fl, t: int) -> int:
        """SetFlag with source S at cycle ``t`` (under ``stall``, the previous set already
        consumed); returns the cycle it fires, when the scalar unit goes on."""
        fire, stall = scalar_flag_set(t, fl.last_consume, self.f, self.stall_policy)
        if self.checked:
            msg = record_set(fl, fire, self.rule)
            if msg is not None:
                raise self.fail(msg)
        else:   # record_set's unchecked path, inline: a call here costs ~1 % of an instr run
            fl.sets.append(fire)
            if fl.waiter is not None:
                fl.wake()
        if stall:
            self.stall += stall
        span = self.span            # did(), inline: the kernel sets S_V before every row it hands V
        if self.keep:
            self.rows_extend((self.core.cid, "S", EVENTS[fl.event].set_op, span, t, fire, fl.id, 0))
        if t < span.start:      # Span.add, inline
            span.start = t
        if fire > span.end:
            span.end = fire
        span.n += 1
        return fire

    # ---------------------------------------------------------------- records it hands to a pipe

    def no_vec_cost(self, rec: VecOp, idx: int):
        """The diagnostic for a VecOp (record ``idx``) the profile gives no cost."""
        self.idx = idx
        return self.fail(f"VecOp {rec.op!r} / {rec.dtype!r} has no cost in profile {self.prof.name} "
                         f"(ops: {', '.join(self.prof.vec_width)}; dtypes fp32, fp16)")

    def push(self, P, code: int, rec, a, b, dispatch: int, offset: int = 0):
        """Hand an entry to ``P``'s queue, waiting for a slot if it is full (a generator: a SimPy
        wait); :meth:`hand` when it has room."""
        q = P.q
        self.run_pipes()
        if len(q.items) < q.capacity:
            self.hand(P, code, rec, a, b, dispatch, offset)
            return
        self.wait_kind, self.wait_on = "room", P
        self.t, stall = yield q.put((code, rec, self.span, self.idx, a, b), self.t, dispatch, offset)
        self.stall += stall

    def hand(self, P, code: int, rec, a, b, dispatch: int, offset: int = 0) -> None:
        """Hand an entry to ``P``'s queue, which has room: the slot's dequeue cycle, then
        ``dispatch``; a Macro's V part is issued ``offset`` cycles after."""
        self.t, stall = P.q.hand((code, rec, self.span, self.idx, a, b), self.t, dispatch, offset)
        self.stall += stall

    def macro(self, rec: Macro, t: int, not_before: int = 0) -> int:
        """After its V part (if any) was handed over at cycle ``t``: the scalar unit is busy
        ``s_cycles`` (of which ``s_stall`` count as stall for a TimedMacro), and stalls on until
        ``not_before`` (V started the run late: :class:`~cgdr_des.hw.phase.TimedMacro`); returns the
        cycle it is done. Its counts stand for the records it replaced, tallied once per (phase,
        macro) and added up by the core at the end."""
        key = (id(self.cnt), id(rec.counts))
        tally = self.core.macro_counts.get(key)
        if tally is None:
            tally = self.core.macro_counts[key] = MacroTally(self.cnt, rec.counts)
        tally.times += 1
        end = t + rec.s_cycles
        late = not_before - end if not_before > end else 0
        self.t = end = end + late
        self.stall += getattr(rec, "s_stall", 0) + late
        span = self.span        # did(), inline: the label only when ops are kept
        if self.keep:
            self.rows_extend((self.core.cid, "S", "Macro:" + rec.name, span, t, end, 0, 0))
        if t < span.start:
            span.start = t
        if end > span.end:
            span.end = end
        span.n += 1
        return end


def scalar_unit(core, program):
    """The scalar unit's SimPy process: one pass per record of the program.

    The frequent records (Scalar, ScalarGm, VecOp, flags, PipeBarrier<V>, Tag, Macro, Dma, FetchEventID) are
    handled here without a generator hop, the rest by :mod:`~cgdr_des.hw.scalar_rare` (barriers on other pipes,
    TPipe bookkeeping, Cube-side records). Its clock ``t``, record index ``idx``, span and phase counts live in
    locals and are written to the :class:`ScalarUnit` before anything else reads them (a helper, a yield); the
    VecOp and PipeBarrier<V> counts are added to the phase's counts at the next Tag or rare record and at the
    end (only a Tag changes the phase). A record for a pipe sets ``P`` (the pipe), ``code`` and ``a``/``b`` (the
    entry's fields) and falls through to the hand-over at the bottom (:meth:`ScalarUnit.push` when the queue is
    full, inline otherwise). It yields only to wait: for a queue slot or a flag (:func:`_flag_wait`)."""
    su = core.s_unit = ScalarUnit(core)
    V, depth, pipes_get, routes, disp, api = su.V, su.depth, core.pipes.get, su.routes, su.disp, su.api
    scalar_gm_, set_flag, wait_flag, vp, kinds, keep = su.scalar_gm, su.set_flag, su.wait_flag, su.vp, su.kinds, su.keep
    t, idx, span, cnt, n_vec, n_bar = su.t, -1, su.span, su.cnt, 0, 0
    dirty, counts_get, spans_append = su.dirty, core.counts.get, core.spans.append
    for rec in program:
        idx += 1
        typ = type(rec)
        if typ is Scalar:     # count x the kind's cycles (:meth:`ScalarUnit.scalar` for the others)
            kind = kinds.get(rec.kind)
            if kind is None or rec.count < 0 or keep:
                t = su.scalar(rec, t, idx)
                continue
            cycles, key = kind
            cnt[key] += rec.count
            end = t + cycles * rec.count
            if t < span.start:      # Span.add, inline: the one copy (a call per Scalar record costs ~1 %)
                span.start = t
            if end > span.end:
                span.end = end
            span.n += 1
            t = end
            continue
        if typ is SetFlag or typ is WaitFlag:
            rid = rec.id       # the Flag (inline: a third of all records), or _lookup_flag's error
            if type(rid) is EventHandle:
                rid = rid.id
            try:
                row, info = routes[rec.event]
                fl = row[rid]
                if rid < 0:
                    raise IndexError
            except (KeyError, IndexError, TypeError):
                su.idx = idx
                fl, info = _lookup_flag(su, rec), EVENTS[rec.event]
            is_set = typ is SetFlag
            cnt[info.set_key if is_set else info.wait_key] += 1
            pipe = info.src if is_set else info.dst
            if pipe == "S":
                su.idx = idx
                if (su.stall_policy and fl.sets) if is_set else not fl.sets:    # (stall) a consume, or a set
                    su.t = t
                    yield from _flag_wait(su, fl, "set" if is_set else "flag")
                t = set_flag(fl, t) if is_set else wait_flag(fl, t)
                continue
            P = pipes_get(pipe) or core.pipe(pipe)     # MTE1 / M start on first use
            code, a, b = SET if is_set else WAIT, fl, None
        elif typ is VecOp:
            n_vec += 1
            try:
                a = vp[rec.dtype][rec.op]
            except KeyError:
                raise su.no_vec_cost(rec, idx) from None
            P, code, b = V, VEC, None
            t += api        # the mask set-up
        elif typ is PipeBarrier and rec.pipe == "V":
            n_bar += 1
            P, code, a, b = V, BAR, None, None
        elif typ is ScalarGm:
            t = scalar_gm_(rec, t)
            continue
        elif typ is Tag:        # a new span (phase fidelity's programs are one fifth Tags)
            if n_vec or n_bar:
                n_vec = n_bar = _add_counts(cnt, n_vec, n_bar)
            cnt = counts_get(rec.phase)
            if cnt is None:     # the phase's first Tag on this core
                span, cnt = core.open_span(rec)
            else:               # Core.open_span, inline
                span = Span(rec.phase, rec.batch, rec.head, rec.vtile, rec.chunk)
                spans_append(span)
                cnt["Tag"] += 1
            su.span, su.cnt = span, cnt
            continue
        elif isinstance(rec, Macro):      # phase fidelity: its V part to V, then S busy s_cycles
            su.idx, v_start = idx, rec.v_start
            v_len = rec.v_end - v_start
            # S's end depends on when V gets to the run (TimedMacro.s_waits): V tells it (free, done)
            started = MacroStart() if v_len > 0 and getattr(rec, "s_waits", False) else None
            if v_len > 0:
                q = V.q
                if len(q.items) >= depth:     # a full queue: wait for a slot
                    su.t = t
                    yield from su.push(V, MAC, rec, started, v_len, 0, v_start)
                    t = su.t
                else:       # IssueQueue.hand with no dispatch cycles, inline: one Macro in five records
                    n = q.n_push
                    t, stall = hand_over(t, q.ring[n % depth], 0)
                    su.stall += stall
                    q.items.append(new_entry(MacroEntry, (MAC, t + v_start, rec, span, idx, started, v_len)))
                    q.n_push = n + 1
                    if q.get_queue:     # V idle: its pump runs before the scalar unit next looks or waits
                        dirty.append(q.get_queue.pop())
            if started is not None:     # V must reach the run first: its pump runs, then S learns when
                su.t = t
                su.run_pipes()
                a, done = started.value or (yield from _macro_wait(su, started))
                t = su.macro(rec, t, late_cycle(0, a, done, rec.late[0]))
            else:
                t = su.macro(rec, t)
            continue
        elif typ is Dma:        # checked, then handed to MTE2 or MTE3 like any entry
            cnt["dma_" + rec.pipe] += rec.repeat
            P, code, a, b = core.dma_entry(rec, idx, span)
        elif typ is FetchEventID:     # nothing to wait for: no generator
            t = fetch_event_id(su, rec, t, idx)
            continue
        elif typ in QUEUE_TYPES:      # a TQue call: its bookkeeping, then the flag it inserts, if any
            su.t, su.idx = t, idx
            if n_vec or n_bar:
                n_vec = n_bar = _add_counts(cnt, n_vec, n_bar)
            cnt[typ.__name__] += 1      # isa.record_kind of a TQue call
            flag = tpipe_call(su, rec, typ)
            t = su.t
            if flag is None:
                continue
            P, code, a = flag
            b = None
        else:
            su.t, su.idx = t, idx
            if n_vec or n_bar:
                n_vec = n_bar = _add_counts(cnt, n_vec, n_bar)
            yield from other_record(su, rec, typ)
            t = su.t
            continue
        q = P.q
        if len(q.items) >= depth:
            su.t, su.idx = t, idx
            yield from su.push(P, code, rec, a, b, disp)
            t = su.t
            continue
        n = q.n_push        # IssueQueue.hand, inline: two records in five are handed over
        slot = q.ring[n % depth]        # rules.hand_over, written out (a call per hand-over is ~5 % of instr)
        if slot > t:
            su.stall += slot - t
            t = slot
        t += disp
        q.items.append(new_entry(ENTRY_TYPES[code], (code, t, rec, span, idx, a, b)))
        q.n_push = n + 1
        if q.get_queue:
            dirty.append(q.get_queue.pop())
    _add_counts(cnt, n_vec, n_bar)
    su.run_pipes()
    core.finish_scalar(t, su.stall, idx + 1)


def _add_counts(cnt, n_vec: int, n_bar: int) -> int:
    """Add the VecOps and PipeBarrier<V>s the scalar unit counted in locals to its phase's counts;
    returns 0 (the locals' new value)."""
    if n_vec:
        cnt["vec"] += n_vec
    if n_bar:
        cnt["barrier_V"] += n_bar
    return 0


def _macro_wait(su: ScalarUnit, started: MacroStart):
    """Yield until V reaches the Macro part ``started`` stands for; its (free, done) cycles then."""
    su.wait_kind, su.wait_on = "macro", su.V
    started.event = su.env.event()
    return (yield started.event)


def _flag_wait(su: ScalarUnit, fl, kind: str):
    """Yield until ``fl`` has a set recorded (``flag``: a WaitFlag on S) or has none pending
    (``set``: a SetFlag on S under the ``stall`` policy)."""
    su.run_pipes()
    while (not fl.sets) if kind == "flag" else fl.sets:
        su.wait_kind, su.wait_on = kind, fl
        yield fl.wait_set(su.env) if kind == "flag" else fl.wait_consumed(su.env)


def _lookup_flag(su: ScalarUnit, rec):
    """The Flag a Set/WaitFlag record names (a literal id or a filled-in EventHandle), or an error."""
    rid = rec.id
    if type(rid) is EventHandle:
        rid = rid.id
    try:
        return su.core.flags.get(rec.event, resolve_event_id(rid))
    except HwFault as exc:
        raise su.fail(str(exc)) from None
