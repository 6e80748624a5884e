"""How the machine reports a program the real kernel would mishandle.

Every report is a :class:`~cgdr_des.errors.KernelDiagnostic` whose first line says what went wrong,
on which core, and where in the program (record index, counted from 0 in the order the core's
program yielded them, and the last Tag before it). Later lines, if any, give details.

Inside the machine, helpers that do not know the location raise :class:`HwFault`; the scalar unit,
which knows the record index and the Tag, turns it into a KernelDiagnostic with :func:`at`.
"""

from __future__ import annotations

from cgdr_des.errors import KernelDiagnostic


class HwFault(Exception):
    """A diagnostic whose program location is added by the caller (internal to ``hw``)."""


def tag_text(seg) -> str:
    """``P4a_DotFp32 b=0 h=1 vt=-1 c=2`` for a span accumulator ``[phase, b, h, vt, c, ...]``."""
    if seg is None or not seg[0]:
        return "before any Tag"
    return f"tag {seg[0]} b={seg[1]} h={seg[2]} vt={seg[3]} c={seg[4]}"


def at(core: int, idx: int, seg, msg: str) -> KernelDiagnostic:
    """A KernelDiagnostic for ``msg`` located at record ``idx`` of ``core``."""
    return KernelDiagnostic(f"{msg} [core {core}, record #{idx} ({tag_text(seg)})]")


def flag_name(instr: str, flag) -> str:
    """``WaitFlag<V_S>(0)`` for an instruction name and a Flag."""
    return f"{instr}<{flag.event}>({flag.id})"
