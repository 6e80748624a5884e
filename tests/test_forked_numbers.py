"""The op's numbers in a forked child beside the replay (cgdr_des/forked.py, ``processes=2``).

Held to the same call in one process: the same bits in out, final_state and every frame; the child's
errors and warnings surface in the caller; the child never outlives the call (an interrupted block,
a parent killed with SIGKILL); ``"auto"`` forks only where it can and where it pays.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cgdr_des
from cgdr_des import forked, pool
from cgdr_des.errors import InputError, KernelDiagnostic
from cgdr_des.kernel.functional import build_launch
from cgdr_des.kernel.launch import Widened
from cgdr_des.op import PROCESSES_VAR, resolve_processes
from cgdr_des.simulation import FORK_MIN_ITEMS, fork_pays
from cgdr_des.workload.tensors import make_inputs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork runs on Linux only")

#: two sequences, GQA, a V-tile split: every output path of the numbers, in a few hundred ms
INPUTS = make_inputs([150, 70], 2, 4, 32, 48, seed=3)


def children() -> set[int]:
    """The pids whose parent is this process (Linux /proc), zombies included."""
    me = os.getpid()
    return {pid for pid in _all_pids() if _ppid(pid) == me}


@pytest.fixture
def no_child_left():
    """Asserts, after the test, that this process has no child it did not have before (a pool's
    forkserver or resource tracker, started by another test of this process, may be one)."""
    before = children()
    yield
    assert children() <= before


@pytest.fixture
def forks(monkeypatch):
    """The pids of the children :class:`forked.beside` has forked so far in this test."""
    made = []
    real = forked.beside._fork

    def counted(self):
        real(self)
        made.append(self.pid)

    monkeypatch.setattr(forked.beside, "_fork", counted)
    return made


def test_two_processes_give_the_same_bits_and_frames_as_one(forks, no_child_left):
    one = cgdr_des.chunk_gated_delta_rule(**INPUTS.kwargs(), processes=1)
    assert forks == []
    two = cgdr_des.chunk_gated_delta_rule(**INPUTS.kwargs(), processes=2)
    assert len(forks) == 1 and forks[0] is not None
    for name in ("out", "final_state"):
        a, b = getattr(one, name), getattr(two, name)
        assert a.any() and np.array_equal(a, b) and b.flags.owndata  # an ordinary array, not the shared map
    for frame in ("ops", "items", "cores", "summary"):
        pd.testing.assert_frame_equal(getattr(one.result, frame), getattr(two.result, frame))


def test_the_child_s_error_is_raised_in_the_caller_with_where_it_came_from(monkeypatch, forks, no_child_left):
    def broken(launch):
        raise KernelDiagnostic("DotFp32 count beyond its in-place limit (test)")

    monkeypatch.setattr("cgdr_des.simulation.compute_numbers", broken)  # the child inherits the patch
    with pytest.raises(KernelDiagnostic, match="in-place limit") as info:
        cgdr_des.chunk_gated_delta_rule(**INPUTS.kwargs(), processes=2)
    assert len(forks) == 1 and "raised in the forked numbers process" in info.value.__notes__[0]


def test_the_child_s_error_wins_over_the_replay_s_as_it_would_one_after_the_other(monkeypatch, no_child_left):
    monkeypatch.setattr("cgdr_des.simulation.compute_numbers", lambda launch: 1 / 0)

    def replay_fails(self, programs):
        raise ValueError("the replay failed too")

    monkeypatch.setattr("cgdr_des.simulation.Machine.run", replay_fails)
    for processes in (1, 2):
        with pytest.raises(ZeroDivisionError):
            cgdr_des.chunk_gated_delta_rule(**INPUTS.kwargs(), processes=processes)


class Owner:
    """What :func:`forked.beside` fills: one array attribute."""

    def __init__(self):
        self.out = np.zeros(4)


def test_the_work_runs_in_another_process_and_its_arrays_come_back_private(no_child_left):
    owner = Owner()
    with forked.beside(lambda: owner.out.fill(os.getpid()), owner, ("out",)):
        here = os.getpid()
    assert owner.out[0] not in (0, here) and (owner.out == owner.out[0]).all() and owner.out.flags.owndata


def test_the_block_s_error_is_raised_when_the_child_had_none_and_the_child_is_reaped(no_child_left):
    owner = Owner()
    with pytest.raises(ValueError, match="block"), forked.beside(lambda: owner.out.fill(1), owner, ("out",)):
        raise ValueError("block")


def test_an_interrupted_block_ends_the_child_at_once(no_child_left):
    owner = Owner()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt), forked.beside(lambda: time.sleep(30), owner, ("out",)):
        raise KeyboardInterrupt
    assert time.monotonic() - t0 < 5


def warn_here():
    warnings.warn("fp16 cast overflowed (test)", RuntimeWarning, stacklevel=1)


def test_a_warning_shown_once_per_place_is_shown_once_whichever_process_issued_it():
    owner = Owner()
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("default")
        with forked.beside(warn_here, owner, ("out",)):
            pass
        warn_here()  # the same place again, here: the registry has the child's showing
    assert [str(w.message) for w in shown] == ["fp16 cast overflowed (test)"]
    assert shown[0].filename == __file__


def test_the_child_s_warnings_are_issued_again_in_the_caller():
    owner = Owner()

    def work():
        warnings.warn("fp16 cast overflowed (test)", RuntimeWarning, stacklevel=1)
        owner.out[:] = 2

    with pytest.warns(RuntimeWarning, match="overflowed"), forked.beside(work, owner, ("out",)):
        pass
    assert owner.out.tolist() == [2, 2, 2, 2]


def test_two_processes_are_one_beside_a_blas_that_does_not_survive_a_fork(monkeypatch, forks):
    monkeypatch.setattr(forked, "fork_safe", lambda: False)
    two = cgdr_des.chunk_gated_delta_rule(**INPUTS.kwargs(), processes=2)
    one = cgdr_des.chunk_gated_delta_rule(**INPUTS.kwargs(), processes=1)
    assert forks == [] and np.array_equal(one.out, two.out)


def test_a_refused_fork_runs_the_work_here_first(monkeypatch):
    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(forked.os, "fork", no_fork)
    one = cgdr_des.chunk_gated_delta_rule(**INPUTS.kwargs(), processes=1)
    two = cgdr_des.chunk_gated_delta_rule(**INPUTS.kwargs(), processes=2)
    assert np.array_equal(one.out, two.out) and np.array_equal(one.final_state, two.final_state)


def test_results_come_back_when_the_caller_ignores_sigchld(no_child_left):
    old = signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the child itself
    try:
        two = cgdr_des.chunk_gated_delta_rule(**INPUTS.kwargs(), processes=2)
    finally:
        signal.signal(signal.SIGCHLD, old)
    one = cgdr_des.chunk_gated_delta_rule(**INPUTS.kwargs(), processes=1)
    assert np.array_equal(one.out, two.out) and np.array_equal(one.final_state, two.final_state)


def test_the_child_never_returns_into_the_caller_s_code(monkeypatch, tmp_path, no_child_left):
    def broken(*args):
        raise ZeroDivisionError  # before the child's own error handling

    monkeypatch.setattr(forked, "_child", broken)
    with pytest.raises(RuntimeError, match="without a result"), forked.beside(lambda: None, Owner(), ("out",)):
        pass
    (tmp_path / str(os.getpid())).touch()  # a child that came back here would add its own pid
    assert [p.name for p in tmp_path.iterdir()] == [str(os.getpid())]


PESTERED = textwrap.dedent("""
    import os, signal, threading, time
    import numpy as np
    from cgdr_des import forked

    class Owner:
        out = np.zeros(4)

    def pester():
        while True:
            time.sleep(0.003)
            os.kill(os.getpid(), signal.SIGINT)

    fds = len(os.listdir("/proc/self/fd"))
    threading.Thread(target=pester, daemon=True).start()
    done = cut = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < 2:
        try:
            with forked.beside(lambda: None, Owner, ("out",)):
                pass
            done += 1
        except KeyboardInterrupt:
            cut += 1
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    me = str(os.getpid())
    kids = [p for p in os.listdir("/proc") if p.isdigit() and (os.path.exists(f"/proc/{p}/stat"))
            and open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1] == me]
    print(done, cut, len(kids), len(os.listdir("/proc/self/fd")) - fds, flush=True)
    os._exit(0)
