"""The documentation runs: every fenced ``python`` block of README.md and docs/*.md runs as written,
and every ``cgdr-des ...`` line of a code block (fenced, or indented four spaces) parses as the CLI
parses it, so a renamed option or command fails here before a reader meets it.

Python blocks run as a user would run them, each as its own script in a fresh interpreter, in a
scratch directory that links ``scenarios/`` (the blocks name files relative to the repository root;
what they write stays out of the repository). A block that is slow is made cheaper in the document,
not skipped here.

Command lines are synopses (``[--csv]``, ``[--workers N | --scheduler ADDR]``, ``...``): brackets,
bars and ellipses are dropped and every option kept, then click's own parser reads the line (unknown
command or option, an option without its value, too many arguments: failures) and the command's
``--help`` runs. Values are not converted (``--seed N`` is fine); nothing is executed.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import click
import pytest
from click.testing import CliRunner
from conftest import REPO as ROOT

from cgdr_des.cli import main

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^\s*```\s*([\w+-]*)\s*$")
#: ``cgdr-des`` at the start of a code line (after an optional ``$ ``) or after ``&&``
COMMAND = re.compile(r"(?:^\s*(?:\$\s+)?|&&\s*)cgdr-des(\s.*)?$")


class Block(NamedTuple):
    where: str  # "docs/tail.md:23", the line of the opening fence
    lang: str
    text: str


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path`` with its language tag ('' for none)."""
    blocks, lines, opened = [], [], None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = FENCE.match(line)
        if opened is None and fence:
            opened, lines = (number, fence.group(1).lower()), []
        elif opened is not None and fence and not fence.group(1):
            blocks.append(Block(f"{path.relative_to(ROOT)}:{opened[0]}", opened[1], "\n".join(lines) + "\n"))
            opened = None
        elif opened is not None:
            lines.append(line)
    assert opened is None, f"{path.name}: the fence opened at line {opened[0]} is never closed"
    return blocks


def code_lines(path: Path) -> list[tuple[str, str]]:
    """(``file:line``, text) of every line inside a fenced block or an indented (4-space) block."""
    out, fenced, previous_blank = [], False, True
    indented = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path.relative_to(ROOT)}:{number}"
        if FENCE.match(line):
            fenced = not fenced
            continue
        indented = line.startswith("    ") and (previous_blank or indented) and not fenced
        if fenced or indented:
            out.append((where, line))
        previous_blank = not line.strip()
    return out


def command_lines() -> list[tuple[str, str]]:
    """(``file:line``, the words after ``cgdr-des``) of every documented command line."""
    found = []
    for path in DOCUMENTS:
        for where, line in code_lines(path):
            m = COMMAND.search(line.split(" #", 1)[0])  # ' # ...' starts a comment
            if m:
                found.append((where, (m.group(1) or "").strip()))
    return found


def synopsis_args(text: str) -> list[str]:
    """A synopsis as the words a user would type: ``[--csv]`` -> ``--csv``, ``A | B`` -> both, no ``...``."""
    text = re.sub(r"\.\.\.|…", " ", text.replace("[", " ").replace("]", " ").replace(" | ", " "))
    return shlex.split(text)


def check_parses(args: list[str]) -> None:
    """Parse ``cgdr-des ARGS`` with click's parser, without running the command; then run its --help."""
    group_ctx = click.Context(main, info_name="cgdr-des")
    group_opts, rest = [], list(args)
    while rest and rest[0].startswith("-"):
        group_opts.append(rest.pop(0))
    if rest:
        command = main.get_command(group_ctx, rest[0])
        if command is None:
            raise click.UsageError(f"no such command {rest[0]!r}")
        ctx = click.Context(command, info_name=rest[0], parent=group_ctx)
        _, extra, _ = command.make_parser(ctx).parse_args(args=rest[1:])  # arguments it declares are taken
        if extra and not command.allow_extra_args:
            raise click.UsageError(f"unexpected extra arguments: {extra}")
    else:
        main.make_parser(group_ctx).parse_args(args=group_opts)
    res = CliRunner().invoke(main, [*group_opts, *rest[:1], "--help"])
    assert res.exit_code == 0 and res.output.startswith("Usage:"), res.output


def python_blocks() -> list[Block]:
    return [b for path in DOCUMENTS for b in fenced_blocks(path) if b.lang in ("python", "py", "python3")]


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A working directory where ``scenarios/...`` resolves as at the repository root."""
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios", target_is_directory=True)
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("block", python_blocks(), ids=lambda b: b.where)
def test_python_block_runs(block: Block, scratch: Path):
    script = scratch / "block.py"
    script.write_text(block.text, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, str(script)], cwd=scratch, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"{block.where} failed:\n{proc.stderr[-3000:]}"


@pytest.mark.parametrize("where, text", command_lines(), ids=[w for w, _ in command_lines()])
def test_command_line_parses(where: str, text: str):
    args = synopsis_args(text)
    check_parses(args)
    for arg in args:  # a shipped file a line names exists
        if arg.startswith("scenarios/"):
            assert (ROOT / arg).exists(), f"{where}: {arg}"


def test_the_scan_finds_the_blocks_and_lines_it_checks():
    """The README's Python block and its command list are found (a scan that finds nothing passes)."""
    assert any(b.where.startswith("README.md:") for b in python_blocks())
    assert len(python_blocks()) >= 4
    lines = command_lines()
    readme = {text.split()[0] for where, text in lines if where.startswith("README.md:") and text}
    assert {"run", "compare", "tail", "sweep", "validate", "schema", "plot", "measured"} <= readme
    assert any(where.startswith("docs/timing.md:") for where, _ in lines)  # fenced without a language


@pytest.mark.parametrize("line", ["run SCENARIO --bogus", "frobnicate", "run SCENARIO --out", "schema EXTRA",
                                  "tail A B --out D", "sweep S --workers"])
def test_a_line_the_cli_would_refuse_fails_the_check(line):
    with pytest.raises(click.UsageError):
        check_parses(synopsis_args(line))


def test_synopses_become_the_words_a_user_types():
    assert synopsis_args("run SCENARIO --out DIR [--csv] [--set PATH=VALUE ...] [--seed N]") == \
        ["run", "SCENARIO", "--out", "DIR", "--csv", "--set", "PATH=VALUE", "--seed", "N"]
    assert synopsis_args("sweep SWEEP --out DIR [--workers N | --scheduler ADDR]") == \
        ["sweep", "SWEEP", "--out", "DIR", "--workers", "N", "--scheduler", "ADDR"]
