"""Start-up stays light: the CLI and ``import cgdr_des`` load no pandas, matplotlib, pyarrow or SimPy.

Each check runs in a fresh interpreter (this test process has long imported everything) and reads
that interpreter's ``sys.modules``; the installed entry point is checked through ``-X importtime``,
which lists every module a real ``python -m cgdr_des --help`` imported. Speed itself is measured by
analysis/benchmarks/bench_startup.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cgdr_des.cli import main

ROOT = Path(__file__).resolve().parent.parent
#: what --help, a refusal and ``import cgdr_des`` must not pay for
HEAVY = ("pandas", "matplotlib", "pyarrow", "simpy")
BAD_SCENARIO = 'name = "bad"\n[shape]\nnk = 8\nnv = -1\ndk = 64\ndv = 64\n[workload]\nlengths = [64]\n'


def python(*args: str) -> subprocess.CompletedProcess:
    """A fresh interpreter importing this tree (PYTHONPATH first), run at the repository root."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": path})


PROBE = """
import contextlib, io, json, sys
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    exec({code!r})
top = sorted({{m.split(".")[0] for m in sys.modules}} & {{"pandas", "matplotlib", "pyarrow", "simpy", "numpy"}})
print(json.dumps({{"modules": top, "stdout": out.getvalue(), "stderr": err.getvalue()}}))
"""


def loaded_after(code: str) -> dict:
    """Which of HEAVY and numpy a fresh interpreter holds after running ``code``, and what it printed."""
    proc = python("-c", PROBE.format(code=code))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_cli(args: list[str]) -> str:
    """Python that runs ``cgdr-des ARGS`` as the entry point does, keeping its exit code in ``rc``."""
    return (f"from cgdr_des.cli import main\ntry:\n    rc = main({args!r}, standalone_mode=False)\n"
            f"except SystemExit as exc:\n    rc = exc.code\nprint('rc', rc)")


def test_importing_the_cli_loads_nothing_heavy():
    got = loaded_after("import cgdr_des.cli")
    assert not set(got["modules"]) & set(HEAVY), got["modules"]
    assert "numpy" not in got["modules"]  # not even numpy: --help needs none of it


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["tail", "--help"], ["sweep", "--help"],
                                  ["sensitivity", "--help"]])
def test_help_loads_nothing_heavy(args):
    got = loaded_after(run_cli(args))
    assert "Usage:" in got["stdout"] and "rc 0" in got["stdout"], got
    assert not set(got["modules"]) & {*HEAVY, "numpy"}, got["modules"]


def test_the_entry_point_imports_nothing_heavy_for_help():
    """``python -m cgdr_des --help`` as a user runs it: -X importtime lists every module it imported."""
    proc = python("-X", "importtime", "-m", "cgdr_des", "--help")
    assert proc.returncode == 0 and "Commands:" in proc.stdout, proc.stderr[-2000:]
    imported = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in proc.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    assert "click" in imported and "cgdr_des" in imported  # the listing is the real one
    assert not imported & set(HEAVY), imported & set(HEAVY)


def test_a_refusal_is_one_line_without_the_heavy_stack(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(BAD_SCENARIO, encoding="utf-8")
    got = loaded_after(run_cli(["validate", str(bad)]))
    assert "rc 2" in got["stdout"]
    assert got["stderr"].splitlines() == ["error: shape.nv: got -1; input should be greater than or equal to 1"]
    assert not set(got["modules"]) & set(HEAVY), got["modules"]


@pytest.mark.slow
def test_import_cgdr_des_is_light_and_its_names_resolve_on_use():
    code = ("import sys, cgdr_des\n"
            "light = sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'matplotlib', 'pyarrow', 'simpy'})\n"
            "print('light', light)\n"
            "assert set(cgdr_des.__all__) <= set(dir(cgdr_des))\n"
            "print('tail', cgdr_des.tail.run_study.__module__)\n"
            "print('sweep', cgdr_des.sweep.run_sweep.__module__)\n"
            "print('timing', cgdr_des.timing.__name__)\n"
            "print('tiling', cgdr_des.kernel.tiling.compute_tiling.__module__)\n"
            "print('names', [getattr(cgdr_des, n).__name__ for n in cgdr_des.__all__])\n")
    got = loaded_after(code)
    out = got["stdout"].splitlines()
    assert out[0] == "light []"
    assert out[1:5] == ["tail cgdr_des.tail.study", "sweep cgdr_des.sweep.runner", "timing cgdr_des.timing",
                        "tiling cgdr_des.kernel.tiling"]
    assert out[5] == "names " + str(["CgdrError", "InputError", "KernelDiagnostic", "chunk_gated_delta_rule",
                                     "cgdr_des.kernel", "load_scenario", "make_inputs", "simulate", "cgdr_des.sweep",
                                     "cgdr_des.tail", "cgdr_des.timing"])


def test_the_lazy_names_are_the_modules_own():
    import cgdr_des
    from cgdr_des import errors, op, scenario, simulation
    from cgdr_des.workload import tensors

    assert cgdr_des.load_scenario is scenario.load_scenario and cgdr_des.simulate is simulation.simulate
    assert cgdr_des.chunk_gated_delta_rule is op.chunk_gated_delta_rule
    assert cgdr_des.make_inputs is tensors.make_inputs and cgdr_des.InputError is errors.InputError
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        cgdr_des.no_such_name  # noqa: B018


@pytest.mark.parametrize("command", sorted(main.commands))
def test_every_command_has_help(command):
    res = CliRunner().invoke(main, [command, "--help"])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[0].startswith(f"Usage: main {command} ")
    options = [p.opts[0] for p in main.commands[command].params if p.param_type_name == "option"]
    assert all(o in res.output for o in [*options, "--help"]), options
