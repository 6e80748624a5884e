"""The CLI error contract (cli/app.py) across every command the group registers.

For each command, found from the click group rather than listed by hand: a missing argument, an
unknown option and a file that does not exist are one stderr line ``error: ...`` and exit 2; every
command that takes ``--set``/``--seed`` refuses a malformed one the same way before simulating. Then
the classification of exceptions the user's machine causes (``user_caused``) and the one-line form of
click's usage errors.
"""

from __future__ import annotations

import errno

import click
import pytest
from click.testing import CliRunner
from conftest import TINY as GOOD

from cgdr_des.cli import main
from cgdr_des.cli.app import _usage_message, user_caused
from cgdr_des.errors import InputError, KernelDiagnostic

COMMANDS = sorted(main.commands)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_error_line(result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def arguments(name: str) -> list[click.Argument]:
    return [p for p in main.commands[name].params if isinstance(p, click.Argument) and p.required]


def options(name: str) -> set[str]:
    return {o for p in main.commands[name].params if isinstance(p, click.Option) for o in p.opts}


#: a value for each option some command requires, so that the check under test is the one reached
REQUIRED_VALUES = {"--fields": "vec_pipe_delay_cycles"}


def required_options(name: str, tmp_path) -> list:
    """Every option ``name`` requires (``--out`` when it has one), with a value that passes."""
    out = []
    for p in main.commands[name].params:
        if isinstance(p, click.Option) and (p.required or p.opts[0] == "--out"):
            out += [p.opts[0], tmp_path / "o" if p.opts[0] == "--out" else REQUIRED_VALUES[p.opts[0]]]
    return out


def test_the_group_registers_the_commands_the_docs_name():
    assert {"run", "validate", "plot", "schema", "compare", "sweep", "tail", "sensitivity", "calibrate"} <= set(
        COMMANDS)


@pytest.mark.parametrize("name", [c for c in COMMANDS if arguments(c)])
def test_a_missing_argument_is_one_line(name):
    line = one_error_line(invoke(name))
    assert line == f"error: {arguments(name)[0].name}: got nothing; required"


REQUIRED = [(c, p.opts[0]) for c in COMMANDS for p in main.commands[c].params
            if isinstance(p, click.Option) and p.required]


@pytest.mark.parametrize("name, option", REQUIRED)
def test_a_missing_required_option_is_one_line_naming_it(name, option, tmp_path):
    given = [x for p in main.commands[name].params if isinstance(p, click.Option) and p.required
             and p.opts[0] != option for x in (p.opts[0], tmp_path / "o" if p.opts[0] == "--out"
                                              else REQUIRED_VALUES[p.opts[0]])]
    line = one_error_line(invoke(name, tmp_path / "x", *given))
    assert line == f"error: {option}: got nothing; required"


@pytest.mark.parametrize("name", COMMANDS)
def test_an_unknown_option_is_one_line(name):
    line = one_error_line(invoke(name, "--frobnicate"))
    assert "--frobnicate" in line


@pytest.mark.parametrize("name", [c for c in COMMANDS if arguments(c)])
def test_a_path_that_does_not_exist_is_one_line(name, tmp_path):
    missing = tmp_path / "nowhere" / "x.toml"
    line = one_error_line(invoke(name, missing, *required_options(name, tmp_path)))
    assert "nowhere" in line


WITH_SETS = [c for c in COMMANDS if "--set" in options(c)]
BAD_SETS = [
    (["--set", "kernel.policy"], "--set", "section.field=value"),
    (["--set", "kernel..policy=greedy"], "--set", "dotted field path"),
    (["--set", "kernel.colour=red"], "kernel.colour", "unknown key"),
    (["--set", "shape.nv=[1,"], "shape.nv", "a TOML value"),
    (["--set", "kernel.buffer_num=3"], "kernel.buffer_num", ""),
    (["--seed", "-1"], "workload.seed", ""),
]


@pytest.mark.parametrize("name", WITH_SETS)
@pytest.mark.parametrize("args, field, why", BAD_SETS, ids=[b[1] + ":" + b[0][1] for b in BAD_SETS])
def test_a_bad_override_is_refused_before_anything_runs(name, args, field, why, tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text(GOOD, encoding="utf-8")
    if name == "sweep":  # a sweep file names its scenario
        sweep = tmp_path / "w.toml"
        sweep.write_text('name = "w"\nbase = "s.toml"\n[grid]\n"kernel.buffer_num" = [1, 2]\n', encoding="utf-8")
        target = sweep
    else:
        target = scenario
    line = one_error_line(invoke(name, target, *required_options(name, tmp_path), *args))
    if name == "sweep":  # the sweep file's own fields: its seed, and --set joining its [set] table
        field = {"workload.seed": "sweep.seed"}.get(field, field)
        assert line.startswith((f"error: {field}: got ", f"error: sweep.set: {field}: got ")), line
    else:
        assert line.startswith(f"error: {field}: got "), line
    assert why in line
    out = tmp_path / "o"
    assert not out.exists() or not any(out.iterdir())  # nothing written (sweep makes its folder first)


def test_user_caused_exceptions_are_named_and_bugs_are_not():
    assert user_caused(MemoryError()).startswith("out of memory")
    disk = user_caused(OSError(errno.ENOSPC, "No space left on device", "/data/out/ops.parquet"))
    assert disk == "file system: No space left on device (/data/out/ops.parquet)"
    assert user_caused(PermissionError(errno.EACCES, "Permission denied")) == "file system: Permission denied"
    assert user_caused(OSError()) == "file system: OSError"
    size = user_caused(ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum"))
    assert size.startswith("array size: array is too big") and size.endswith("too large for this machine)")
    for bug in (ValueError("could not broadcast"), KeyError("x"), ZeroDivisionError(), TypeError("t")):
        assert user_caused(bug) is None


def test_a_file_name_with_a_newline_stays_on_one_line():
    msg = user_caused(FileNotFoundError(errno.ENOENT, "No such file or directory", "a\nb"))
    assert "\n" not in msg and "a\\nb" in msg


def test_a_bad_parameter_names_its_option():
    opt = click.Option(["--out"])
    assert _usage_message(click.BadParameter("Directory 'x' is a file.", param=opt)) == \
        "--out: Directory 'x' is a file."
    arg = click.Argument(["scenario"])
    assert _usage_message(click.BadParameter("bad", param=arg)) == f"{arg.name}: bad"
    assert _usage_message(click.UsageError("Missing argument 'X'.")) == "Missing argument 'X'."


def test_cgdr_errors_keep_only_their_first_line_unless_verbose(tmp_path, monkeypatch):
    import cgdr_des.cli.inspect_cmds as inspect_cmds

    def raising(*args, **kwargs):
        raise KernelDiagnostic("deadlock at cycle 9\ncore 0: V waits on MTE2_V id 0\ncore 1: S waits")

    monkeypatch.setattr(inspect_cmds, "load_scenario", raising)
    scenario = tmp_path / "s.toml"
    scenario.write_text(GOOD, encoding="utf-8")
    line = one_error_line(invoke("validate", scenario))
    assert line == "error: deadlock at cycle 9"
    verbose = invoke("-v", "validate", scenario)
    assert verbose.exit_code == 2 and verbose.stderr.strip().splitlines()[1:] == [
        "core 0: V waits on MTE2_V id 0", "core 1: S waits"]


def test_an_input_error_is_its_message_after_error(tmp_path, monkeypatch):
    import cgdr_des.cli.inspect_cmds as inspect_cmds

    err = InputError("shape.dk", 7, "a multiple of 16")
    monkeypatch.setattr(inspect_cmds, "load_scenario", lambda *a, **k: (_ for _ in ()).throw(err))
    scenario = tmp_path / "s.toml"
    scenario.write_text(GOOD, encoding="utf-8")
    assert one_error_line(invoke("validate", scenario)) == f"error: {err}"
