"""The on-disk calibration cache (cgdr_des/cost_cache.py under cgdr_des/item_costs.py): a hit runs no
launch, any change of a fingerprint input misses, a bad entry is one warning line and is recomputed,
two processes asking at once compute once, and the CLI's --cache-dir / --no-cache are obeyed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import CALIBRATED_NK
from test_sweep_tail import BASE

from cgdr_des import cost_cache, item_costs
from cgdr_des.cli import main
from cgdr_des.hw import load_profile
from cgdr_des.item_costs import ItemCosts, measure_item_costs
from cgdr_des.simulation import run_launch

SHAPE = (CALIBRATED_NK, 2, 16, 16, True, 1)  # nk, nv, dk, dv, has_gamma, buffer_num: a calibration of ~2 s
LAUNCHES: list[int] = []


def counting_run(launch, prof, **kw):
    """The real launch runner, counting its calls (the cache keys on the runner's name, not its object)."""
    LAUNCHES.append(1)
    return run_launch(launch, prof, **kw)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache directory, and no calibration left in the process's own (lru) cache."""
    monkeypatch.setenv(cost_cache.DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(cost_cache.SWITCH_ENV, raising=False)
    measure_item_costs.cache_clear()
    LAUNCHES.clear()
    yield tmp_path / "cache" / "item-costs"
    measure_item_costs.cache_clear()


def same(a: ItemCosts, b: ItemCosts) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) if isinstance(getattr(a, f), np.ndarray)
               else getattr(a, f) == getattr(b, f) and type(getattr(a, f)) is type(getattr(b, f))
               for f in ItemCosts.__dataclass_fields__)


def measure(prof=None, shape=SHAPE, runner=counting_run):
    return measure_item_costs(prof or load_profile("atlas-300i-duo"), *shape, runner)


@pytest.mark.slow
def test_a_second_process_reads_the_costs_without_running_a_launch(cache):
    first = measure()
    assert len(LAUNCHES) == 3  # the calibration run, the probe run and the one-sequence run
    assert len(list(cache.glob("*.json"))) == 1
    measure_item_costs.cache_clear()  # a new process: only the disk remembers
    again = measure()
    assert len(LAUNCHES) == 3 and same(first, again)
    # a miss and a hit give the same object types too (both come through the stored form)
    assert isinstance(again.per_item, int) and again.sole.dtype == np.int64


@pytest.fixture(scope="module")
def table() -> ItemCosts:
    """A whole item-cost table of :data:`SHAPE` on the 300I Duo (what the fake below returns), its cycles made
    up: the key logic is what is tested, and a real calibration is the slow tests' (a second here cost ~5 s)."""
    sole = np.r_[0, 1_000 + 20 * np.arange(1, 65)][None, :].astype(np.int64)
    two, middle = sole + 900, np.array([1_500], np.int64)
    return ItemCosts(sole, two, middle, pre=300, per_item=40, per_batch=12.5, nv=2, dv=16, v_step=16, v_tiles=1,
                     split=False, block_dim=8, clock_mhz=1000.0, profile="atlas-300i-duo")


@pytest.fixture
def fake_calibration(cache, monkeypatch, table):
    """``_calibrate`` replaced by a counter returning :func:`table`: the key logic is what is tested."""
    calls = []

    def fake(*args):
        calls.append(args[1:7])
        return table

    monkeypatch.setattr(item_costs, "_calibrate", fake)
    return calls


@pytest.mark.slow
@pytest.mark.parametrize("change", [
    "override", "nk", "nv", "dk", "dv", "has_gamma", "buffer_num", "profile", "runner", "version", "source"])
def test_every_fingerprint_input_changes_the_key(fake_calibration, monkeypatch, change):
    measure()
    measure_item_costs.cache_clear()
    measure()
    assert len(fake_calibration) == 1  # measured once, then read from disk
    shape, prof, runner = list(SHAPE), None, counting_run
    index = {"nk": 0, "nv": 1, "dk": 2, "dv": 3, "has_gamma": 4, "buffer_num": 5}
    if change in index:
        shape[index[change]] = {"nk": 1, "nv": 4, "dk": 32, "dv": 32, "has_gamma": False, "buffer_num": 2}[change]
    elif change == "override":
        prof = load_profile("atlas-300i-duo", {"scalar_alu_cycles": 3})
    elif change == "profile":
        prof = load_profile("atlas-a2-910b2")
    elif change == "runner":
        runner = run_launch
    elif change == "version":
        monkeypatch.setattr(cost_cache, "package_version", lambda: "0.0.0-other")
    else:  # an edited checkout: its source hash differs
        monkeypatch.setattr(cost_cache, "source_hash", lambda: "0" * 64)
    measure_item_costs.cache_clear()  # a new process (an edited checkout, another version)
    measure(prof, tuple(shape), runner)
    assert len(fake_calibration) == 2, change
    assert len(list(cost_cache.cache_dir().glob("item-costs/*.json"))) == 2


