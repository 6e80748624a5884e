"""``phase`` against ``instr`` on every kernel variant: the makespan, and what each variant saves.

A ranking of kernel changes at ``phase`` fidelity is only as good as its agreement with ``instr``,
which runs every record. For every named variant of ``kernel/variants.py`` (the loop picks up new
ones) and for all of them at once, on small launches: the makespan within 0.5 % of ``instr``, and
the variant's saving over the baseline (baseline makespan minus the variant's) within 5 % of the
saving at ``instr``, or within 100 cycles where 5 % is less. Why a floor: phase and instr differ by
a residual of a few hundred cycles on these launches (0.01-0.03 %), mostly the same with and without
a variant, but not all of it; a saving of 1 to 2 000 cycles (buffer_num2 here saves 1) is not
something either fidelity ranks by, and 100 cycles is 0.005 % of these makespans.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest

import cgdr_des
from cgdr_des.errors import InputError, KernelDiagnostic
from cgdr_des.hw import load_profile
from cgdr_des.kernel.tiling import compute_tiling
from cgdr_des.kernel.variants import BASELINE, VARIANTS, variant_fields
from cgdr_des.scenario import Scenario

MAKESPAN_TOL = 0.005      # relative
SAVING_TOL, SAVING_FLOOR = 0.05, 100


def all_at_once() -> dict:
    """Every variant's non-baseline fields together (keep_tiling as any variant sets it)."""
    fields = dict(BASELINE)
    for name in VARIANTS:
        fields.update({k: v for k, v in variant_fields(name).items() if v != BASELINE.get(k)})
    return fields


def makespan(case: tuple, fidelity: str, fields: dict) -> int:
    profile, overrides, d, lengths = case
    sc = Scenario.from_dict({"name": "v", "hardware": {"profile": profile, "overrides": overrides},
                             "shape": {"nk": len(lengths), "nv": len(lengths), "dk": d, "dv": d},
                             "workload": {"lengths": list(lengths)}, "kernel": fields,
                             "sim": {"fidelity": fidelity, "numerics": "off", "trace": False, "ops": False}})
    return int(cgdr_des.simulate(sc).summary["makespan_cycles"].iloc[0])


def same_kernel(case: tuple, fields: dict) -> tuple | None:
    """What the launch of ``fields`` at ``case`` runs, keep_tiling aside: where the variant's own vStep
    is the baseline's anyway (UB to spare), X and X_same are one kernel and one simulation. None when
    keep_tiling matters (a shortfall, which it reports) or the tiling is refused."""
    profile, overrides, d, lengths = case
    prof = load_profile(profile, overrides or None)
    n = len(lengths)
    try:
        tiling = compute_tiling(t=sum(lengths), hqk=n, dk=d, hv=n, dv=d, batch=n, ub_size=prof.ub_usable_bytes,
                                aiv_num=prof.aiv_num, **fields)
    except (InputError, KernelDiagnostic):
        return None
    return None if tiling.ub_shortfall_bytes else dataclasses.astuple(replace(tiling, keep_tiling=False))


def check_case(case: tuple) -> list[str]:
    """Every variant that fits UB at ``case`` (and all at once): makespans and savings at phase
    against instr; returns the variants checked. A variant whose launch is one already timed (see
    :func:`same_kernel`) takes its makespans rather than timing it again."""
    kernels = {name: variant_fields(name) for name in VARIANTS} | {"all at once": all_at_once()}
    spans, timed = {}, {}
    for name, fields in kernels.items():
        key = same_kernel(case, fields)
        if key is not None and key in timed:
            spans[name] = timed[key]
            continue
        try:
            spans[name] = {f: makespan(case, f, fields) for f in ("instr", "phase")}
        except (InputError, KernelDiagnostic):     # a _same variant that overflows UB (tested elsewhere)
            continue
        if key is not None:
            timed[key] = spans[name]
    base = spans["baseline"]
    for name, s in spans.items():
        assert abs(s["phase"] - s["instr"]) <= MAKESPAN_TOL * s["instr"], (case, name, s)
        save = {f: base[f] - s[f] for f in s}
        assert abs(save["phase"] - save["instr"]) <= max(SAVING_TOL * abs(save["instr"]), SAVING_FLOOR), \
            (case, name, save)
    return list(spans)


@pytest.mark.slow
def test_every_variant_agrees_with_instr_on_three_chunks_next_to_a_short_item():
    """dk = dv = 64: a 130-token item (the c == 0 chunk, a middle chunk, the last one) next to an
    8-token one (a sole chunk, first and last at once), two heads each, so several cores contend:
    every variant fits UB here. (This case was (130, 64) next to a separate test of one 70-token item:
    the full c == 0 chunk is the 130-token item's first, the short sole chunk the 8-token item; the
    two cost ~2.5 times this one's instr CPU for no step this one lacks.)"""
    checked = check_case(("atlas-300i-duo", {}, 64, (130, 8)))
    hosted = {name for name in VARIANTS if not variant_fields(name)["keep_tiling"]}   # always fit UB
    assert hosted <= set(checked) and len(checked) >= len(VARIANTS) - 1


@pytest.mark.slow
@pytest.mark.parametrize("case", [
    # dk = 128: host-shrunk vStep (V-tiles split) and the _same variants overflowing UB, next to a sole
    # short item; 70 tokens give the c == 0 and the last chunk; the middle chunk (c > 0, not last) is the
    # dk = 64 case's 130 tokens (130 here cost ~60 % more CPU for the same steps)
    ("atlas-300i-duo", {}, 128, (8, 70)),
    # the 910B profiles diagnose the source kernel's back-to-back SetFlag<S_V> at both fidelities;
    # "stall" is their documented alternative. 70 tokens: the c == 0 and the last chunk at under half of
    # 130's instr CPU; a middle chunk times the same steps as on the 300I (the dk = 64 case above)
    ("atlas-a2-910b2", {"flag_double_set": "stall"}, 64, (70,)),
])
def test_every_variant_agrees_with_instr(case):
    assert "baseline" in check_case(case)
