"""``phase`` fidelity: runs of scalar + vector work timed once, in isolation, and replayed as Macros.

:meth:`PhaseCompiler.compile` takes the records of one phase (one Tag's worth) and replaces every
maximal *compute run* by one :class:`~cgdr_des.isa.Macro`. A compute run is a sequence of records
that involve only the scalar unit and the vector pipe: Scalar, ScalarGm, VecOp, PipeBarrier<V>, and
SetFlag/WaitFlag of S_V, V_S, V_V with literal ids. Everything that synchronises with the MTE pipes
or other cores (DMAs, TQue calls, event ids, other flags, PipeBarrier<MTE*|ALL>) stays explicit.

Timing a run: what the machine gives it run alone on an idle core (same profile, the compiler's data
cache), relative to the scalar unit's first cycle: ``s_cycles`` (the scalar unit's busy + stall time
through the run), ``v_start``/``v_end`` (first V start, last V end). ``counts`` are the replaced
records' ``(record_kind, n)``, a Scalar weighted by its count, so a phase run counts exactly what an
``instr`` run counts. By default :class:`~cgdr_des.hw.compute_run.ComputeRunTimer` computes those
numbers in one pass over the run, which also finds where the run ends and whether it is balanced;
it is exact where it answers (see its module), and where it does not (a diagnostic, an unbalanced
run) the data cache is put back and the machine decides as before. ``exact_machine=True`` always
runs the machine (the reference the fast timer is tested against).

Loops of like iterations reach the compiler as :class:`~cgdr_des.isa.Repeat` records (the kernel
emits them when ``accepts_repeat``): the timer walks a few iterations and extrapolates the rest
exactly; wherever the machine must see the records (``exact_machine``, a fallback), they are expanded.

The compiler emits :class:`TimedMacro`, a Macro that also carries how the run's time splits into
busy and stalled cycles, so per-pipe utilisation agrees with ``instr`` (a plain Macro counts its
whole span as busy).

A run met by a busy V. The idle timing alone would let S go through the run's V->S waits as if V
were idle when the run began. So each run is scanned once more (:meth:`PhaseCompiler._late_scans`),
with V free and done past everything the idle run timed. Every cycle the timer computes is a max of
sums of nonnegative costs and of its inputs, so S's end, V's end and V's free after the run are each
``max(idle, a + k)`` in the cycle ``a`` V can start the run's V part (k = -inf where no path leads
from there): the scan gives every k (:func:`late_numbers`), and the replay is exact for every
backlog. The V pipe tells the scalar unit when it reaches the Macro's V part (a
:class:`~cgdr_des.hw.records.MacroStart` per Macro whose S waits for V, ``TimedMacro.s_waits``; S
waits on a SimPy event only if V has not got there when S looks). What remains: ``a`` is taken as the
later of V's free and done cycles, an upper bound by at most the last op's latency where V's
earlier work ends past its free cycle (not after the kernel's runs, which end on a barrier); and the
late scan takes V's earlier queue entries as gone, so an entry that leaves V's queue only as it ends
(a PipeBarrier<V> still waiting) holds a slot the replay does not see (a few cycles;
tests/test_phase_late.py holds both).

DataCopy runs (:func:`~cgdr_des.hw.dma_runs.merge_dma_runs`): the last ``queue_depth + 1`` calls of a run of like
DataCopy calls stay apart, so S's stalls on a full MTE queue are ``instr``'s; the calls before them
are one burst (``repeat``). A run followed at once by PipeBarrier<ALL> is one burst whole: S waits
there for the run's last byte however it handed the calls over (the state rows of Steps 3 and 7,
32 736 of long_t2048's 35 776 GM transfers before). A burst's first byte comes one call's first
byte after its start and its bytes are spread over the time its calls take one after the other
(:func:`~cgdr_des.hw.rules.burst_cap`): alone it ends on its last call's cycle; beside other cores
it takes the bus as thinly as the calls do on average, though it does not meet them call by call
(eight cores in lockstep to the cycle: tests/test_phase_dma_runs.py).

Against ``instr`` (analysis/benchmarks/bench_phase_variants.py, every kernel variant on six small
launches, two profiles): makespan within 0.03 % (3.4 % with the idle-V timing of earlier versions),
and each variant's saving over the baseline within 5 % of ``instr``'s (state_double_buffer on dk =
64, one 130-token item: 2 085 cycles at phase, 2 131 at instr; 47 140 with the idle-V timing). What
it costs, CPU against the idle-V model (the benchmark's part 2): a whole phase run takes 1.4-1.7x
(one run: representative 1.54, long_t1024 1.52, long_tail 1.37; on a shared machine the ratios
move by about 0.15 from run to run). The late scan is a second full scan of each
compiled run (of its head only, twice, where the run ends in loops of scalar work:
:func:`scalar_tail`), about doubling compile time (representative 0.040 -> 0.075 s, nearly all of its
extra); the DataCopy singles add MTE entries and GM re-plans to the replay (long_t1024 +0.19 s of
its +0.20 s, long_tail +0.19 of +0.23). A run whose flags are not
balanced within it (a set consumed, or a wait satisfied, outside the run) or that cannot be timed
alone (a diagnostic) is kept explicit, so it is timed exactly; so is a run of a single record.

Data cache, two ways. By default (``compile(records)``) ScalarGm hits and misses are those of the
compiler's one shared cache, carried from one isolated run to the next in the order the runs are
first compiled (the program order of the first chunk with each signature), so a phase re-reading
lines an earlier phase read hits as it does at ``instr`` fidelity. Per core (``compile(records,
core)`` through :meth:`PhaseCompiler.occurrence`, used by the simulation where V-tiles are split
across cores): each core has its own cache, as on the chip, and every occurrence of a phase that
reads GM by scalar passes its own accesses through it, so each core's hits and misses are exactly
``instr``'s; a compiled phase is reused only by occurrences whose accesses hit and miss alike (the
caller keys its cache by the hit pattern). The shared cache is wrong where cores read the same lines
(sibling V-tiles) and where a later occurrence's lines were evicted or not; it stays the default of
launches that do not split V-tiles, whose golden cycle counts it pins (tests/test_golden.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.hw.compute_run import ComputeRunTimer, RunTiming
from cgdr_des.hw.compute_state import COMPUTE_EVENTS
from cgdr_des.hw.dcache import DataCache, data_cache
from cgdr_des.hw.dma_runs import merge_dma_runs
from cgdr_des.hw.flags import DOUBLE_SET
from cgdr_des.hw.gm_traffic import gm_accesses, gm_traffic, touch, touch_walk  # noqa: F401 (re-exported)
from cgdr_des.hw.late_scan import late_numbers, late_start, scalar_tail
from cgdr_des.hw.machine import Machine
from cgdr_des.hw.profile import Profile
from cgdr_des.hw.scan_marks import BusyMatch, IdleMarks
from cgdr_des.isa import (
    Dma,
    Macro,
    PipeBarrier,
    Repeat,
    Scalar,
    ScalarGm,
    SetFlag,
    VecOp,
    WaitFlag,
    expand,
    record_kind,
)


@dataclass(frozen=True, slots=True)
class TimedMacro(Macro):
    """A Macro with the busy/stall split of its isolated run (cycles): of ``s_cycles`` the scalar
    unit stalled ``s_stall``; of ``v_end - v_start`` the vector pipe was busy ``v_busy`` (union of
    its work) and blocked in waits and barriers ``v_stall``."""

    s_stall: int = 0
    v_busy: int = 0
    v_stall: int = 0
    #: V's free cycle after the run (its last issue, before the last op's latency; None: ``v_end``)
    v_free: int | None = None
    #: how the run's S end, V end and V free move when V is still busy as the run begins (its V part
    #: starts at ``a`` past its idle start, or V's earlier work ends at ``d`` past that): for each
    #: of the three, the cycles after ``max(a, d)`` it cannot be earlier than, None where no path
    #: leads there (:func:`late_numbers`). None: the run hands V nothing.
    late: tuple | None = None
    #: S's end depends on when V gets to the run (``late[0]`` is not None)
    s_waits: bool = False


def balanced(run: list) -> bool:
    """Whether every flag set in ``run`` is waited in it, in order, and every wait follows its set."""
    pending = Counter()
    for rec in run:
        t = type(rec)
        if t is SetFlag:
            pending[(rec.event, rec.id)] += 1
        elif t is WaitFlag:
            key = (rec.event, rec.id)
            if not pending[key]:
                return False
            pending[key] -= 1
    return not any(pending.values())


def is_compute(rec) -> bool:
    """Whether ``rec`` only involves the scalar unit and the vector pipe."""
    t = type(rec)
    if t is Scalar or t is VecOp or t is ScalarGm or t is Repeat:
        return True
    if t is PipeBarrier:
        return rec.pipe == "V"
    if t is SetFlag or t is WaitFlag:
        return rec.event in COMPUTE_EVENTS and type(rec.id) is int
    return False


class PhaseRecorder:
    """Stands in for a launch's compiler (``launch.compiler``): keeps each phase's records, in the
    order phase fidelity would compile them, and returns them unchanged (to inspect or time them)."""

    def __init__(self, *, repeats: bool = False) -> None:
        self.phases: list[list] = []
        self.accepts_repeat = repeats   # True: loops stay isa.Repeat records, as the compiler gets them

    def compile(self, records: list) -> list:
        self.phases.append(list(records))
        return records


class PhaseCompiler:
    """Turns a phase's record list into one with its compute runs replaced by Macros.

    ``exact_machine=True`` times every run on the machine (the reference); by default the one-pass
    timer does, with the machine as fallback, and both give the same records, counters and cache.
    """

    #: phases hand loops of like iterations over as isa.Repeat (the timer extrapolates them; every
    #: path to the machine expands them first)
    accepts_repeat = True
    #: time each run's dependence on a busy V (TimedMacro.late) and keep the last queue_depth + 1
    #: calls of a DataCopy run apart (merge_dma_runs). False: the V-idle model of earlier versions,
    #: for the benchmark that measures what this costs and buys (analysis/benchmarks/bench_phase_variants.py)
    late_v = True
    #: True: an occurrence's GM traffic goes through a core's cache access by access (:func:`touch_walk`,
    #: the reference) rather than as arrays (:func:`touch`)
    walk_accesses = False

    def __init__(self, profile: Profile, name: str = "compute", *, exact_machine: bool = False) -> None:
        self.profile, self.name = profile, name
        self.machine = Machine(profile, keep_ops=False)
        self.shared_dcache = self.dcache = self._new_cache()
        self.core_dcaches: dict[int, DataCache] = {}
        # the one-pass timer models every flag policy but ``lost``, whose dropped sets only the
        # machine follows (a lost set usually means a deadlock the machine must report anyway)
        fast = not exact_machine and not DOUBLE_SET[profile.flag_double_set].lose
        self.timer = ComputeRunTimer(profile) if fast else None
        # the late numbers (TimedMacro.late) come from the timer on either path
        self.late_timer = None if DOUBLE_SET[profile.flag_double_set].lose else (self.timer or ComputeRunTimer(profile))
        self.compiled_runs = 0
        self.kept_runs = 0

    def _new_cache(self) -> DataCache:
        return data_cache(self.profile)

    def core_dcache(self, core: int) -> DataCache:
        """Core ``core``'s own data cache, as the per-core compile keeps it (see :meth:`occurrence`)."""
        cache = self.core_dcaches.get(core)
        if cache is None:
            cache = self.core_dcaches[core] = self._new_cache()
        return cache

    def compile(self, records: list, core: int | None = None) -> list:
        """``records`` with their compute runs replaced by Macros, timed against the compiler's shared
        data cache, or against core ``core``'s own when given."""
        return self._compile_on(records, self.shared_dcache if core is None else self.core_dcache(core))

    def _compile_on(self, records: list, cache: DataCache) -> list:
        """:meth:`compile` against ``cache``."""
        self.dcache = cache
        records = records if type(records) is list else list(records)
        out = self._compile_machine(expand(records)) if self.timer is None else self._compile_fast(records)
        return merge_dma_runs(out, self.profile.queue_depth + 1 if self.late_v else 0)

    def touch(self, records: list, core: int) -> bytes:
        """Pass ``records``' GM traffic through core ``core``'s own data cache: its DataCopy calls
        fill L2 (when tracked), its scalar accesses hit or miss; their outcomes (see :func:`touch`)."""
        return self._touch(self.core_dcache(core), records)

    def _touch(self, cache: DataCache, records: list) -> bytes:
        return touch_walk(cache, records) if self.walk_accesses else touch(cache, records)

    def occurrence(self, records: list, core: int) -> tuple[bytes | None, Callable[[], list]]:
        """One occurrence of a phase on core ``core``, for a per-core compile cache: its GM traffic
        goes through the core's own data cache (left as after it, as at ``instr`` fidelity), and the
        outcomes of its scalar accesses come back (None: a phase without GM traffic the cache sees,
        the same on every core and occurrence) with a function that compiles the records as from
        the cache before them (the phase's timing depends on the cache only through those outcomes)."""
        cache = self.core_dcache(core)
        if not gm_traffic(records, cache.l2 is not None):
            return None, partial(self.compile, records, core)
        saved = cache.snapshot()
        pattern = self._touch(cache, records)

        def compile_here() -> list:
            """Compiled against a copy of the cache before: the core's own stays as the touch left it
            (explicit ScalarGm records, which no run times, are in it too)."""
            return self._compile_on(records, cache.copy_of(saved))

        return pattern, compile_here

    def macro(self, run: list) -> TimedMacro:
        """Time ``run`` alone on an idle core; raises KernelDiagnostic if it cannot run alone.

        Where the fast timer cannot answer, the data cache is put back and the machine answers, so
        the numbers, the raise and the cache afterwards are always the machine's."""
        if self.timer is not None:
            saved = self.dcache.state()
            try:
                marks = IdleMarks() if self.late_v else None
                timing = self.timer.time(run, self.dcache, marks)
                return self._timed(timing, self._late_scans(run, 0, timing, saved, marks=marks))
            except KernelDiagnostic:
                self.dcache.restore(saved)
        return self.machine_macro(run)

    def machine_macro(self, run: list) -> TimedMacro:
        """:meth:`macro` by the machine itself; its ``v_free`` and ``late`` numbers by the one-pass
        timer (None where it cannot answer: the ``lost`` flag policy, a diagnosed run), which the
        tests hold to the machine behind a V held busy (tests/test_phase_late.py)."""
        run = expand(run)
        saved = self.dcache.state()
        result = self.machine.run([run], dcaches=[self.dcache])
        core, t0 = result.cores[0], self.profile.kernel_launch_cycles
        ran_v = core["first_V"] is not None
        v_start = core["first_V"] - t0 if ran_v else 0
        v_end = core["last_V"] - t0 if ran_v else 0
        counts = Counter()
        for rec in run:
            counts[record_kind(rec)] += rec.count if type(rec) is Scalar else 1
        timing = RunTiming(core["busy_S"] + core["stall_S"], v_start, v_end, tuple(sorted(counts.items())),
                           core["stall_S"], core["busy_V"], core["stall_V"], v_end)
        late = None
        if self.late_timer is not None and v_end > v_start:
            after = self.dcache.state()
            self.dcache.restore(saved)
            try:
                marks = IdleMarks()
                idle, _ = self.late_timer.scan(run, 0, self.dcache, marks=marks)
                timing = timing._replace(v_free=idle.v_free)
                late = self._late_scans(run, 0, timing, saved, self.late_timer, marks=marks)
            except KernelDiagnostic:
                late = None
            self.dcache.restore(after)
        return self._timed(timing, late)

    def _late_scans(self, records: list, i: int, timing: RunTiming, saved, timer=None,
                    end: int | None = None, marks: IdleMarks | None = None) -> tuple | None:
        """The ``late`` numbers of the run ``records[i:end]`` (:func:`late_numbers`): scanned again
        with V busy until after the idle run's span, from the data cache ``saved`` before the run (a
        :meth:`~cgdr_des.hw.dcache.DataCache.state` the scans take over: not to be restored from
        afterwards; the compiler's cache is left as it was found); None if V does nothing in the run or
        the scan is diagnosed.

        A run that ends in a loop of scalar work (:func:`scalar_tail`) behind a short head: only the
        head is scanned, idle and busy. The tail hands V nothing and waits for nothing, and meets the
        same cache in both scans, so it takes S as long in both: the busy run's S ends the idle
        tail's length after the busy head's, and V ends where the busy head leaves it.

        ``marks``: the idle scan's notes (:class:`~cgdr_des.hw.scan_marks.IdleMarks`), where the busy
        scan may stop and take the rest from the idle one; None scans the whole run."""
        if timing.v_end <= timing.v_start or not self.late_v:
            return None
        timer = timer or self.timer
        end = len(records) if end is None else end
        tail = scalar_tail(records, i, end)
        x = late_start(timing)
        if tail == end:
            return self._late_whole(records, i, timing, saved, timer, x, marks)
        try:
            head, marks = records[i:tail], IdleMarks()
            idle_head, _ = timer.scan(head, 0, self.dcache.scratch(saved, copy=True), marks=marks)
            busy, _ = timer.scan(head, 0, self.dcache.scratch(saved), x, x, BusyMatch(marks))
            busy = busy._replace(s_cycles=busy.s_cycles + timing.s_cycles - idle_head.s_cycles)
        except KernelDiagnostic:
            return None
        return late_numbers(timing, x, busy)

    def _late_whole(self, records: list, i: int, timing: RunTiming, saved, timer, x: int,
                    marks: IdleMarks | None) -> tuple | None:
        """:meth:`_late_scans` of a whole run, scanned again from the cache ``saved`` before it, on a
        scratch cache (:meth:`~cgdr_des.hw.dcache.DataCache.scratch`): the compiler's cache stays as the
        idle scan left it, which is where the busy scan leaves it too. A busy scan that runs to the end
        walks the same accesses in the same order (a scan touches the cache for every iteration it adds
        without walking as its records would, whatever the timing); one that stops where it meets the
        idle scan's state (``marks``) takes the rest from the idle scan; a diagnosed one times nothing."""
        match = BusyMatch(marks) if marks is not None else None
        try:
            busy, _ = timer.scan(records, i, self.dcache.scratch(saved), x, x, match)
        except KernelDiagnostic:
            return None
        return late_numbers(timing, x, busy)

    def _compile_fast(self, records: list) -> list:
        """Runs found and timed by the fast timer's scan; the records between them copied."""
        out, i, n = [], 0, len(records)
        while i < n:
            rec = records[i]
            if is_compute(rec) and (type(rec) is Repeat or i + 1 < n and is_compute(records[i + 1])):
                i = self._compile_run(records, i, out)
            else:           # a run of one record stays explicit, like any other record
                if type(rec) is Dma:
                    self.dcache.moved(rec)
                out.append(rec)
                i += 1
        return out

    def _compile_run(self, records: list, i: int, out: list) -> int:
        """Compile the run starting at ``records[i]`` (two records at least) into ``out``; returns
        where it ends. If the timer cannot answer, the machine path decides on the unchanged cache."""
        saved, marks = self.dcache.state(), IdleMarks() if self.late_v else None
        try:
            timing, j = self.timer.scan(records, i, self.dcache, marks=marks)
        except KernelDiagnostic:
            self.dcache.restore(saved)
            j = _run_end(records, i)
            out.extend(self._compile_machine(expand(records[i:j])))   # a Repeat's body may break the run
            return j
        self.compiled_runs += 1
        out.append(self._timed(timing, self._late_scans(records, i, timing, saved, end=j, marks=marks)))
        return j

    def _timed(self, r: RunTiming, late: tuple | None = None) -> TimedMacro:
        waits = late is not None and late[0] is not None
        return TimedMacro(self.name, r.s_cycles, r.v_start, r.v_end, r.counts, r.s_stall, r.v_busy, r.v_stall,
                          r.v_free, late, waits)

    def _compile_machine(self, records: list) -> list:
        """Maximal compute runs cut by :func:`is_compute`, each handed to :meth:`_replace`."""
        out, run = [], []
        for rec in records:
            if is_compute(rec):
                run.append(rec)
                continue
            out.extend(self._replace(run))
            run = []
            if type(rec) is Dma:
                self.dcache.moved(rec)
            out.append(rec)
        out.extend(self._replace(run))
        return out

    def _replace(self, run: list) -> list:
        """``[Macro]`` timed by the machine, or ``run`` itself if it is short, unbalanced or diagnosed."""
        if len(run) < 2 or not balanced(run):
            if len(run) >= 2:
                self.kept_runs += 1
            return run
        try:
            m = self.machine_macro(run)
        except KernelDiagnostic:
            self.kept_runs += 1
            return run
        self.compiled_runs += 1
        return [m]


def _run_end(records: list, i: int) -> int:
    """Index of the first record at or after ``i`` that is not compute (``len(records)`` if none)."""
    n = len(records)
    while i < n and is_compute(records[i]):
        i += 1
    return i
