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


def tag_text(span) -> str:
    """``tag P4a_DotFp32 b=0 h=1 vt=-1 c=2`` for a :class:`~cgdr_des.hw.records.Span`."""
    if span is None or not span.phase:
        return "before any Tag"
    return f"tag {span.phase} b={span.batch} h={span.head} vt={span.vtile} c={span.chunk}"


def at(core: int, idx: int, span, msg: str) -> KernelDiagnostic:
    """A KernelDiagnostic for ``msg`` located at record ``idx`` of ``core`` (in ``span``)."""
    return KernelDiagnostic(f"{msg} [core {core}, record #{idx} ({tag_text(span)})]")


def flag_name(instr: str, flag) -> str:
    """``WaitFlag<V_S>(0)`` for an instruction name and a Flag."""
    return f"{instr}<{flag.event}>({flag.id})"
