"""Memory and wall time of a run, estimated from the shape before anything is allocated.

``validate`` and ``run`` print the estimate and refuse (one line, exit 2) a launch whose memory
estimate is above ``--max-memory`` (default: half of this machine's RAM; ``none`` lifts the cap).

The model counts what grows with the launch (measured on the shipped scenarios; peak RSS above the
~120 MiB the interpreter and libraries take):

- tensors, per (token, value head) with ``kernel`` numerics: the fp16 inputs and their widened
  copies (``2 + w`` bytes per q, k, v and beta element, w = 4 for fp32, 8 for ``exact``), g, and
  out; per (sequence, head): initial and final state, the widened copy and the workspace (exactly
  the launch's arrays, tested); one UB lane of ``ub_rest_bytes`` per head for the head-batched numbers. ``off``: g only.
- timing, per (chunk, head, V-tile) item: ~64 KiB at ``phase`` fidelity (ops rows, spans, the
  machine's records in flight); at ``instr`` ~380 bytes per instruction row, rows capped as the
  simulation caps them (beyond that only spans are kept).

It is an estimate (within a factor of ~2 on the shipped scenarios), meant to stop a run that
cannot fit long before it would exhaust the machine, not to budget one that can.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from cgdr_des.errors import InputError

BASE_BYTES = 120 * 2**20
PHASE_BYTES_PER_ITEM = 64 * 1024
INSTR_BYTES_PER_ROW = 380          # ops row plus the record it came from (small: 473 MiB / 1.27 M rows)
OPS_ROW_LIMIT = 2_000_000          # as cgdr_des.simulation: beyond it only spans are kept
SPAN_BYTES_PER_ITEM = 4 * 1024     # instr with rows dropped: one span row per phase and step
PHASE_SECONDS_PER_ITEM = 3e-3      # lognormal_batch: 13.5 s wall for 4 768 items on a quiet 2-core machine
INSTR_ROWS_PER_SECOND = 1.8e5      # records timed, numbers computed and frames built, per second
CHUNK = 64
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Estimate:
    """Peak memory (bytes) and wall time (seconds) of one run, and the items that drive them."""

    memory_bytes: int
    seconds: float
    items: int

    def line(self) -> str:
        """``estimate   ~1.2 GiB peak memory, ~35 s (4 768 chunk items)`` for the console."""
        return (f"estimate   ~{format_bytes(self.memory_bytes)} peak memory, ~{_format_seconds(self.seconds)} "
                f"({self.items:,} chunk items)")


def estimate(lengths, *, nk: int, nv: int, dk: int, dv: int, v_step: int, ub_rest_bytes: int,
             numerics: str, fidelity: str) -> Estimate:
    """The estimate of a launch of sequences ``lengths`` (see the module docstring for the model)."""
    lens = np.asarray(lengths, dtype=np.int64)
    tokens, batch = int(lens.sum()), int(lens.size)
    tiles = -(-dv // v_step)
    chunks = int((-(-lens // CHUNK)).sum())
    items = chunks * nv * tiles
    mem = BASE_BYTES + _tensor_bytes(tokens, batch, nk, nv, dk, dv, ub_rest_bytes, numerics)
    if fidelity == "instr":
        rows = _instr_records(lens, dk) * nv * tiles
        kept = rows if rows <= OPS_ROW_LIMIT else 0
        mem += kept * INSTR_BYTES_PER_ROW + items * SPAN_BYTES_PER_ITEM
        seconds = rows / INSTR_ROWS_PER_SECOND
    else:
        mem += items * PHASE_BYTES_PER_ITEM
        seconds = items * PHASE_SECONDS_PER_ITEM
    return Estimate(int(mem), float(seconds), int(items))


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
    """:func:`estimate` for a validated scenario and its tiling."""
    s = sc.shape
    return estimate(sc.lengths(), nk=s.nk, nv=s.nv, dk=s.dk, dv=s.dv, v_step=tiling.v_step,
                    ub_rest_bytes=tiling.ub_rest_bytes, numerics=sc.sim.numerics, fidelity=sc.sim.fidelity)
