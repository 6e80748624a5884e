"""Costs of the Cube side of a coupled AI core: pure closed forms of a record and the profile.

``cube_cycles(profile, rec) -> (issue, latency)`` for every record type of ``isa.CUBE_RECORDS``: the
record holds its pipe ``issue`` cycles (the next record of that pipe may start then) and completes
``latency`` cycles after it starts (a flag set behind it, a barrier, or a reader of what it writes
waits for that). The machine knows nothing of the kernel: these formulas read only the record's
sizes and the profile's fields (docs/kernel-cube.md §5, docs/hardware.md §12).

- ``Mmad(m, n, k)``: ``F = ceil(m/16) * ceil(n/16) * ceil(k/16)`` fp16 fractals;
  issue ``F * cube_fractal_cycles``, latency ``issue + cube_delay_cycles``.
- ``LoadData``: issue ``ceil(nbytes / mte1_bytes_per_cycle)``, latency ``issue + mte1_delay_cycles``.
- ``L0cToUb`` (the drain, on V): issue ``ceil(nbytes / l0c_drain_bytes_per_cycle)``, latency
  ``issue + l0c_drain_delay_cycles``.
- ``UbCopy`` (NZ -> ND rows, on V): issue ``ceil(nbytes / ub_copy_bytes_per_cycle)``, latency
  ``issue + ub_copy_delay_cycles``.

Every issue is at least one cycle. The GM -> L1 ``Dma`` records (direction ``GM2L1``) are costed by
the DMA rules of the MTE2 pipe, not here.
"""

from __future__ import annotations

from math import ceil

from cgdr_des.isa import CUBE_FRACTAL, L0cToUb, LoadData, Mmad, UbCopy


def mmad_fractals(m: int, n: int, k: int) -> int:
    """16 x 16 x 16 fp16 fractal steps of an ``m x n x k`` Mmad (partial fractals count whole)."""
    fm, fk, fn = CUBE_FRACTAL
    return ceil(m / fm) * ceil(n / fn) * ceil(k / fk)


def _rate(nbytes: int, per_cycle: float) -> int:
    return max(1, ceil(nbytes / per_cycle))


def cube_cycles(profile, rec) -> tuple[int, int]:
    """``(issue, latency)`` in cycles of one Cube-side record (a TypeError for any other record)."""
    t = type(rec)
    if t is Mmad:
        issue = max(1, mmad_fractals(rec.m, rec.n, rec.k) * profile.cube_fractal_cycles)
        return issue, issue + profile.cube_delay_cycles
    if t is LoadData:
        issue = _rate(rec.nbytes, profile.mte1_bytes_per_cycle)
        return issue, issue + profile.mte1_delay_cycles
    if t is L0cToUb:
        issue = _rate(rec.nbytes, profile.l0c_drain_bytes_per_cycle)
        return issue, issue + profile.l0c_drain_delay_cycles
    if t is UbCopy:
        issue = _rate(rec.nbytes, profile.ub_copy_bytes_per_cycle)
        return issue, issue + profile.ub_copy_delay_cycles
    raise TypeError(f"cube_cycles: {t.__name__} is not a Cube-side record (isa.CUBE_RECORDS)")


def on_chip_capacity(profile, buffer: str) -> int:
    """Bytes of an on-chip buffer named as records name it (``"L1"``, ``"L0A"``, ``"L0B"``, ``"L0C"``,
    optionally with a ``":slot"`` suffix)."""
    name = buffer.split(":", 1)[0]
    table = {"L1": profile.l1_bytes, "L0A": profile.l0a_bytes, "L0B": profile.l0b_bytes, "L0C": profile.l0c_bytes}
    if name not in table:
        raise KeyError(f"unknown on-chip buffer {buffer!r}; one of {', '.join(table)}")
    return table[name]
