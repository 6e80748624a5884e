"""What many test files share: the repository's paths, the tiny scenario, and results worth computing once.

Test modules import the constants (``from conftest import TINY, SCENARIOS``; pytest puts ``tests/`` on
``sys.path``) and request the fixtures by name. Tests that take over ~1 s carry ``@pytest.mark.slow``:
``python -m pytest -m "not slow"`` is the inner loop, CI runs everything.
"""

from __future__ import annotations

import os
import signal
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "cgdr_des"
SCENARIOS = REPO / "scenarios"
SWEEPS = SCENARIOS / "sweeps"

# A shell that starts pytest in the background (``cmd &``) ignores SIGINT for it, and every child inherits
# that: the Ctrl-C tests would then test nothing. Python's own handler back, as an interactive start has.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Where PYTHONDONTWRITEBYTECODE is set (this machine sets it), pytest rewrites the asserts of every test
# module anew in every process that collects them: 6 of the 10 s a collection takes, in each xdist worker.
# The test processes keep their bytecode as Python does by default (pytest's rewritten modules and the
# package's own .pyc files in __pycache__, which git ignores); the modules read from here on are cached.
sys.dont_write_bytecode = False

if str(REPO) not in sys.path:  # analysis/ is a top-level folder of the repository, not an installed package
    sys.path.insert(0, str(REPO))

#: The tiny scenario of the CLI, sweep, override and bad-input tests: one K/Q head, two 16-wide value
#: heads, two sequences (8 and 3 tokens), timing only; a run takes milliseconds. This one writes a
#: run's every output (trace and plots at their defaults); :data:`TINY` writes neither.
TINY_OUTPUTS = """
name = "tiny"
[shape]
nk = 1
nv = 2
dk = 16
dv = 16
[workload]
lengths = [8, 3]
[sim]
numerics = "off"
"""
TINY = TINY_OUTPUTS + 'trace = false\n[output]\nplots = false\n'
#: One 8-token item of one head (dk = dv = 64), timing only, nothing drawn: the smallest real run, for
#: tests about how a command behaves rather than what it computes.
ONE_ITEM = """name = "short"
[shape]
nk = 1
nv = 1
dk = 64
dv = 64
[workload]
lengths = [8]
[sim]
numerics = "off"
trace = false
[output]
plots = false
"""
#: Tests that calibrate item costs (tail studies, advise, the calibration cache) give a dk = 16 shape two
#: K/Q heads: with one, two tokens' 32-byte K rows share a 64-byte data-cache line, so the row loops of
#: ComputeAttnInter and UpdateAndWriteState alternate a miss and a hit from token to token and the
#: compile walks them token by token instead of adding steady iterations at once (a calibration of
#: (1, 2, 16, 16) takes 4.4 s of CPU, of (2, 2, 16, 16) 2.0 s). No real shape has rows that short.
CALIBRATED_NK = 2
#: The two as the mappings ``Scenario.from_dict`` takes (shared: change a copy, ``{**TINY_DICT, ...}``).
TINY_DICT, TINY_OUTPUTS_DICT = tomllib.loads(TINY), tomllib.loads(TINY_OUTPUTS)


#: what children forked by :func:`forked` use, imported once by the forkserver they are forked from
PRELOAD = ["cgdr_des.cli", "cgdr_des.cli.common", "cgdr_des.cli.run", "cgdr_des.results.outdir",
           "cgdr_des.results.export", "cgdr_des.sweep.store", "cgdr_des.item_costs", "cgdr_des.simulation",
           "cgdr_des.hw", "pandas", "pyarrow.parquet", "matplotlib.pyplot", "test_results_frames", "test_cli"]


def forked(target, *args):
    """``target(cwd, env, conn, *args)`` in a new process forked from a multiprocessing forkserver that has
    imported :data:`PRELOAD` once (a fresh interpreter pays ~1 s of imports each time). A separate process
    all the same: its own memory, locks and file descriptors, killed by a signal like any other. ``target``
    is a module-level function of a test module; ``cwd`` and ``env`` are the caller's (the server's are
    those of the test that started it). Returns the process and the reading end of ``conn``: send short
    messages (``conn.send_bytes``), one write each, so a SIGKILL cannot cut one."""
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)  # read when this test process's server first starts
    reader, writer = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=target, args=(os.getcwd(), dict(os.environ), writer, *args), daemon=True)
    proc.start()
    writer.close()  # the child holds the only writing end: its death is the reader's end of file
    return proc, reader


