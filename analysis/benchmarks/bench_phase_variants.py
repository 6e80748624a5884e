"""Phase against instr on every kernel variant, with and without the busy-V timing of compute runs.

Part 1 prints one row per (profile, shape, lengths, variant): makespan at ``instr``, at ``phase``
with the V-idle model of earlier versions (``PhaseCompiler.late_v = False``: every compute run timed
as if V were idle when it began, DataCopy runs merged whole) and at ``phase`` as it is, the relative
error of each, and the variant's saving over the baseline (baseline makespan minus the variant's) at
each. Part 2 measures what the busy-V timing costs: CPU time of representative, long_t1024 and
long_tail (numerics as shipped) at phase with the V-idle model, with the late scans alone (DataCopy
runs merged whole) and as shipped, alternated; the ratio of the medians, and how much of each run
the phase compiler took (the late scans are compile time; the DataCopy singles cost in the replay).

Run: PYTHONPATH=. python analysis/benchmarks/bench_phase_variants.py [--quick] [--cpu-only]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import cgdr_des
from cgdr_des.errors import InputError, KernelDiagnostic
from cgdr_des.hw import phase
from cgdr_des.hw.phase import PhaseCompiler
from cgdr_des.kernel.variants import VARIANTS, variant_fields
from cgdr_des.scenario import Scenario

#: (profile, dk = dv, heads, lengths). The 910B profiles report the source kernel's back-to-back
#: SetFlag<S_V> as a diagnostic (flag_double_set = "diagnostic", at both fidelities); the runs here
#: take their documented alternative "stall", which the timer models too.
CASES = [
    ("atlas-300i-duo", 64, 1, (130,)),
    ("atlas-300i-duo", 64, 2, (130, 64)),
    ("atlas-300i-duo", 128, 1, (70,)),
    ("atlas-300i-duo", 128, 2, (8, 130)),
    ("atlas-a2-910b2", 64, 1, (130,)),
    ("atlas-a2-910b2", 128, 2, (70, 8)),
]
OVERRIDES = {"atlas-a2-910b2": {"flag_double_set": "stall"}}
COLUMNS = ("instr", "idle_v", "phase")
ROOT = Path(__file__).resolve().parents[2]


def makespan(profile: str, d: int, heads: int, lengths, column: str, fields: dict) -> int:
    """The makespan of one small launch; ``column`` is ``instr``, ``idle_v`` or ``phase``."""
    hardware = {"profile": profile, "overrides": OVERRIDES.get(profile, {})}
    sc = Scenario.from_dict({"name": "v", "hardware": hardware,
                             "shape": {"nk": heads, "nv": heads, "dk": d, "dv": d},
                             "workload": {"lengths": list(lengths)}, "kernel": fields,
                             "sim": {"fidelity": "instr" if column == "instr" else "phase", "numerics": "off"}})
    PhaseCompiler.late_v = column != "idle_v"
    try:
        return int(cgdr_des.simulate(sc).summary["makespan_cycles"].iloc[0])
    finally:
        PhaseCompiler.late_v = True


def table(cases) -> list[dict]:
    """One row per case and variant that fits UB (a ``_same`` variant may not)."""
    rows = []
    for profile, d, heads, lengths in cases:
        spans = {}
        for name in VARIANTS:
            try:
                spans[name] = {c: makespan(profile, d, heads, lengths, c, variant_fields(name)) for c in COLUMNS}
            except (InputError, KernelDiagnostic):      # a _same variant that overflows UB here
                continue
        base = spans["baseline"]
        for name, s in spans.items():
            row = {"case": f"{profile} d={d} {lengths}", "variant": name, **s}
            for c in COLUMNS:
                row["save_" + c] = base[c] - s[c]
            rows.append(row)
    return rows


def show(rows: list[dict]) -> None:
    print(f"{'case':34} {'variant':17} {'instr':>9} {'err% idle-V':>11} {'err% phase':>10} "
          f"{'save@instr':>10} {'save@idle-V':>11} {'save@phase':>10}")
    for r in rows:
        err = {c: 100 * (r[c] - r["instr"]) / r["instr"] for c in COLUMNS[1:]}
        print(f"{r['case']:34} {r['variant']:17} {r['instr']:9} {err['idle_v']:11.3f} {err['phase']:10.3f} "
              f"{r['save_instr']:10} {r['save_idle_v']:11} {r['save_phase']:10}")
    for c in COLUMNS[1:]:
        worst = max(abs(r[c] - r["instr"]) / r["instr"] for r in rows)
        print(f"worst makespan error, {c}: {100 * worst:.3f} %")


#: the scenarios part 2 times (numerics as shipped)
CPU_SCENARIOS = ("representative", "long_t1024", "long_tail")
#: part 2's settings: the V-idle model; busy-V timing with DataCopy runs merged whole (what the
#: late scans alone cost: cycles differ, CPU only); busy-V timing as shipped
SETTINGS = ("idle_v", "late_scans", "phase")


def cpu_ratio(repeats: int = 3, names=CPU_SCENARIOS) -> None:
    """CPU seconds of each scenario at phase under each of SETTINGS, alternated, medians; and of
    that the phase compiler's share (PhaseCompiler.compile), to tell the late scans' cost (compile)
    from the replay's (the DataCopy singles and the events they bring)."""
    merge = phase.merge_dma_runs
    compile_ = PhaseCompiler.compile
    in_compile = [0.0]

    def timed_compile(self, *args, **kwargs):
        t = time.process_time()
        try:
            return compile_(self, *args, **kwargs)
        finally:
            in_compile[0] += time.process_time() - t

    PhaseCompiler.compile = timed_compile
    try:
        for name in names:
            sc = cgdr_des.load_scenario(ROOT / "scenarios" / f"{name}.toml")
            run: dict[str, list[float]] = {s: [] for s in SETTINGS}
            comp: dict[str, list[float]] = {s: [] for s in SETTINGS}
            for _ in range(repeats):
                for setting in SETTINGS:
                    PhaseCompiler.late_v = setting != "idle_v"
                    phase.merge_dma_runs = merge if setting == "phase" else (lambda out, singles: merge(out, 0))
                    in_compile[0] = 0.0
                    t = time.process_time()
                    cgdr_des.simulate(sc)
                    run[setting].append(time.process_time() - t)
                    comp[setting].append(in_compile[0])
            r = {s: statistics.median(v) for s, v in run.items()}
            c = {s: statistics.median(v) for s, v in comp.items()}
            print(f"{name}.toml at phase, CPU s (compile): V-idle model {r['idle_v']:.3f} ({c['idle_v']:.3f}), "
                  f"late scans only {r['late_scans']:.3f} ({c['late_scans']:.3f}), busy-V timing "
                  f"{r['phase']:.3f} ({c['phase']:.3f}); ratio {r['phase'] / r['idle_v']:.2f} "
                  f"(median of {repeats})")
    finally:
        PhaseCompiler.late_v = True
        PhaseCompiler.compile = compile_
        phase.merge_dma_runs = merge


def main() -> None:
    if "--cpu-only" not in sys.argv:
        t = time.process_time()
        show(table(CASES[:2] if "--quick" in sys.argv else CASES))
        print(f"table: {time.process_time() - t:.1f} s CPU")
    cpu_ratio()


if __name__ == "__main__":
    main()
