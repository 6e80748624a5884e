"""Interrupts on real processes: Ctrl-C and SIGTERM end a command with one line and 128 + signal,
nothing half-written; a killed sweep (SIGKILL, SIGINT, SIGTERM) or tail study whose checks run on
workers leaves no process of its session.

Each test starts ``python -m cgdr_des`` in a new session (as a shell starts a job in its own process
group), waits until the command is at work (its first progress line, and for a sweep its pool
workers), signals it, and lists the processes of that session from /proc.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from sweep_cases import TINY, write_sweep

from cgdr_des.cli import main
from cgdr_des.cli.app import Interrupted, signals_raise

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="lists processes from /proc")

#: points of a few seconds each (instr fidelity): a 2-worker sweep of 16 runs for half a minute
SLOW_SWEEP = """
name = "slow"
base = "tiny.toml"
replications = 4
[set]
"workload.lengths" = [640, 512]
"sim.fidelity" = "instr"
[grid]
"kernel.policy" = ["greedy", "round_robin"]
"kernel.buffer_num" = [1, 2]
"""
#: one run of a few seconds
SLOW_RUN = TINY.replace("lengths = [8, 3]", "lengths = [640, 512]").replace(
    'numerics = "off"', 'numerics = "off"\nfidelity = "instr"')
#: a tail study whose calibration and checks take a few seconds
SLOW_TAIL = ('name = "slow_tail"\n[shape]\nnk = 1\nnv = 2\ndk = 32\ndv = 32\n[workload]\nbatch = 3\n'
             '[workload.distribution]\nkind = "uniform"\nmin = 100\nmax = 600\n'
             '[study]\nbatches = 40\ncheck_batches = 8\nbootstrap = 20\n')
#: a tail study whose checks take tens of seconds each (8 sequences of 20-30 k tokens: ~6 000 chunk items)
SLOW_CHECKS = SLOW_TAIL.replace("batch = 3", "batch = 8").replace("min = 100\nmax = 600", "min = 20000\nmax = 30000") \
    .replace("check_batches = 8", "check_batches = 4")
WAIT = 60.0


class Command:
    """``python -m cgdr_des ARGS`` in its own session, its stderr collected line by line."""

    def __init__(self, *args, cwd: Path):
        env = {**os.environ, "CGDR_DES_PROGRESS": "lines", "PYTHONPATH": _pythonpath()}
        self.proc = subprocess.Popen([sys.executable, "-m", "cgdr_des", *map(str, args)], cwd=cwd, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.sid = self.proc.pid
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, test, what: str) -> None:
        deadline = time.monotonic() + WAIT
        while not test():
            if self.proc.poll() is not None:
                pytest.fail(f"the command ended (exit {self.proc.returncode}) before {what}: {self.lines}")
            if time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"no {what} within {WAIT} s")
            time.sleep(0.05)

    def working(self) -> None:
        """Wait until the command is in its work: it has drawn its first progress line."""
        self.wait_for(lambda: any(line.startswith("progress") for line in self.lines), "progress line")

    def finish(self) -> tuple[int, list[str]]:
        """Exit code and the stderr lines that are not progress."""
        rc = self.proc.wait(timeout=WAIT)
        self._reader.join(timeout=5)
        return rc, [line for line in self.lines if not line.startswith("progress")]

    def kill(self) -> None:
        try:
            os.killpg(self.sid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def _pythonpath() -> str:
    root = str(Path(__file__).resolve().parents[1])
    return os.pathsep.join([root, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])


def session_processes(sid: int) -> list[tuple[int, int, str]]:
    """``(pid, ppid, command line)`` of every live (not zombie) process of session ``sid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state ppid pgrp session ...
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append((int(entry.name), int(fields[1]), cmdline.strip()))
    return found


def workers_of(cmd: Command) -> list[int]:
    """The pool workers of ``cmd``: the children of the forkserver it started (cgdr_des/pool.py)."""
    procs = session_processes(cmd.sid)
    servers = {pid for pid, ppid, line in procs if ppid == cmd.proc.pid and "forkserver" in line}
    return [pid for pid, ppid, _ in procs if ppid in servers]


