"""The cost model: cycles of each instruction record, from the profile's numbers.

Every function here is a closed form of profile fields, so tests can recompute them independently.

- Vector (count-form API, one V instruction): issue ``max(1, ceil(n / width)) * cycles_per_repeat``
  cycles, then completion ``latency = vec_delay_cycles[op][dtype] + vec_pipe_delay_cycles`` after the
  issue ends. The next V instruction may start when the issue ends (pipelined); behind a
  ``PipeBarrier<V>`` it waits for the completion.
- Scalar: ``count`` times the per-kind cost; ``exp`` is a ScalarExp call costed from the ALU and
  division work the kernel declares for it (:func:`.rules.scalar_exp`).
- DMA: ``latency + overhead`` cycles before the first byte (no bandwidth used), then the bytes at the
  rate the GM bus grants, at most the per-core peak, times ``dma_unaligned_efficiency`` when the GM
  address is not ``dma_aligned_bytes``-aligned.
"""

from __future__ import annotations

from cgdr_des.errors import InputError
from cgdr_des.hw.profile import Profile
from cgdr_des.hw.rules import dma_first_byte


def vec_params(profile: Profile) -> dict[str, dict[str, tuple[int, int, int]]]:
    """``{dtype: {op: (width, cycles_per_repeat, latency)}}`` for every op of the profile."""
    out: dict[str, dict[str, tuple[int, int, int]]] = {}
    for op, widths in profile.vec_width.items():
        cpr = profile.vec_cycles_per_repeat[op]
        for dtype, width in widths.items():
            out.setdefault(dtype, {})[op] = (width, cpr, profile.vec_latency_cycles(op, dtype))
    return out


def scalar_kind_cycles(profile: Profile) -> dict[str, int]:
    """Per-count cycles of the fixed-cost scalar kinds (``exp`` depends on its argument)."""
    return {"alu": profile.scalar_alu_cycles, "ub_load": profile.scalar_ub_load_cycles,
            "ub_store": profile.scalar_ub_store_cycles, "div": profile.scalar_div_cycles}


def dma_first_byte_cycles(profile: Profile, read: bool, calls: int = 1) -> int:
    """Cycles from a DMA's start on its pipe to its first byte, for a run of ``calls`` DataCopy
    calls with ``dma_outstanding`` of them in flight at once (:func:`.rules.dma_first_byte`)."""
    if read:
        return dma_first_byte(profile.dma_read_latency_cycles, profile.dma_read_overhead_cycles, calls,
                              profile.dma_outstanding)
    return dma_first_byte(profile.dma_write_latency_cycles, profile.dma_write_overhead_cycles, calls,
                          profile.dma_outstanding)


def dma_rate_cap(profile: Profile, read: bool, gm_addr: int) -> float:
    """The most bytes/cycle one transfer may move: the core's peak, reduced when unaligned."""
    peak = profile.dma_read_peak_per_cycle if read else profile.dma_write_peak_per_cycle
    if gm_addr % profile.dma_aligned_bytes:
        return peak * profile.dma_unaligned_efficiency
    return peak


def check_timing_fields(profile: Profile, fidelity: str) -> bool:
    """Refuse a field the chosen fidelity cannot honour; return the launch's ``raw_interlock``.

    ``dma_outstanding`` acts on the merged DataCopy runs of ``phase`` fidelity (one record per run);
    ``instr`` fidelity issues each call as its own record, which this model does not overlap."""
    if fidelity == "instr" and profile.dma_outstanding != 1:
        raise InputError("hardware.overrides.dma_outstanding", profile.dma_outstanding,
                         "1 at instr fidelity (overlapping first bytes are modelled on phase fidelity's "
                         "merged DataCopy runs only)")
    return profile.raw_interlock
