"""Start-up of the command line: ``cgdr-des --help`` and a one-line refusal, beside ``import click``.

Each command runs as a cold subprocess (a fresh interpreter, as a user's shell starts it), the three
interleaved round by round so that a load change on the machine hits them alike; the best and the
median of ``ROUNDS`` are printed, and each divided by the ``python -c "import click"`` baseline of the
same run (the floor any click CLI pays). The refusal is ``cgdr-des validate`` on a scenario file with
one bad field, written to a temporary directory: it must print one line and exit 2.

Goal (issue 23): ``--help`` <= 0.3 s and the refusal <= 0.6 s on the 2-core development machine.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROUNDS = 7
BAD_SCENARIO = 'name = "bad"\n[shape]\nnk = 8\nnv = -1\ndk = 64\ndv = 64\n[workload]\nlengths = [64]\n'
GOALS = {"cgdr-des --help": 0.3, "cgdr-des validate BAD": 0.6}


def cli() -> list[str]:
    """The installed ``cgdr-des`` script next to this interpreter, else ``python -m cgdr_des``."""
    script = Path(sys.executable).with_name("cgdr-des")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "cgdr_des"]


def wall(argv: list[str], expect_rc: int) -> float:
    """Wall time of one cold run of ``argv``; its exit code must be ``expect_rc``."""
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if done.returncode != expect_rc:
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}, expected {expect_rc}\n{done.stderr}")
    return elapsed


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "bad.toml"
        bad.write_text(BAD_SCENARIO, encoding="utf-8")
        cases = {
            'python -c "import click"': ([sys.executable, "-c", "import click"], 0),
            "cgdr-des --help": ([*cli(), "--help"], 0),
            "cgdr-des validate BAD": ([*cli(), "validate", str(bad)], 2),
        }
        refusal = subprocess.run([*cli(), "validate", str(bad)], capture_output=True, text=True).stderr
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(ROUNDS):
            for name, (argv, rc) in cases.items():
                times[name].append(wall(argv, rc))
    base = min(times['python -c "import click"'])
    base_median = statistics.median(times['python -c "import click"'])
    print(f"{ROUNDS} rounds, interleaved, cold subprocesses ({' '.join(cli())})")
    print(f"refusal printed: {refusal.strip()}")
    print(f"{'command':<28}{'best s':>8}{'median s':>10}{'best/click':>12}{'median/click':>14}  goal")
    for name, ts in times.items():
        best, median = min(ts), statistics.median(ts)
        goal = GOALS.get(name)
        verdict = "" if goal is None else f"<= {goal} s: {'met' if best <= goal else 'NOT met'} (best)"
        print(f"{name:<28}{best:8.3f}{median:10.3f}{best / base:12.2f}{median / base_median:14.2f}  {verdict}")


if __name__ == "__main__":
    main()
