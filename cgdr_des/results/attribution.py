"""Critical-path attribution of the core that finishes last, and the overlap bound it implies.

The critical core's timeline [0, finish) is cut at every start and end of its ops rows, and each
piece goes to exactly one part, so the parts add up to the makespan exactly:

- ``launch``: before the core's first ops row (the kernel launch and the first hand-over);
- ``S``: the scalar unit executes: any S row that is not a wait, and the gaps between S rows (the
  scalar cost of handing records to the pipes, and full-queue stalls, which leave no row) while no
  DMA is in flight;
- otherwise the scalar unit waits (a ``WaitFlag`` or ``PipeBarrier`` row, or it has issued its last
  op and the pipes drain): the piece goes to the pipe that is still working, DMA first: ``MTE2``
  (a GM->UB DataCopy in flight), ``MTE3`` (UB->GM), ``V`` (a vector op or compute run), and to
  ``flags`` when none is (the wait is on a flag whose setter has nothing left to run). A gap between
  S rows while a DMA is in flight counts as waiting for it too: it may be a full-queue stall behind
  the DMA, and counting it errs on the high side of the bound below.

``exposed_dma`` = MTE2 + MTE3: the cycles the core waited for DMA. ``barrier_V`` is the part of
``V`` spent inside ``PipeBarrier<PIPE_ALL>`` rows: in this kernel those barriers exist only to order
the workspace DMAs, so removing them (overlapping the DMA) also saves that wait. ``dma_sync`` is the
part of ``S`` spent issuing the event calls of DMA events (``FetchEventID``/``SetFlag``/``WaitFlag``
on an ``MTE2``/``MTE3`` HardEvent), which a queue-based overlap replaces. ``state_load_S`` is the
part of ``S`` spent in LoadStateTile at a head's first chunk (:data:`STATE_LOAD`), where the kernel
reads initial_state by scalar GM reads, one data-cache miss per 32-byte line: a load no DMA does,
which a DMA staged ahead turns into scalar UB reads. ``overlap_bound`` = exposed_dma + barrier_V +
dma_sync + state_load_S: the most that moving every load off the critical path (hidden DMAs, the
synchronisation that guards them, the staged first state tile) could save on this core.

At ``phase`` fidelity a compute run is one Macro row: its S part counts as ``S`` whole, including the
V->S round trips inside it, so ``V`` there only holds waits outside compute runs (barriers, the
drain). Runs whose ops were not kept (one aggregated row per span) carry no pipe detail and are
refused (:class:`AttributionUnavailable`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

PARTS = ("launch", "S", "V", "MTE2", "MTE3", "flags")
#: the ops label of LoadStateTile (chunk 0: initial_state by scalar GM reads; docs/kernel.md §5)
STATE_LOAD = "S3_LoadState"


class AttributionUnavailable(ValueError):
    """The run kept no per-op rows (``ops`` aggregated per span), so there is nothing to attribute."""


@dataclass(frozen=True)
class Attribution:
    """The parts (cycles) of the critical core's timeline; they sum to ``makespan``."""

    core: int
    makespan: int
    launch: int
    S: int
    V: int
    MTE2: int
    MTE3: int
    flags: int
    barrier_V: int
    dma_sync: int
    state_load_S: int

    @property
    def exposed_dma(self) -> int:
        """Cycles the core waited while a DMA was in flight and nothing else ran."""
        return self.MTE2 + self.MTE3

    @property
    def overlap_bound(self) -> int:
        """Upper bound on the cycles overlapping DMA with compute could save (module docstring)."""
        return self.exposed_dma + self.barrier_V + self.dma_sync + self.state_load_S

    @property
    def bounding_part(self) -> str:
        """The pipe (or flags) with the most critical-path cycles."""
        return max(PARTS[1:], key=lambda p: getattr(self, p))

    def as_row(self) -> dict:
        """The parts plus the derived columns, for a table."""
        return {**asdict(self), "exposed_dma": self.exposed_dma, "overlap_bound": self.overlap_bound,
                "bounding_part": self.bounding_part}


