"""No silent NaN: a launch whose outputs hold inf or NaN is reported, naming where it started.

Inputs are checked finite before a launch, so a non-finite output means some intermediate overflowed
(fp32 past 3.4e38, or the fp16 cast of out / final_state past 65504: large scale_value, beta or
inputs near fp16's range). :func:`check_outputs` finds the first non-finite output element (token
order for ``out``, then batch order for ``final_state``), replays that sequence's chunks with every
head side by side (the same phase functions as ``kernel/batched.py``, so the same numbers) and names
the first phase after which that head's UB lane or outputs hold a non-finite value. It lives in the
kernel layer because the replay runs the kernel's program.
"""

from __future__ import annotations

import numpy as np

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.integers import ceil_div
from cgdr_des.isa import Tag
from cgdr_des.kernel.launch import CoreState, should_split
from cgdr_des.kernel.program import Phase, process_item
from cgdr_des.numerics.finite import first_nonfinite

KEEP_GOING_HINT = "set [sim] nonfinite = \"keep\" to write such outputs anyway"


def check_outputs(launch, scenario=None) -> dict[str, str]:
    """Raise KernelDiagnostic when out or final_state holds inf/NaN, unless the scenario's
    ``[sim] nonfinite`` is ``"keep"``: then ``{"nonfinite": <where>}`` for the run's meta.

    Returns ``{}`` when every output is finite (or numerics is off).
    """
    where = _first_bad(launch)
    if where is None:
        return {}
    kind, b, token, head = where
    what = f"out[token {token}, head {head}]" if kind == "out" else f"final_state[batch {b}, head {head}]"
    if getattr(getattr(scenario, "sim", None), "nonfinite", "error") == "keep":
        return {"nonfinite": f"non-finite output: first at {what} (batch {b})"}
    phase = first_bad_phase(launch, b, head)
    hint = KEEP_GOING_HINT if scenario is not None else "check scale_value, beta and the inputs' range"
    raise KernelDiagnostic(f"non-finite output: first at {what} (batch {b}); {phase}; {hint}")


def _first_bad(launch) -> tuple[str, int, int, int] | None:
    """("out" | "final_state", batch, token or -1, head) of the first non-finite output element."""
    idx = first_nonfinite(launch.out)
    if idx is not None:
        token, head = idx[0], idx[1]
        starts = np.cumsum(np.asarray(launch.lengths, dtype=np.int64))
        return "out", int(np.searchsorted(starts, token, side="right")), token, head
    idx = first_nonfinite(launch.final_state)
    if idx is not None:
        return "final_state", idx[0], -1, idx[1]
    return None


def first_bad_phase(launch, b: int, head: int) -> str:
    """``"first in phase P4a_... of chunk c"``: replay sequence ``b`` and watch head ``head``."""
    lengths = np.asarray(launch.lengths, dtype=np.int64)
    seq0, seq1 = int(lengths[:b].sum()), int(lengths[: b + 1].sum())
    launch.out[seq0:seq1] = 0  # rewritten by the replay with the same numbers
    launch.final_state[b] = launch.initial_state[b].astype(launch.final_state.dtype)
    core = CoreState(launch, 0, emit=False, all_heads=True)
    tiles = range(ceil_div(launch.shape.dv, core.v_step)) if should_split(launch) else (None,)
    for vt in tiles:
        tag = None
        for item in process_item(core, b, 0, seq0, seq1, vt):
            if isinstance(item, Phase):
                item.build(None)  # the phase's numbers only: this replay emits no records
            elif len(item) == 1 and isinstance(item[0], Tag):
                tag = item[0]
                continue
            if tag is not None and not _lane_finite(launch, core, head, b, seq0, seq1):
                return f"first non-finite after phase {tag.phase} of chunk {tag.chunk}"
    return "no phase of the replay produced it"


def _lane_finite(launch, core, head: int, b: int, seq0: int, seq1: int) -> bool:
    """Every UB value of the head's lane but the decay mask (whose entries above the diagonal may be
    inf by design and are never read), and its outputs so far, are finite."""
    for name, view in core.views.items():
        if name != "decayMaskFp32" and not np.isfinite(view[head]).all():
            return False
    return bool(np.isfinite(launch.out[seq0:seq1, head]).all() and np.isfinite(launch.final_state[b, head]).all())
