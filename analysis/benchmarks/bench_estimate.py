"""The printed wall-time and peak-memory estimate (cgdr_des/estimate.py) against ``cgdr-des run``.

Default: for every shipped scenario (scenarios/*.toml) run ``cgdr-des run SCENARIO --out TMP`` in a
child process, take its wall time, CPU time and peak RSS (a wrapper process's RUSAGE_CHILDREN: that
run alone), and print them beside the estimate ``run`` printed, with estimate / measured for each
(goal: within a factor of 2 both ways, for time and memory). The estimate's time is CPU seconds; its
wall time is that divided by the share of a core the process gets (``estimate.cpu_share``, measured
just before each run as ``validate`` and ``run`` measure it), which is what ``run`` prints on a busy
machine. Both ratios are printed: estimate / measured wall time, and estimated CPU seconds /
measured CPU time. A scenario with a ``[study]`` (tail_lognormal) is measured as ``run`` runs it,
one batch: that is what the estimate covers (``cgdr-des tail`` is not estimated, and the estimate
line says so).

``--calibrate``: measure the per-unit costs that estimate.py keeps as constants, on synthetic
launches that are none of the shipped scenarios (so the table above checks the constants, it does
not fit them): start-up and plots from a 1-token ``cgdr-des run`` with and without plots (and what drawing a
larger 8-core run's plots adds over a smaller one's); the compressed outputs per byte; per chunk
item at ``phase`` fidelity, unsplit and with V-tiles split over cores, per instruction record at
``instr``, per ops row written to Parquet and per row kept in the Chrome trace, each as the
difference between two sizes of one shape run in two child processes (fixed costs cancel), and
memory likewise from the children's peak RSS (before and after the trace is built). Times are CPU
times (user + system), which other work on the machine changes far less than wall times. It prints
the constants to paste into estimate.py.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT

SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))
MIB = 2**20


def timed_child(cmd: list[str], cwd: Path) -> dict:
    """{"wall", "cpu", "rss"} of ``cmd`` (seconds, seconds, bytes) run through this script's
    ``--measure`` wrapper, so that the rusage is that one process's alone."""
    proc = subprocess.run([sys.executable, __file__, "--measure", "--", *cmd], cwd=cwd, capture_output=True,
                          text=True)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(cmd: list[str]) -> None:
    """``--measure -- CMD``: run CMD, then print its wall time, CPU time (user + system) and peak RSS
    (RUSAGE_CHILDREN of this wrapper, whose only child it is)."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        sys.stderr.write(proc.stderr)
        sys.exit(proc.returncode)
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"wall": wall, "cpu": use.ru_utime + use.ru_stime, "rss": use.ru_maxrss * 1024}))


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "cgdr_des", *args]


def estimate_of(path: Path):
    from cgdr_des.estimate import scenario_estimate
    from cgdr_des.scenario import load_scenario, validate_tiling

    sc = load_scenario(path)
    return scenario_estimate(sc, validate_tiling(sc))


def table() -> None:
    """Every shipped scenario: estimate, measured and their ratio, for wall time and peak memory."""
    from cgdr_des.estimate import cpu_share

    print(f"{'scenario':20s} {'est cpu':>7s} {'share':>5s} {'est wall':>8s} {'wall':>6s} {'cpu':>6s} "
          f"{'est/wall':>8s} {'est/cpu':>7s}   {'est MiB':>7s} {'peak MiB':>8s} {'ratio':>5s}")
    ratios: dict[str, list[float]] = {"wall": [], "cpu": [], "memory": []}
    with tempfile.TemporaryDirectory(prefix="bench-estimate-") as tmp:
        for path in SCENARIOS:
            est = estimate_of(path)
            share = cpu_share()  # as validate and run measure it, just before the run
            wall_est = est.seconds / share
            got = timed_child(cli("run", str(path), "--out", str(Path(tmp) / path.stem)), ROOT)
            r = {"wall": wall_est / got["wall"], "cpu": est.seconds / got["cpu"],
                 "memory": est.memory_bytes / got["rss"]}
            for key, value in r.items():
                ratios[key].append(value)
            print(f"{path.stem:20s} {est.seconds:7.1f} {share:5.2f} {wall_est:8.1f} {got['wall']:6.1f} "
                  f"{got['cpu']:6.1f} {r['wall']:8.2f} {r['cpu']:7.2f}   {est.memory_bytes / MIB:7.0f} "
                  f"{got['rss'] / MIB:8.0f} {r['memory']:5.2f}", flush=True)
    for key, values in ratios.items():
        print(f"estimate / measured {key}: {min(values):.2f} to {max(values):.2f} (goal: 0.5 to 2)")


# ---------------------------------------------------------------- calibration

TINY = {"name": "tiny", "shape": {"nk": 1, "nv": 1, "dk": 64, "dv": 64}, "workload": {"lengths": [1]},
        "sim": {"fidelity": "phase", "numerics": "off"}}
#: two sizes of each shape; mixed lengths, as real batches have (partial chunks compile their own phases)
PAIRS = {
    "phase": ({"nk": 8, "nv": 8, "dk": 128, "dv": 128}, [70, 200], [70, 200, 900, 1500, 2100], "atlas-300i-duo",
              "phase", {}),
    "split": ({"nk": 2, "nv": 4, "dk": 128, "dv": 128}, [70, 100], [70, 100, 300, 420], "atlas-a2-910b2", "phase",
              {"flag_double_set": "counter"}),
    "instr": ({"nk": 1, "nv": 2, "dk": 64, "dv": 64}, [64], [64, 150], "atlas-300i-duo", "instr", {}),
}


def toml_of(doc: dict) -> str:
    lines = [f'name = "{doc["name"]}"']
    for section, fields in doc.items():
        if section == "name":
            continue
        lines.append(f"[{section}]")
        for key, value in fields.items():
            if isinstance(value, dict):
                continue
            lines.append(f"{key} = {json.dumps(value)}")
        for key, value in fields.items():
            if isinstance(value, dict):
                lines.append(f"[{section}.{key}]")
                lines += [f"{k} = {json.dumps(v)}" for k, v in value.items()]
    return "\n".join(lines) + "\n"


def parts_child(doc: dict) -> None:
    """``--parts JSON``: simulate and write one scenario in this process, printing each part's time."""
    t0 = time.process_time()
    import numpy as np

    from cgdr_des.estimate import scenario_estimate
    from cgdr_des.results import export
    from cgdr_des.results.plots import plot_run
    from cgdr_des.results.trace import trace_from_result, write_trace
    from cgdr_des.scenario import Scenario, validate_tiling
    from cgdr_des.simulation import simulate

    t_import = time.process_time() - t0
    sc = Scenario.from_dict(doc)
    est = scenario_estimate(sc, validate_tiling(sc))
    t = time.process_time()
    res = simulate(sc)
    t_sim = time.process_time() - t
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        t = time.process_time()
        for name in export.FRAMES:
            getattr(res, name).to_parquet(out / f"{name}.parquet", index=False)
        t_parquet = time.process_time() - t
        rss_sim = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # the peak before the trace
        arrays = {k: v for k, v in (res.outputs or {}).items() if v is not None}
        t = time.process_time()
        np.savez_compressed(out / "outputs.npz", **arrays)
        t_npz = time.process_time() - t
        t = time.process_time()
        trace = trace_from_result(res)
        write_trace(trace, out / "trace.json")
        t_trace = time.process_time() - t
        t = time.process_time()
        plot_run(res, out)
        t_plots = time.process_time() - t
    print(json.dumps({"import": t_import, "sim": t_sim, "parquet": t_parquet, "trace": t_trace, "plots": t_plots,
                      "npz": t_npz, "out_bytes": sum(int(v.nbytes) for v in arrays.values()),
                      "rows": len(res.ops), "events": len(trace["traceEvents"]), "items": est.items,
                      "kept": min(len(res.ops), sc.sim.max_trace_events), "records": est.rows,
                      "rss_sim": rss_sim, "tensors": est.tensor_bytes,
                      "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


def parts(doc: dict) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--parts", json.dumps(doc)], capture_output=True, text=True,
                          cwd=ROOT)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def slope(a: dict, b: dict, y: str, x: str) -> float:
    return (b[y] - a[y]) / (b[x] - a[x])


def calibrate(repeat: int) -> None:
    """Measure and print the constants of estimate.py (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="bench-estimate-") as tmp:
        runs = {}
        for plots in (False, True):
            doc = {**TINY, "output": {"plots": plots}, "sim": {**TINY["sim"], "trace": False}}
            path = Path(tmp) / f"tiny_{plots}.toml"
            path.write_text(toml_of(doc))
            runs[plots] = [timed_child(cli("run", str(path), "--out", str(Path(tmp) / f"o{plots}{i}")), ROOT)
                           for i in range(repeat)]
    start, plotted = (statistics.median(r["cpu"] for r in runs[p]) for p in (False, True))
    base = max(r["rss"] for r in runs[True])
    print(f"start-up: a 1-token run without plots or trace {start:.2f} s CPU; with plots {plotted:.2f} s CPU; "
          f"peak RSS with plots {base / MIB:.0f} MiB")
    consts = {"START_SECONDS": start, "BASE_BYTES": base}
    got = {}
    for kind, (shape, small, big, profile, fidelity, overrides) in PAIRS.items():
        pair = []
        for lengths in (small, big):
            doc = {"name": f"cal_{kind}", "hardware": {"profile": profile, "overrides": overrides}, "shape": shape,
                   "workload": {"lengths": lengths}, "sim": {"fidelity": fidelity, "numerics": "kernel"}}
            runs = [parts(doc) for _ in range(repeat)]
            # the median, not the best: a user's run is one run on the machine as it is
            best = {k: statistics.median(r[k] for r in runs) if isinstance(runs[0][k], float) else runs[0][k]
                    for k in runs[0]}
            best.update({k: max(r[k] for r in runs) for k in ("rss", "rss_sim")})
            best["sim_rss"] = best["rss_sim"] - best["tensors"]  # less the launch's arrays, counted apart
            pair.append(best)
        got[kind] = pair
        print(f"{kind} (CPU s): " + "; ".join(
            f"{p['items']} items, {p['rows']} rows, sim {p['sim']:.2f} s, parquet {p['parquet']:.2f} s, trace "
            f"{p['trace']:.2f} s ({p['events']} events), peak {p['rss_sim'] / MIB:.0f} MiB before the trace "
            f"({p['tensors'] / MIB:.0f} MiB of it the arrays), "
            f"{p['rss'] / MIB:.0f} MiB after" for p in pair))
    ph, sp, ins = got["phase"], got["split"], got["instr"]
    consts.update({
        # loading matplotlib and drawing a small run's plots (the 1-core run), then what a Gantt at its
        # cap of ops adds (the larger phase run's drawing less the smaller's: both 8 cores); adding the
        # larger run's whole drawing counted the drawing of a run's figures twice (small runs came out
        # ~1 s high)
        "PLOT_SECONDS": plotted - start + ph[1]["plots"] - ph[0]["plots"],
        "OUTPUT_SECONDS_PER_BYTE": slope(*ph, "npz", "out_bytes"),
        "PHASE_SECONDS_PER_ITEM": slope(*ph, "sim", "items"),
        "SPLIT_SECONDS_PER_ITEM": slope(*sp, "sim", "items"),
        "INSTR_SECONDS_PER_RECORD": slope(*ins, "sim", "records"),
        "PHASE_ROWS_PER_ITEM": slope(*ph, "rows", "items"),
        "WRITE_SECONDS_PER_ROW": slope(*ins, "parquet", "rows"),   # the most rows
        "TRACE_SECONDS_PER_ROW": slope(*ph, "trace", "kept"),      # every row kept in the trace
        "PHASE_BYTES_PER_ITEM": slope(*ph, "sim_rss", "items"),
        "INSTR_BYTES_PER_ROW": slope(*ins, "sim_rss", "rows"),
        # the small instr run's peak is its frames and trace (its machine memory is freed before)
        "TRACE_BYTES_PER_ROW": (ins[0]["rss"] - base - ins[0]["tensors"]) / ins[0]["kept"],
    })
    print(f"# measured by analysis/benchmarks/bench_estimate.py --calibrate ({time.strftime('%Y-%m-%d')})")
    for name, value in consts.items():
        print(f"{name} = {value:.3g}")
    print(f"(plots of the 8-core phase runs: {ph[0]['plots']:.2f} s and {ph[1]['plots']:.2f} s)")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--measure":
        measure(sys.argv[3:] if sys.argv[2:3] == ["--"] else sys.argv[2:])
        return
    if len(sys.argv) > 2 and sys.argv[1] == "--parts":
        parts_child(json.loads(sys.argv[2]))
        return
    ap = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    ap.add_argument("--calibrate", action="store_true", help="measure the constants instead of checking them")
    ap.add_argument("--repeat", type=int, default=3, help="calibration runs per size (median time, highest RSS)")
    args = ap.parse_args()
    calibrate(args.repeat) if args.calibrate else table()


if __name__ == "__main__":
    main()