def test_the_source_hash_follows_every_python_file(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    (pkg / "notes.txt").write_text("not code\n")
    from functools import partial

    from cgdr_des.runtime import tree_hash

    digest = partial(tree_hash, pkg, "*.py")  # what runtime.source_hash computes over the package
    before = digest()
    (pkg / "notes.txt").write_text("still not code\n")
    assert digest() == before
    (pkg / "sub" / "b.py").write_text("y = 3\n")
    edited = digest()
    assert edited != before
    (pkg / "sub" / "b.py").rename(pkg / "b.py")  # same bytes, another module
    assert digest() not in (before, edited)


def entry(cache: Path) -> Path:
    (path,) = cache.glob("*.json")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "garbage", "schema", "foreign", "tables"])
def test_a_bad_entry_is_one_warning_and_is_recomputed(fake_calibration, cache, capsys, damage):
    good = measure()
    path = entry(cache)
    text = path.read_text()
    doc = json.loads(text)
    if damage == "truncated":
        path.write_text(text[: len(text) // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x00\xff not json at all")
    elif damage == "schema":
        path.write_text(json.dumps({**doc, "schema": 99}))
    elif damage == "foreign":  # an entry copied from another calibration under this key
        doc["inputs"]["shape"]["dv"] = 64
        path.write_text(json.dumps(doc))
    else:
        doc["value"]["sole"] = [[1, 2, 3]]
        path.write_text(json.dumps(doc))
    measure_item_costs.cache_clear()
    capsys.readouterr()
    again = measure()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"warning    calibration cache: {path.stem}: ignored ("), err
    assert len(fake_calibration) == 2 and same(good, again)  # measured again
    assert json.loads(path.read_text()) == json.loads(text)  # and the entry rewritten whole


def test_no_cache_stores_and_reads_nothing(fake_calibration, cache, monkeypatch):
    monkeypatch.setenv(cost_cache.SWITCH_ENV, "off")
    measure()
    measure_item_costs.cache_clear()
    measure()
    assert len(fake_calibration) == 2 and not cache.exists()


WORKER = """
import json, sys, time
sys.path.insert(0, {tests!r})
from cgdr_des.hw import load_profile
from cgdr_des.item_costs import measure_item_costs
from cgdr_des.simulation import run_launch

def counting_run(launch, prof, **kw):
    with open({log!r}, "a") as f:
        f.write("launch\\n")
    time.sleep(0.5)  # widen the window in which an unlocked second process would compute too
    return run_launch(launch, prof, **kw)

while not __import__("os").path.exists({go!r}):  # both processes start calibrating together
    time.sleep(0.01)
costs = measure_item_costs(load_profile("atlas-300i-duo"), *{shape!r}, counting_run)
print(json.dumps(costs.to_json()))
"""


@pytest.mark.slow
def test_two_processes_asking_at_once_compute_once(cache, tmp_path):
    log, go = tmp_path / "launches.log", tmp_path / "go"
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(WORKER.format(tests=str(Path(__file__).parent), log=str(log), go=str(go),
                                                     shape=SHAPE)))
    procs = [subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    go.touch()
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert log.read_text().splitlines() == ["launch"] * 3  # one calibration: its three launches in all
    assert json.loads(outs[0][0]) == json.loads(outs[1][0])
    assert len(list(cache.glob("*.json"))) == 1


def tail(*args):
    return CliRunner().invoke(main, ["tail", *[str(a) for a in args]])


def test_cli_cache_dir_and_no_cache(fake_calibration, cache, tmp_path, monkeypatch):
    """Where the command stores and what it reads: the calibration itself is the fake's table (a
    real one is test_a_second_process_reads_the_costs_without_running_a_launch's; two real ones here
    cost ~20 s and prove nothing more), counted: --no-cache measures again rather than read --cache-dir's.
    The study's five plots (drawn whatever [output] plots says; tests/test_tail_plots.py tests them) are
    not drawn: ~3 s a run."""
    import cgdr_des.results.tail_plots as tail_plots

    monkeypatch.setattr(tail_plots, "plot_study", lambda result, out: {})
    scenario = tmp_path / "base.toml"
    scenario.write_text(BASE, encoding="utf-8")
    mine = tmp_path / "mine"
    res = tail(scenario, "--out", tmp_path / "a", "--batches", 5, "--policy", "greedy", "--cache-dir", mine)
    assert res.exit_code == 0, res.output
    assert len(list((mine / "item-costs").glob("*.json"))) == 1 and not cache.exists()
    assert cost_cache.cache_dir() == cache.parent  # the command put the caller's setting back
    measure_item_costs.cache_clear()
    res = tail(scenario, "--out", tmp_path / "b", "--batches", 5, "--policy", "greedy", "--no-cache")
    assert res.exit_code == 0, res.output
    assert not cache.exists() and len(list((mine / "item-costs").glob("*.json"))) == 1
    assert cost_cache.cache_dir() == cache.parent
    assert len(fake_calibration) == 2


def test_the_cache_key_uses_the_packages_own_source_hash():
    from cgdr_des.runtime import PACKAGE, source_hash, tree_hash

    assert cost_cache.source_hash is source_hash and source_hash() == tree_hash(PACKAGE, "*.py")
