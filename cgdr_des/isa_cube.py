"""Instruction records of the Cube side of the coupled 310P AI core (the Cube-era kernel's extra
pipes and record types); ``cgdr_des.isa`` re-exports every name here, so the kernel and the machine
import them from there like any other record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

#
# The Cube-era kernel (cgdr_des/kernel/cube/, docs/kernel-cube.md) runs Cube and Vector code in one
# instruction stream (KERNEL_TYPE_AIC_ONLY on the coupled 310P core). Its extra pipes: MTE1 (L1 ->
# L0A/L0B) and M (the Cube). GM -> L1 loads are :class:`Dma` records with ``direction = "GM2L1"`` on
# MTE2. The scalar unit hands each record of :data:`CUBE_RECORDS` to the pipe its class attribute
# ``pipe`` names; ``cgdr_des.hw.cube_costs.cube_cycles(profile, rec)`` gives its ``(issue, latency)``.
# ``reads`` / ``writes`` name the on-chip buffers a record uses (``"L0C:0"``): a record reading a
# buffer before the last record writing it has completed is a hazard the machine reports.

CUBE_PIPES = ("MTE1", "M")
CUBE_BARRIER_PIPES = ("MTE1", "M")
CUBE_HARD_EVENTS = ("MTE2_MTE1", "MTE1_M", "M_MTE1", "M_V", "V_M")
#: the fp16 fractal a Cube step multiplies: (m, k, n) = 16 x 16 x 16, 4096 MACs
CUBE_FRACTAL = (16, 16, 16)
FRACTAL_BYTES = 16 * 16 * 2  # one 16 x 16 fp16 fractal in L1 / L0A / L0B


@dataclass(frozen=True, slots=True)
class Nd2NzParams:
    """AscendC ``Nd2NzParams`` of a GM -> L1 DataCopy: ``nd_num`` matrices of ``n_value`` rows by
    ``d_value`` columns, GM row stride ``src_d_value`` elements, written in 16 x 16 fractals (NZ) whose
    column blocks are ``dst_nz_c0_stride`` rows apart."""

    nd_num: int = 1
    n_value: int = 0
    d_value: int = 0
    src_d_value: int = 0
    dst_nz_c0_stride: int = 0


@dataclass(frozen=True, slots=True)
class LoadData:
    """``LoadData`` L1 -> L0A (``dst = "L0A"``) or L0B: ``fractals`` 16 x 16 fp16 fractals
    (``nbytes = fractals * 512``), transposed on the way for a B operand when ``transpose``."""

    pipe: ClassVar[str] = "MTE1"
    fractals: int
    nbytes: int
    dst: str = "L0A"
    transpose: bool = False
    reads: tuple[str, ...] = ("L1:0",)
    writes: tuple[str, ...] = ("L0A:0",)


@dataclass(frozen=True, slots=True)
class Mmad:
    """``Mmad(c, a, b, {m, n, k, 0, false, init})``: C[m, n] (fp32, L0C) = or += A[m, k] · B[k, n]
    (fp16, L0A / L0B); ``init`` True overwrites L0C, False accumulates."""

    pipe: ClassVar[str] = "M"
    m: int
    n: int
    k: int
    init: bool = True
    reads: tuple[str, ...] = ("L0A:0", "L0B:0")
    writes: tuple[str, ...] = ("L0C:0",)


@dataclass(frozen=True, slots=True)
class L0cToUb:
    """The L0C -> UB ``DataCopy`` in BLOCK_MODE_MATRIX on V (the coupled core has no FIXPIPE to UB):
    an ``m x n`` fp32 result, ``nbytes = m * n * 4``, in NZ order at UB byte ``ub_addr``."""

    pipe: ClassVar[str] = "V"
    m: int
    n: int
    nbytes: int
    ub_addr: int = 0
    reads: tuple[str, ...] = ("L0C:0",)
    writes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class UbCopy:
    """A local UB -> UB ``DataCopy`` of ``bursts`` bursts (``nbytes`` in all): the NZ -> ND row copies
    after an L0C drain. Its pipe is not stated in the source; V is assumed (it is bracketed by
    PipeBarrier<PIPE_ALL> either way)."""

    pipe: ClassVar[str] = "V"
    nbytes: int
    bursts: int = 1
    dst: int = 0
    src: int = 0
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


#: the record types a Cube-era program adds, each handed to the pipe its ``pipe`` names
CUBE_RECORDS = (LoadData, Mmad, L0cToUb, UbCopy)
