"""``cgdr-des sweep`` in this process (``--workers 0``): stored summaries against direct simulations,
failing points recorded while the others finish, resume, fingerprint mismatch, --max-points, frames,
--status and --dry-run."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from sweep_cases import GRID, write_sweep

from cgdr_des import simulate
from cgdr_des.cli import main
from cgdr_des.scenario import Scenario
from cgdr_des.sweep import SweepStore, expand, load_sweep

SMALL = GRID.replace('"shape.dv" = [16, 24, 32]', '"shape.dv" = [16, 24]')  # 16 points: 4 good


def sweep(*args):
    return CliRunner().invoke(main, ["sweep", *[str(a) for a in args]])


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """The GRID sweep run once in this process; (sweep file, out dir, CLI result)."""
    folder = tmp_path_factory.mktemp("grid")
    path = write_sweep(folder, GRID)
    result = sweep(path, "--out", folder / "out", "--workers", 0)
    return path, folder / "out", result


@pytest.mark.slow
def test_summary_rows_are_the_points_own_simulations(swept):
    """Each stored row is what ``simulate`` gives for that point's scenario, plus its parameters."""
    path, out, _ = swept
    table = pd.read_parquet(out / "summary.parquet")
    good = [p for p in expand(load_sweep(path)) if p.params["shape.dv"] != 24 and p.params["shape.nv"] != 3]
    assert table["point"].tolist() == [p.point for p in good]
    for p, (_, row) in zip(good, table.iterrows(), strict=True):
        want = simulate(Scenario.from_dict(p.scenario)).summary_dict()
        assert {k: row[k] for k in want} == want
        assert {k: row[k] for k in p.params} == p.params


def test_failing_points_are_recorded_and_the_others_finish(swept):
    path, out, result = swept
    assert result.exit_code == 1 and "16 of 24 points failed" in result.stderr
    status = SweepStore(out).status()
    assert len(status.done) == 8 and len(status.failed) == 16 and not status.pending
    for p in expand(load_sweep(path)):
        error = status.errors.get(p.point)
        if p.params["shape.nv"] == 3:
            assert error.startswith("InputError: shape.nv: got 3; a multiple of nk (2)")
        elif p.params["shape.dv"] == 24:
            assert error.startswith("KernelDiagnostic: WriteAttnTileToGm: curV=24") and "\n" not in error
        else:
            assert error is None and p.point in status.done



def test_a_point_that_raises_while_running_is_recorded(tmp_path):
    """One event id per HardEvent validates but cannot hold buffer_num 2's two VECOUT buffers: the
    diagnostic comes from the machine mid-run (not from expansion), and the buffer_num 1 point finishes."""
    text = ('name = "tiny_ids"\nbase = "tiny.toml"\n[set]\n"hardware.overrides.event_ids_per_hard_event" = 1\n'
            '[grid]\n"kernel.buffer_num" = [1, 2]\n')
    path = write_sweep(tmp_path, text)
    points = expand(load_sweep(path))
    assert [p.error for p in points] == [None, None]  # both validate
    result = sweep(path, "--out", tmp_path / "out", "--workers", 0)
    assert result.exit_code == 1 and "1 of 2 points failed" in result.stderr
    status = SweepStore(tmp_path / "out").status()
    assert list(status.done) == [0]
    error = status.errors[1]
    assert error.startswith("KernelDiagnostic: InitBuffer('stateOutQueue_')") and "\n" not in error


def test_status_command(swept):
    _, out, _ = swept
    result = sweep("--status", out)
    assert result.exit_code == 0
    assert "done 8, failed 16, pending 0 of 24" in result.output
    assert "KernelDiagnostic: WriteAttnTileToGm" in result.output


@pytest.mark.slow
def test_rerun_skips_matching_points_and_refuses_a_mismatch(tmp_path):
    path = write_sweep(tmp_path, SMALL)
    out = tmp_path / "out"
    assert sweep(path, "--out", out, "--workers", 0).exit_code == 1
    before = (out / "summary.parquet").read_bytes()
    again = sweep(path, "--out", out, "--workers", 0)
    assert "12 run now, 4 already stored" in again.output  # the failed ones are tried again
    assert (out / "summary.parquet").read_bytes() == before

    changed = sweep(path, "--out", out, "--workers", 0, "--set", "kernel.buffer_num=2")
    assert changed.exit_code == 2 and changed.stderr.startswith("error: --out: got ")
    assert "another fingerprint" in changed.stderr and len(changed.stderr.strip().splitlines()) == 1
    forced = sweep(path, "--out", out, "--workers", 0, "--set", "kernel.buffer_num=2", "--force")
    assert "16 run now, 0 already stored" in forced.output
    table = pd.read_parquet(out / "summary.parquet")
    assert set(table["buffer_num"]) == {2} and len(table) == 4


