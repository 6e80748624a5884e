"""Kill and race, for every command that writes: while one holds ``--out`` a second writer (and
``plot``) is refused in one line; SIGKILLed mid-write (just before its swap, the lock held, its
files staged) it leaves the previous output whole and nothing the next run trips over; SIGKILLed at
random moments of a ``run --force`` loop, ``--out`` always reads as a complete output.

The commands run for real in a subprocess on tiny inputs (``run`` and ``compare`` on the stub
simulator of tests/test_cli.py); the pause is a patched ``write_manifest`` (``SweepStore.put`` for
the sweep, which stores its points in place).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cgdr_des.cli import main
from cgdr_des.results import outdir as od

pytestmark = pytest.mark.slow
TESTS = Path(__file__).parent

TINY = textwrap.dedent("""
    name = "measured_tiny"
    [shape]
    nk = 1
    nv = 1
    dk = 16
    dv = 16
    [workload]
    lengths = [8]
    [sim]
    numerics = "off"
    trace = false
    [output]
    plots = false
""")
DIST = textwrap.dedent("""
    name = "d"
    [shape]
    nk = 1
    nv = 1
    dk = 16
    dv = 16
    [workload]
    batch = 2
    distribution = {kind = "uniform", min = 4, max = 16}
    [sim]
    numerics = "off"
    [study]
    check_batches = 0
    bootstrap = 10
""")
SWEEP = 'name = "w"\nbase = "tiny.toml"\n[grid]\n"kernel.policy" = ["greedy", "round_robin"]\n'

CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[1])
    import cgdr_des.cli.common as common
    import cgdr_des.results.outdir as od
    from cgdr_des.sweep.store import SweepStore
    from test_cli import stub_simulate

    common._simulate = lambda: stub_simulate

    def pausing(real):
        def step(*args, **kwargs):
            print("WRITING", flush=True)
            time.sleep(120)
            return real(*args, **kwargs)
        return step

    od.write_manifest = pausing(od.write_manifest)
    SweepStore.put = pausing(SweepStore.put)
    from cgdr_des.cli import main
    main(sys.argv[2:])
""")

ARGS = {
    "run": ["run", "tiny.toml"],
    "compare": ["compare", "tiny.toml", "--buffer-num", "1"],
    "tail": ["tail", "dist.toml", "--batches", "2"],
    "sweep": ["sweep", "w.toml", "--workers", "0"],
    "sensitivity": ["sensitivity", "tiny.toml", "--samples", "0", "--fields", "vec_pipe_delay_cycles"],
    "measured": ["measured", "m.csv", "--hypotheses", "vector"],
    "calibrate": ["calibrate", "m.csv", "--fields", "vec_pipe_delay_cycles", "--no-loo"],
}


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    for name, text in {"tiny.toml": TINY, "dist.toml": DIST, "w.toml": SWEEP,
                       "m.csv": "scenario,latency_us\ntiny.toml,50\n"}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    from test_cli import stub_simulate

    import cgdr_des.cli.common as common

    monkeypatch.setattr(common, "_simulate", lambda: stub_simulate)
    return tmp_path


def argv(command: str, out: str, force: bool = False) -> list[str]:
    if command == "plot":
        return ["plot", out]
    return [*ARGS[command], "--out", out, *(["--force"] if force and command != "sweep" else [])]


def invoke(args: list[str]):
    return CliRunner().invoke(main, args)


def one_line(res, code: int, *parts: str) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == code and len(lines) == 1, res.output
    assert all(p in lines[0] for p in parts), lines[0]
    return lines[0]


def start_paused(args: list[str], env: dict | None = None) -> subprocess.Popen:
    """The command in a subprocess, stopped (for two minutes) just before its output is swapped in."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(TESTS), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    for line in proc.stdout:
        if line.strip() == "WRITING":
            break
    assert proc.poll() is None, proc.stderr.read()
    return proc


def kill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def snapshot(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("command", [*ARGS, "plot"])
def test_kill_and_race(inputs, command):
    out = "o"
    extra = ["--max-points", "1"] if command == "sweep" else []  # a sweep with a point left to store
    first = invoke(argv("run" if command == "plot" else command, out) + extra)  # the previous output
    assert first.exit_code == 0, first.output
    before = snapshot(inputs / out)
    proc = start_paused(argv(command, out, force=True))
    try:  # the race: while it holds the lock, the same command and plot are refused, nothing written
        again = "run" if command == "plot" else command
        one_line(invoke(argv(again, out, force=True)), 2, "--out", "no other cgdr-des command")
        if command in ("run", "plot"):
            one_line(invoke(["plot", out]), 2, "DIRECTORY", "no other cgdr-des command")
    finally:
        kill(proc)
    if command == "sweep":  # in place: the points stored before the kill stay, the rest resume
        assert invoke(["sweep", "--status", out]).exit_code == 0
    else:
        assert snapshot(inputs / out) == before  # the previous output, whole: the staged one never arrived
    res = invoke(argv(command, out, force=True))
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in inputs.iterdir() if p.name.startswith(f".{out}.")) == [f".{out}.cgdr-lock"]
    if command != "sweep":
        od.check_complete(inputs / out)


LOOP = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import cgdr_des.cli.common as common
    import cgdr_des.results.outdir as od
    from test_cli import stub_simulate

    common._simulate = lambda: stub_simulate
    if sys.argv[2] == "fallback":
        od.exchange = lambda a, b: False
    from cgdr_des.cli import main
    for i in range(10_000):
        try:
            main(["run", "tiny.toml", "--out", "o", "--force", "--set", f"workload.seed={i}"], standalone_mode=False)
        finally:
            print("DONE", i, flush=True)
""")


@pytest.mark.parametrize("mode", ["exchange", "fallback"])
def test_sigkill_at_random_moments_of_a_force_loop_always_leaves_a_complete_output(inputs, mode):
    rng = random.Random(24)
    assert invoke(argv("run", "o")).exit_code == 0  # seed 0
    for _ in range(6):
        proc = subprocess.Popen([sys.executable, "-c", LOOP, str(TESTS), mode], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        assert any(line.startswith("DONE") for line in proc.stdout)  # imports done, one replacement made
        time.sleep(rng.uniform(0.0, 0.8))
        kill(proc)
        done = [int(line.split()[1]) for line in proc.stdout if line.startswith("DONE")]
        od.check_complete(inputs / "o")  # a reader: the old output or the new, after its recovery
        seed = json.loads((inputs / "o" / "scenario.resolved.json").read_text())["workload"]["seed"]
        assert 0 <= seed <= max(done, default=0) + 1  # a finished replacement's, or the one under way