""")


@pytest.mark.slow
def test_ctrl_c_every_3_ms_leaves_no_child_and_no_open_pipe():
    out = subprocess.run([sys.executable, "-c", PESTERED], capture_output=True, text=True, timeout=60)
    done, cut, kids, fds = map(int, out.stdout.split())
    assert cut > 100 and (kids, fds) == (0, 0), out.stderr[-2000:]


CALLER = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    from cgdr_des import forked

    class Owner:
        out = np.zeros(1)

    with forked.beside(lambda: time.sleep(60), Owner, ("out",)):
        print(os.getpid(), flush=True)
        time.sleep(60)
""")


@pytest.mark.slow
def test_a_parent_killed_with_sigkill_takes_its_child_along():
    proc = subprocess.Popen([sys.executable, "-c", CALLER], stdout=subprocess.PIPE, text=True)
    parent = int(proc.stdout.readline())
    deadline = time.monotonic() + 10
    while not (kids := [p for p in _all_pids() if _ppid(p) == parent]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(kids) == 1
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    while pool._alive(kids[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pool._alive(kids[0])


def _all_pids() -> list[int]:
    return [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()]


def _ppid(pid: int) -> int | None:
    fields = pool.proc_stat(pid)
    return int(fields[1]) if fields else None



@pytest.mark.parametrize(("value", "env", "expected"), [
    (None, None, "auto"), (None, "1", 1), (None, " 2 ", 2), ("auto", "1", "auto"), (2, "1", 2), ("1", None, 1),
])
def test_the_keyword_then_the_environment_then_auto(value, env, expected, monkeypatch):
    if env is None:
        monkeypatch.delenv(PROCESSES_VAR, raising=False)
    else:
        monkeypatch.setenv(PROCESSES_VAR, env)
    assert resolve_processes(value) == expected


@pytest.mark.parametrize(("value", "env", "field"), [
    (3, None, "processes"), (True, None, "processes"), ("two", None, "processes"), (None, "4", PROCESSES_VAR),
])
def test_a_bad_processes_value_is_one_line_naming_where_it_came_from(value, env, field, monkeypatch):
    if env is not None:
        monkeypatch.setenv(PROCESSES_VAR, env)
    with pytest.raises(InputError, match=f"^{field}: got .*; 1, 2 or 'auto'$"):
        cgdr_des.chunk_gated_delta_rule(**INPUTS.kwargs(), processes=value)


def _launch(lengths, nv=4, numerics="kernel"):
    x = make_inputs(lengths, 2, nv, 32, 32, seed=0)
    return build_launch(**x.kwargs(), numerics=numerics)


def test_auto_forks_from_the_item_count_where_it_can(monkeypatch):
    monkeypatch.setattr(forked, "usable_cpus", lambda: 2)
    monkeypatch.setattr(forked.threading, "active_count", lambda: 1)  # a test runner may hold threads
    items_per_chunk = 4  # nv = 4 heads, dv = 32: one V-tile
    big = _launch([64] * (FORK_MIN_ITEMS // items_per_chunk))
    small = _launch([64] * (FORK_MIN_ITEMS // items_per_chunk - 1))
    assert fork_pays(big) and not fork_pays(small)
    assert not fork_pays(_launch([64] * FORK_MIN_ITEMS, numerics="off"))
    monkeypatch.setattr(forked, "usable_cpus", lambda: 1)
    assert not fork_pays(big)
    monkeypatch.setattr(forked, "usable_cpus", lambda: 2)
    monkeypatch.setattr(pool, "_IN_WORKER", True)  # a pool's workers already use every core
    assert not fork_pays(big)
    monkeypatch.setattr(pool, "_IN_WORKER", False)
    assert fork_pays(big)
    monkeypatch.setattr(forked.threading, "active_count", lambda: 2)  # a thread could be in BLAS
    assert not fork_pays(big)


@pytest.mark.parametrize(("libs", "safe"), [
    ([("openblas", "pthreads", "0.3.31.188.0")], True),
    ([("openblas", "pthreads", "0.3.29")], True),
    ([("openblas", "pthreads", "0.3.30")], False),  # hangs after a fork (OpenMathLib/OpenBLAS#5520)
    ([("openblas", "pthreads", "0.3.30.0.1")], False),
    ([("openblas", "openmp", "0.3.31")], False),
    ([("openblas", "pthreads", None)], False),
    ([("mkl", "intel", "2024.1")], False),
    ([("openblas", "pthreads", "0.3.31"), ("mkl", "intel", "2024.1")], False),
    ([], False),
])
def test_the_op_forks_only_beside_a_blas_known_to_survive_it(libs, safe, monkeypatch):
    from types import SimpleNamespace

    from cgdr_des import blas

    fake = [SimpleNamespace(user_api="blas", internal_api=api, threading_layer=layer, version=version)
            for api, layer, version in libs]
    monkeypatch.setattr(blas, "_blas_controller", lambda: SimpleNamespace(lib_controllers=fake))
    monkeypatch.setattr(forked, "usable_cpus", lambda: 2)
    monkeypatch.setattr(forked.threading, "active_count", lambda: 1)
    assert blas.fork_safe() is safe and forked.can_fork() is safe


def test_the_inputs_are_widened_on_first_use_only():
    x = make_inputs([70], 2, 4, 32, 48, seed=0)
    wide = Widened({"query": x.query, "g": None}, np.float32)
    assert wide._made == {}
    assert wide["g"] is None and list(wide._made) == ["g"]
    assert wide["query"] is wide["query"] and wide["query"].dtype == np.float32
    np.testing.assert_array_equal(wide["query"], x.query.astype(np.float32))
    with pytest.raises(KeyError):
        wide["value"]
