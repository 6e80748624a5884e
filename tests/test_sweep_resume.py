"""A sweep SIGKILLed part-way and rerun ends with every point stored exactly once and the same
``summary.parquet`` as an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from sweep_cases import SLOW, write_sweep

from cgdr_des.cli import main
from cgdr_des.sweep import SweepStore


def start(path, out, workers):
    cmd = [sys.executable, "-m", "cgdr_des", "sweep", str(path), "--out", str(out), "--workers", str(workers)]
    # its own session: the kill below reaches the sweep and its pool worker, nothing else
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def wait_for_first_point(proc, out, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if list((out / "manifest").glob("point=*.json")):
            return
        time.sleep(0.02)
    raise AssertionError(f"no point stored (exit {proc.poll()}): {proc.stderr.read().decode() if proc.poll() else ''}")


@pytest.mark.slow
def test_killed_sweep_resumes_to_the_uninterrupted_result(tmp_path):
    path = write_sweep(tmp_path, SLOW)
    out = tmp_path / "killed"
    proc = start(path, out, 1)
    wait_for_first_point(proc, out)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    status = SweepStore(out).status()
    assert status.done and status.pending, "the kill must land part-way"
    assert not (out / "summary.parquet").exists()

    resumed = start(path, out, 0)
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr.decode()
    assert f"{len(status.pending)} run now, {len(status.done)} already stored" in stdout.decode()

    ref = tmp_path / "uninterrupted"
    assert CliRunner().invoke(main, ["sweep", str(path), "--out", str(ref), "--workers", "0"]).exit_code == 0
    table = pq.read_table(out / "summary.parquet")
    assert table.column("point").to_pylist() == list(range(8))  # each point exactly once
    assert (out / "summary.parquet").read_bytes() == (ref / "summary.parquet").read_bytes()
    assert not list(out.rglob("*.tmp"))  # a file the kill caught half-written is cleared on resume
