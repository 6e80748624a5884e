"""What a compiled run does when V is still busy as it begins: the numbers of the phase compiler's
second scan (:class:`~cgdr_des.hw.phase.TimedMacro`'s ``late``), where V is taken to free up for it,
and which runs end in scalar loops that this scan can leave out. The compiler
(:mod:`cgdr_des.hw.phase`) runs the scans; this module reads them."""

from __future__ import annotations

from cgdr_des.hw.compute_run import RunTiming
from cgdr_des.isa import Repeat, Scalar, ScalarGm


def late_start(r: RunTiming) -> int:
    """When V is taken to free up in the late scans of a run (cycles after S's start): past
    everything the idle run timed, so that every path from V's start to an output shows."""
    return max(r.s_cycles, r.v_start, r.v_end) + 1


def scalar_tail(records: list, i: int, end: int) -> int:
    """Where the run ``records[i:end]`` ends in a tail worth leaving out of its late scan (else
    ``end``): one or more Repeats of scalar work only (Scalar, ScalarGm: nothing for V, no flag),
    with other Scalar / ScalarGm records among them, behind a head holding no Repeat (cheap to scan
    twice)."""
    k, loops = end, False
    while k > i:
        rec = records[k - 1]
        t = type(rec)
        if t is Repeat:
            if rec.n < 2 or not _scalar_only(rec.body(0)):
                return end
            loops = True
        elif t is not Scalar and t is not ScalarGm:
            break
        k -= 1
    if not loops or k == i or any(type(r) is Repeat for r in records[i:k]):
        return end
    return k


def _scalar_only(body: list) -> bool:
    """Whether a Repeat body (all iterations alike, by the Repeat contract) is scalar work only."""
    return bool(body) and all(type(r) is Scalar or type(r) is ScalarGm for r in body)


def late_numbers(idle: RunTiming, x: int, busy: RunTiming) -> tuple:
    """A TimedMacro's ``late``: for S's end, V's end and V's free, the cycles after V's start that
    each cannot be earlier than, None where no path leads there; from the idle timing ``idle`` and
    the scan with V free and done at ``x`` (``busy``, :func:`late_start`).

    Why two timings give every backlog. Each cycle the timer computes is a max of sums of
    nonnegative costs and of its inputs, so an output is ``max(c, a + k_a, d + k_d)`` in V's free
    ``a`` and done ``d`` as the run's V part meets V (k = -inf without a path), and equals the idle
    timing for an idle V. At ``x`` past every idle output, ``busy`` shows ``x + max(k_a, k_d)`` if a
    path exists and the idle output otherwise. The replay takes ``max(a, d) + max(k_a, k_d)``: exact
    when ``d <= a`` (the run before ended on a barrier, as the kernel's do, or a Macro whose V part
    ends with its last issue), an upper bound by at most ``d - a`` (the last op's latency) else."""
    outs = ((idle.s_cycles, busy.s_cycles), (idle.v_end, busy.v_end), (idle.v_free, busy.v_free))
    return tuple(late - x if late > base else None for base, late in outs)
