"""One vector core (AIV): the scalar unit (a SimPy process) and the V, MTE2, MTE3 pipes.

Processes and resources of one core (all on the machine's one ``simpy.Environment``):

- the **scalar unit** (:mod:`.scalar`) walks the program and hands instructions to the pipes;
- **V, MTE2, MTE3** (:mod:`.pipes`) each drain an in-order **issue queue**
  (:class:`~cgdr_des.hw.queues.IssueQueue`, a SimPy resource of ``queue_depth`` slots). Each is a
  loop run by its :class:`~cgdr_des.hw.pipes.Pump`, which waits where a process would wait on an
  event (the queue's get, a flag's set, the GM bus's end of its DMA) and runs the loop in place
  when triggered: a pipe costs no SimPy event of its own;
- **flags** (:mod:`.flags`): a WaitFlag whose set is not recorded waits on the flag's SimPy event;
- **event ids** (:class:`~cgdr_des.hw.flags.EventIdPool`): a SimPy ``PriorityStore`` of free ids per
  HardEvent; **TQue buffers** (:mod:`.tque`): a SimPy ``Resource`` of BUFFER_NUM per TQue;
- **PipeBarrier<ALL>** waits on every pipe's drain event; a **DMA** on its transfer's completion
  event from the GM bus (:mod:`.gm`), the one resource shared across cores.

Time: every process keeps its own clock in integer cycles and runs *ahead* of ``env.now``,
advancing through instructions arithmetically (a vector op's start is ``max`` of the pipe's clock and
the hand-over cycle, and so on, :mod:`.rules`). It yields a SimPy event only when it needs something
another process has not produced yet -- a flag's set, a queue slot, an entry, a drained pipe, a DMA's
last byte -- and is resumed at the env time that something appeared. Why this is exact: every cycle a
process computes is ``max`` of its own clock and the cycles stamped on what it consumed, so the result
does not depend on the order SimPy resumes processes in (a dataflow network). For the GM bus the
machine keeps the invariant that a process's clock is >= ``env.now`` whenever it runs, so a DMA's data
phase is known to the bus by the env time it starts, and a transfer's completion is delivered at env
time == completion.

Why it is fast: instructions that need nothing from another process cost no SimPy event; the scalar
unit uses one event per blocking wait (about one per queue-full of instructions, per V->S round trip,
or per PipeBarrier<ALL> behind a DMA), and the pipes none (their pumps run in the caller's call).
Deadlock: when SimPy's schedule runs dry while a core still has work, nothing can ever change, and
the machine reports what each waiting process waits for (see :meth:`Core.blocked`).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from cgdr_des.hw.cube_costs import cube_cycles
from cgdr_des.hw.dcache import DataCache
from cgdr_des.hw.diagnostics import HwFault, at, flag_name, tag_text
from cgdr_des.hw.dma import check_dma, dma_numbers
from cgdr_des.hw.flags import EventIdPool, FlagTable
from cgdr_des.hw.hazards import BufferLog
from cgdr_des.hw.pipes import FIXED_PIPES, PipeState, fixed_pipe, mte_pipe, vector_pipe
from cgdr_des.hw.records import DMA, WAIT, MacroTally, Span
from cgdr_des.hw.scalar import ScalarUnit, scalar_unit
from cgdr_des.hw.simpy_compat import close_process
from cgdr_des.hw.tque import UnifiedBuffer


class Core:
    """One AIV running one program. ``rows`` is the machine-wide ops list (shared by all cores)."""

    def __init__(self, cid: int, program, *, profile, env, bus, rows: list, keep_ops: bool,
                 vec_params, scalar_costs, dcache: DataCache | None = None, fixed_costs=None) -> None:
        self.cid, self.profile, self.env, self.bus = cid, profile, env, bus
        self.program = program
        self.rows, self.keep_ops = rows, keep_ops
        self.vec_params, self.scalar_costs = vec_params, scalar_costs
        self.t0 = profile.kernel_launch_cycles
        n_ids = profile.event_ids_per_hard_event
        self.flags, self.pool = FlagTable(n_ids), EventIdPool(env, n_ids)
        self.ub = UnifiedBuffer(env, profile.ub_bytes, profile.ub_align_bytes, n_ids)
        self.dcache = dcache or DataCache(profile.dcache_line_bytes, profile.dcache_bytes)
        self.pipes = {name: PipeState(env, name, profile.queue_depth, self.t0) for name in ("V", "MTE2", "MTE3")}
        self.pipe_list = list(self.pipes.values())
        self.spans: list[Span] = []
        self.counts: dict[str, defaultdict] = {}
        #: Macro counts, tallied per (phase, macro): a replayed Macro stands for a dozen kinds, added
        #: to ``counts`` once at the end (counter) instead of per replay
        self.macro_counts: dict[tuple[int, int], MacroTally] = {}
        self.s_done, self.s_unit = False, None
        self.s_t = self.s_busy = self.s_stall = self.n_records = 0
        self.gm_read = self.gm_written = 0
        self.processes: list = []
        self.errors: list = []
        self.fixed_costs = fixed_costs or cube_cycles   # (profile, record) -> (issue, latency), Cube side
        self.buffers = BufferLog()

    def start(self, errors: list) -> None:
        """Start the core's scalar unit (a SimPy process) and set its pipes' pumps waiting for their
        first entries (:class:`~cgdr_des.hw.pipes.Pump`). An exception the scalar unit raises (a
        diagnostic, or one from the program's own generator, or from a pipe its hand-over ran) is
        appended to ``errors`` instead of propagating: SimPy would re-raise a reconstructed copy, which
        breaks exceptions whose constructor takes other arguments than their message (InputError). One
        a pipe raises when the GM bus ends its DMA propagates from the bus's SimPy callback unchanged."""
        env, self.errors = self.env, errors
        for P in self.pipe_list:    # V, MTE2, MTE3: idle until the scalar unit hands them an entry
            P.q.get_queue.append(vector_pipe(self, P) if P.name == "V" else mte_pipe(self, P))
        self.processes = [env.process(_reporting(scalar_unit(self, self.program), errors))]

    def pipe(self, name: str) -> PipeState:
        """The pipe ``name``; MTE1 and M (a Cube-era program's) are made and started on first use."""
        P = self.pipes.get(name)
        if P is None:
            if name not in FIXED_PIPES:
                raise HwFault(f"no pipe {name!r} on an AIV (V, MTE2, MTE3, and {', '.join(FIXED_PIPES)})")
            P = self.pipes[name] = PipeState(self.env, name, self.profile.queue_depth, self.t0)
            self.pipe_list.append(P)
            self.processes.append(self.env.process(_reporting(fixed_pipe(self, P), self.errors)))
        return P

    def fixed_cost(self, rec) -> tuple[int, int]:
        """``(issue, latency)`` cycles of a Cube-side record, from the machine's cost function."""
        return self.fixed_costs(self.profile, rec)

    # ------------------------------------------------------------ called by the processes

    def open_span(self, tag) -> tuple[Span, defaultdict]:
        """Start the span of a Tag (``None``: the records before any Tag); returns it and the counts
        of its phase (the Tag counted in them)."""
        span = Span() if tag is None else Span(tag.phase, tag.batch, tag.head, tag.vtile, tag.chunk)
        self.spans.append(span)
        counts = self.counts.get(span.phase)
        if counts is None:
            counts = self.counts[span.phase] = defaultdict(int)
        if tag is not None:
            counts["Tag"] += 1
        return span, counts

    def dma_entry(self, rec, idx: int, span: Span):
        """Check a Dma record and return its hand-over: ``(pipe, DMA, first_byte, cap)``."""
        try:
            check_dma(rec, self.profile.ub_bytes, self.profile.l1_bytes)
        except HwFault as exc:
            raise at(self.cid, idx, span, str(exc)) from None
        read, first_byte, cap = dma_numbers(self.profile, rec)
        self.dcache.moved(rec)      # its GM lines, now in L2 (docs/timing.md §2.5)
        if read:
            self.gm_read += rec.nbytes
        else:
            self.gm_written += rec.nbytes
        return self.pipes["MTE2" if read else "MTE3"], DMA, first_byte, cap

    def finish_scalar(self, t: int, stall: int, n_records: int) -> None:
        """The scalar unit is sequential: it was busy whenever it was not stalled."""
        self.s_t, self.s_busy, self.s_stall, self.n_records = t, t - self.t0 - stall, stall, n_records
        self.s_done = True

    @property
    def finished(self) -> bool:
        """The scalar unit walked the whole program and every pipe drained."""
        return self.s_done and all(P.drained for P in self.pipe_list)

    def release(self) -> None:
        """Close the processes once the run is over. Each generator's frame refers back to this
        core, and each waiting process to its event and back: reference cycles that only the cyclic
        collector frees -- and the machine runs with it disabled (phase fidelity runs many small
        machines inside a big one), so without this every finished machine would stay in memory
        until the end. What it leaves is small: each pipe's closures still refer to the core and to
        each other, which is why :meth:`Machine.run` hands the rows over in a list of their own."""
        for proc in self.processes:
            target = proc.target
            if target is not None and target.callbacks:
                target.callbacks = []
            close_process(proc)
        for P in self.pipe_list:
            P.q.unhook()
            P.drain_ev = P.head = None
        for row in self.flags.table.values():   # a pipe's pump waiting on a flag refers back to the core
            for fl in row:
                fl.waiter = fl.set_waiter = None
        self.processes = []
        self.program = None

    # ------------------------------------------------------------ results

    @property
    def finish(self) -> int:
        """The core's last cycle: the latest of the scalar unit's clock and every pipe's last end."""
        return max(self.s_t, *(P.done for P in self.pipe_list))

    def stats(self) -> dict:
        """The core's totals (``CORE_KEYS``; ``busy_M``... only where a Cube-era program used M)."""
        V, M2, M3 = (self.pipes[name] for name in ("V", "MTE2", "MTE3"))
        out = {"core": self.cid, "finish": self.finish, "busy_S": self.s_busy, "busy_V": V.busy,
               "busy_MTE2": M2.busy, "busy_MTE3": M3.busy, "stall_S": self.s_stall, "stall_V": V.stall,
               "stall_MTE2": M2.stall, "stall_MTE3": M3.stall, "n_records": self.n_records,
               "first_V": V.first, "last_V": V.done if V.first is not None else None}
        for name in FIXED_PIPES:
            if name in self.pipes:
                out["busy_" + name], out["stall_" + name] = self.pipes[name].busy, self.pipes[name].stall
        return out

    def counter(self) -> Counter:
        """Every record the core pulled, as ``(phase, kind)`` counts (Macro tallies added in)."""
        for tally in self.macro_counts.values():
            for kind, n in tally.counts:
                tally.phase_counts[kind] += n * tally.times
        self.macro_counts.clear()
        return Counter({(phase, kind): n for phase, kinds in self.counts.items() for kind, n in kinds.items()})

    def blocked(self) -> list[str]:
        """One line per process that still has work, saying what it waits for and where."""
        lines = []
        if not self.s_done:
            lines.append(f"core {self.cid} S: {_describe_s(self.s_unit)}")
        for P in self.pipe_list:
            if P.q.items or P.outstanding:
                lines.append(f"core {self.cid} {P.name}: {_describe_head(P)}")
        return lines


def _describe_s(su: ScalarUnit | None) -> str:
    if su is None or su.wait_kind is None:
        return "not finished"
    obj = su.wait_on
    if su.wait_kind == "flag":
        what = f"waits in {flag_name('WaitFlag', obj)} for a SetFlag that never comes{_lost(obj)}"
    elif su.wait_kind == "set":
        what = f"waits in {flag_name('SetFlag', obj)} for the previous set to be consumed"
    elif su.wait_kind == "macro":
        what = "waits for V to reach the V part of a replayed compute run"
    elif su.wait_kind == "room":
        what = f"waits for a free slot in the full {obj.name} queue ({len(obj.q.items)} entries)"
    else:
        what = f"waits in PipeBarrier<ALL> for {', '.join(p.name for p in obj if not p.drained)} to drain"
    return f"{what}, at record #{su.idx} ({tag_text(su.span)})"


def _lost(flag) -> str:
    """What the ``lost`` policy did to a flag, for a deadlock line."""
    if not flag.lost:
        return ""
    return (f" ({flag.lost} set(s) of it were lost: they fired while it was still set, and "
            "flag_double_set='lost' keeps one bit)")


def _describe_head(P: PipeState) -> str:
    e = P.head if P.head is not None else (P.q.items[0] if P.q.items else None)
    if e is None:
        return "has work but no head entry"
    if e.code == WAIT:
        what = f"waits in {flag_name('WaitFlag', e.flag)} for a SetFlag that never comes{_lost(e.flag)}"
    elif e.code == DMA:
        what = "waits for its DMA to finish (GM bandwidth)"
    else:
        what = "blocked"
    return f"{what}, at record #{e.idx} ({tag_text(e.span)}); {len(P.q.items)} entries queued"


def _reporting(gen, errors: list):
    """Run the process ``gen``; an exception is appended to ``errors`` (see :meth:`Core.start`)."""
    try:
        yield from gen
    except Exception as exc:        # handed to Machine.run unchanged
        errors.append(exc)
