"""Memory and wall time of a run, estimated from the shape before anything is allocated.

``validate`` and ``run`` print the estimate and refuse (one line, exit 2) a launch whose memory
estimate is above ``--max-memory`` (default: half of this machine's RAM; ``none`` lifts the cap).

Wall time is that of ``cgdr-des run`` as the user sees it: start-up (interpreter, libraries, the
scenario), the simulation, and the writing (Parquet, the Chrome trace, the PNGs). Its parts are
per-unit costs measured by ``analysis/benchmarks/bench_estimate.py --calibrate`` on synthetic
launches (the constants below, with the date), and the same script checks them against every
shipped scenario (within a factor of 2, README "Benchmarks"):

- simulation at ``phase`` fidelity: a cost per chunk item (chunk x head x V-tile), about twice as
  large when V-tiles are split over cores, where every occurrence of a phase that reads GM by scalar
  is built and its accesses passed through its core's own data cache (a pass on arrays) instead of
  reusing one compilation; at ``instr`` a cost per instruction record (~10 L^2 + 29 L dk per chunk
  of L tokens per head and V-tile);
- writing: a cost per ops row (Parquet; ~94 rows per chunk item at ``phase``, one per record at
  ``instr`` up to the cap on kept rows), a cost per row the Chrome trace keeps (at most ``[sim]
  max_trace_events``), a cost per byte of the compressed outputs, and a fixed cost for the PNGs.

The times are CPU seconds: on a quiet machine the run's wall time (it runs on one core). On a shared
one the wall time is longer by however much else runs: ``validate`` and ``run`` measure the share
of a core they get (:func:`cpu_share`, a 50 ms busy loop) and, below 80 %, print the time divided by
it beside the CPU seconds.

Memory counts what grows with the launch above the ~190 MiB the interpreter and libraries take:

- tensors, per (token, value head) with ``kernel`` numerics: the fp16 inputs and their widened
  copies (``2 + w`` bytes per q, k, v and beta element, w = 4 for fp32, 8 for ``exact``), g, and
  out; per (sequence, head): initial and final state, the widened copy and the workspace (exactly
  the launch's arrays, tested); one UB lane of ``ub_rest_bytes`` per head for the head-batched numbers. ``off``: g only.
- timing, per chunk item at ``phase`` fidelity (the machine's records in flight, ops rows, spans);
  at ``instr`` per instruction row, rows capped as the simulation caps them (beyond that only spans
  are kept); or, when larger, the trace's events per row it keeps (the machine's memory is freed
  by the time the trace is built).

It is an estimate, meant to stop a run that cannot fit long before it would exhaust the machine and
to say whether a run takes seconds or an hour, not to budget one exactly. A machine busy with other
work is slower than the constants say.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

import numpy as np

from cgdr_des.errors import InputError

# Measured by analysis/benchmarks/bench_estimate.py --calibrate (2026-12-02, the 2-core development
# machine shared with other work, load 5.0-5.5; CPU seconds, the median of 5 runs). Seconds, bytes.
START_SECONDS = 1.5                # `cgdr-des run` of a 1-token launch without plots or trace
PLOT_SECONDS = 0.67                # loading matplotlib and drawing the PNGs (the Gantt: at most 20 000 ops)
PHASE_SECONDS_PER_ITEM = 1.8e-3    # simulating one chunk item at phase fidelity, numbers included
SPLIT_SECONDS_PER_ITEM = 4.1e-3    # the same with V-tiles split over cores
INSTR_SECONDS_PER_RECORD = 1.3e-6  # simulating one instruction record at instr fidelity
PHASE_ROWS_PER_ITEM = 94           # ops rows of one chunk item at phase fidelity (157 before 0f84208)
WRITE_SECONDS_PER_ROW = 1.8e-6     # the frames to Parquet, per ops row
OUTPUT_SECONDS_PER_BYTE = 2.6e-8   # outputs.npz (compressed), per byte of out and final_state
TRACE_SECONDS_PER_ROW = 8.6e-6     # the Chrome trace, per ops row it keeps (flag arrows included)
BASE_BYTES = 189 * 2**20           # peak RSS of a 1-token run with plots
PHASE_BYTES_PER_ITEM = 95_500      # the machine's records in flight, ops rows and spans, per chunk item (2026-12-03)
INSTR_BYTES_PER_ROW = 465          # the same per instruction row at instr fidelity
TRACE_BYTES_PER_ROW = 2_320        # the trace's events (dicts, then JSON text) and frames, per row kept
OPS_ROW_LIMIT = 2_000_000          # as cgdr_des.simulation: beyond it only spans are kept
SPAN_BYTES_PER_ITEM = 4 * 1024     # instr with rows dropped: one span row per phase and step
SPAN_ROWS_PER_ITEM = 20            # span rows of one chunk item when the ops rows are dropped
DEFAULT_TRACE_EVENTS = 200_000     # [sim] max_trace_events' default: the trace keeps at most this many rows
CHUNK = 64
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Estimate:
    """Peak memory (bytes) and wall time (seconds) of one run, the items and ops rows that drive
    them, the bytes of the launch's arrays among the memory, and a note on what it does not cover."""

    memory_bytes: int
    seconds: float
    items: int
    rows: int = 0
    tensor_bytes: int = 0
    note: str = ""

    def line(self, share: float = 1.0) -> str:
        """``estimate   ~1.2 GiB peak memory, ~35 s (4 768 chunk items)`` for the console; with
        ``share`` (of a core this process gets, :func:`cpu_share`) below BUSY_SHARE the time is
        stretched by it and the CPU seconds are given too."""
        note = f"; {self.note}" if self.note else ""
        took = f"~{_format_seconds(self.seconds)}"
        if share < BUSY_SHARE:
            took = (f"~{_format_seconds(self.seconds / max(share, MIN_SHARE))} on this busy machine "
                    f"(~{_format_seconds(self.seconds)} of CPU; {share:.0%} of a core free now)")
        return f"estimate   ~{format_bytes(self.memory_bytes)} peak memory, {took} ({self.items:,} chunk items){note}"


