"""Faults: the error contract for what is not a CgdrError, and output directories under a killed
run, a concurrent run, a rerun, a full or read-only disk, symlinks; NaN outputs; cut traces."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from test_bad_inputs import BASE, write  # tests/ is on sys.path under pytest
from test_cli import stub_simulate

import cgdr_des
import cgdr_des.cli.common as common
from cgdr_des.cli import main
from cgdr_des.errors import KernelDiagnostic
from cgdr_des.results.export import read_result, write_results

KERNEL = {**BASE, "sim": {"numerics": "kernel"}}


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_line(res, code: int, start: str) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == code, res.output
    assert len(lines) == 1 and lines[0].startswith(start), res.stderr
    return lines[0]


def raising(exc: BaseException):
    def simulate(sc, progress=None):
        raise exc

    return lambda: simulate


@pytest.fixture
def stub(monkeypatch):
    monkeypatch.setattr(common, "_simulate", lambda: stub_simulate)


# ---------------------------------------------------------------- the error contract


def test_an_internal_error_is_one_line_exit_1_and_v_gives_the_traceback(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "_simulate", raising(RuntimeError("boom")))
    sc = write(tmp_path, BASE)
    line = one_line(invoke("run", sc, "--out", tmp_path / "o"), 1, "internal error: RuntimeError: boom")
    assert "-v" in line
    verbose = invoke("-v", "run", sc, "--out", tmp_path / "o")
    assert verbose.exit_code == 1 and "Traceback" in verbose.stderr and "boom" in verbose.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("exc", "start"), [
    (MemoryError(), "error: out of memory"),
    (ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size."),
     "error: array size"),
    (OSError(errno.EIO, "Input/output error", "/dev/x"), "error: file system: Input/output error"),
])
def test_what_the_machine_causes_is_one_line_exit_2(tmp_path, monkeypatch, exc, start):
    monkeypatch.setattr(common, "_simulate", raising(exc))
    one_line(invoke("run", write(tmp_path, BASE), "--out", tmp_path / "o"), 2, start)
    assert not (tmp_path / "o").exists()
    assert not list(tmp_path.glob(".o.cgdr-tmp-*"))


def test_disk_full_while_writing_leaves_nothing(tmp_path, monkeypatch, stub):
    import cgdr_des.results.export as export

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export, "write_trace", full)
    line = one_line(invoke("run", write(tmp_path, BASE), "--out", tmp_path / "o"), 2, "error: --out")
    assert "no space left on device" in line and "nothing was written" in line
    assert not (tmp_path / "o").exists() and not list(tmp_path.glob(".o.cgdr-*-*"))


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 256 KiB tmpfs (root and mount allowed), else skip: the monkeypatched test above stands in."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)


def test_disk_full_on_a_real_small_tmpfs(tmp_path, small_tmpfs, monkeypatch):
    import cgdr_des.results.export as export

    real = export.write_trace

    def big_trace(trace, path):  # the stub run's trace is small: make it outgrow the tmpfs
        trace["otherData"]["padding"] = "x" * (1 << 20)
        return real(trace, path)

    monkeypatch.setattr(common, "_simulate", lambda: stub_simulate)
    monkeypatch.setattr(export, "write_trace", big_trace)
    out = small_tmpfs / "o"
    line = one_line(invoke("run", write(tmp_path, BASE), "--out", out), 2, "error: --out")
    assert "no space left on device" in line
    assert sorted(p.name for p in small_tmpfs.iterdir()) == [".o.cgdr-lock"]  # no half-written dir


def test_read_only_file_system(tmp_path, small_tmpfs, stub):
    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    line = one_line(invoke("run", write(tmp_path, BASE), "--out", small_tmpfs / "o"), 2, "error: --out")
    assert "read-only file system" in line


# ---------------------------------------------------------------- killed, concurrent, rerun

SLOW_WRITER = textwrap.dedent("""
    import sys, time
    import cgdr_des.results.export as export
    from cgdr_des.cli import main

    real = export.write_trace

    def slow(trace, path):
        out = real(trace, path)
        print("WRITING", flush=True)
        time.sleep(120)
        return out

    export.write_trace = slow
    main(["run", sys.argv[1], "--out", sys.argv[2]] + sys.argv[3:])