def _coverage(points: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each piece [points[i], points[i+1]): is it inside at least one [start, end) interval."""
    diff = np.zeros(len(points), dtype=np.int64)
    np.add.at(diff, np.searchsorted(points, starts), 1)
    np.add.at(diff, np.searchsorted(points, ends), -1)
    return np.cumsum(diff)[:-1] > 0


def _matches(ops: pd.Series, pattern: str) -> np.ndarray:
    """``ops`` matching the regular expression ``pattern`` at their start (on the categories when
    categorical: millions of rows share a few dozen names)."""
    if isinstance(ops.dtype, pd.CategoricalDtype):
        hit = np.asarray(ops.cat.categories.astype(str).str.match(pattern), dtype=bool)
        codes = ops.cat.codes.to_numpy()
        return np.where(codes >= 0, hit[codes], False)
    return ops.astype(str).str.match(pattern).to_numpy()


def attribute(ops: pd.DataFrame, cores: pd.DataFrame) -> Attribution:
    """The attribution of the core with the latest finish (the lowest id among ties)."""
    if len(ops) == 0 or bool(ops.get("aggregated", pd.Series([False])).any()):
        raise AttributionUnavailable("the run kept no per-op rows (ops aggregated per phase span)")
    finish = cores["finish"].astype(np.int64).to_numpy()
    core = int(cores["core"].to_numpy()[int(np.argmax(finish))])
    end = int(finish.max())
    mine = ops[ops["core"].to_numpy() == core]
    if not len(mine):
        raise AttributionUnavailable(f"core {core} finishes last but has no ops rows")
    pipe = mine["pipe"].astype(str).to_numpy()
    op = mine["op"]
    start = np.clip(mine["start"].to_numpy(np.int64), 0, end)
    stop = np.clip(mine["end"].to_numpy(np.int64), 0, end)
    wait = _matches(op, "WaitFlag|PipeBarrier")
    copy = _matches(op, "DataCopy")
    flag = _matches(op, "SetFlag")
    dma_event = _matches(op, r"(FetchEventID|SetFlag|WaitFlag|AllocEventID|ReleaseEventID):\w*MTE")
    points = np.unique(np.concatenate([start, stop, [0, end]]))
    length = np.diff(points)

    def covered(sel: np.ndarray) -> np.ndarray:
        return _coverage(points, start[sel], stop[sel])

    s_rows = pipe == "S"
    if not s_rows.any():
        raise AttributionUnavailable(f"core {core} has no scalar-unit rows")
    s_last = int(stop[s_rows].max())
    left = points[:-1]
    launch = left < int(start.min())
    s_wait = covered(s_rows & wait)
    s_busy = covered(s_rows & ~wait) & ~launch
    waiting = ~launch & ~s_busy & (s_wait | (left >= s_last))
    in2, in3 = covered((pipe == "MTE2") & copy), covered((pipe == "MTE3") & copy)
    gap = ~launch & ~s_busy & ~waiting  # inside the scalar unit's span, no row: issue costs or a stall
    waiting |= gap & (in2 | in3)
    mte2 = waiting & in2
    mte3 = waiting & ~mte2 & in3
    vec = waiting & ~mte2 & ~mte3 & covered((pipe == "V") & ~wait & ~flag)
    flags = waiting & ~mte2 & ~mte3 & ~vec
    barrier = covered(s_rows & _matches(op, "PipeBarrier:ALL"))
    parts = {name: int(length[sel].sum()) for name, sel in
             (("launch", launch), ("S", ~launch & ~waiting), ("V", vec), ("MTE2", mte2), ("MTE3", mte3),
              ("flags", flags))}
    first_state = covered(s_rows & (mine["phase"].astype(str) == STATE_LOAD).to_numpy()
                          & (mine["chunk"].to_numpy() == 0))
    return Attribution(core=core, makespan=end, barrier_V=int(length[vec & barrier].sum()),
                       dma_sync=int(length[s_busy & covered(s_rows & dma_event)].sum()),
                       state_load_S=int(length[~launch & ~waiting & first_state].sum()), **parts)


def attribute_result(result) -> Attribution:
    """:func:`attribute` of a :class:`cgdr_des.results.result.Result`."""
    return attribute(result.ops, result.cores)


def attribute_run(run) -> Attribution:
    """:func:`attribute` of a machine's :class:`cgdr_des.hw.machine.MachineRun` (ops tuples, core dicts)."""
    from cgdr_des.hw.machine import OP_COLUMNS

    return attribute(pd.DataFrame(run.ops, columns=list(OP_COLUMNS)), pd.DataFrame(run.cores))