@pytest.mark.slow
def test_max_points_leaves_the_rest_pending_and_a_rerun_completes(tmp_path):
    path = write_sweep(tmp_path, SMALL)
    out = tmp_path / "out"
    first = sweep(path, "--out", out, "--workers", 0, "--max-points", 3)
    assert "3 run now" in first.output and "pending 13" in first.output
    status = SweepStore(out).status()
    assert status.pending == list(range(3, 16))
    sweep(path, "--out", out, "--workers", 0)
    ref = tmp_path / "ref"
    sweep(path, "--out", ref, "--workers", 0)
    assert (out / "summary.parquet").read_bytes() == (ref / "summary.parquet").read_bytes()


def test_a_half_written_point_is_rewritten(tmp_path):
    """A point killed between its Parquet file and its manifest counts as not stored."""
    path = write_sweep(tmp_path, SMALL)
    out = tmp_path / "out"
    part = out / "summary" / "point=0" / "part-0.parquet"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"not parquet")
    (out / "sweep.json").write_text("{}", encoding="utf-8")  # written before any point runs
    sweep(path, "--out", out, "--workers", 0)
    assert pq.read_table(part).num_rows == 1
    assert not list(out.rglob("*.tmp"))


def test_frames_are_stored_per_point(tmp_path):
    text = SMALL.replace("seed = 5", "seed = 5\nframes = true")
    path = write_sweep(tmp_path, text)
    out = tmp_path / "out"
    sweep(path, "--out", out, "--workers", 0)
    p = expand(load_sweep(path))[0]
    result = simulate(Scenario.from_dict(p.scenario))
    for name in ("items", "cores", "ops"):
        stored = pd.read_parquet(out / "frames" / name / "point=0" / "part-0.parquet")
        pd.testing.assert_frame_equal(stored, getattr(result, name).reset_index(drop=True), check_dtype=False)
    assert sorted(int(d.name.split("=")[1]) for d in (out / "frames" / "items").iterdir()) == \
        SweepStore(out).status().done


def test_dry_run_lists_points_and_what_is_stored(tmp_path):
    path = write_sweep(tmp_path, SMALL)
    out = tmp_path / "out"
    listed = sweep(path, "--dry-run")
    assert listed.exit_code == 0 and "16 run points from tiny" in listed.output
    assert len(listed.output.strip().splitlines()) == 2 + 16 and not out.exists()
    sweep(path, "--out", out, "--workers", 0, "--max-points", 2)
    listed = sweep(path, "--dry-run", "--out", out)
    rows = listed.output.strip().splitlines()[2:]
    assert [r.split()[-2] if "InputError" not in r else None for r in rows[:2]] == ["done", "done"]


def test_manifest_records_each_point(swept):
    path, out, _ = swept
    for p in expand(load_sweep(path)):
        m = json.loads((out / "manifest" / f"point={p.point}.json").read_text())
        assert m["fingerprint"] == p.fingerprint and m["params"] == p.params


@pytest.mark.parametrize("args, field", [
    (["--workers", "-1"], "--workers"),
    (["--scheduler", "localhost:8786"], "--scheduler"),
    ([], "--out"),
])
def test_bad_options_are_one_line(tmp_path, args, field):
    path = write_sweep(tmp_path, SMALL)
    result = sweep(path, *args, *([] if field == "--out" else ["--out", tmp_path / "o"]))
    assert result.exit_code == 2 and result.stderr.startswith(f"error: {field}: got ")


def test_status_of_a_directory_that_is_not_a_sweep(tmp_path):
    result = sweep("--status", tmp_path)
    assert result.exit_code == 2 and result.stderr.startswith("error: DIR: got ")


def test_seed_option_sets_the_replication_base(tmp_path):
    import numpy as np

    path = write_sweep(tmp_path, SMALL)
    listed = sweep(path, "--dry-run", "--seed", 6, "--set", "kernel.buffer_num=2")
    assert listed.exit_code == 0, listed.output
    seeds = {str(int(s.generate_state(1)[0])) for s in np.random.SeedSequence(6).spawn(2)}
    rows = [r.split() for r in listed.output.strip().splitlines()[2:]]
    assert {r[5] for r in rows} == seeds  # point, policy, dv, nv, replication, seed, ...
