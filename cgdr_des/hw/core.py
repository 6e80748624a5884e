"""One vector core (AIV): a scalar unit and the V, MTE2, MTE3 pipes, scheduled without SimPy events.

Structure: a :class:`Core` owns four *automata*, generators that each keep their own clock in cycles
and advance through runs of instructions arithmetically: the scalar unit (:mod:`.scalar`), which walks
the program and hands instructions to the pipes' bounded in-order queues, and one automaton per pipe
(:mod:`.pipes`). Connections are plain data: queues (deques of entries stamped with the cycle they were
handed over), the ring of dequeue cycles (full-queue stalls), and flags (:mod:`.flags`: timelines of
set and consume cycles).

An automaton yields only when it must block on information another automaton has not produced yet:
a flag with no set recorded, an empty queue, a full queue whose oldest entry has not started, pipes not
yet drained for PipeBarrier<ALL>, or a DMA whose data has not finished moving. Before yielding it
registers itself with whatever it waits on; the producer of that information appends it to the core's
``ready`` list. The core's single SimPy process (:meth:`Core.process`) resumes ready automata until none
is ready, then yields to SimPy until the GM bus (:mod:`.gm`) reports a completed transfer of this core.

Why this is exact: every time an automaton computes is ``max`` of its own clock and the cycles stamped on
the information it consumed, so the result does not depend on the order automata run in (a dataflow
network). The one resource shared across cores is GM bandwidth, whose effect depends on which transfers
overlap in time; for it the machine keeps the invariant that an automaton only runs with its clock >=
``env.now`` (it is resumed at the env time its information appeared, stamped at or after that time), so a
DMA's data phase is always known to the bus by the env time it starts, and a transfer's completion is
delivered at env time == completion.

Why it is fast: within a core, no SimPy event is used at all; SimPy events happen only around DMAs.
Deadlock: if no automaton is ready and no DMA of the core is in flight while work remains, nothing can
ever change, and the machine reports every blocked automaton (see :meth:`Core.blocked`).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from cgdr_des.hw.costs import dma_first_byte_cycles
from cgdr_des.hw.dcache import DataCache
from cgdr_des.hw.diagnostics import HwFault, at, flag_name, tag_text
from cgdr_des.hw.dma import check_dma, dma_numbers
from cgdr_des.hw.flags import EventIdPool, FlagTable
from cgdr_des.hw.pipes import PipeState, mte_pipe, vector_pipe
from cgdr_des.hw.records import DMA, WAIT, MacroTally, Span
from cgdr_des.hw.scalar import ScalarUnit, scalar_unit
from cgdr_des.hw.tque import UnifiedBuffer


class Core:
    """One AIV running one program. ``rows`` is the machine-wide ops list (shared by all cores)."""

    def __init__(self, cid: int, program, *, profile, env, bus, rows: list, keep_ops: bool,
                 vec_params, scalar_costs, dcache: DataCache | None = None) -> None:
        self.cid, self.profile, self.env, self.bus = cid, profile, env, bus
        self.rows, self.keep_ops = rows, keep_ops
        self.vec_params, self.scalar_costs = vec_params, scalar_costs
        self.t0 = profile.kernel_launch_cycles
        n_ids = profile.event_ids_per_hard_event
        self.flags, self.pool = FlagTable(n_ids), EventIdPool(n_ids)
        self.ub = UnifiedBuffer(profile.ub_bytes, profile.ub_align_bytes, n_ids)
        self.dcache = dcache or DataCache(profile.dcache_line_bytes, profile.dcache_bytes)
        self.pipes = {name: PipeState(name, profile.queue_depth, self.t0) for name in ("V", "MTE2", "MTE3")}
        self.pipe_list = list(self.pipes.values())
        self.spans: list[Span] = []
        self.counts: dict[str, defaultdict] = {}
        #: Macro counts, tallied per (phase, macro): a replayed Macro stands for a dozen kinds, added
        #: to ``counts`` once at the end (counter) instead of per replay
        self.macro_counts: dict[tuple[int, int], MacroTally] = {}
        self.ready: list = []
        self.wake_ev = None
        self.s_done, self.s_unit = False, None
        self.s_t = self.s_busy = self.s_stall = self.n_records = 0
        self.gm_read = self.gm_written = 0
        self.s_gen = scalar_unit(self, program)
        for P in self.pipe_list:
            P.gen = vector_pipe(self, P) if P.name == "V" else mte_pipe(self, P)
            P.on_done = self._transfer_done(P)
        self.ready.append(self.s_gen)

    # ------------------------------------------------------------ called by the automata

    def open_span(self, tag) -> tuple[Span, defaultdict]:
        """Start the span of a Tag (``None``: the records before any Tag); returns it and the counts
        of its phase."""
        span = Span() if tag is None else Span(tag.phase, tag.batch, tag.head, tag.vtile, tag.chunk)
        self.spans.append(span)
        counts = self.counts.get(span.phase)
        if counts is None:
            counts = self.counts[span.phase] = defaultdict(int)
        return span, counts

    def dma_entry(self, rec, idx: int, span: Span):
        """Check a Dma record and return the hand-over fields ``(pipe, code, pre, first_byte, cap)``."""
        try:
            check_dma(rec, self.profile.ub_bytes)
        except HwFault as exc:
            raise at(self.cid, idx, span, str(exc)) from None
        read, first_byte, cap = dma_numbers(self.profile, rec)
        self.dcache.moved(rec)      # its GM lines, now in L2 (docs/timing.md §2.5)
        first_byte = dma_first_byte_cycles(self.profile, read, rec.repeat) if rec.repeat > 1 else first_byte
        if read:
            self.gm_read += rec.nbytes
        else:
            self.gm_written += rec.nbytes
        return self.pipes["MTE2" if read else "MTE3"], DMA, 0, first_byte, cap

    def finish_scalar(self, t: int, stall: int, n_records: int) -> None:
        """The scalar unit is sequential: it was busy whenever it was not stalled."""
        self.s_t, self.s_busy, self.s_stall, self.n_records = t, t - self.t0 - stall, stall, n_records
        self.s_done = True

    def _transfer_done(self, P: PipeState):
        def on_done(_tr) -> None:
            self.ready.append(P.gen)
            if self.wake_ev is not None and not self.wake_ev.triggered:
                self.wake_ev.succeed()
        return on_done

    # ------------------------------------------------------------ the SimPy process

    @property
    def finished(self) -> bool:
        return self.s_done and all(P.drained for P in self.pipe_list)

    def release(self) -> None:
        """Drop the automata once the run is over. Each generator's frame refers back to this core,
        a reference cycle that only the cyclic collector frees -- and the machine runs with it
        disabled (phase fidelity runs many small machines inside a big one), so without this every
        finished machine's rows would stay in memory until the end."""
        self.s_gen = None
        self.ready.clear()
        self.wake_ev = None
        for P in self.pipe_list:
            P.gen = P.on_done = None

    def process(self, errors: list):
        """Resume ready automata until none is; wait for the GM bus when a DMA is in flight.

        An exception (a diagnostic, or one raised by the program's own generator) is appended to
        ``errors`` instead of propagating: SimPy would re-raise a reconstructed copy, which breaks
        exceptions whose constructor takes other arguments than their message (InputError).
        """
        ready = self.ready
        while True:
            try:
                while ready:
                    next(ready.pop())
            except Exception as exc:        # handed to Machine.run unchanged
                errors.append(exc)
                return
            if self.finished or not any(P.outstanding for P in self.pipe_list):
                return          # done, or deadlocked: the machine reports it
            self.wake_ev = self.env.event()
            yield self.wake_ev
            self.wake_ev = None

    # ------------------------------------------------------------ results

    @property
    def finish(self) -> int:
        return max(self.s_t, *(P.done for P in self.pipe_list))

    def stats(self) -> dict:
        V, M2, M3 = self.pipe_list
        return {"core": self.cid, "finish": self.finish, "busy_S": self.s_busy, "busy_V": V.busy,
                "busy_MTE2": M2.busy, "busy_MTE3": M3.busy, "stall_S": self.s_stall, "stall_V": V.stall,
                "stall_MTE2": M2.stall, "stall_MTE3": M3.stall, "n_records": self.n_records,
                "first_V": V.first, "last_V": V.done if V.first is not None else None}

    def counter(self) -> Counter:
        for tally in self.macro_counts.values():
            for kind, n in tally.counts:
                tally.phase_counts[kind] += n * tally.times
        self.macro_counts.clear()
        return Counter({(phase, kind): n for phase, kinds in self.counts.items() for kind, n in kinds.items()})

    def blocked(self) -> list[str]:
        """One line per automaton that still has work, saying what it waits for and where."""
        lines = []
        if not self.s_done:
            lines.append(f"core {self.cid} S: {_describe_s(self.s_unit)}")
        for P in self.pipe_list:
            if P.q or P.outstanding:
                lines.append(f"core {self.cid} {P.name}: {_describe_head(P)}")
        return lines


def _describe_s(su: ScalarUnit | None) -> str:
    if su is None or su.wait_kind is None:
        return "not finished"
    obj = su.wait_on
    if su.wait_kind == "flag":
        what = f"waits in {flag_name('WaitFlag', obj)} for a SetFlag that never comes"
    elif su.wait_kind == "set":
        what = f"waits in {flag_name('SetFlag', obj)} for the previous set to be consumed"
    elif su.wait_kind == "room":
        what = f"waits for a free slot in the full {obj.name} queue ({len(obj.q)} entries)"
    else:
        what = f"waits in PipeBarrier<ALL> for {', '.join(obj)} to drain"
    return f"{what}, at record #{su.idx} ({tag_text(su.span)})"


def _describe_head(P: PipeState) -> str:
    e = P.head if P.head is not None else (P.q[0] if P.q else None)
    if e is None:
        return "has work but no head entry"
    if e.code == WAIT:
        what = f"waits in {flag_name('WaitFlag', e.a)} for a SetFlag that never comes"
    elif e.code == DMA:
        what = "waits for its DMA to finish (GM bandwidth)"
    else:
        what = "blocked"
    return f"{what}, at record #{e.idx} ({tag_text(e.span)}); {len(P.q)} entries queued"