def as_the_caller(cwd: str, env: dict) -> None:
    """In a :func:`forked` child: the caller's working directory and environment, and Ctrl-C let through
    (the forkserver may be the one a process pool of the package started, with Ctrl-C blocked)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)


@pytest.fixture(scope="session")
def tiny_result():
    """The simulation of :data:`TINY` (one per session: treat it as read-only)."""
    from cgdr_des import simulate
    from cgdr_des.scenario import Scenario

    return simulate(Scenario.from_dict(TINY_DICT))


def shortened(sc, max_len: int = 72, max_batch: int = 2):
    """``sc`` with at most ``max_batch`` sequences of at most ``max_len`` tokens (same profile, shape,
    kernel, fidelity): every phase signature of the full run (c == 0 and c > 0, first and last
    chunks, the next item's prefetch) in a run of a second or less."""
    from cgdr_des.scenario import Scenario

    data = sc.model_dump(mode="json", exclude_none=True)
    lengths = [min(int(n), max_len) for n in sc.lengths()[:max_batch]]
    data["workload"] = {k: v for k, v in data["workload"].items()
                        if k not in ("lengths", "distribution", "lengths_csv", "batch")} | {"lengths": lengths}
    return Scenario.from_dict(data)


@pytest.fixture(scope="session")
def shipped_result():
    """``shipped_result(name, short=False)``: the simulation of ``scenarios/<name>.toml`` as shipped (or
    :func:`shortened`), computed once per session and shared by the tests that read it (golden times,
    attribution, outputs, variant bounds; read-only)."""
    import cgdr_des

    done: dict = {}

    def get(name: str, *, short: bool = False):
        if (name, short) not in done:
            sc = cgdr_des.load_scenario(SCENARIOS / f"{name}.toml")
            done[name, short] = cgdr_des.simulate(shortened(sc) if short else sc)
        return done[name, short]

    return get


@pytest.fixture(scope="session", autouse=True)
def _private_calibration_cache(tmp_path_factory):
    """Calibrations cached in a directory of this test run, never the user's cache; subprocesses
    started by tests inherit it through the environment. The processes of one ``pytest -n N`` run
    share it (the cache is safe for concurrent fills): a shape one worker calibrated, the other reads."""
    if os.environ.get("PYTEST_XDIST_WORKER"):  # basetemp is <the run's temp>/popen-gwN: share the run's
        folder = tmp_path_factory.getbasetemp().parent / "calibration-cache"
        folder.mkdir(exist_ok=True)
    else:
        folder = tmp_path_factory.mktemp("calibration-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CGDR_DES_CACHE_DIR", str(folder))
        mp.delenv("CGDR_DES_CACHE", raising=False)
        yield


@pytest.fixture(autouse=True)
def _no_progress(monkeypatch):
    """Progress lines off (tests read stderr line by line); tests of progress turn them on themselves."""
    monkeypatch.setenv("CGDR_DES_PROGRESS", "off")


#: Seconds each of the longest files took in a ``.ci/run`` suite run (pytest --durations, summed per file, at
#: the stop that wrote them): only the order in which ``.ci/run`` hands files to its workers, never a result.
#: A file missing here, or a figure gone stale, costs wall time, not correctness.
LONG_FILES = {
    "tests/test_tail.py": 59, "tests/test_phase_vs_instr_variants.py": 53, "tests/test_report.py": 41,
    "tests/test_command_outputs.py": 33, "tests/test_interrupts.py": 33, "tests/test_simulate.py": 33,
    "tests/test_hw_repeat.py": 30, "tests/test_kill_race.py": 29, "tests/test_code_variants.py": 27,
    "tests/test_phase_core_cache.py": 26, "tests/test_hw_compute_run.py": 25, "tests/test_doc_blocks.py": 21,
    "tests/test_advise.py": 17, "tests/test_attribution.py": 17, "tests/test_faults.py": 16, "tests/test_golden.py": 16,
    "tests/test_variants.py": 15, "tests/test_progress.py": 12, "tests/test_repeat_memo.py": 11,
    "tests/test_pages.py": 10, "tests/test_cli.py": 10, "tests/test_sweep_executors.py": 9,
}


def pytest_collection_modifyitems(config, items):
    """The longest modules first (:data:`LONG_FILES`, longest first), then those holding ``slow`` tests
    (most first), each module kept whole and in its own order.

    ``.ci/run``'s ``--dist loadfile --no-loadscope-reorder`` hands files to its two workers in this
    order: the long files start first and the many short ones fill in at the end, so the two workers
    end together instead of one running a long file alone (xdist's own order, most tests first, puts
    the long files of few tests last; counting slow tests alone put test_tail.py, ~12 % of the suite
    with no slow test then, among the last)."""
    slow: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        slow[module] = slow.get(module, 0) + (item.get_closest_marker("slow") is not None)

    def order(item):
        module = item.nodeid.split("::")[0]
        return -LONG_FILES.get(module, 0), -slow[module]

    items.sort(key=order)  # stable: modules stay contiguous
