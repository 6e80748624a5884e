"""Calibration (the tail surrogate's item costs) per shipped profile, cold and from the on-disk cache;
and, with ``--before REV``, the split-V-tile calibration and the qwen3_next_gqa_a2 run side by side
with another revision of the package.

Table 1. For every profile in cgdr_des/hw/profiles/ the benchmark shape (Nk = Nv = 16, dk = dv = 128;
on the 48-core A2 profiles its V-tiles are split across cores), and the split-V-tile shape (16, 32,
128, 128) on atlas-a2-910b2 (goal: <= 20 s CPU cold). ``cold``: an empty cache directory, nothing in
the process's own cache; ``cached``: the same calibration in a fresh process state (the in-process
cache cleared), read from the directory the cold run filled. CPU time (process_time: the machine is
shared) and wall time.

Table 2 (``--before REV``). ``git archive REV`` of the package is unpacked into a temporary directory
and the same jobs run in child processes on both trees, one after the other in this run (the
revision's first, so the current tree's run sees the machine no quieter): the split calibration with
the cache off, and ``simulate`` of scenarios/qwen3_next_gqa_a2.toml. Each child reports its own CPU
time and wall time and a digest of its result; the digests must be equal (the speed-up changes no
number).
Table 3 (``--before REV --paired N``). The speed of the shared VM drifts by up to 2x within minutes, so
one run per tree can read either way. Here a split launch (atlas-a2-910b2, (2, 4, 128, 128), five
sequences, ``phase``, timing only) is simulated by two live child processes, one per tree, taking
turns N times; the median of the N per-round CPU ratios is printed, and every makespan must agree.
``--job calibration`` pairs the item-cost calibration of the quick report's shape instead (its tables
must agree); ``--job long`` the shipped long_t2048 at ``phase`` fidelity, timing only (one 2048-token
sequence, 16 heads on the 300I Duo: 35,776 DataCopy calls, what the machine's DMA path costs);
``--job surrogate`` a tail study's surrogate alone (the report grid's heaviest point: atlas-a2-910b2,
(32, 32, 128, 128), split V-tiles, 500 batches of 64 lognormal sequences, every policy, no checks; each
child calibrates once before the rounds), the sum of its makespans.
Usage: python analysis/benchmarks/bench_calibration.py [--before REV [--paired N [--job JOB]]]
                                                          [--only-split] [PROFILE ...]
       (JOB: split, calibration, long or surrogate)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = (16, 16, 128, 128)
SPLIT = (16, 32, 128, 128)
GOAL_CPU_SECONDS = 20.0

#: A child's job: calibrate the split shape (cache off) or simulate the GQA scenario; prints JSON.
CHILD = r"""
import hashlib, json, sys, time
job = sys.argv[1]
import cgdr_des
c0, w0 = time.process_time(), time.perf_counter()
if job == "calibrate":
    from cgdr_des import cost_cache
    from cgdr_des.hw import load_profile
    from cgdr_des.item_costs import measure_item_costs
    from cgdr_des.simulation import run_launch
    prof = load_profile("atlas-a2-910b2", {"flag_double_set": "counter"})
    with cost_cache.settings(enabled=False):
        costs = measure_item_costs(prof, 16, 32, 128, 128, True, 1, run_launch)
    digest = json.dumps(cost_cache.canonical({k: getattr(costs, k) for k in costs.__dataclass_fields__}),
                        sort_keys=True)
else:
    res = cgdr_des.simulate(cgdr_des.load_scenario(sys.argv[2]))
    cores = res.cores.sort_values("core")
    digest = json.dumps([int(res.summary["makespan_cycles"].iloc[0]), cores["finish"].tolist(),
                         res.items["end"].tolist()])
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
print(json.dumps({"cpu": cpu, "wall": wall, "digest": hashlib.sha256(digest.encode()).hexdigest()[:16],
                  "package": cgdr_des.__file__}))
