"""The machine: runs one program per core on a SimPy environment and collects what happened.

Usage::

    m = Machine(load_profile("atlas-300i-duo"))
    run = m.run([program_core0, program_core1])     # iterables of isa records, pulled lazily
    run.makespan, run.cores, run.ops, run.spans, run.counts

Lifecycle of a run: every core's scalar unit starts at ``kernel_launch_cycles``; cores run
concurrently and meet only in the shared GM bandwidth. The run ends when SimPy has nothing left to
do; a core that still has work then is deadlocked and reported (KernelDiagnostic naming every
blocked process). Any other diagnostic (UB over-allocation, event ids exhausted, ...) stops the
run where it happens. Same programs and profile -> identical results.

``keep_ops=False`` skips the per-instruction rows (``ops`` is empty); spans, cores and counts are
always kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np
import simpy
from simpy.core import EmptySchedule

from cgdr_des.errors import InputError, KernelDiagnostic
from cgdr_des.hw.core import Core
from cgdr_des.hw.costs import scalar_kind_cycles, vec_params
from cgdr_des.hw.dcache import data_cache
from cgdr_des.hw.gm import GmBus
from cgdr_des.hw.profile import Profile, load_profile
from cgdr_des.runtime import no_cyclic_gc

OP_COLUMNS = ("core", "pipe", "op", "phase", "batch", "head", "vtile", "chunk", "start", "end",
              "elements", "bytes")
SPAN_COLUMNS = ("core", "phase", "batch", "head", "vtile", "chunk", "start", "end", "n_ops")
CORE_KEYS = ("core", "finish", "busy_S", "busy_V", "busy_MTE2", "busy_MTE3", "stall_S", "stall_V",
             "stall_MTE2", "stall_MTE3", "n_records", "first_V", "last_V")


@dataclass
class MachineRun:
    """What one :meth:`Machine.run` produced. Times are integer cycles from the start of the run
    (cores start at ``kernel_launch_cycles``); convert with ``profile.clock_mhz`` only at output.

    ``ops`` (only with ``keep_ops``): one tuple per executed record that occupies a pipe, columns
    :data:`OP_COLUMNS`. ``op`` is the vector op (``Mul``), the scalar kind (``alu``, ``ub_load``;
    ``gm_load``/``gm_store`` for ScalarGm), ``DataCopy:GM2UB``/``DataCopy:UB2GM``, ``SetFlag:V_S``,
    ``WaitFlag:V_S``, ``PipeBarrier:V``/``PipeBarrier:ALL``, or ``AllocTensor:<queue>`` etc. for
    TPipe bookkeeping on S. ``start``/``end``: a vector op from its issue to its completion, a DMA
    from its start on the pipe to its last byte, a WaitFlag or barrier from its arrival (so the
    blocked time shows) to when the pipe moves on, a SetFlag from its arrival to when it fires.
    ``elements`` is the element count (Scalar: its count; SetFlag/WaitFlag: the event id),
    ``bytes`` the DMA or ScalarGm bytes. Labels come from the core's last Tag ("" and -1 before
    any). Rows come in the order the scalar unit and the pipes executed them (interleaved as the
    pipes' pumps ran), each pipe's rows in start order.

    ``span_columns`` (and, as tuples, ``spans``): one entry per Tag segment per core that has ops
    (:data:`SPAN_COLUMNS`, one numpy column each): start = min
    start, end = max end of its ops, n_ops. ``cores``: one dict per core (:data:`CORE_KEYS`):
    ``finish`` = the core's last end; ``busy_X`` = union of X's work intervals (whole instructions,
    ``flag_cycles`` of each flag, barriers and waits excluded); ``stall_S`` = cycles the scalar unit
    was blocked (full queue, flag waits, PipeBarrier<ALL>), so busy_S + stall_S = its last cycle -
    launch; ``stall_V``/``stall_MTE*`` = cycles blocked in WaitFlags and barriers; ``first_V``/``last_V``
    = the vector pipe's first start and last end (None if it ran nothing). ``counts[core]``:
    Counter of ``(phase, isa.record_kind(rec))`` over every record the core pulled, a Scalar
    weighted by its ``count`` (so scalar columns count operations, as docs/kernel.md tabulates
    them) and a Macro contributing the counts of the records it replaced (``n_records`` counts
    pulled records, a Macro as one).
    """

    #: the processes' compact rows (:data:`_COMPACT`), flat: row k is ``op_rows[8k:8k + 8]``
    op_rows: list = field(repr=False)
    span_columns: dict
    cores: list[dict]
    counts: list[Counter]
    makespan: int
    gm_bytes_read: int
    gm_bytes_written: int
    profile: Profile = field(repr=False)
    _ops: list[tuple] | None = field(default=None, init=False, repr=False)
    _columns: dict[str, list] | None = field(default=None, init=False, repr=False)

    @property
    def ops(self) -> list[tuple]:
        """The ops rows (:data:`OP_COLUMNS` tuples), zipped on first read from :meth:`op_columns` (the
        processes keep compact rows that name their span instead of copying its five labels: an op
        call that never reads them never pays for the copies)."""
        if self._ops is None:
            self._ops = list(zip(*self.op_columns().values(), strict=True))
        return self._ops

    def op_columns(self) -> dict[str, list]:
        """The ops rows as one list per :data:`OP_COLUMNS` name, read column by column from the compact
        rows (a span's labels once per row, no row tuple built): what the ops frame is made of (small at
        ``instr``, 1.27 M rows: the frame in 1.8 s instead of 2.8 s through :attr:`ops`). The compact
        rows are dropped as they are read: the columns replace them."""
        if self._columns is None:
            rows, self.op_rows = self.op_rows, []
            with no_cyclic_gc():
                cols = {name: rows[i::ROW_WIDTH] for i, name in enumerate(_COMPACT)}
                del rows
                cols.update(_span_labels(cols.pop("span")))
            self._columns = {name: cols[name] for name in OP_COLUMNS}
        return self._columns

    @property
    def spans(self) -> list[tuple]:
        """The spans as tuples in :data:`SPAN_COLUMNS` order (python ints; built on each access)."""
        cols = [self.span_columns[name].tolist() for name in SPAN_COLUMNS]
        return list(zip(*cols, strict=True))


class Machine:
    """A chip described by ``profile`` (a :class:`Profile` or a profile name / path)."""

    def __init__(self, profile: Profile | str = "atlas-300i-duo", *, keep_ops: bool = True,
                 fixed_costs=None) -> None:
        self.profile = profile if isinstance(profile, Profile) else load_profile(profile)
        self.keep_ops = keep_ops
        #: ``(profile, record) -> (issue, latency)`` of Cube-side records (default: hw.cube_costs)
        self.fixed_costs = fixed_costs
        self._vec = vec_params(self.profile)
        self._scalar = scalar_kind_cycles(self.profile)

    def run(self, programs: list[Iterable], *, dcaches: list | None = None) -> MachineRun:
        """Run ``programs[i]`` on core ``i`` (all at once) and return what happened.

        ``dcaches[i]``, if given, is core i's data cache at the start (and is left in its final
        state): phase fidelity carries one cache through the isolated runs it times.
        """
        n = len(programs)
        if not 1 <= n <= self.profile.aiv_num:
            raise InputError("programs", n, f"1 to {self.profile.aiv_num} programs (one per vector core "
                             f"of {self.profile.name})")
        env = simpy.Environment()
        bus = GmBus(env, self.profile.gm_bytes_per_cycle)
        rows: list = []     # flat (ROW_WIDTH fields a row): no tuple per row for the collector to walk
        cores = [Core(i, iter(p), profile=self.profile, env=env, bus=bus, rows=rows, keep_ops=self.keep_ops,
                      vec_params=self._vec, scalar_costs=self._scalar,
                      dcache=dcaches[i] if dcaches else data_cache(self.profile), fixed_costs=self.fixed_costs)
                 for i, p in enumerate(programs)]
        errors: list[BaseException] = []
        for core in cores:
            core.start(errors)
        try:
            _run_until_error(env, errors)
            if errors:
                raise errors[0]
            stuck = [c for c in cores if not c.finished]
            if stuck:
                raise _deadlock(stuck)
            hazards = [f"core {c.cid}: {h}" for c in cores for h in c.buffers.hazards()]
            if hazards:
                raise KernelDiagnostic("\n".join(hazards))
        finally:
            for core in cores:
                core.release()
        stats = _with_all_keys([c.stats() for c in cores])
        # the rows leave the list the cores append to: their pipes' closures hold it in reference cycles
        # that outlive the run until a cyclic collection, which would walk (and keep) every row and span
        op_rows = rows.copy()
        rows.clear()
        return MachineRun(op_rows=op_rows, span_columns=_span_columns(cores), cores=stats,
                          counts=[c.counter() for c in cores], makespan=max(s["finish"] for s in stats),
                          gm_bytes_read=sum(c.gm_read for c in cores),
                          gm_bytes_written=sum(c.gm_written for c in cores), profile=self.profile)


def _span_labels(spans: list) -> dict[str, list]:
    """The labels of each row's span, one list per :data:`_SPAN_LABELS` name: read once per span (a run's
    spans are thousands, its rows up to millions) and spread over the rows by each row's span number."""
    number = dict.fromkeys(spans)       # identity-hashed, in first-seen order
    for k, span in enumerate(number):
        number[span] = k
    which = np.fromiter(map(number.__getitem__, spans), np.int64, len(spans))
    return {name: np.array([getattr(s, name) for s in number], dtype=object)[which].tolist()
            for name in _SPAN_LABELS}


