"""Which kernel variants an advice compares, and whether each fits UB for the scenario's shape.

A variant is a name of :data:`cgdr_des.kernel.variants.VARIANTS`, a spec ``field=value[,field=value]``
(:func:`~cgdr_des.kernel.variants.variant_fields`), or a combination of those joined by ``+``
(``prefetch+state_db``: the union of their fields; two parts that set one field differently are
refused). Every variant is applied to the source kernel (``baseline``), whatever ``[kernel]`` the
scenario sets, because the advice ranks changes to the source. The default list is ``baseline`` and
every named variant that is not a ``_same`` form (those keep the baseline's vStep and mostly overflow
UB; name them to see by how much).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cgdr_des.errors import InputError, KernelDiagnostic

BASELINE = "baseline"


@dataclass(frozen=True)
class Setting:
    """One variant of the advice: its name, ``[kernel]`` fields and, when it fits UB, its scenario and
    tiling; else ``status`` says why it was not run (``does not fit UB by N B``, or the diagnostic of a
    variant that cannot be written for this shape)."""

    name: str
    fields: dict[str, Any]
    scenario: Any
    tiling: Any
    status: str
    shortfall_bytes: int = 0

    @property
    def runs(self) -> bool:
        """Whether the variant fits and is studied."""
        return self.scenario is not None


def default_names() -> list[str]:
    """``baseline`` and every named variant that is not a ``_same`` form, in :data:`VARIANTS` order."""
    from cgdr_des.kernel.variants import VARIANTS

    return [n for n in VARIANTS if not n.endswith("_same")]


def parse_names(text: tuple[str, ...] | list[str] | None) -> list[str]:
    """``--variants`` values (each may hold several, comma-free names separated by spaces) -> names,
    de-duplicated, ``baseline`` first (the reference every gain is measured from); None: the default."""
    names = [n for arg in (text or ()) for n in arg.split() if n]
    names = list(dict.fromkeys(names)) if names else default_names()
    for name in names:
        variant_fields_of(name)  # every name checked before any work
    return [BASELINE, *(n for n in names if n != BASELINE)]


def variant_fields_of(name: str) -> dict[str, Any]:
    """The ``[kernel]`` fields of ``name`` (a variant, a spec, or ``a+b`` combinations of them)."""
    from cgdr_des.kernel.variants import BASELINE as SOURCE
    from cgdr_des.kernel.variants import variant_fields

    if len(name) > 200:
        raise InputError("--variants", name, "a variant name, spec or a+b combination of at most 200 characters")
    fields: dict[str, Any] = dict(SOURCE)
    changed: dict[str, Any] = {}
    for part in name.split("+"):
        try:
            own = variant_fields(part.strip())
        except InputError as exc:  # named by this command's option, the a+b form added
            raise InputError("--variants", name, f"{exc.allowed}; or a+b combinations of those") from None
        for key, value in own.items():
            if key in SOURCE and SOURCE[key] == value:
                continue  # a part leaves this field at the source's value: another part may set it
            if key in changed and changed[key] != value:
                raise InputError("--variants", name, f"parts that agree: {key} is set to {changed[key]!r} "
                                 f"and to {value!r}")
            changed[key] = fields[key] = value
    return fields


def resolve(base, names: list[str]) -> list[Setting]:
    """One :class:`Setting` per name on scenario ``base`` (a variant that does not fit is kept, not run)."""
    return [_setting(base, name, variant_fields_of(name)) for name in names]


def _setting(base, name: str, fields: dict[str, Any]) -> Setting:
    from cgdr_des.scenario import validate_tiling

    try:
        sc = base.with_changes({"kernel": fields})
    except KernelDiagnostic as exc:  # the variant's buffers overflow UB at the kept tiling, or it cannot be written
        short = _host_tiling(base, fields).ub_shortfall_bytes
        if short > 0:
            return Setting(name, fields, None, None, f"does not fit UB by {short:,} B", short)
        return Setting(name, fields, None, None, f"not run: {str(exc).partition(chr(10))[0][:200]}")
    except InputError as exc:  # no vStep leaves the host room for the variant's buffers
        if not exc.field.startswith("tiling."):
            raise
        return Setting(name, fields, None, None, f"does not fit UB: the host finds no vStep ({exc.allowed})")
    return Setting(name, fields, sc, validate_tiling(sc), "ok")


def _host_tiling(base, fields: dict[str, Any]):
    """The host tiling of a variant that does not validate (its UB shortfall is the diagnostic)."""
    from cgdr_des.hw import load_profile
    from cgdr_des.kernel.tiling import compute_tiling
    from cgdr_des.scenario import profile_core_count, profile_ub_bytes

    prof = load_profile(base.profile_ref(), dict(base.hardware.overrides) or None)
    lengths, s = base.lengths(), base.shape
    return compute_tiling(t=int(lengths.sum()), hqk=s.nk, dk=s.dk, hv=s.nv, dv=s.dv, batch=int(lengths.size),
                          ub_size=profile_ub_bytes(prof), aiv_num=profile_core_count(prof),
                          has_gamma=s.has_gamma, **fields)


def changed_fields(fields: dict) -> str:
    """``prefetch=true,state_double_buffer=true``: the fields that differ from the source kernel."""
    from cgdr_des.kernel.variants import BASELINE as SOURCE

    missing = object()
    text = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in fields.items()
            if SOURCE.get(k, missing) != v]
    return ",".join(text) or "(source)"