"""


def overrides(name: str) -> dict | None:
    """The 910B profiles need the softsync-flag reading to run this kernel (docs/tail.md)."""
    return {"flag_double_set": "counter"} if name.startswith("atlas-a2") else None


def timed(prof, shape) -> tuple[float, float, object]:
    """(CPU s, wall s, costs) of one calibration with the in-process cache cleared."""
    from cgdr_des.item_costs import measure_item_costs
    from cgdr_des.simulation import run_launch

    measure_item_costs.cache_clear()
    c0, w0 = time.process_time(), time.perf_counter()
    costs = measure_item_costs(prof, *shape, True, 1, run_launch)
    return time.process_time() - c0, time.perf_counter() - w0, costs


def per_profile(names: list[str], only_split: bool) -> None:
    """Table 1: cold and cached calibration per profile (and the split shape on atlas-a2-910b2)."""
    from cgdr_des import cost_cache
    from cgdr_des.hw import load_profile

    cases = [] if only_split else [(n, BENCH) for n in names]
    if "atlas-a2-910b2" in names:
        cases.append(("atlas-a2-910b2", SPLIT))
    print(f"{'profile':<16} {'(nk, nv, dk, dv)':<20} {'split':>5} {'cold cpu s':>10} {'cold wall s':>11} "
          f"{'cached cpu s':>12} {'cached wall s':>13} {'cold/cached cpu':>15}")
    with tempfile.TemporaryDirectory() as tmp, cost_cache.settings(tmp):
        for name, shape in cases:
            prof = load_profile(name, overrides(name))
            cold_cpu, cold_wall, costs = timed(prof, shape)
            hit_cpu, hit_wall, again = timed(prof, shape)
            assert (again.sole == costs.sole).all() and again.per_batch == costs.per_batch
            goal = f"  (goal <= {GOAL_CPU_SECONDS:.0f} s cpu: {'met' if cold_cpu <= GOAL_CPU_SECONDS else 'MISSED'})" \
                if costs.split or prof.aiv_num > 8 else ""
            ratio = cold_cpu / max(hit_cpu, 1e-6)
            print(f"{name:<16} {str(shape):<20} {'yes' if costs.split else 'no':>5} {cold_cpu:>10.1f} "
                  f"{cold_wall:>11.1f} {hit_cpu:>12.4f} {hit_wall:>13.4f} {ratio:>14.0f}x{goal}", flush=True)
    print(f"(cores {os.cpu_count()}, one process; cached = lru cleared, entry read from disk)")


def export(rev: str, into: Path) -> str:
    """Unpack ``rev``'s cgdr_des package into ``into``; the revision's short hash."""
    short = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], check=True,
                           capture_output=True, text=True).stdout.strip()
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "cgdr_des"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(tar)) as tf:
        tf.extractall(into, filter="data")
    return short


def child(tree: Path, job: str) -> dict:
    """Run one job in a fresh interpreter importing the package from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "CGDR_DES_CACHE": "off"}
    scenario = str(ROOT / "scenarios" / "qwen3_next_gqa_a2.toml")
    out = subprocess.run([sys.executable, "-c", CHILD, job, scenario], env=env, check=True, capture_output=True,
                         text=True, cwd=tempfile.gettempdir()).stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert Path(got["package"]).resolve().is_relative_to(tree.resolve()), got["package"]
    return got


def side_by_side(rev: str) -> None:
    """Table 2: the split calibration and the GQA run on ``rev`` and on this tree."""
    with tempfile.TemporaryDirectory() as tmp:
        short = export(rev, Path(tmp))
        here = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "cgdr_des"], capture_output=True,
                               text=True).stdout.strip()
        label = f"this tree ({here}{'+edits' if dirty else ''})"
        print(f"\n{'job':<34} {'tree':<26} {'cpu s':>7} {'wall s':>7} {'result digest':>17}")
        for job, name in (("calibrate", "calibrate (16, 32, 128, 128) a2"), ("run", "run qwen3_next_gqa_a2")):
            old, new = child(Path(tmp), job), child(ROOT, job)
            for tree, r in ((f"before ({short})", old), (label, new)):
                print(f"{name:<34} {tree:<26} {r['cpu']:>7.1f} {r['wall']:>7.1f} {r['digest']:>17}", flush=True)
            same = "identical results" if old["digest"] == new["digest"] else "RESULTS DIFFER"
            met = "met" if new["cpu"] <= GOAL_CPU_SECONDS else "MISSED"
            goal = f"; goal <= {GOAL_CPU_SECONDS:.0f} s cpu: {met}" if job == "calibrate" else ""
            print(f"{'':<34} before/after: cpu {old['cpu'] / new['cpu']:.2f}x, wall {old['wall'] / new['wall']:.2f}x; "
                  f"{same}{goal}", flush=True)
            assert old["digest"] == new["digest"]


