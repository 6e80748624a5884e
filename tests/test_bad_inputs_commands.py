"""The catalogue, second round: every command that writes, by class of promise.

- OWNERSHIP: ``--out`` a symlink, a directory of the user's files, another command's output (even
  with ``--force``), a previous output without ``--force``: refused, nothing touched;
- BOUNDS: every count bounded before work, at the CLI and in files alike;
- LIMITS: what used to be an internal error (exit 1) on user input: TOML nested ~400 deep or holding
  a 5 000-digit integer (scenario, sweep, ``--set``, profile), ``--scheduler bogus``, a ``[sample]``
  law drawing inf, tail options refused only when the first point ran;
- ECHO: errors about a file the user pointed at quote at most ~40 characters of the offending value.

Each case is one stderr line starting with ``error: <field>``, exit code 2, under 2 s of CPU
(tests/refusal_time.py: CPU time, which other processes' load does not inflate), and the
directory it ran in is byte for byte what it was (nothing written, not even a lock file). Simulations
are the stub of tests/test_cli.py, so that a refusal that came after a simulation would show.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from refusal_time import within

from cgdr_des.cli import main
from cgdr_des.results import outdir as od

TINY = ('name = "measured_tiny"\n[shape]\nnk = 1\nnv = 1\ndk = 16\ndv = 16\n[workload]\nlengths = [8]\n'
        '[sim]\nnumerics = "off"\ntrace = false\n[output]\nplots = false\n')
DIST = TINY.replace("lengths = [8]", 'batch = 2\ndistribution = {kind = "uniform", min = 4, max = 16}')
DEEP_ARRAY = "[" * 400 + "]" * 400
DEEP_TABLE = "{a = " * 400 + "1" + "}" * 400
DEEP_HEADER = "[" + ".".join(["a"] * 400) + "]\n"
DIGITS = "7" * 5000


@pytest.fixture
def d(tmp_path, monkeypatch):
    """A folder of tiny inputs; the stub simulator; the current directory (commands use relative paths)."""
    from test_cli import stub_simulate

    import cgdr_des.cli.common as common

    monkeypatch.setattr(common, "_simulate", lambda: stub_simulate)
    monkeypatch.chdir(tmp_path)
    files = {"tiny.toml": TINY, "dist.toml": DIST, "m.csv": "scenario,latency_us\ntiny.toml,50\n",
             "w.toml": 'name = "w"\nbase = "tiny.toml"\n'}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def tree(root: Path) -> dict[str, bytes | str]:
    """Every path under ``root`` (symlinks as their target) with its bytes: 'nothing was written'."""
    out: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        key = p.relative_to(root).as_posix()
        out[key] = f"-> {p.readlink()}" if p.is_symlink() else (p.read_bytes() if p.is_file() else "dir")
    return out


def refused(d: Path, args: list[str], prefix: str, *, code: int = 2) -> str:
    """Run ``cgdr-des ARGS`` in ``d``: one ``error: PREFIX`` line, the exit code, fast, nothing written."""
    before = tree(d)
    with within():
        res = CliRunner().invoke(main, [str(a) for a in args])
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == code, res.output
    assert len(lines) == 1 and lines[0].startswith(f"error: {prefix}"), res.stderr
    assert "Traceback" not in res.output
    assert tree(d) == before, "something was written"
    return lines[0]


def file(d: Path, name: str, text: str) -> str:
    (d / name).write_text(text, encoding="utf-8")
    return name


def output_of(d: Path, command: str, name: str = "prev") -> str:
    """A previous output of ``command`` (as OutputDir writes it)."""
    if command == "sweep":
        (d / name).mkdir()
        (d / name / "sweep.json").write_text("{}", encoding="utf-8")
        return name
    with od.OutputDir(d / name, command=command) as staging:
        (staging / "x.json").write_text("{}", encoding="utf-8")
    (d / f".{name}.cgdr-lock").unlink()  # so that "nothing written" compares the output alone
    return name


# ---------------------------------------------------------------- ownership

WRITERS = {  # the arguments of each command, without --out
    "run": ["run", "tiny.toml"],
    "compare": ["compare", "tiny.toml"],
    "tail": ["tail", "dist.toml", "--batches", "2"],
    "sweep": ["sweep", "w.toml", "--workers", "0"],
    "sensitivity": ["sensitivity", "tiny.toml", "--samples", "0"],
    "measured": ["measured", "m.csv"],
    "calibrate": ["calibrate", "m.csv", "--fields", "vec_pipe_delay_cycles"],
    "advise": ["advise", "dist.toml", "--batches", "2", "--samples", "0"],
}


def _symlink(d: Path) -> str:
    (d / "real").mkdir()
    (d / "link").symlink_to(d / "real")
    return "link"


def _users_files(d: Path) -> str:
    (d / "mine").mkdir()
    for name in ("interval.json", "residuals.csv", "verdicts.json", "thesis.tex"):
        (d / "mine" / name).write_text("the user's", encoding="utf-8")
    return "mine"


def _plain_file(d: Path) -> str:
    return file(d, "f", "x")


OWNERSHIP_TARGETS = {"a symlink": (_symlink, "not a symlink"), "the user's files": (_users_files, "other files"),
                     "a file": (_plain_file, "is a file")}


@pytest.mark.parametrize("command", WRITERS)
@pytest.mark.parametrize("target", OWNERSHIP_TARGETS)
def test_ownership_of_out(d, command, target):
    make, why = OWNERSHIP_TARGETS[target]
    out = make(d)
    force = [] if command == "sweep" else ["--force"]
    assert why in refused(d, [*WRITERS[command], "--out", out, *force], "--out")


@pytest.mark.parametrize("command", WRITERS)
def test_another_commands_output_is_refused_even_with_force(d, command):
    other = "sensitivity" if command == "run" else "run"
    out = output_of(d, other)
    force = [] if command == "sweep" else ["--force"]
    line = refused(d, [*WRITERS[command], "--out", out, *force], "--out")
    assert f"it holds a '{other}' output, which --force does not replace" in line


@pytest.mark.parametrize("command", [c for c in WRITERS if c != "sweep"])
def test_a_previous_output_needs_force(d, command):
    assert "--force" in refused(d, [*WRITERS[command], "--out", output_of(d, command)], "--out")


def test_a_sweep_directory_is_not_a_runs(d):
    refused(d, [*WRITERS["run"], "--out", output_of(d, "sweep"), "--force"], "--out")


@pytest.mark.parametrize("command", ["compare", "tail", "sensitivity", "measured", "calibrate", "advise"])
def test_plot_refuses_an_output_without_the_files_its_command_writes(d, command):
    # plot redraws any command's output (tests/test_command_outputs.py); one that lacks its frames is refused
    assert "is missing" in refused(d, ["plot", output_of(d, command)], "DIRECTORY")


def test_plot_refuses_while_a_writer_holds_the_lock(d):
    from test_results_export import result

    from cgdr_des.results.export import write_results

    write_results(result(), d / "o", trace=False, plots=False)
    with od.OutputDir(d / "o", force=True):  # a `run --force` at work on the same directory
        assert "no other cgdr-des command" in refused(d, ["plot", "o"], "DIRECTORY")


# ---------------------------------------------------------------- bounds

def _sweep(d: Path, body: str) -> str:
    return file(d, "s.toml", 'name = "s"\nbase = "tiny.toml"\n' + body)


BOUND_CASES = {
    "tail --batches 10^6 + 1": (lambda d: ["tail", "dist.toml", "--out", "o", "--batches", 10**6 + 1], "--batches"),
    "tail --batches 10^12": (lambda d: ["tail", "dist.toml", "--out", "o", "--batches", 10**12], "--batches"),
    "tail --batches 2^64": (lambda d: ["tail", "dist.toml", "--out", "o", "--batches", 2**64], "--batches"),
    "tail --batches 0": (lambda d: ["tail", "dist.toml", "--out", "o", "--batches", 0], "--batches"),
    "tail check_batches 51": (lambda d: ["tail", "dist.toml", "--out", "o", "--set", "study.check_batches=51"],
                              "study.check_batches"),
    "sweep replications 10^7": (lambda d: ["sweep", _sweep(d, "replications = 10000000"), "--out", "o"],
                                "sweep.replications"),
    "sweep replications 10^12": (lambda d: ["sweep", _sweep(d, "replications = 1000000000000"), "--out", "o"],
                                 "sweep.replications"),
    "sweep grid x replications": (lambda d: ["sweep", _sweep(d, "replications = 1000\n[grid]\n\"kernel.policy\" = ["
                                                             + ", ".join(['"greedy"'] * 1000) + "]"), "--out", "o"],
                                  "sweep.points"),
    "sweep [sample] n 10^7": (lambda d: ["sweep", _sweep(d, '[sample]\nn = 10000000\n"shape.dk" = {kind = "choice", '
                                                         'values = [16]}'), "--out", "o"], "sweep.sample.n"),
    "sweep [tail] batches 10^7": (lambda d: ["sweep", _sweep(d, 'kind = "tail"\n[tail]\nbatches = 10000000'),
                                             "--out", "o"], "sweep.tail.batches"),
    "sweep --workers 10^5": (lambda d: ["sweep", "w.toml", "--out", "o", "--workers", 100_000], "--workers"),
    "sweep --workers -1": (lambda d: ["sweep", "w.toml", "--out", "o", "--workers", -1], "--workers"),
    "advise --batches 10^6 + 1": (lambda d: ["advise", "dist.toml", "--out", "o", "--batches", 10**6 + 1],
                                  "--batches"),
    "advise --batches 0": (lambda d: ["advise", "dist.toml", "--out", "o", "--batches", 0], "--batches"),
    "advise --samples 10^7": (lambda d: ["advise", "dist.toml", "--out", "o", "--samples", 10**7], "--samples"),
    "advise --samples -1": (lambda d: ["advise", "dist.toml", "--out", "o", "--samples", -1], "--samples"),
    "advise --variants of 300 characters": (lambda d: ["advise", "dist.toml", "--out", "o", "--variants", "Q" * 300],
                                            "--variants"),
    "sweep [advise] samples -1": (lambda d: ["sweep", _sweep(d, 'kind = "advise"\n[advise]\nsamples = -1'),
                                             "--out", "o"], "sweep.advise.samples"),
    "sweep [advise] variants bogus": (lambda d: ["sweep", _sweep(d, 'kind = "advise"\n[advise]\nvariants = ["x"]'),
                                                 "--out", "o"], "sweep.advise.variants"),
    "sensitivity --samples 10^7": (lambda d: ["sensitivity", "tiny.toml", "--out", "o", "--samples", 10**7],
                                   "--samples"),
    "sensitivity --samples -1": (lambda d: ["sensitivity", "tiny.toml", "--out", "o", "--samples", -1], "--samples"),
    "sensitivity --seed -1": (lambda d: ["sensitivity", "tiny.toml", "--out", "o", "--seed", -1], "--seed"),
    "sensitivity --seed 2^63": (lambda d: ["sensitivity", "tiny.toml", "--out", "o", "--seed", 2**63], "--seed"),
    "measurements of 10 001 rows": (lambda d: ["measured", file(d, "big.csv", "scenario,latency_us\n"
                                                                + "tiny.toml,50\n" * 10_001), "--out", "o"],
                                    "measurements"),
}


@pytest.mark.parametrize("case", sorted(BOUND_CASES))
def test_bounds(d, case):
    make, prefix = BOUND_CASES[case]
    refused(d, make(d), prefix)


# ---------------------------------------------------------------- exit 1 -> 2: TOML limits, choices, laws

def _scenario(d: Path, extra: str) -> str:
    return file(d, "bad.toml", TINY + extra)


LIMIT_CASES = {
    "scenario: arrays 400 deep": (lambda d: ["validate", _scenario(d, f"[study]\npolicies = {DEEP_ARRAY}\n")],
                                  "scenario"),
    "scenario: inline tables 400 deep": (lambda d: ["validate", _scenario(d, f"x = {DEEP_TABLE}\n")], "scenario"),
    "scenario: dotted header 400 deep": (lambda d: ["validate", _scenario(d, DEEP_HEADER)], "scenario"),
    "scenario: a 5000-digit integer": (lambda d: ["validate", _scenario(d, f"[kernel]\nbuffer_num = {DIGITS}\n")],
                                       "scenario"),
    "sweep: arrays 400 deep": (lambda d: ["sweep", _sweep(d, f"[grid]\n\"shape.dk\" = {DEEP_ARRAY}"), "--out", "o"],
                               "sweep"),
    "sweep: inline tables 400 deep": (lambda d: ["sweep", _sweep(d, f"[set]\nx = {DEEP_TABLE}"), "--out", "o"],
                                      "sweep"),
    "sweep: dotted header 400 deep": (lambda d: ["sweep", _sweep(d, DEEP_HEADER), "--out", "o"], "sweep"),
    "sweep: a 5000-digit integer": (lambda d: ["sweep", _sweep(d, f"replications = {DIGITS}"), "--out", "o"],
                                    "sweep"),
    "--set arrays 400 deep": (lambda d: ["run", "tiny.toml", "--out", "o", "--set", f"shape.dk={DEEP_ARRAY}"],
                              "shape.dk"),
    "--set inline tables 400 deep": (lambda d: ["run", "tiny.toml", "--out", "o", "--set", f"shape.dk={DEEP_TABLE}"],
                                     "shape.dk"),
    "--set a 5000-digit integer": (lambda d: ["run", "tiny.toml", "--out", "o", "--set", f"shape.dk={DIGITS}"],
                                   "shape.dk"),
    "profile: a 5000-digit integer": (lambda d: ["validate", _scenario_with_profile(d, f"x = {DIGITS}\n")],
                                      "hardware.profile"),
    "profile: inline tables 400 deep": (lambda d: ["validate", _scenario_with_profile(d, f"x = {DEEP_TABLE}\n")],
                                        "hardware.profile"),
    "sweep --scheduler bogus": (lambda d: ["sweep", "w.toml", "--out", "o", "--scheduler", "bogus"], "--scheduler"),
    "[sample] law drawing inf for an integer field": (
        lambda d: ["sweep", _sweep(d, '[sample]\nn = 8\n"shape.dk" = {kind = "normal", mean = 1.7e308, std = 1e308, '
                                   'integer = true}'), "--out", "o"], "sweep.sample.shape.dk"),
    "[sample] uniform whose width overflows": (
        lambda d: ["sweep", _sweep(d, '[sample]\nn = 8\n"shape.dk" = {kind = "uniform", low = -1e308, high = 1e308, '
                                   'integer = true}'), "--out", "o"], "sweep.sample.shape.dk.high"),
    "[sample] low = nan": (lambda d: ["sweep", _sweep(d, '[sample]\nn = 8\n"shape.dk" = {kind = "uniform", low = nan, '
                                                         'high = 1.0}'), "--out", "o"], "sweep.sample"),
    "tail points: batches = -5": (lambda d: ["sweep", _sweep(d, 'kind = "tail"\n[tail]\nbatches = -5'), "--out", "o"],
                                  "sweep.tail.batches"),
    "tail points: batches = \"str\"": (lambda d: ["sweep", _sweep(d, 'kind = "tail"\n[tail]\nbatches = "str"'),
                                                  "--out", "o"], "sweep.tail.batches"),
    "tail points: an unknown key": (lambda d: ["sweep", _sweep(d, 'kind = "tail"\n[tail]\nbogus = 1'), "--out", "o"],
                                    "sweep.tail.bogus"),
    "tail points without a distribution": (lambda d: ["sweep", _sweep(d, 'kind = "tail"'), "--out", "o"], "sweep"),
    "no point validates": (lambda d: ["sweep", _sweep(d, '[grid]\n"shape.nv" = [3, 5]\n"shape.nk" = [2]'),
                                      "--out", "o"], "sweep"),
}


def _scenario_with_profile(d: Path, profile_text: str) -> str:
    file(d, "p.toml", profile_text)
    return file(d, "bad.toml", TINY.replace("[shape]", '[hardware]\nprofile = "p.toml"\n[shape]'))


@pytest.mark.parametrize("case", sorted(LIMIT_CASES))
def test_limits_are_exit_2(d, case):
    make, prefix = LIMIT_CASES[case]
    refused(d, make(d), prefix)


def test_a_file_of_any_size_is_read_bounded(d, monkeypatch):
    import cgdr_des.scenario.model as model

    monkeypatch.setattr(model, "MAX_TOML_BYTES", 100)
    assert "at most" in refused(d, ["validate", "tiny.toml"], "scenario")


# ---------------------------------------------------------------- nothing echoed

LONG = "Q" * 300


def _measurements(d: Path, rows: str, header: str = "scenario,latency_us") -> str:
    return file(d, "e.csv", f"{header}\n{rows}\n")


ECHO_CASES = {
    "measured: a 300-character latency cell": (
        lambda d: ["measured", _measurements(d, f"tiny.toml,{LONG}"), "--out", "o"], "measurements row 2.latency_us"),
    "calibrate: a 300-character latency cell": (
        lambda d: ["calibrate", _measurements(d, f"tiny.toml,{LONG}"), "--out", "o", "--fields",
                   "vec_pipe_delay_cycles"], "measurements row 2.latency_us"),
    "measured: a 300-character scenario cell": (
        lambda d: ["measured", _measurements(d, f"{LONG}.toml,50"), "--out", "o"], "measurements row 2.scenario"),
    "calibrate: a 300-character scenario cell": (
        lambda d: ["calibrate", _measurements(d, f"{LONG}.toml,50"), "--out", "o", "--fields",
                   "vec_pipe_delay_cycles"], "measurements row 2.scenario"),
    "measured: a 300-character msprof_csv cell": (
        lambda d: ["measured", _measurements(d, f"tiny.toml,,{LONG}.csv", "scenario,latency_us,msprof_csv"),
                   "--out", "o"], "msprof_csv"),
    "measured: an msprof duration of 300 characters": (
        lambda d: ["measured", _measurements(d, "tiny.toml,,p.csv", "scenario,latency_us,msprof_csv"), "--out", "o"]
        if file(d, "p.csv", f"Task Duration(us)\n{LONG}\n") else [], "msprof_csv"),
    "measured: latency inf": (lambda d: ["measured", _measurements(d, "tiny.toml,inf"), "--out", "o"],
                              "measurements row 2.latency_us"),
    "measured: latency 1e400": (lambda d: ["measured", _measurements(d, "tiny.toml,1e400"), "--out", "o"],
                                "measurements row 2.latency_us"),
    "calibrate: latency nan": (lambda d: ["calibrate", _measurements(d, "tiny.toml,nan"), "--out", "o", "--fields",
                                          "vec_pipe_delay_cycles"], "measurements row 2.latency_us"),
    "measured: msprof duration inf": (
        lambda d: ["measured", _measurements(d, "tiny.toml,,p.csv", "scenario,latency_us,msprof_csv"), "--out", "o"]
        if file(d, "p.csv", "Task Duration(us)\ninf\n") else [], "msprof_csv"),
    "measured --hypotheses of 300 characters": (
        lambda d: ["measured", "m.csv", "--out", "o", "--hypotheses", LONG], "--hypotheses"),
    "sweep --scheduler of 300 characters": (
        lambda d: ["sweep", "w.toml", "--out", "o", "--scheduler", LONG], "--scheduler"),
}


@pytest.mark.parametrize("case", sorted(ECHO_CASES))
def test_nothing_echoed(d, case):
    make, prefix = ECHO_CASES[case]
    line = refused(d, make(d), prefix)
    assert "Q" * 41 not in line, line


def test_an_unknown_hardware_path_is_cut(d):
    import cgdr_des
    from cgdr_des.errors import InputError
    from cgdr_des.workload.tensors import make_inputs

    with pytest.raises(InputError) as info:
        cgdr_des.chunk_gated_delta_rule(**make_inputs([5], 1, 1, 16, 16, seed=0).kwargs(),
                                        hardware=f"/secret/{LONG}/profile.toml")
    assert info.value.field == "hardware.profile" and "Q" * 41 not in str(info.value)


# ---------------------------------------------------------------- a full disk, every writer

FULL_DISK = {  # what each command writes last, to fail with ENOSPC
    "sensitivity": ("cgdr_des.timing.sensitivity", "write_sensitivity"),
    "measured": ("pandas.DataFrame", "to_csv"),
    "calibrate": ("cgdr_des.timing.profile_toml", "dump_profile"),
}


@pytest.mark.parametrize("command", FULL_DISK)
def test_a_full_disk_is_one_line_naming_out_and_leaves_nothing(d, command, monkeypatch):
    import errno
    import importlib

    import pandas as pd

    where, name = FULL_DISK[command]
    owner = pd.DataFrame if where == "pandas.DataFrame" else importlib.import_module(where)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(owner, name, full)
    args = [*WRITERS[command], "--out", "o"] + (["--fields", "vec_pipe_delay_cycles"] if command == "sensitivity"
                                                else [])
    before = set(tree(d))
    res = CliRunner().invoke(main, args)
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert lines[0].startswith("error: --out: got 'o'") and "no space left on device" in lines[0]
    assert set(tree(d)) - before == {".o.cgdr-lock"}  # the lock file, which the next run takes; no output


@pytest.mark.slow
def test_every_writing_command_records_itself(d):
    for command in ("sensitivity", "measured", "calibrate"):
        extra = ["--fields", "vec_pipe_delay_cycles"] if command == "sensitivity" else []
        res = CliRunner().invoke(main, [*WRITERS[command], "--out", command, *extra])
        assert res.exit_code == 0, res.output
        assert json.loads((d / command / "manifest.json").read_text(encoding="utf-8"))["command"] == command
        od.check_complete(d / command)
