"""The one colour table of every plot: kernel phases, pipes (and the critical-path parts), policies,
settings, the ends of a range, and the few plain roles (a reference line, a neutral "before", context).

A reader who has learnt from the run Gantt that ``P4a_DotFp32`` is light green, or from a tail plot
that ``cost_lpt`` is green, finds the same colour in compare's chunk Gantt, the critical-path bars
and analysis/report's figures. Every plot module (results/, timing/tornado.py, analysis/report/)
asks this one for colours (tests/test_palette.py scans them for colour tables of their own).

Phases are the trace labels of the two kernel programs (``cgdr_des.kernel.program.PHASES``, then the
Cube-era labels of ``cgdr_des.kernel.cube.program.PHASES`` that the vector program does not use), in
program order, so neighbouring phases get neighbouring colours of the same qualitative map and the
legend reads in program order.
"""

from __future__ import annotations

from matplotlib import colormaps

from cgdr_des.kernel.cube.program import PHASES as CUBE_PHASES
from cgdr_des.kernel.program import PHASES as VECTOR_PHASES

#: a reference line drawn over data (a mean, a bound)
REFERENCE = "#d62728"
#: a neutral series drawn for comparison (a "before" beside an "after")
NEUTRAL = "#7f7f7f"
#: a label no table names (a phase added later, an aggregated span's label): drawn, never guessed at
UNKNOWN = "#7f7f7f"
#: work drawn as the background of the answer (per-item fixed work beneath the length-dependent part)
CONTEXT = "#dddddd"

#: a ranged field at the low end of its range, at the high end (or its other choice): the tornado's
#: bars and analysis/report's sensitivity figure
RANGE_END_COLOURS: dict[str, str] = {"low": "#1f77b4", "high": "#d62728"}


def _phase_colours() -> dict[str, str]:
    vector = [p.label for p in VECTOR_PHASES]
    cube = [p.label for p in CUBE_PHASES if p.label not in vector]
    # tab20 has 20 colours for the vector program's 19 phases; the Cube-only ones take tab20b/c
    first = [colormaps["tab20"](i) for i in range(20)]
    more = [colormaps["tab20b"](i) for i in range(20)] + [colormaps["tab20c"](i) for i in range(20)]
    table = dict(zip(vector, first, strict=False)) | dict(zip(cube, more, strict=False))
    return {label: _hex(rgba) for label, rgba in table.items()}


def _hex(rgba) -> str:
    return "#" + "".join(f"{round(255 * c):02x}" for c in rgba[:3])


#: phase label -> colour, in program order (vector program first)
PHASE_COLOURS: dict[str, str] = _phase_colours()

#: pipe (and critical-path part, results/attribution.py PARTS) -> colour: a pipe's Gantt rows and its
#: share of the critical path look alike. Cube pipes for the Cube-era program.
PIPE_COLOURS: dict[str, str] = {
    "launch": "#bbbbbb", "S": "#1f77b4", "V": "#ff7f0e", "MTE2": "#2ca02c", "MTE3": "#d62728",
    "flags": "#9467bd", "MTE1": "#8c564b", "M": "#e377c2", "ALL": "#7f7f7f",
}

#: dispatch policy -> colour, in every tail figure (and analysis/report's)
POLICY_COLOURS: dict[str, str] = {
    "greedy": "#444444", "round_robin": "#d62728", "float_share": "#ff7f0e", "longest_first": "#9467bd",
    "cost_greedy": "#1f77b4", "cost_lpt": "#2ca02c", "minmax_contiguous": "#17becf", "optimal": "#e377c2",
}

#: buffer_num / setting / kernel-variant series (compare's buffer plot, analysis/report's buffering
#: figure, where BUFFER_NUM 1 and 2 come first as in compare): the default cycle, named once here
SERIES_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def phase_colour(label: str) -> str:
    """The colour of a kernel phase label (grey for a label no program declares)."""
    return PHASE_COLOURS.get(str(label), UNKNOWN)


def phase_order(labels) -> list[str]:
    """``labels`` (any iterable, duplicates allowed) in program order, unknown labels last, sorted."""
    rank = {p: i for i, p in enumerate(PHASE_COLOURS)}
    return sorted({str(x) for x in labels}, key=lambda p: (rank.get(p, len(rank)), p))


def pipe_colour(pipe: str) -> str:
    """The colour of a pipe or critical-path part (grey for an unknown one)."""
    return PIPE_COLOURS.get(str(pipe), UNKNOWN)


def policy_colour(policy: str) -> str:
    """The colour of a dispatch policy (grey for a policy added without one)."""
    return POLICY_COLOURS.get(str(policy), UNKNOWN)


def range_end_colour(end: str) -> str:
    """The colour of a range's ``low`` or ``high`` end (any other end, a choice's alternative, is high)."""
    return RANGE_END_COLOURS["low" if end == "low" else "high"]


def series_colour(i: int) -> str:
    """The ``i``-th colour of a plain series (settings, buffer_num values)."""
    return SERIES_COLOURS[i % len(SERIES_COLOURS)]
