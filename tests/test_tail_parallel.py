"""A tail study's self-checks on a process pool (``workers``): the frames of the serial run, progress
counted as the checks finish, the memory estimate that counts every check running at once and the
``--max-memory`` refusal on it, and no pool inside a pool (a sweep's tail point)."""

from __future__ import annotations

import functools
import io
import pickle
import re
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import REPO, SCENARIOS
from test_tail import scenario

import cgdr_des.cli.common as common
from cgdr_des import pool
from cgdr_des.cli import main
from cgdr_des.errors import InputError
from cgdr_des.estimate import (
    BASE_BYTES,
    PHASE_BYTES_PER_ITEM,
    PHASE_SECONDS_PER_ITEM,
    check_estimate,
    check_memory_bytes,
    format_bytes,
    longest_draw,
    study_estimate,
    study_memory_bytes,
)
from cgdr_des.pool import WorkerPool
from cgdr_des.results.progress import Progress
from cgdr_des.scenario import load_scenario, validate_tiling
from cgdr_des.tail import run_study
from cgdr_des.tail.checks import check_workers

#: three checks (worst, median, random) of a tiny shape: each a fraction of a second at phase fidelity
THREE = {"batches": 50, "check_batches": 3, "bootstrap": 20}


class Ticking:
    """A clock that jumps past the progress line interval at every reading: every update draws a line."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 11.0
        return self.now


@pytest.fixture(scope="module")
def serial():
    return run_study(scenario(study=THREE), seed=5)


@pytest.mark.slow
def test_checks_on_two_workers_give_the_serial_frames_and_count_each_as_it_ends(serial):
    stream = io.StringIO()
    progress = Progress(stream=stream, mode="lines", clock=Ticking(), ticker=False)
    parallel = run_study(scenario(study=THREE), seed=5, workers=2, progress=progress)
    for frame in ("batches", "core_finish", "summary", "checks"):
        pd.testing.assert_frame_equal(getattr(serial, frame), getattr(parallel, frame))
    assert list(parallel.checks["kind"]) == ["worst", "median", "random"]
    name = "checking 3 batches at phase fidelity on 2 workers"
    counts = re.findall(rf"progress   {name}: (?:started, |done, )?(\d)/(\d) batches", stream.getvalue())
    assert counts[0] == ("0", "3") and counts[-1] == ("3", "3"), stream.getvalue()
    assert {total for _, total in counts} == {"3"}  # one denominator, fixed when the stage starts
    assert [int(d) for d, _ in counts] == sorted(int(d) for d, _ in counts)


def test_one_check_or_one_worker_runs_in_this_process():
    assert check_workers(4, 1) == 1 and check_workers(1, 3) == 1 and check_workers(8, 3) == 3


@pytest.mark.slow
def test_a_pool_worker_never_starts_a_pool_of_its_own():
    """What a sweep's tail point sees on its worker: asked for 2 workers for 3 checks, it uses 1."""
    outcomes = [fut.result() for _, fut in WorkerPool(1).completed([3], functools.partial(check_workers, 2))]
    assert outcomes == [1] and check_workers(2, 3) == 2  # the same call in this process: 2


def test_a_sweep_s_tail_point_runs_its_checks_in_its_own_process(monkeypatch):
    from cgdr_des.sweep import work

    seen = {}

    class Study:
        summary = pd.DataFrame({"policy": ["greedy"]})

    def fake(sc, **kwargs):
        seen.update(kwargs)
        return Study()

    monkeypatch.setattr("cgdr_des.tail.run_study", fake)
    task = work.Task(0, "tail", scenario().model_dump(mode="json"), {}, tail={"batches": 10})
    assert work.run_point(task).error is None
    assert seen == {"batches": 10, "workers": 1}


def test_an_input_error_crosses_processes_whole():
    err = pickle.loads(pickle.dumps(InputError("workload.batch", 3, "at most 2")))
    assert (err.field, err.value, err.allowed, str(err)) == ("workload.batch", 3, "at most 2",
                                                              "workload.batch: got 3; at most 2")