#: how each span column is read from a :class:`~cgdr_des.hw.records.Span`
_SPAN_FIELD = {name: attrgetter("n" if name == "n_ops" else name) for name in SPAN_COLUMNS[2:]}


def _span_columns(cores: list[Core]) -> dict:
    """Every core's spans as one numpy column per SPAN_COLUMNS name (phase as str objects), built core
    by core while freeing the mutable segments: a million-token run has millions of spans and
    cannot afford them as lists, tuples and frame at once."""
    cols: dict[str, list] = {name: [] for name in SPAN_COLUMNS}
    for c in cores:
        spans = [s for s in c.spans if s.n]
        cols["core"].append(np.full(len(spans), c.cid, dtype=np.int64))
        cols["phase"].append(np.array([s.phase for s in spans], dtype=object))
        for name in SPAN_COLUMNS[2:]:
            get = _SPAN_FIELD[name]
            cols[name].append(np.fromiter(map(get, spans), dtype=np.int64, count=len(spans)))
        del spans
        c.spans.clear()
    return {name: np.concatenate(parts) if parts else np.zeros(0, np.int64) for name, parts in cols.items()}


#: the processes' compact ops row, in order (:meth:`MachineRun.op_columns` expands ``span`` into its labels,
#: read as the columns are made: they never change). The processes ``extend`` one flat list by a row's
#: fields rather than append a tuple: a run keeps up to millions of rows, and tuples would be as many
#: objects for every collection to walk (~10 ms a call of the op on long_t2048) and 104 bytes each more.
_COMPACT = ("core", "pipe", "op", "span", "start", "end", "elements", "bytes")
ROW_WIDTH = len(_COMPACT)
_SPAN_LABELS = ("phase", "batch", "head", "vtile", "chunk")


def _with_all_keys(stats: list[dict]) -> list[dict]:
    """Every core's stats with the same keys: a core whose Cube-era program never reached M or MTE1
    reports them as 0 when another core did."""
    keys = dict.fromkeys(k for s in stats for k in s)
    return [s if len(s) == len(keys) else {k: s.get(k, 0) for k in keys} for s in stats]


def _run_until_error(env: simpy.Environment, errors: list) -> None:
    """Step the environment until nothing is scheduled or a core reported an exception."""
    with no_cyclic_gc():        # millions of acyclic tuples: cyclic collection would only cost time
        try:
            while not errors:
                env.step()
        except EmptySchedule:
            pass


def _deadlock(stuck: list[Core]) -> KernelDiagnostic:
    lines = [line for c in stuck for line in c.blocked()]
    lines.sort(key=lambda line: "were lost" not in line)    # the cause first: a wait on a lost set
    first = (f"deadlock: the program stopped with work left on core(s) {', '.join(str(c.cid) for c in stuck)}"
             f": {lines[0] if lines else 'no process reports a block'}")
    return KernelDiagnostic("\n".join([first, *lines[1:]]))