""")


def start_slow_run(scenario: Path, out: Path, *extra: str) -> subprocess.Popen:
    """A real ``cgdr-des run`` that stops for two minutes mid-write (after trace.json)."""
    proc = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, str(scenario), str(out), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    for line in proc.stdout:
        if line.strip() == "WRITING" or time.monotonic() > deadline:
            break
    assert proc.poll() is None, proc.stderr.read()
    return proc


def kill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


@pytest.mark.slow
def test_sigkill_mid_write_leaves_no_output_and_plot_refuses(tmp_path):
    out, sc = tmp_path / "o", write(tmp_path, KERNEL)
    kill(start_slow_run(sc, out))
    assert not out.exists()  # the staging sibling never became the output
    one_line(invoke("plot", out), 2, "error: DIRECTORY")
    res = invoke("run", sc, "--out", out)  # the kernel dropped the lock; leftovers are removed
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == [".o.cgdr-lock"]
    assert read_result(out).out is not None
    assert invoke("plot", out).exit_code == 0


@pytest.mark.slow
def test_sigkill_while_replacing_keeps_the_previous_output_whole(tmp_path):
    out, sc = tmp_path / "o", write(tmp_path, KERNEL)
    assert invoke("run", sc, "--out", out).exit_code == 0
    before = read_result(out)
    kill(start_slow_run(sc, out, "--force"))
    after = read_result(out)  # the manifest still matches every file
    np.testing.assert_array_equal(after.out, before.out)
    assert invoke("plot", out).exit_code == 0


@pytest.mark.slow
def test_a_second_run_into_the_same_out_is_refused_while_the_first_runs(tmp_path, stub):
    out, sc = tmp_path / "o", write(tmp_path, KERNEL)
    first = start_slow_run(sc, out)
    try:
        line = one_line(invoke("run", sc, "--out", out), 2, "error: --out")
        assert "no other cgdr-des command" in line
    finally:
        kill(first)
    assert invoke("run", sc, "--out", out).exit_code == 0


@pytest.mark.slow
def test_rerun_replaces_the_previous_output_whole(tmp_path, stub):
    from test_results_export import result

    out = tmp_path / "o"
    write_results(result(outputs={"out": np.ones((2, 3, 4), np.float16), "final_state": None}), out, csv=True)
    assert (out / "outputs.npz").exists() and (out / "items.csv").exists()
    res = invoke("run", write(tmp_path, BASE), "--out", out, "--force")  # the stub has no outputs, no CSV
    assert res.exit_code == 0, res.output
    assert not (out / "outputs.npz").exists() and not (out / "items.csv").exists()
    assert read_result(out).out is None


@pytest.mark.slow
def test_symlinks_inside_a_previous_output_are_not_followed(tmp_path, stub):
    from test_results_export import result

    out, victim = tmp_path / "o", tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    write_results(result(), out, trace=False, plots=False)
    (out / "trace.json").symlink_to(victim)
    assert invoke("run", write(tmp_path, BASE), "--out", out, "--force").exit_code == 0
    assert victim.read_text(encoding="utf-8") == "keep me"
    assert (out / "trace.json").is_file() and not (out / "trace.json").is_symlink()


# ---------------------------------------------------------------- numbers and traces


def test_a_nan_output_names_the_token_head_and_phase():
    from cgdr_des.workload.tensors import make_inputs

    kw = make_inputs([70, 30], 1, 2, 16, 16, seed=0).kwargs()
    kw["beta"] = np.full_like(kw["beta"], 60000)
    with np.errstate(all="ignore"), pytest.raises(KernelDiagnostic) as info:
        cgdr_des.chunk_gated_delta_rule(**kw, fidelity="functional")
    msg = str(info.value)
    assert msg.startswith("non-finite output: first at out[token 0, head 0] (batch 0); first non-finite "
                          "after phase P4b_Recursion of chunk 0"), msg


def test_fp16_overflow_at_the_output_cast_is_named():
    from cgdr_des.workload.tensors import make_inputs

    kw = make_inputs([8], 1, 1, 16, 16, seed=0).kwargs()
    kw["value"] = np.full_like(kw["value"], 65504)
    kw["query"] = np.full_like(kw["query"], 65504)
    with np.errstate(all="ignore"), pytest.raises(KernelDiagnostic, match="after phase S6b_WriteOut"):
        cgdr_des.chunk_gated_delta_rule(**kw, fidelity="phase")


def test_scenario_nan_is_a_diagnostic_unless_kept(tmp_path, monkeypatch):
    import cgdr_des.simulation as simulation
    from cgdr_des.workload import tensors

    def hot_inputs(*args, **kwargs):
        x = tensors.make_inputs(*args, **kwargs)
        return tensors.KernelInputs(**{**x.__dict__, "beta": np.full_like(x.beta, 60000)})

    monkeypatch.setattr(simulation, "make_inputs", hot_inputs)
    doc = {**KERNEL, "output": {"plots": False}}
    one_line(invoke("run", write(tmp_path, doc), "--out", tmp_path / "a"), 2, "error: non-finite output")
    keep = {**doc, "sim": {"numerics": "kernel", "nonfinite": "keep"}}
    res = invoke("run", write(tmp_path, keep), "--out", tmp_path / "b")
    assert res.exit_code == 0 and "warning    non-finite output: first at out[token " in res.stderr


@pytest.mark.slow
def test_a_cut_trace_says_so(tmp_path, stub):
    doc = {**BASE, "sim": {"numerics": "off", "max_trace_events": 3}}
    res = invoke("run", write(tmp_path, doc), "--out", tmp_path / "o")
    assert res.exit_code == 0
    (note,) = [line for line in res.stderr.splitlines() if line.startswith("warning")]
    assert "trace cut at 3 events" in note and "later events dropped" in note and "trace_window" in note


@pytest.mark.slow
def test_a_trace_window_after_the_run_says_so(tmp_path, stub):
    doc = {**BASE, "sim": {"numerics": "off", "trace_window": [10**12, 10**12 + 5]}}
    res = invoke("run", write(tmp_path, doc), "--out", tmp_path / "o")
    assert res.exit_code == 0 and "holds no events" in res.stderr
