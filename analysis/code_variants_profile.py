"""Per-phase cost of the code-change variants (docs/kernel.md §5.y): one head, dk = dv = 128, on
atlas-300i-duo, phase fidelity, numerics off; an 8-token and a 64-token item. For every variant, the
makespan and, per phase, the scalar unit's time: the ops frame's rows on pipe S summed over the phase
(the scalar unit issues everything and is this kernel's critical path; at phase fidelity a compute run
is one Macro row on S and again on V, so summing every pipe would count it twice). ``--pipes all``
sums every pipe instead.

    python analysis/code_variants_profile.py [--tokens 8 64] [--fidelity phase|instr] [--pipes S|all]
"""

from __future__ import annotations

import argparse

import pandas as pd

import cgdr_des
from cgdr_des.kernel.variants import variant_fields
from cgdr_des.scenario import Scenario

NAMES = ("baseline", "sub", "state_rows_2d", "state_load_dma", "query_rows_ub", "state_store_dma", "attn_dots_row",
         "code_all")


def profile(tokens: int, fidelity: str = "phase", pipes: str = "S") -> pd.DataFrame:
    """Rows (variant, phase): pipe cycles summed per phase (pipe S, or every pipe with ``pipes`` "all"),
    plus a ``makespan`` row per variant."""
    rows = []
    for name in NAMES:
        sc = Scenario.from_dict({"name": f"p{tokens}", "shape": {"nk": 1, "nv": 1, "dk": 128, "dv": 128},
                                 "workload": {"lengths": [tokens]}, "kernel": variant_fields(name),
                                 "sim": {"fidelity": fidelity, "numerics": "off", "trace": False}})
        res = cgdr_des.simulate(sc)
        ops = res.ops if pipes == "all" else res.ops[res.ops["pipe"] == pipes]
        per = (ops["end"] - ops["start"]).groupby(ops["phase"]).sum()
        rows += [(name, phase, int(c)) for phase, c in per.items()]
        rows.append((name, "makespan", int(res.summary["makespan_cycles"].iloc[0])))
    return pd.DataFrame(rows, columns=["variant", "phase", "cycles"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[8, 64])
    ap.add_argument("--fidelity", default="phase", choices=["phase", "instr"])
    ap.add_argument("--pipes", default="S", choices=["S", "all"])
    a = ap.parse_args()
    pd.set_option("display.width", 200)
    for tokens in a.tokens:
        table = profile(tokens, a.fidelity, a.pipes).pivot(index="phase", columns="variant", values="cycles")
        table = table[list(NAMES)].fillna(0).astype("int64")
        print(f"--- {tokens} tokens, dk = dv = 128, atlas-300i-duo, {a.fidelity} fidelity "
              f"(cycles per phase on pipe {a.pipes})")
        print(table.to_string())


if __name__ == "__main__":
    main()