def assert_session_ends(sid: int, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while (left := session_processes(sid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == [], f"processes of the killed command still run: {left}"


def started_sweep(tmp_path: Path, early: bool = False) -> Command:
    """A 2-worker sweep, its workers at their first points (``early``: the first worker just started)."""
    write_sweep(tmp_path, SLOW_SWEEP)
    cmd = Command("sweep", "sweep.toml", "--out", "o", "--workers", "2", cwd=tmp_path)
    cmd.working()
    if early:
        cmd.wait_for(lambda: workers_of(cmd), "a pool worker")
    else:
        cmd.wait_for(lambda: len(workers_of(cmd)) == 2, "two pool workers")
        time.sleep(1.5)
    return cmd


@pytest.mark.slow
def test_a_sigkilled_sweep_leaves_no_process(tmp_path):
    cmd = started_sweep(tmp_path)
    workers = workers_of(cmd)
    cmd.proc.kill()
    cmd.proc.wait()
    assert_session_ends(cmd.sid)
    cmd._reader.join(timeout=5)  # the pipe closes with the last process that held it
    assert all(line.startswith("progress") for line in cmd.lines), "\n".join(cmd.lines)  # no warning, no traceback
    assert all(not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
               for pid in workers)


@pytest.mark.slow
@pytest.mark.parametrize(("send", "early", "code", "first"), [
    ("group", False, 130, "interrupted: sweep stopped"),  # a terminal's Ctrl-C reaches the whole process group
    ("group", True, 130, "interrupted: sweep stopped"),   # ... while the workers are still starting up
    ("parent", False, 143, "terminated (SIGTERM): sweep stopped"),
])
def test_an_interrupted_sweep_says_one_line_and_ends_its_workers(tmp_path, send, early, code, first):
    cmd = started_sweep(tmp_path, early)
    if send == "group":
        os.killpg(cmd.sid, signal.SIGINT)
    else:
        cmd.proc.send_signal(signal.SIGTERM)
    rc, lines = cmd.finish()
    assert rc == code
    assert len(lines) == 1 and lines[0].startswith(first), "\n".join(lines)
    assert "run it again to go on" in lines[0]
    assert_session_ends(cmd.sid)
    # what was stored is whole: the sweep resumes (the stored points are skipped, not redone); read in
    # this process: the reader is the point here, not a second interpreter
    status = CliRunner().invoke(main, ["sweep", "--status", str(tmp_path / "o")])
    assert status.exit_code == 0 and "failed 0" in status.stdout, status.output


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGKILL", "Ctrl-C"])
def test_a_tail_study_stopped_while_its_checks_run_on_workers_leaves_no_process(tmp_path, how):
    """The checks' pool is the sweep's (cgdr_des/pool.py): the same guarantee, seen from ``tail --workers``."""
    (tmp_path / "s.toml").write_text(SLOW_CHECKS, encoding="utf-8")
    cmd = Command("tail", "s.toml", "--out", "o", "--workers", "2", cwd=tmp_path)
    cmd.wait_for(lambda: len(workers_of(cmd)) == 2, "two check workers")
    time.sleep(1.5)  # into their first checks: busy, not waiting on the parent's pipe
    assert any("checking 4 batches at phase fidelity on 2 workers: started" in line for line in cmd.lines)
    if how == "SIGKILL":
        cmd.proc.kill()
        cmd.proc.wait()
        assert_session_ends(cmd.sid)
        cmd._reader.join(timeout=5)
        assert all(line.startswith("progress") for line in cmd.lines), "\n".join(cmd.lines)
    else:
        os.killpg(cmd.sid, signal.SIGINT)  # the terminal's Ctrl-C reaches the workers too: they ignore it
        rc, lines = cmd.finish()
        assert (rc, lines) == (130, ["interrupted: tail stopped; --out is as it was before"])
        assert_session_ends(cmd.sid)
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
@pytest.mark.parametrize(("command", "sig", "previous"), [
    ("run", signal.SIGINT, False), ("run", signal.SIGINT, True), ("tail", signal.SIGINT, False),
    ("run", signal.SIGTERM, False), ("run", signal.SIGTERM, True)])
def test_an_interrupted_writing_command_leaves_out_as_it_was(tmp_path, command, sig, previous):
    (tmp_path / "s.toml").write_text(SLOW_RUN if command == "run" else SLOW_TAIL, encoding="utf-8")
    out = tmp_path / "o"
    if previous:  # a previous output of the same command, which --force would replace
        (tmp_path / "quick.toml").write_text(TINY if command == "run" else SLOW_TAIL.replace(
            "check_batches = 8", "check_batches = 0"), encoding="utf-8")
        done = CliRunner().invoke(main, [command, str(tmp_path / "quick.toml"), "--out", str(out)])  # in this process
        assert done.exit_code == 0, done.output
    before = _tree(out)
    cmd = Command(command, "s.toml", "--out", "o", *(["--force"] if previous else []), cwd=tmp_path)
    cmd.working()
    time.sleep(0.5)
    if sig == signal.SIGINT:
        os.killpg(cmd.sid, sig)  # Ctrl-C: the terminal signals the whole process group
    else:
        cmd.proc.send_signal(sig)
    rc, lines = cmd.finish()
    assert rc == 128 + sig
    how = "interrupted" if sig == signal.SIGINT else "terminated (SIGTERM)"
    assert lines == [f"{how}: {command} stopped; --out is as it was before"]
    assert _tree(out) == before  # absent, or the previous output byte for byte
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".o.cgdr-tmp")) == []
    assert_session_ends(cmd.sid)


def _tree(root: Path) -> dict[str, bytes] | None:
    if not root.exists():
        return None
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- the contract, in this process


def _raising(exc: BaseException):
    def simulate(sc, progress=None):
        raise exc

    return lambda: simulate


@pytest.mark.parametrize(("exc", "code", "line"), [
    (KeyboardInterrupt(), 130, "interrupted: run stopped; --out is as it was before"),
    (Interrupted(signal.SIGTERM), 143, "terminated (SIGTERM): run stopped; --out is as it was before"),
    # SimPy re-raises a copy of a process's exception, ``type(exc)(*exc.args)``: the signal survives it
    (Interrupted(*Interrupted(signal.SIGTERM).args), 143, "terminated (SIGTERM): run stopped; --out is as it"),
    (click.exceptions.Abort(), 130, "interrupted: run stopped"),
])
def test_an_interrupt_inside_a_command_is_one_line_and_128_plus_the_signal(tmp_path, monkeypatch, exc, code, line):
    import cgdr_des.cli.common as common

    monkeypatch.setattr(common, "_simulate", _raising(exc))
    (tmp_path / "s.toml").write_text(TINY, encoding="utf-8")
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    res = CliRunner().invoke(main, ["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o")])
    assert res.exit_code == code
    assert len(res.stderr.splitlines()) == 1 and res.stderr.startswith(line), res.stderr
    assert "Aborted" not in res.output and "Traceback" not in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [".o.cgdr-lock", "s.toml"]  # no --out, no staging left
    assert {s: signal.getsignal(s) for s in before} == before  # the CLI's handlers are gone with it


def test_a_signal_during_a_command_raises_interrupted_and_a_second_one_is_ignored():
    with pytest.raises(Interrupted) as caught, signals_raise():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises at once
    assert caught.value.signum == signal.SIGTERM
    with signals_raise():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except Interrupted:
            os.kill(os.getpid(), signal.SIGINT)  # during the cleanup: ignored
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_signal_while_workers_start_waits_until_they_have():
    from cgdr_des.pool import starting_workers

    reached_end = False
    with pytest.raises(KeyboardInterrupt):
        with starting_workers():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)  # a handler that ran now would raise here
            reached_end = True
    assert reached_end
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def test_a_deferred_sigterm_reaches_the_cli_handler_once_the_block_ends():
    from cgdr_des.interrupts import deferred

    steps = []
    with pytest.raises(Interrupted) as caught, signals_raise():
        with deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
            steps.append("first rename")
            steps.append("second rename")  # both renames of a swap run
        time.sleep(5)  # not reached: raised as the block ends
    assert steps == ["first rename", "second rename"] and caught.value.signum == signal.SIGTERM