def test_the_estimate_counts_every_check_that_runs_at_once():
    sc = load_scenario(SCENARIOS / "tail_lognormal_12h.toml")  # 3 checks, batches of 16, max 8192 tokens
    t = validate_tiling(sc)
    mem = [study_estimate(sc, t, workers=w).memory_bytes for w in (1, 2, 3, 4)]
    alone = study_memory_bytes(2000, 7, 16 * 12, 8)
    # a worker: a fresh process, the phase run of 16 sequences of the longest length (8192 tokens: 16 x
    # 8192 x 12 heads is past check_max_token_heads, so the stand-in's, just over the cap: 5 462 tokens,
    # 86 chunks x 12 heads each) and, without numbers, g alone (fp32 per token and head)
    assert 16 * 8192 * 12 > sc.study.check_max_token_heads == 2**20
    longest = 2**20 // (16 * 12) + 1
    worker = check_memory_bytes(sc, t, 2000)
    assert worker == BASE_BYTES + 16 * -(-longest // 64) * 12 * PHASE_BYTES_PER_ITEM + 16 * longest * 12 * 4
    assert mem == [alone, alone + 2 * worker, alone + 3 * worker, alone + 3 * worker]  # at most 3 checks at once


def test_the_longest_draw_is_the_distribution_s_cap_or_its_expected_sample_maximum():
    sc = scenario()  # lognormal, median 60, sigma 1, max 300
    assert longest_draw(sc.workload.distribution, 200, 3) == 300
    free = scenario(workload={"distribution": {"kind": "lognormal", "median": 60, "sigma": 1.0, "min": 1}})
    # 600 draws: the 1 - 1/600 quantile of the lognormal, 60 * exp(2.935) = 1130
    assert longest_draw(free.workload.distribution, 200, 3) == 1130
    bimodal = scenario(workload={"distribution": {"kind": "bimodal", "long": 2048, "short": 8}})
    assert longest_draw(bimodal.workload.distribution, 10, 3) == 2048


def test_more_workers_than_max_memory_allows_are_refused_naming_the_field(tmp_path):
    sc = load_scenario(SCENARIOS / "tail_lognormal_12h.toml")
    need = study_estimate(sc, validate_tiling(sc), workers=2).memory_bytes
    res = CliRunner().invoke(main, ["tail", str(SCENARIOS / "tail_lognormal_12h.toml"), "--out", str(tmp_path / "o"),
                                    "--workers", "2", "--max-memory", "2G"])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == (f"error: --max-memory: got '2.0 GiB'; at least the estimated ~{format_bytes(need)} "
                                  "of this launch (shrink the shape or batch, or pass a larger --max-memory / 'none')")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("max_memory", "cpus", "workers"), [
    ("none", 8, 3), ("none", 2, 2), ("none", 1, 1), ("7G", 8, 3), ("5G", 8, 2), ("2G", 8, 1), ("1M", 8, 1)])
def test_the_default_workers_are_one_per_check_up_to_the_idle_cpus_and_the_memory(monkeypatch, max_memory, cpus,
                                                                                 workers):
    """``tail_lognormal_12h``: ~0.5 GiB alone, ~4.3 GiB with 2 checks at once, ~6.1 GiB with 3 (each check
    bounded by its stand-in's work, ``check_max_token_heads``)."""
    monkeypatch.setattr("cgdr_des.pool.idle_cpus", lambda: cpus)
    sc = load_scenario(SCENARIOS / "tail_lognormal_12h.toml")
    assert common.study_workers(sc, None, None, max_memory) == workers


def test_checks_too_short_to_repay_a_pool_stay_in_this_process_by_default(monkeypatch):
    monkeypatch.setattr("cgdr_des.pool.idle_cpus", lambda: 8)
    sc = scenario(study=THREE)  # 3 checks of at most 3 x 300 tokens, 2 heads: 30 chunk items each
    seconds = check_estimate(sc, validate_tiling(sc), 50).seconds
    assert seconds == 30 * PHASE_SECONDS_PER_ITEM and 3 * seconds < common.POOL_WORTH_SECONDS
    assert common.study_workers(sc, None, None, "none") == 1


@pytest.mark.parametrize(("load", "cpus", "idle"), [(0.2, 8, 8), (1.0, 8, 8), (3.6, 8, 5), (4.6, 2, 1), (30.0, 4, 1)])
def test_idle_cpus_are_the_usable_ones_the_load_leaves(monkeypatch, load, cpus, idle):
    """The load average counts this process too (it runs): one unit of load is its own."""
    monkeypatch.setattr("os.getloadavg", lambda: (load, load, load))
    monkeypatch.setattr("cgdr_des.pool.usable_cpus", lambda: cpus)
    assert pool.idle_cpus() == idle


@pytest.mark.parametrize("value", [0, -1, 1025])
def test_workers_out_of_range_is_one_line(tmp_path, value):
    res = CliRunner().invoke(main, ["tail", "scenarios/tail_lognormal.toml", "--out", str(tmp_path / "o"),
                                    "--workers", str(value)])
    assert res.exit_code == 2 and res.stderr.startswith(f"error: --workers: got {value}; an integer in [1, 1,024]")


@pytest.mark.slow
def test_a_worker_s_peak_memory_is_within_the_estimate(tmp_path):
    """Measured: the largest resident set of the pool workers of a fresh process's study, under the bound.
    The workers are the forkserver's children, not the script's (cgdr_des/pool.py), so their peak
    (VmHWM) is read from /proc while they run; the script fails if it saw no worker."""
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, "tests")
        from test_tail import scenario
        from cgdr_des.pool import WorkerPeak
        from cgdr_des.tail import run_study
        if __name__ == "__main__":
            watch = WorkerPeak()
            run_study(scenario(study={"batches": 50, "check_batches": 2, "bootstrap": 20}), seed=5, workers=2)
            peaks = watch.stop()
            assert len(peaks) == 2, peaks
            print(max(peaks.values()))
    """)
    (tmp_path / "peak.py").write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, str(tmp_path / "peak.py")], cwd=REPO, capture_output=True, text=True,
                          check=True)
    sc = scenario(study={"batches": 50, "check_batches": 2, "bootstrap": 20})
    assert int(done.stdout.split()[-1]) <= check_memory_bytes(sc, validate_tiling(sc), 50)
