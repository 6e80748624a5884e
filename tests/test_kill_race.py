"""Kill and race, for every command that writes: while one holds ``--out`` a second writer (and
``plot``) is refused in one line; SIGKILLed mid-write (just before its swap, the lock held, its
files staged) it leaves the previous output whole and nothing the next run trips over; SIGKILLed at
random moments of a ``run --force`` loop, ``--out`` always reads as a complete output.

The commands run for real in a child process on tiny inputs (``run`` and ``compare`` on the stub
simulator of tests/test_cli.py); the pause is a patched ``write_manifest`` (``SweepStore.put`` for
the sweep, which stores its points in place). The children are forked from a multiprocessing
forkserver that has imported the package once: a SIGKILL ends a separate process all the same, and
the ~1 s of imports a fresh interpreter pays is paid once per test process, not once per child.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import as_the_caller, forked

from cgdr_des.cli import main
from cgdr_des.results import outdir as od

pytestmark = pytest.mark.slow
WAIT = 120.0

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
#: plots off, as TINY: the tail command's pictures are test_command_outputs.py's, and here each of
#: its three writes (the previous output, the killed one, the next) drew four PNGs for nothing
DIST = textwrap.dedent("""
    name = "d"
    [shape]
    nk = 2  # conftest.CALIBRATED_NK
    nv = 2
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
    [output]
    plots = false
""")
SWEEP = 'name = "w"\nbase = "tiny.toml"\n[grid]\n"kernel.policy" = ["greedy", "round_robin"]\n'

def _as_the_cli_runs(cwd: str, env: dict, fallback: bool = False) -> None:
    """The child's state as ``python -c`` had it: the test's directory and environment, the stub simulator."""
    from test_cli import stub_simulate

    import cgdr_des.cli.common as common

    as_the_caller(cwd, env)
    common._simulate = lambda: stub_simulate
    if fallback:
        od.exchange = lambda a, b: False


def _paused_child(cwd: str, env: dict, conn, args: list[str]) -> None:
    from cgdr_des.sweep.store import SweepStore

    _as_the_cli_runs(cwd, env)

    def pausing(real):
        def step(*a, **kw):
            conn.send_bytes(b"WRITING")
            time.sleep(120)
            return real(*a, **kw)
        return step

    od.write_manifest = pausing(od.write_manifest)
    SweepStore.put = pausing(SweepStore.put)
    try:
        main(args)
    except SystemExit as end:  # the command ended without reaching its swap: say how (its line is on stderr)
        conn.send_bytes(f"exit {end.code}".encode())
        raise


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


def start_paused(args: list[str]) -> multiprocessing.Process:
    """The command in a child process, stopped (for two minutes) just before its output is swapped in."""
    proc, reader = forked(_paused_child, args)
    try:
        said = reader.recv_bytes() if reader.poll(WAIT) else b"nothing"
    except EOFError:
        said = b"its end"
    assert said == b"WRITING" and proc.is_alive(), f"the command reached {said.decode()}, not its swap"
    return proc


def kill(proc: multiprocessing.Process) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(timeout=30)
    assert proc.exitcode == -signal.SIGKILL


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


def _loop_child(cwd: str, env: dict, conn, mode: str) -> None:
    """``run --force`` over and over, one message per replacement made (or failed)."""
    _as_the_cli_runs(cwd, env, fallback=mode == "fallback")
    for i in range(10_000):
        try:
            main(["run", "tiny.toml", "--out", "o", "--force", "--set", f"workload.seed={i}"], standalone_mode=False)
        finally:
            conn.send_bytes(f"DONE {i}".encode())


def _messages(reader) -> list[str]:
    """What a killed child had sent (until its end of file)."""
    out = []
    while True:
        try:
            out.append(reader.recv_bytes().decode())
        except EOFError:
            return out


@pytest.mark.parametrize("mode", ["exchange", "fallback"])
def test_sigkill_at_random_moments_of_a_force_loop_always_leaves_a_complete_output(inputs, mode):
    rng = random.Random(24)
    assert invoke(argv("run", "o")).exit_code == 0  # seed 0
    for _ in range(6):
        proc, reader = forked(_loop_child, mode)
        assert reader.poll(WAIT) and reader.recv_bytes().startswith(b"DONE")  # imports done, one replacement made
        time.sleep(rng.uniform(0.0, 0.8))
        kill(proc)
        done = [int(m.split()[1]) for m in _messages(reader) if m.startswith("DONE")]
        od.check_complete(inputs / "o")  # a reader: the old output or the new, after its recovery
        seed = json.loads((inputs / "o" / "scenario.resolved.json").read_text())["workload"]["seed"]
        assert 0 <= seed <= max(done, default=0) + 1  # a finished replacement's, or the one under way
