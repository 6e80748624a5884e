"""Start-up of the command line: ``cgdr-des --help`` and a one-line refusal, beside ``import click``.

Each command runs as a cold subprocess (a fresh interpreter, as a user's shell starts it), all of
them interleaved round by round so that a load change on the machine hits them alike; the best and
the median of ``--rounds`` are printed, and each divided by the ``python -c "import click"`` baseline
of the same run (the floor any click CLI pays). The refusal is ``cgdr-des validate`` on a scenario
file with one bad field, written to a temporary directory: it must print one line and exit 2.

``--tree DIR`` (repeatable) also times another checkout (``PYTHONPATH=DIR``, e.g. a git worktree of
an older commit) in the same rounds; this checkout is always timed.

Bytecode: each tree's package is byte-compiled before the rounds (``compileall``), as a user's first
command leaves it. Where ``PYTHONDONTWRITEBYTECODE`` is set (the development machine sets it) no import
writes a ``.pyc``, and every run would compile the package's modules from source again (0.03 s of
``--help``, 0.06 s of the refusal when measured); ``--no-bytecode`` times that case instead.

Goal (issue 23): ``--help`` <= 0.3 s and the refusal <= 0.6 s on the 2-core development machine.

Usage: ``python analysis/benchmarks/bench_startup.py [--rounds 7] [--tree DIR ...]``
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT

BAD_SCENARIO = 'name = "bad"\n[shape]\nnk = 8\nnv = -1\ndk = 64\ndv = 64\n[workload]\nlengths = [64]\n'
GOALS = {"--help": 0.3, "validate BAD": 0.6}
BASELINE = 'python -c "import click"'


def cli() -> list[str]:
    """The installed ``cgdr-des`` script next to this interpreter, else ``python -m cgdr_des``."""
    script = Path(sys.executable).with_name("cgdr-des")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "cgdr_des"]


def wall(argv: list[str], env: dict, expect_rc: int) -> float:
    """Wall time of one cold run of ``argv``; its exit code must be ``expect_rc``."""
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t0
    if done.returncode != expect_rc:
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}, expected {expect_rc}\n{done.stderr}")
    return elapsed


def cases(trees: list[Path], bad: Path) -> dict[str, tuple[list[str], dict, int]]:
    """name -> (argv, environment, expected exit code) of every timed command."""
    out = {BASELINE: ([sys.executable, "-c", "import click"], dict(os.environ), 0)}
    for tree in trees:
        env = {**os.environ, "PYTHONPATH": str(tree)}  # the script imports cgdr_des from this tree
        label = "" if tree == ROOT else f" [{tree}]"
        out[f"--help{label}"] = ([*cli(), "--help"], env, 0)
        out[f"validate BAD{label}"] = ([*cli(), "validate", str(bad)], env, 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--tree", type=Path, action="append", default=[], help="another checkout to time too")
    ap.add_argument("--no-bytecode", action="store_true", help="leave the trees' bytecode as it is")
    args = ap.parse_args()
    trees = [ROOT, *(t.resolve() for t in args.tree)]
    if not args.no_bytecode:
        for tree in trees:
            compileall.compile_dir(tree / "cgdr_des", quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "bad.toml"
        bad.write_text(BAD_SCENARIO, encoding="utf-8")
        timed = cases(trees, bad)
        refusal = subprocess.run([*cli(), "validate", str(bad)], capture_output=True, text=True,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)}).stderr
        times: dict[str, list[float]] = {name: [] for name in timed}
        for _ in range(args.rounds):
            for name, (argv, env, rc) in timed.items():
                times[name].append(wall(argv, env, rc))
    base, base_median = min(times[BASELINE]), statistics.median(times[BASELINE])
    print(f"{args.rounds} rounds, interleaved, cold subprocesses of {' '.join(cli())}; cgdr_des from {ROOT} "
          f"unless [tree] says otherwise; the package's bytecode "
          f"{'as found' if args.no_bytecode else 'compiled first, as a first run leaves it'}")
    print(f"refusal printed: {refusal.strip()}")
    width = max(map(len, times)) + 11
    print(f"{'command':<{width}}{'best s':>8}{'median s':>10}{'best/click':>12}{'median/click':>14}  goal (best)")
    for name, ts in times.items():
        best, median = min(ts), statistics.median(ts)
        goal = GOALS.get(name)
        verdict = "" if goal is None else f"<= {goal} s: {'met' if best <= goal else 'NOT met'}"
        shown = name if name == BASELINE else f"cgdr-des {name}"
        print(f"{shown:<{width}}{best:8.3f}{median:10.3f}{best / base:12.2f}{median / base_median:14.2f}  {verdict}")


if __name__ == "__main__":
    main()
