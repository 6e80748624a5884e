"""A reader that goes away (``cgdr-des schema | head``) ends a command quietly: exit 141 (128 +
SIGPIPE, as a Unix tool), nothing on stderr, and an output being written left as it was.

Each case starts a real interpreter with its stdout a pipe whose read end this process closes before
the child writes anything, so the child's first write meets EPIPE, every time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import ONE_ITEM, REPO

from cgdr_des.cli import main
from cgdr_des.cli.app import CLOSED_READER_EXIT, reader_gone

ROOT = REPO
TINY = ONE_ITEM


def _closed_reader(*args, cwd: Path = ROOT, stderr_closed: bool = False) -> tuple[int, str]:
    """Run ``cgdr-des ARGS`` with stdout (and, if asked, stderr) a pipe nobody reads; exit code, stderr."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    proc = subprocess.Popen([sys.executable, "-m", "cgdr_des", *map(str, args)], cwd=cwd,
                            env={**os.environ, "PYTHONPATH": path}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the command writes its first byte
    if stderr_closed:
        proc.stderr.close()
        return proc.wait(timeout=120), ""
    err = proc.stderr.read().decode()
    proc.stderr.close()
    return proc.wait(timeout=120), err


@pytest.mark.parametrize("args", [["schema"], ["--help"], ["run", "--help"],
                                  ["validate", "scenarios/small.toml"]])
def test_a_closed_stdout_ends_the_command_quietly_with_141(args):
    code, err = _closed_reader(*args)
    assert (code, err) == (CLOSED_READER_EXIT, ""), err


def test_a_closed_stderr_ends_an_error_line_quietly_too():
    code, _ = _closed_reader("validate", "no_such.toml", stderr_closed=True)
    assert code == CLOSED_READER_EXIT


def test_a_run_whose_reader_left_leaves_its_output_as_it_was(tmp_path):
    """The summary lines are written while the output is staged: the run stops there, and --out
    does not appear half-written (as after Ctrl-C)."""
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    code, err = _closed_reader("run", "tiny.toml", "--out", "o", cwd=tmp_path)
    assert (code, err) == (CLOSED_READER_EXIT, ""), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.toml"]


def test_a_broken_pipe_elsewhere_is_not_a_closed_reader():
    """A pool worker's pipe breaking is an error to report: stdout and stderr still have readers."""
    assert not reader_gone(BrokenPipeError(32, "Broken pipe"))

    @click.command()
    def broken():
        raise BrokenPipeError(32, "Broken pipe")

    main.add_command(broken, "broken-test")
    try:
        res = CliRunner().invoke(main, ["broken-test"])
    finally:
        main.commands.pop("broken-test")
    assert res.exit_code == 2 and res.stderr == "error: file system: Broken pipe\n"
