"""Growth: wall time at T and 2T (goal: ratio <= 2.1), and the peak memory of a 1M-token timing-only
run with the ops frame aggregated (goal <= 2 GiB).

Phase fidelity, numerics off, atlas-300i-duo, Nk = Nv = 16, dk = dv = 128; T split into 16
sequences of T/16 tokens so that all 8 cores work. The 1M-token run is done in a child process so
its peak resident memory is its own. Usage: python analysis/benchmarks/bench_growth.py [T]  (default 32768)
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys

from common import peak_rss_mib, scenario, timed

import cgdr_des

SHAPE = {"nk": 16, "nv": 16, "dk": 128, "dv": 128}


def run(tokens: int):
    """Ops rows are kept up to cgdr_des.simulation.OPS_ROW_LIMIT, aggregated into spans beyond."""
    per = tokens // 16
    sc = scenario(shape=SHAPE, workload={"lengths": [per] * 16}, sim={"numerics": "off", "trace": False})
    return timed(cgdr_des.simulate, sc)


def child_million() -> None:
    seconds, res = run(1 << 20)
    print(json.dumps({"seconds": seconds, "peak_mib": peak_rss_mib(), "ops_rows": len(res.ops),
                      "makespan": int(res.summary.makespan_cycles[0])}))


def timed_alone(tokens: int) -> tuple[float, int]:
    """Wall time and makespan of one run, its result freed before the next run starts (a kept
    million-row frame would slow the next run down through memory, not through the simulator)."""
    seconds, res = run(tokens)
    makespan = int(res.summary.makespan_cycles[0])
    del res
    gc.collect()
    return seconds, makespan


def main(t: int, repeat: int = 2) -> None:
    run(t // 4)  # warm imports and caches outside the measurement
    (t1, m1), (t2, m2) = (min(timed_alone(n) for _ in range(repeat)) for n in (t, 2 * t))
    print(f"T = {t:,} tokens: {t1:6.2f} s   2T: {t2:6.2f} s   ratio {t2 / t1:.2f}  (goal <= 2.1; best of {repeat})")
    print(f"  makespan {m1:,} -> {m2:,} cycles")
    out = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, check=True)
    m = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"1M tokens, ops aggregated: {m['seconds']:.1f} s, peak RSS {m['peak_mib']:.0f} MiB (goal <= 2048), "
          f"{m['ops_rows']:,} span rows, makespan {m['makespan']:,} cycles")


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        child_million()
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 32768)