#: Table 3's children: each runs its job once per line read and prints its CPU seconds and a number
#: both trees must agree on. ``split``: the split launch, its makespan; ``calibration``: the item-cost
#: calibration of the quick report's shape ((8, 8, 64, 64) on the 300I Duo, what the quick report and
#: many tests pay for each variant), a digest of its tables; ``long``: long_t2048 timed at phase fidelity, its
#: makespan (the scenario file of this tree, for both); ``surrogate``: a split-tile tail study without checks, the
#: sum of its batches' makespans over every policy.
PAIRED_CHILDREN = {"split": r"""
import json, sys, time
import cgdr_des
from cgdr_des.scenario import Scenario
sc = Scenario.from_dict({"name": "paired", "hardware": {"profile": "atlas-a2-910b2",
                         "overrides": {"flag_double_set": "counter"}},
                         "shape": {"nk": 2, "nv": 4, "dk": 128, "dv": 128},
                         "workload": {"lengths": [700, 300, 129, 64, 1000]},
                         "sim": {"numerics": "off", "trace": False, "fidelity": "phase"}})
for _ in sys.stdin:
    c0 = time.process_time()
    res = cgdr_des.simulate(sc)
    print(json.dumps([time.process_time() - c0, int(res.summary["makespan_cycles"].iloc[0])]), flush=True)
""", "calibration": r"""
import hashlib, json, sys, time
from cgdr_des.hw import load_profile
from cgdr_des.item_costs import _calibrate
from cgdr_des.simulation import run_launch
prof = load_profile("atlas-300i-duo")
for _ in sys.stdin:
    c0 = time.process_time()
    costs = _calibrate(prof, 8, 8, 64, 64, True, 1, run_launch)
    digest = hashlib.sha256(json.dumps(costs.to_json(), sort_keys=True).encode()).hexdigest()[:16]
    print(json.dumps([time.process_time() - c0, digest]), flush=True)
""", "long": r"""
import json, os, sys, time
import cgdr_des
from cgdr_des.scenario import Scenario
data = cgdr_des.load_scenario(os.environ["BENCH_SCENARIO"]).model_dump(mode="json", exclude_none=True)
sc = Scenario.from_dict({**data, "sim": {**data["sim"], "numerics": "off", "trace": False}})
for _ in sys.stdin:
    c0 = time.process_time()
    res = cgdr_des.simulate(sc)
    print(json.dumps([time.process_time() - c0, int(res.summary["makespan_cycles"].iloc[0])]), flush=True)
""", "surrogate": r"""
import json, sys, time
from cgdr_des.scenario import Scenario
from cgdr_des.tail import run_study
law = {"kind": "lognormal", "median": 1024, "sigma": 0.5, "min": 1, "max": 8192}
sc = Scenario.from_dict({"name": "paired", "hardware": {"profile": "atlas-a2-910b2",
                         "overrides": {"flag_double_set": "counter"}},
                         "shape": {"nk": 32, "nv": 32, "dk": 128, "dv": 128},
                         "workload": {"batch": 64, "distribution": law},
                         "sim": {"numerics": "off", "trace": False}, "study": {"check_batches": 0}})
run_study(sc, batches=1)      # the calibration, once, before the rounds
for _ in sys.stdin:
    c0 = time.process_time()
    study = run_study(sc, batches=500)
    print(json.dumps([time.process_time() - c0, int(study.batches["makespan_cycles"].sum())]), flush=True)
"""}


def paired(rev: str, rounds: int, job: str = "split") -> None:
    """Table 3: ``job`` (:data:`PAIRED_CHILDREN`) on ``rev`` and on this tree, in turns, ``rounds`` times."""
    with tempfile.TemporaryDirectory() as tmp:
        short = export(rev, Path(tmp))
        procs = [subprocess.Popen([sys.executable, "-c", PAIRED_CHILDREN[job]], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, cwd=tempfile.gettempdir(),
                                  env={**os.environ, "PYTHONPATH": str(tree), "CGDR_DES_CACHE": "off",
                                       "BENCH_SCENARIO": str(ROOT / "scenarios" / "long_t2048.toml")})
                 for tree in (Path(tmp), ROOT)]
        cpu: list[list[float]] = [[], []]
        for _ in range(rounds):
            spans = set()
            for k, proc in enumerate(procs):
                proc.stdin.write("go\n")
                proc.stdin.flush()
                seconds, makespan = json.loads(proc.stdout.readline())
                cpu[k].append(seconds)
                spans.add(makespan)
            assert len(spans) == 1, spans
        for proc in procs:
            proc.stdin.close()
            proc.wait()
    ratio = statistics.median(a / b for a, b in zip(*cpu, strict=True))
    agreed, what = spans.pop(), "makespan sums" if job == "surrogate" else "makespans"
    same = "item costs identical" if job == "calibration" else f"{what} identical ({agreed:,} cycles)"
    print(f"\n{job}, {rounds} rounds in turns: before ({short}) median {statistics.median(cpu[0]):.2f} s CPU, "
          f"this tree {statistics.median(cpu[1]):.2f} s; median of the per-round ratios {ratio:.2f}x; {same}")


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profiles", nargs="*", help="shipped profiles for table 1 (default: all)")
    ap.add_argument("--before", metavar="REV", help="also time the split calibration and the GQA run on REV")
    ap.add_argument("--paired", type=int, metavar="N", help="with --before: table 3 only, N rounds in turns")
    ap.add_argument("--job", choices=sorted(PAIRED_CHILDREN), default="split",
                    help="with --paired: what both trees run (default: the split launch)")
    ap.add_argument("--only-split", action="store_true", help="table 1: the split shape only")
    ap.add_argument("--no-table", action="store_true", help="skip table 1")
    args = ap.parse_args(argv)
    if args.paired:
        if not args.before:
            ap.error("--paired needs --before REV")
        paired(args.before, args.paired, args.job)
        return
    if not args.no_table:
        from cgdr_des.hw import list_profiles

        per_profile(args.profiles or list_profiles(), args.only_split)
    if args.before:
        side_by_side(args.before)


if __name__ == "__main__":
    main(sys.argv[1:])
