"""How far the probe shift of ``cgdr-des advise`` (cgdr_des/advise/costs.py) is from a full
recalibration at a profile end: for each one-at-a-time end of the named ranged fields, the largest
relative error of an item's duration (1 to 1 024 tokens, slot 0) between the shifted tables and the
tables calibrated at that end, beside how far the end moved the item costs at all.

    python -m analysis.advise_shift_check scenarios/long_tail.toml flag_cycles,scalar_alu_cycles [VARIANT]

docs/advise.md quotes its output. Each end costs one calibration (seconds per shape, then cached).
"""

from __future__ import annotations

import sys

import numpy as np

from cgdr_des.advise import costs as item
from cgdr_des.advise.settings import variant_fields_of
from cgdr_des.hw import load_profile
from cgdr_des.scenario import load_scenario
from cgdr_des.tail.calibration import costs_for
from cgdr_des.timing.evaluate import Evaluator
from cgdr_des.timing.space import one_at_a_time, select

LENGTHS = np.arange(1, 1025)


def shift_errors(sc, fields: list[str]) -> list[dict]:
    """One row per one-at-a-time end of ``fields``: the end, how far it moves the item costs, the shift's error."""
    ev = Evaluator(sc)
    s, k = sc.shape, sc.kernel
    nominal = costs_for(ev.profile, s.nk, s.nv, s.dk, s.dv, s.has_gamma, k.buffer_num, k.tiling_options())
    ub = ev.profile.ub_usable_bytes
    base = item.probe(sc, ev.profile, ub)
    rows = []
    for name, end, x in one_at_a_time(ev.profile, select(ev.profile, fields)):
        prof = load_profile(sc.profile_ref(), ev.overrides({name: x}) or None)
        full = costs_for(prof, s.nk, s.nv, s.dk, s.dv, s.has_gamma, k.buffer_num, k.tiling_options())
        shifted = item.shifted(nominal, base, item.probe(sc, prof, ub), prof.clock_mhz)
        truth = full.item_cycles(LENGTHS, -1)
        err = np.abs(shifted.item_cycles(LENGTHS, -1) - truth) / truth
        moved = np.abs(truth - nominal.item_cycles(LENGTHS, -1)) / truth
        rows.append({"field": name, "end": end, "value": x, "moved": float(moved.max()),
                     "error": float(err.max()), "at_tokens": int(LENGTHS[err.argmax()])})
    return rows


def main(argv: list[str]) -> None:
    sc = load_scenario(argv[0])
    if len(argv) > 2:
        sc = sc.with_changes({"kernel": variant_fields_of(argv[2])})
    for r in shift_errors(sc, argv[1].split(",")):
        print(f"{r['field']} = {r['value']} ({r['end']}): item costs moved up to {r['moved']:.2%}; "
              f"shift error at most {r['error']:.3%} (at {r['at_tokens']} tokens)")


if __name__ == "__main__":
    main(sys.argv[1:])