#: Below this share of a core the estimate's line stretches the time (a quiet machine reads 0.9-1.0)
BUSY_SHARE = 0.8
MIN_SHARE = 0.05
PROBE_SECONDS = 0.05


def cpu_share(probe: float = PROBE_SECONDS) -> float:
    """The share of one core this process gets now: the CPU time a busy loop of ``probe`` wall
    seconds obtains (1.0 on an idle machine, about 0.4 on two cores running four other such jobs).
    The run is single-threaded, so its wall time is about its CPU time divided by this."""
    import time

    wall0, cpu0 = time.perf_counter(), time.process_time()
    while (wall := time.perf_counter()) - wall0 < probe:
        pass
    return min(1.0, (time.process_time() - cpu0) / (wall - wall0))


def estimate(lengths, *, nk: int, nv: int, dk: int, dv: int, v_step: int, ub_rest_bytes: int,
             numerics: str, fidelity: str, split: bool = False, trace: bool = True, plots: bool = True,
             max_trace_events: int = DEFAULT_TRACE_EVENTS, ops: bool = True) -> Estimate:
    """The estimate of a ``cgdr-des run`` of sequences ``lengths`` (see the module docstring):
    ``split`` whether the V-tiles are split over cores, ``trace`` and ``plots`` whether they are written,
    ``ops`` whether per-op rows are kept (``[sim] ops``; the time is estimated as if they were)."""
    lens = np.asarray(lengths, dtype=np.int64)
    tokens, batch = int(lens.sum()), int(lens.size)
    tiles = -(-dv // v_step)
    chunks = int((-(-lens // CHUNK)).sum())
    items = chunks * nv * tiles
    tensors = _tensor_bytes(tokens, batch, nk, nv, dk, dv, ub_rest_bytes, numerics)
    mem = BASE_BYTES + tensors
    if fidelity == "instr":
        records = _instr_records(lens, dk) * nv * tiles
        per_op = ops and records <= OPS_ROW_LIMIT
        rows = records if per_op else items * SPAN_ROWS_PER_ITEM
        simulating = (records * INSTR_BYTES_PER_ROW if per_op else 0) + items * SPAN_BYTES_PER_ITEM
        seconds = records * INSTR_SECONDS_PER_RECORD
    else:
        rows = items * PHASE_ROWS_PER_ITEM
        simulating = items * PHASE_BYTES_PER_ITEM
        seconds = items * (SPLIT_SECONDS_PER_ITEM if split else PHASE_SECONDS_PER_ITEM)
    seconds += START_SECONDS + rows * WRITE_SECONDS_PER_ROW + _output_bytes(tokens, batch, nv, dk, dv, numerics) * \
        OUTPUT_SECONDS_PER_BYTE
    kept = min(rows, max_trace_events) if trace else 0
    seconds += kept * TRACE_SECONDS_PER_ROW
    # the machine's memory is freed before the trace is built: the peak is the larger of the two
    mem += max(simulating, kept * TRACE_BYTES_PER_ROW)
    if plots:
        seconds += PLOT_SECONDS
    return Estimate(int(mem), float(seconds), int(items), int(rows), int(tensors))


def _output_bytes(tokens: int, batch: int, nv: int, dk: int, dv: int, numerics: str) -> int:
    """out and final_state as outputs.npz holds them (fp16, float64 for ``exact``, none for ``off``)."""
    if numerics == "off":
        return 0
    width = 8 if numerics == "exact" else 2
    return width * nv * dv * (tokens + batch * dk)


def _tensor_bytes(tokens: int, batch: int, nk: int, nv: int, dk: int, dv: int, ub_rest: int,
                  numerics: str) -> int:
    if numerics == "off":
        return tokens * nv * 4  # g, which sets ScalarExp's cost
    wide = 8 if numerics == "exact" else 4
    outs = 8 if numerics == "exact" else 2  # out and final_state: fp16, or float64 for exact
    per_token = (2 + wide) * (2 * nk * dk + nv * dv + nv) + outs * nv * dv + (4 + wide) * nv  # g: fp32, widened
    per_sequence = (2 + wide + outs) * nv * dv * dk + wide * nv * dk * (-(-dv // 8) * 8)  # states, workspace
    return tokens * per_token + batch * per_sequence + nv * ub_rest * wide // 4


def _instr_records(lens: np.ndarray, dk: int) -> int:
    """Instruction records of one head over sequences ``lens`` (per V-tile): ~10 L^2 + 29 L dk per
    chunk of L tokens (small.toml: 158 825 records per 64-token chunk at dk = 64)."""
    full, tail = np.divmod(lens, CHUNK)
    per_tail = np.floor(10 * tail * tail) + np.floor(29 * tail * dk)
    return int(full.sum()) * (10 * CHUNK * CHUNK + 29 * CHUNK * dk) + int(per_tail.sum())


def default_max_memory() -> int:
    """Half of this machine's physical RAM (the rest is for everything else running)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 4 * 2**30


def parse_size(text: str | None, field: str = "--max-memory") -> int | None:
    """``"4G"``, ``"512MiB"``, ``"1.5g"``, ``"1000000"`` -> bytes; ``"none"`` -> None (no cap);
    None -> the default (half the RAM)."""
    if text is None:
        return default_max_memory()
    if text.strip().lower() == "none":
        return None
    m = _SIZE.match(text)
    if not m:
        raise InputError(field, text, "a size such as 512M, 4G or 2.5GiB, or 'none' for no cap")
    scale = 1024 ** "bkmgt".index((m.group(2) or "b").lower())
    size = int(float(m.group(1)) * scale)
    if size <= 0:
        raise InputError(field, text, "a size > 0, or 'none' for no cap")
    return size


def check_memory(est: Estimate, max_memory: int | None) -> None:
    """Refuse (InputError on ``--max-memory``) an estimate above ``max_memory`` bytes."""
    if max_memory is not None and est.memory_bytes > max_memory:
        raise InputError("--max-memory", format_bytes(max_memory),
                         f"at least the estimated ~{format_bytes(est.memory_bytes)} of this launch "
                         "(shrink the shape or batch, or pass a larger --max-memory / 'none')")


def format_bytes(n: int) -> str:
    """``1.2 GiB`` style."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _format_seconds(s: float) -> str:
    if s < 60:
        return f"{max(s, 0.1):.1f} s"
    if s < 3600:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def scenario_estimate(sc, tiling) -> Estimate:
    """:func:`estimate` of ``cgdr-des run`` for a validated scenario and its tiling (of a scenario
    with a ``[study]``: its one batch as ``run`` runs it; the note says a tail study is not covered)."""
    from cgdr_des.kernel.dispatch import should_split_v_tiles

    s = sc.shape
    est = estimate(sc.lengths(), nk=s.nk, nv=s.nv, dk=s.dk, dv=s.dv, v_step=tiling.v_step,
                   ub_rest_bytes=tiling.ub_rest_bytes, numerics=sc.sim.numerics, fidelity=sc.sim.fidelity,
                   split=should_split_v_tiles(s.dv, tiling.v_step, tiling.block_dim, s.nv),
                   trace=sc.sim.trace, plots=sc.output.plots, max_trace_events=sc.sim.max_trace_events,
                   ops=sc.sim.ops)
    if "study" in sc.model_fields_set:
        est = replace(est, note="of 'cgdr-des run' (one batch); a 'cgdr-des tail' study is not estimated")
    return est


#: A tail study's memory: the process with its calibration and phase checks, then per (batch, policy)
#: the surrogate's per-item arrays (8 B an item), the core_finish rows (64 B a core) and the batches row
#: (256 B). Measured on ``cgdr-des tail scenarios/tail_lognormal_12h.toml`` (7 policies, 16 sequences x 12
#: heads, 8 cores; 2026-12-02): 485 MiB at 2 000 batches, 1 009 MiB at 40 000, i.e. 14.1 KiB a batch
#: against the 15.8 KiB this model gives, and 457 MiB at none.
STUDY_BASE_BYTES = 512 * 2**20
STUDY_ITEM_BYTES, STUDY_CORE_BYTES, STUDY_BATCH_BYTES = 8, 64, 256


def study_memory_bytes(batches: int, policies: int, items_per_batch: int, cores: int) -> int:
    """Peak memory of a tail study of ``batches`` x ``policies`` (see :data:`STUDY_BASE_BYTES`)."""
    per = items_per_batch * STUDY_ITEM_BYTES + cores * STUDY_CORE_BYTES + STUDY_BATCH_BYTES
    return STUDY_BASE_BYTES + batches * policies * per


def study_estimate(sc, tiling, batches: int | None = None, policies: int | None = None,
                   workers: int = 1) -> Estimate:
    """:class:`Estimate` of ``cgdr-des tail`` on ``sc`` (memory only: the time depends on the calibration
    cache and the checks; ``seconds`` is 0 and the note says so). ``workers``: processes the checks
    run on; when more than one check runs at once, each is counted (:func:`check_memory_bytes`)."""
    from cgdr_des.kernel.dispatch import should_split_v_tiles
    from cgdr_des.kernel.policies import OPTIMAL_MAX_ITEMS, POLICIES

    s = sc.shape
    split = should_split_v_tiles(s.dv, tiling.v_step, tiling.block_dim, s.nv)
    items = (sc.workload.batch or len(sc.lengths())) * s.nv * (tiling.v_tile_count if split else 1)
    n = sc.study.batches if batches is None else batches
    # every policy that applies, as run_study picks them: optimal only for batches of few items
    p = policies or len(sc.study.policies or [q for q in POLICIES if q != "optimal" or items <= OPTIMAL_MAX_ITEMS])
    parallel = min(workers, sc.study.check_batches)
    checks = parallel * check_estimate(sc, tiling, n).memory_bytes if parallel > 1 else 0
    on = f", {parallel} checks at once" if parallel > 1 else ""
    return Estimate(memory_bytes=study_memory_bytes(n, p, items, tiling.block_dim) + checks, seconds=0.0,
                    items=n * items, note=f"a tail study of {n:,} batches x {p} policies{on}")


def check_estimate(sc, tiling, batches: int) -> Estimate:
    """One of a study's checks on a pool worker: a fresh process (``BASE_BYTES``) simulating a batch at
    ``phase`` fidelity without numbers, trace or plots, the batch taken as ``batch`` sequences of the
    longest length the distribution draws (:func:`longest_draw`), an upper bound of any checked batch
    (the worst one included), or of its stand-in when that is larger than ``check_max_token_heads``.
    ``memory_bytes``: the worker's peak; ``seconds``: the simulation's CPU seconds alone. A check in
    the study's own process is within :data:`STUDY_BASE_BYTES`."""
    from cgdr_des.kernel.dispatch import should_split_v_tiles

    s = sc.shape
    batch = sc.workload.batch or len(sc.lengths())
    longest = longest_draw(sc.workload.distribution, batches, batch)
    cap = sc.study.check_max_token_heads  # a larger batch is checked as a stand-in of about this much work
    if cap and batch * longest * s.nv > cap:
        longest = max(1, cap // (batch * s.nv) + 1)
    lengths = np.full(batch, longest, np.int64)
    split = should_split_v_tiles(s.dv, tiling.v_step, tiling.block_dim, s.nv)
    est = estimate(lengths, nk=s.nk, nv=s.nv, dk=s.dk, dv=s.dv, v_step=tiling.v_step,
                   ub_rest_bytes=tiling.ub_rest_bytes, numerics="off", fidelity="phase", split=split,
                   trace=False, plots=False)
    return replace(est, seconds=est.items * (SPLIT_SECONDS_PER_ITEM if split else PHASE_SECONDS_PER_ITEM))


def check_memory_bytes(sc, tiling, batches: int) -> int:
    """Peak memory of one pool worker running one of a study's checks (:func:`check_estimate`)."""
    return check_estimate(sc, tiling, batches).memory_bytes


def longest_draw(dist, batches: int, batch: int) -> int:
    """The longest sequence a study's ``batches x batch`` draws of ``dist`` can hold: the distribution's
    cap (``max``, ``length``, ``long``), or for a lognormal without ``max`` its ``1 - 1/draws`` quantile
    (the longest draw expected among them)."""
    from statistics import NormalDist

    if dist is None:  # not a study (run_study refuses it)
        return 0
    if dist.kind == "bimodal":
        return max(dist.long, dist.short)
    cap = dist.length if dist.kind == "fixed" else dist.max
    if cap is not None:
        return int(cap)
    z = NormalDist().inv_cdf(1.0 - 1.0 / max(2, batches * batch))  # lognormal, no max
    return int(min(2**31 - 1, max(dist.min, round(dist.median * float(np.exp(dist.sigma * z))))))
