"""Scenario files: one TOML file describes one simulated kernel launch and the question it answers.

Lifecycle: ``load_scenario(path)`` reads TOML -> ``Scenario.from_dict`` validates it (pydantic v2, every
section ``extra="forbid"`` and frozen, strict types: TOML's types must match, no string-to-number
coercion) -> resolves the sequence lengths once (explicit list, seeded distribution, or CSV file) ->
checks that the host tiling finds a V step that fits UB. The result is immutable; ``with_changes``
returns a re-validated copy (sweeps and ``compare`` build their points with it).

Every failure is an ``InputError`` with one line naming the dotted field path (``shape.nv``,
``workload.distribution.sigma``), the value and what is allowed: pydantic's ``ValidationError`` is
converted in ``messages`` (first error only). Validators inside the models raise ``InputError`` with the
field *relative to their table*; the converter prefixes the table's location.

Modules: ``sections`` (one model per TOML table, and the bounds), ``model`` (``Scenario``, reading TOML,
resolving lengths), ``messages`` (pydantic errors as one line), ``tiling_check`` (the load-time tiling
check). Every name is importable from ``cgdr_des.scenario`` itself. See ``cgdr-des schema`` for the JSON
schema. Units: lengths in tokens, windows in core clock cycles.
"""

from __future__ import annotations

from cgdr_des.scenario.messages import validation_error_to_input_error
from cgdr_des.scenario.model import Scenario, load_scenario, read_toml, resolve_lengths
from cgdr_des.scenario.sections import (
    DEFAULT_PROFILE,
    MAX_CYCLE,
    MAX_HEAD_DIM,
    MAX_HEADS,
    MAX_SCALE,
    MAX_SEED,
    MAX_TRACE_EVENTS,
    CoreId,
    CycleWindow,
    Hardware,
    HeadCount,
    HeadDim,
    Kernel,
    Output,
    PolicyName,
    PositiveInt,
    Shape,
    Sim,
    Study,
    Tensors,
    Workload,
)
from cgdr_des.scenario.tiling_check import profile_core_count, profile_ub_bytes, validate_tiling
from cgdr_des.workload.lengths import MAX_BATCH
from cgdr_des.workload.lengths import MAX_LENGTH as MAX_TOKENS


def known_profiles() -> list[str]:
    """Names of the shipped hardware profiles (``cgdr_des.hw.list_profiles()``).

    ``Hardware`` validates ``profile`` against this function as found here at call time, so replacing
    ``cgdr_des.scenario.known_profiles`` changes the list everywhere.
    """
    from cgdr_des.hw import list_profiles

    return list(list_profiles())


__all__ = [
    "DEFAULT_PROFILE", "MAX_BATCH", "MAX_CYCLE", "MAX_HEAD_DIM", "MAX_HEADS", "MAX_SCALE", "MAX_SEED",
    "MAX_TOKENS", "MAX_TRACE_EVENTS", "CoreId", "CycleWindow", "Hardware", "HeadCount", "HeadDim", "Kernel",
    "Output", "PolicyName", "PositiveInt", "Scenario", "Shape", "Sim", "Study", "Tensors", "Workload",
    "known_profiles", "load_scenario", "profile_core_count", "profile_ub_bytes", "read_toml",
    "resolve_lengths", "validate_tiling", "validation_error_to_input_error",
]
