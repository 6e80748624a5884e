"""Machine cost per record against SimPy's cost per event, in CPU instructions (callgrind), not seconds.

The wall-clock benchmark (``bench_instr_throughput.py``) wanders by up to 2x on a shared machine.
Instruction counts do not: ``valgrind --tool=callgrind`` counts the same total for the same binary
and inputs whatever else runs. This script counts, each in its own process under callgrind:

- ``bare``: a SimPy process yielding ``env.timeout(1)`` N times, minus the same script with N = 0
  -> instructions per bare SimPy event;
- ``machine``: the kernel's real program for one core (one head of ``--tokens`` tokens, L = 64,
  dk = dv = 128, numerics off) built into a list and run on the machine with ``keep_ops=False``,
  minus the same script that only builds the list -> instructions per record.

It prints both and their ratio ``(instr per event) / (instr per record)``, which is the records-per-
second ÷ events-per-second figure of the wall-clock benchmark on a CPU whose speed does not change.
``--tree DIR`` (repeatable) runs the machine part from other checkouts too (e.g. an older commit in
a git worktree), side by side in the same run.

Usage: ``python analysis/benchmarks/bench_instr_callgrind.py [--tokens 64] [--tree DIR ...]``
(about 3 minutes per tree for 64 tokens; needs valgrind).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BARE = """
import sys, simpy
n = int(sys.argv[1])
env = simpy.Environment()
def loop(env):
    for _ in range(n):
        yield env.timeout(1)
env.process(loop(env))
env.run()
"""

MACHINE = """
import sys
from cgdr_des.hw import Machine, load_profile
from cgdr_des.kernel.functional import make_launch
from cgdr_des.kernel.launch import Shape
from cgdr_des.kernel.program import core_program
tokens, run = int(sys.argv[1]), sys.argv[2] == "run"
launch = make_launch(Shape(1, tokens, 1, 1, 128, 128, 0.088, False), [tokens], None, None, numerics="off")
program = list(core_program(launch, 0))
if run:
    Machine(load_profile("atlas-300i-duo"), keep_ops=False).run([program])
import cgdr_des
print(len(program), cgdr_des.__file__)
"""


def _python() -> str:
    """The real interpreter binary (a pyenv shim is a shell script callgrind would measure instead);
    a virtualenv's own ``python`` (a link to a binary) is kept, or its site-packages would be lost."""
    with open(sys.executable, "rb") as f:
        is_binary = f.read(4) == b"\x7fELF"
    return sys.executable if is_binary else os.path.realpath(sys.executable)


def callgrind(script: str, args: list[str], tree: Path | None) -> tuple[int, str]:
    """Total instructions of ``python -c script args`` under callgrind, and its stdout."""
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        # cwd: a directory with no package in it, or ``python -c`` would import the checkout it was
        # started from instead of ``tree``
        res = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", _python(), "-c",
                              script, *args], env=env, capture_output=True, text=True, check=True, cwd=tmp)
        total = re.search(r"^summary: (\d+)", out.read_text(), re.M)
    return int(total.group(1)), res.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--tree", action="append", type=Path, default=[], help="another checkout to measure too")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("error: valgrind not found (apt install valgrind)")
    trees = [Path(__file__).resolve().parents[2], *args.tree]    # this checkout first
    jobs = {"bare": (BARE, ["200000"], None), "bare0": (BARE, ["0"], None)}
    for i, tree in enumerate(trees):
        jobs[f"run{i}"] = (MACHINE, [str(args.tokens), "run"], tree)
        jobs[f"build{i}"] = (MACHINE, [str(args.tokens), "build"], tree)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        done = {name: pool.submit(callgrind, *job) for name, job in jobs.items()}
        counts = {name: fut.result() for name, fut in done.items()}
    per_event = (counts["bare"][0] - counts["bare0"][0]) / 200_000
    print(f"bare SimPy event: {per_event:10,.0f} instructions")
    for i, tree in enumerate(trees):
        records, imported = counts[f"run{i}"][1].split()
        records = int(records)
        per_record = (counts[f"run{i}"][0] - counts[f"build{i}"][0]) / records
        label = f"{tree} (imported from {Path(imported).parent.parent})"
        print(f"machine record:   {per_record:10,.0f} instructions   ratio {per_event / per_record:5.2f}   "
              f"({records:,} records; {label})")


if __name__ == "__main__":
    main()
