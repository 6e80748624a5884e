"""The load-time tiling check: a scenario whose shape has no V step fitting UB fails before simulating.

Another layer's ``InputError`` (the profile loader, the host tiling) is re-raised with the scenario
section it came from in the field path (``hardware.…``, ``tiling.…``).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from cgdr_des.errors import InputError

if TYPE_CHECKING:
    from cgdr_des.scenario.model import Scenario


def validate_tiling(sc: Scenario):
    """Run the host tiling at load so that a shape with no V step fitting UB fails before simulating.

    Returns the ``Tiling``.
    """
    from cgdr_des.hw import load_profile
    from cgdr_des.kernel.tiling import compute_tiling, static_diagnostics

    with _prefixed("hardware"):
        profile = load_profile(sc.profile_ref(), dict(sc.hardware.overrides) or None)
    lengths = sc.lengths()
    s = sc.shape
    if sc.kernel.kernel_version != "vector":
        return _validate_cube_tiling(sc, profile, lengths)
    with _prefixed("tiling"):
        tiling = compute_tiling(t=int(lengths.sum()), hqk=s.nk, dk=s.dk, hv=s.nv, dv=s.dv,
                                batch=int(lengths.size), ub_size=profile_ub_bytes(profile),
                                aiv_num=profile_core_count(profile), has_gamma=s.has_gamma,
                                **sc.kernel.tiling_options())
        static_diagnostics(tiling)
    _check_cores(sc, tiling.block_dim)
    return tiling


def _validate_cube_tiling(sc: Scenario, profile, lengths):
    """The Cube-era host tiling (kernel_version cube / cube-pre1174) at load."""
    from cgdr_des.kernel.cube.tiling import compute_cube_tiling

    s = sc.shape
    with _prefixed("tiling"):
        tiling = compute_cube_tiling(t=int(lengths.sum()), hqk=s.nk, dk=s.dk, hv=s.nv, dv=s.dv,
                                     batch=int(lengths.size), ub_size=profile_ub_bytes(profile),
                                     aiv_num=profile_core_count(profile), has_gamma=s.has_gamma,
                                     kernel_version=sc.kernel.kernel_version)
    _check_cores(sc, tiling.block_dim)
    return tiling


def _check_cores(sc: Scenario, block_dim: int) -> None:
    """Core ids the output options name must be cores the launch uses (0 .. blockDim - 1)."""
    allowed = f"a core id of this launch, 0..{block_dim - 1} (blockDim {block_dim})"
    if sc.output.gantt_core is not None and sc.output.gantt_core >= block_dim:
        raise InputError("output.gantt_core", sc.output.gantt_core, allowed)
    for i, core in enumerate(sc.sim.trace_cores or ()):
        if core >= block_dim:
            raise InputError(f"sim.trace_cores[{i}]", core, allowed)


@contextmanager
def _prefixed(section: str):
    """Re-raise another layer's InputError with the scenario section it came from in the field path."""
    try:
        yield
    except InputError as exc:
        if exc.field.startswith(f"{section}."):
            raise
        raise InputError(f"{section}.{exc.field}", exc.value, exc.allowed) from None


def profile_ub_bytes(profile: Any) -> int:
    """UB bytes the host tiling sees (``GetCoreMemSize(UB)`` less what AscendC reserves)."""
    return int(profile.ub_usable_bytes)


def profile_core_count(profile: Any) -> int:
    """Vector core count the host tiling sees (``GetCoreNumAiv()``)."""
    return int(profile.aiv_num)
