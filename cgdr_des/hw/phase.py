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

What is lost against ``instr``: inside a run, the scalar unit's V->S waits assume V was idle when
the run began; the run's V work starts only when V has finished issuing what came before (no overlap
with the previous run's last latency). On sole chunks of a few tokens that costs up to ~0.6 % of
makespan. A run whose flags are not balanced within it (a set consumed, or a wait satisfied, outside
the run) or that cannot be timed alone (a diagnostic) is kept explicit, so it is timed exactly; so
is a run of a single record.

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
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.hw.compute_run import ComputeRunTimer, RunTiming
from cgdr_des.hw.compute_state import COMPUTE_EVENTS
from cgdr_des.hw.dcache import DataCache, data_cache
from cgdr_des.hw.flags import DOUBLE_SET
from cgdr_des.hw.machine import Machine
from cgdr_des.hw.profile import Profile
from cgdr_des.isa import (
    Dma,
    GmRows,
    GmStrided,
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


def merge_dma_runs(records: list) -> list:
    """Consecutive DataCopy calls of one direction and one parameter set, with nothing between
    them, become one Dma with ``repeat`` (first addresses kept; nbytes summed)."""
    out: list = []
    for rec in records:
        prev = out[-1] if out else None
        if (type(rec) is Dma and type(prev) is Dma and prev.direction == rec.direction
                and prev.params == rec.params):
            out[-1] = replace(prev, nbytes=prev.nbytes + rec.nbytes, repeat=prev.repeat + rec.repeat)
        else:
            out.append(rec)
    return out


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
        self.dcache = self.shared_dcache if core is None else self.core_dcache(core)
        records = records if type(records) is list else list(records)
        out = self._compile_machine(expand(records)) if self.timer is None else self._compile_fast(records)
        return merge_dma_runs(out)

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
        if not _gm_traffic(records, cache.l2 is not None):
            return None, partial(self.compile, records, core)
        saved = cache.snapshot()
        pattern = self._touch(cache, records)

        def compile_here() -> list:
            after = cache.state()
            cache.restore(saved)
            out = self.compile(records, core)
            cache.restore(after)    # explicit ScalarGm records, which no run times, are in it too
            return out

        return pattern, compile_here

    def macro(self, run: list) -> TimedMacro:
        """Time ``run`` alone on an idle core; raises KernelDiagnostic if it cannot run alone.

        Where the fast timer cannot answer, the data cache is put back and the machine answers, so
        the numbers, the raise and the cache afterwards are always the machine's."""
        if self.timer is not None:
            saved = self.dcache.state()
            try:
                return self._timed(self.timer.time(run, self.dcache))
            except KernelDiagnostic:
                self.dcache.restore(saved)
        return self.machine_macro(run)

    def machine_macro(self, run: list) -> TimedMacro:
        """:meth:`macro` by the machine itself."""
        run = expand(run)
        result = self.machine.run([run], dcaches=[self.dcache])
        core, t0 = result.cores[0], self.profile.kernel_launch_cycles
        ran_v = core["first_V"] is not None
        v_start = core["first_V"] - t0 if ran_v else 0
        v_end = core["last_V"] - t0 if ran_v else 0
        counts = Counter()
        for rec in run:
            counts[record_kind(rec)] += rec.count if type(rec) is Scalar else 1
        return TimedMacro(self.name, core["busy_S"] + core["stall_S"], v_start, v_end,
                          tuple(sorted(counts.items())), core["stall_S"], core["busy_V"], core["stall_V"])

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
        saved = self.dcache.state()
        try:
            timing, j = self.timer.scan(records, i, self.dcache)
        except KernelDiagnostic:
            self.dcache.restore(saved)
            j = _run_end(records, i)
            out.extend(self._compile_machine(expand(records[i:j])))   # a Repeat's body may break the run
            return j
        self.compiled_runs += 1
        out.append(self._timed(timing))
        return j

    def _timed(self, r: RunTiming) -> TimedMacro:
        return TimedMacro(self.name, r.s_cycles, r.v_start, r.v_end, r.counts, r.s_stall, r.v_busy, r.v_stall)

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


def gm_accesses(records: list) -> list[tuple]:
    """Every ScalarGm's ``(addr, nbytes, store)`` in ``records``, in program order, each Repeat's
    declared ones (``Repeat.gm``) included."""
    out: list = []
    for rec in records:
        t = type(rec)
        if t is ScalarGm:
            out.append((rec.addr, rec.nbytes, rec.store))
        elif t is Repeat and rec.gm is not None:
            gm = rec.gm
            for i in range(rec.n):
                out += gm(i)
    return out


def touch(cache: DataCache, records: list) -> bytes:
    """``records``' DataCopy calls and scalar GM accesses through ``cache``, in program order; the
    accesses' outcomes, one byte each (:meth:`DataCache.pattern`). The accesses between two DataCopy
    calls (all of them when L2 is not tracked) go through the cache as arrays (:meth:`DataCache.pattern_of`),
    a :class:`~cgdr_des.isa.GmRows` loop's row by row and a :class:`~cgdr_des.isa.GmStrided` loop's at
    once, rather than access by access."""
    with_dma = cache.l2 is not None
    if not _gm_traffic(records, with_dma):     # most lists a program hands over (Tags, flags, DMAs)
        return b""
    out: list[bytes] = []
    addrs: list[int] = []
    sizes: list[int] = []
    blocks: list[tuple] = []     # (addresses, one size or sizes) in program order, the lists' run included

    def flush_lists() -> None:
        if addrs:
            one = sizes[0]
            blocks.append((np.array(addrs, np.int64), one if sizes.count(one) == len(sizes) else np.array(sizes)))
            addrs.clear()
            sizes.clear()

    def flush() -> None:
        flush_lists()
        if len(blocks) > 1:
            a = np.concatenate([b[0] for b in blocks])
            each = [b[1] for b in blocks]
            if all(type(x) is int for x in each) and each.count(each[0]) == len(each):
                nb = each[0]
            else:
                nb = np.concatenate([np.full(len(b[0]), b[1], np.int64) if type(b[1]) is int else b[1]
                                     for b in blocks])
            blocks[:] = [(a, nb)]
        if blocks:
            out.append(cache.pattern_of(*blocks[0]))
            blocks.clear()

    for rec in records:
        t = type(rec)
        if t is ScalarGm:
            addrs.append(rec.addr)
            sizes.append(rec.nbytes)
        elif t is Repeat and rec.gm is not None:
            gm = rec.gm
            if type(gm) is GmRows and rec.n:
                flush_lists()
                blocks.append((_row_addresses([gm.row(i) for i in range(rec.n)]), int(gm.nbytes)))
            elif type(gm) is GmStrided:
                flush_lists()
                blocks.append((gm.start + gm.step * np.arange(rec.n, dtype=np.int64), int(gm.nbytes)))
            else:
                for i in range(rec.n):
                    for acc in gm(i):
                        addrs.append(acc[0])
                        sizes.append(acc[1])
        elif with_dma and t is Dma:
            flush()
            cache.moved(rec)
    flush()
    return b"".join(out)


def touch_walk(cache: DataCache, records: list) -> bytes:
    """:func:`touch` access by access (:meth:`DataCache.pattern` on tuples): the reference the array
    path is tested against, and what ``PhaseCompiler(walk_accesses=True)`` uses."""
    if cache.l2 is None:
        accesses = gm_accesses(records)
        return cache.pattern(accesses) if accesses else b""
    out = bytearray()
    for rec in records:
        if type(rec) is Dma:
            cache.moved(rec)
        elif type(rec) is ScalarGm or type(rec) is Repeat:
            accesses = gm_accesses([rec])
            if accesses:
                out += cache.pattern(accesses)
    return bytes(out)


def _row_addresses(rows: list[range]) -> np.ndarray:
    """The addresses of ``rows`` (ranges), in order, as one int64 array."""
    r0 = rows[0]
    if all(r.step == r0.step and len(r) == len(r0) for r in rows):
        starts = np.fromiter((r.start for r in rows), np.int64, len(rows))
        return (starts[:, None] + np.arange(0, len(r0) * r0.step, r0.step, dtype=np.int64)).ravel()
    return np.concatenate([np.arange(r.start, r.stop, r.step, dtype=np.int64) for r in rows])


def _gm_traffic(records: list, with_dma: bool) -> bool:
    """Whether ``records`` hold a scalar GM access (or, ``with_dma``, a DataCopy)."""
    for rec in records:
        t = type(rec)
        if t is ScalarGm or (t is Repeat and rec.gm is not None) or (with_dma and t is Dma):
            return True
    return False


def _run_end(records: list, i: int) -> int:
    """Index of the first record at or after ``i`` that is not compute (``len(records)`` if none)."""
    n = len(records)
    while i < n and is_compute(records[i]):
        i += 1
    return i
