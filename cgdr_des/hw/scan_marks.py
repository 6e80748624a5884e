"""Where the phase compiler's busy-V scan of a run can stop: the state it shares, shifted, with the idle scan.

The compiler scans a run twice (:mod:`cgdr_des.hw.phase`, "A run met by a busy V"): with V idle, then
with V busy until past everything the idle scan timed (:func:`~cgdr_des.hw.late_scan.late_start`). The
second scan differs from the first only until S next waits for V: S then stands past V's work in both
scans, and where the two scans' states read alike relative to S's clock
(:meth:`~cgdr_des.hw.compute_state.ScanState.relative`, everything later records can observe), every
later record times the same in both, shifted by the difference ``D`` of S's clocks there (the argument
of the timer's Repeat extrapolation, :mod:`cgdr_des.hw.compute_run`). The busy scan stops there and
takes the rest from the idle scan: S's end and every total moved on as in the idle scan, shifted by
``D``. V's done and free cycles move only if the idle scan handed V something after that point
(any such entry ends at or past S's clock there, so past an earlier done that reads as at or below
the clock); else they stay where the busy scan left them.

The idle scan notes its state (:class:`IdleMarks`) at its first top-level WaitFlag<V_S> records and at
the boundaries between the iterations it walks of a top-level Repeat (where S waits for V inside a loop:
the rows of ComputeAttnInter and UpdateAndWriteState); the busy scan compares at the same points
(:class:`BusyMatch`; a point is a record index, or (index of the Repeat, iterations walked)). A match
inside a Repeat ends the busy scan's walk there, the rest of the Repeat and of the run taken from the
idle scan like any other. Not inside a nested Repeat: its walk is one step of its parent's iteration.
Only the first :data:`MARKS` are noted, as each note costs a relative state (tens of µs): in the 310P
calibration of (8, 8, 64, 64), 557 busy scans meet the idle one at a top-level WaitFlag<V_S> and 199
more inside a loop; the rest (V waits for S only) are scanned whole. Measured side by side with the
whole scans (``bench_calibration.py --paired 6``): that calibration 1.03x, a split launch 1.10x,
long_t2048 at ``phase`` 1.00x, with the flags alone; see docs/speed.md §4 for the loops. The busy scan
runs on a scratch copy of the data cache (:meth:`~cgdr_des.hw.dcache.DataCache.scratch`), so where it
stops leaves the compiler's cache as the idle scan left it. Exact, not an estimate:
tests/test_scan_marks.py holds every field and the run's end to the whole busy scan, on random runs and
the kernel's.
"""

from __future__ import annotations

from cgdr_des.hw.compute_state import ScanScalars, ScanState

#: top-level WaitFlag<V_S> records at which the idle scan notes its state
MARKS = 4


class IdleMarks:
    """The idle scan's state at its first :data:`MARKS` top-level WaitFlag<V_S>: index -> (scalars,
    relative state); ``end``: its scalars at the end of the run, ``stop`` the index the run ends at."""

    __slots__ = ("at_index", "end", "stop", "counts")

    def __init__(self) -> None:
        self.at_index: dict[int, tuple[ScanScalars, tuple]] = {}
        self.end: ScanScalars | None = None
        self.stop, self.counts = 0, ()

    def at(self, i: int | tuple[int, int], st: ScanState) -> bool:
        """Note the state after record ``i`` (or after iteration ``k`` of the Repeat at ``i``: ``(i, k)``);
        never stops the idle scan."""
        if len(self.at_index) < MARKS:
            self.at_index[i] = (st.scalars(), st.relative())
        return False

    def close(self, st: ScanState, stop: int, counts: tuple) -> None:
        """The scan's end: its scalars, where the run ends and its record counts."""
        self.end, self.stop, self.counts = st.scalars(), stop, counts


class BusyMatch:
    """The busy scan's side: stops it at the first noted record where its relative state is the idle
    scan's (``hit``: the idle and busy scalars there)."""

    __slots__ = ("idle", "hit", "where")

    def __init__(self, idle: IdleMarks) -> None:
        self.idle = idle
        self.hit: tuple[ScanScalars, ScanScalars] | None = None
        self.where: int | tuple[int, int] | None = None     # the point it stopped at

    def at(self, i: int | tuple[int, int], st: ScanState) -> bool:
        noted = self.idle.at_index.get(i)
        if noted is None or noted[1] != st.relative():
            return False
        self.hit, self.where = (noted[0], st.scalars()), i
        return True

    def finish(self, st: ScanState) -> None:
        """``st`` (stopped at the hit) moved to the end of the run, as the idle scan's rest moves it."""
        idle, busy = self.hit
        end = self.idle.end
        d = busy.t - idle.t
        st.t = end.t + d
        if end.n_v > idle.n_v:      # V ran more after the hit: its cycles are the idle scan's, shifted
            st.free = end.free + d
            st.done = max(busy.done, end.done + d)
            st.cov = end.cov + d
            if st.first is None:
                st.first = end.first + d
        for name in ("s_stall", "v_busy", "v_stall", "n_vec", "n_bar", "n_ld", "n_st", "n_v"):
            setattr(st, name, getattr(busy, name) + getattr(end, name) - getattr(idle, name))
