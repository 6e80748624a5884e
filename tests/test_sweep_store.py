"""The sweep directory (sweep/store.py) with hand-made points and outcomes, no simulation.

What is stored per point, what counts as done, failed or pending, what a resumed sweep runs again,
how a fingerprint change is refused or (with force) recomputed, the assembled summary against the
frames put in, and that a failed write leaves the previous file.
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from cgdr_des.errors import InputError
from cgdr_des.sweep.points import Point
from cgdr_des.sweep.store import SUMMARY_FILE, SWEEP_FILE, SweepStore
from cgdr_des.sweep.work import Outcome


def point(i: int, fp: str = "f", **params) -> Point:
    return Point(point=i, params=params or {"nv": i}, fingerprint=f"{fp}{i}")


def summary(i: int, **params) -> pd.DataFrame:
    return pd.DataFrame({**{k: [v] for k, v in params.items()}, "makespan_cycles": [1000 + i],
                         "policy": [f"p{i}"]})


def done(store: SweepStore, p: Point, frames=None) -> None:
    store.put(p, Outcome(p.point, summary(p.point, **p.params), frames or {}, None, 0.25))


def test_a_point_is_stored_with_its_summary_first_and_manifest_last(tmp_path):
    store, p = SweepStore(tmp_path), point(3)
    ops = pd.DataFrame({"start": [0, 5], "end": [5, 9]})
    done(store, p, {"ops": ops})
    m = store.manifest(3)
    assert m == {"point": 3, "fingerprint": "f3", "status": "done", "error": None, "wall_s": 0.25,
                 "params": {"nv": 3}}
    got = pq.read_table(tmp_path / "summary" / "point=3" / "part-0.parquet").to_pandas()
    pd.testing.assert_frame_equal(got, summary(3, nv=3))
    frame = pq.read_table(tmp_path / "frames" / "ops" / "point=3" / "part-0.parquet").to_pandas()
    pd.testing.assert_frame_equal(frame, ops)
    assert store.stored_points() == [3]


def test_a_failed_point_stores_its_error_and_no_parquet(tmp_path):
    store, p = SweepStore(tmp_path), point(1)
    store.put(p, Outcome(1, None, {}, "shape.nv: got 3; a multiple of nk (2)", 0.1))
    assert store.manifest(1)["status"] == "failed"
    assert not (tmp_path / "summary").exists()


def test_status_sorts_points_into_done_failed_and_pending(tmp_path):
    store = SweepStore(tmp_path)
    points = [point(i) for i in range(5)]
    store.write_sweep({"name": "s"}, points)
    done(store, points[0])
    done(store, points[3])
    store.put(points[1], Outcome(1, None, {}, "bad", 0.0))
    stale = Point(point=4, params={"nv": 4}, fingerprint="other")
    done(store, stale)  # stored with another fingerprint: still pending for this sweep
    status = store.status()
    assert (status.done, status.failed, status.pending) == ([0, 3], [1], [2, 4])
    assert status.errors == {1: "bad"}
    info = json.loads((tmp_path / SWEEP_FILE).read_text(encoding="utf-8"))
    assert info["name"] == "s" and [r["point"] for r in info["points"]] == list(range(5))


def test_to_run_skips_done_points_and_runs_failed_ones_again(tmp_path):
    store = SweepStore(tmp_path)
    points = [point(i) for i in range(4)]
    done(store, points[0])
    store.put(points[2], Outcome(2, None, {}, "x", 0.0))
    assert [p.point for p in store.to_run(points, force=False)] == [1, 2, 3]


def test_another_fingerprint_is_refused_without_force_naming_the_points(tmp_path):
    store = SweepStore(tmp_path)
    for i in range(7):
        done(store, point(i))
    changed = [point(i, fp="g") for i in range(7)]
    with pytest.raises(InputError, match=r"points 0, 1, 2, 3, 4 \(\+2 more\)") as info:
        store.to_run(changed, force=False)
    assert info.value.field == "--out"
    assert store.stored_points() == list(range(7))  # nothing removed


def test_force_removes_stale_and_leftover_points_and_runs_them(tmp_path):
    store = SweepStore(tmp_path)
    for i in range(3):
        done(store, point(i), {"ops": pd.DataFrame({"a": [i]})})
    wanted = [point(0), point(1, fp="g")]  # point 1 changed, point 2 no longer in the sweep
    assert [p.point for p in store.to_run(wanted, force=True)] == [1]
    assert store.stored_points() == [0]
    for where in ("summary", "frames/ops"):
        assert sorted(p.name for p in (tmp_path / where).iterdir()) == ["point=0"]


def test_temporary_files_of_a_killed_sweep_are_removed(tmp_path):
    store = SweepStore(tmp_path)
    done(store, point(0))
    left = tmp_path / "summary" / "point=0" / ".part-0.parquet.999.tmp"
    left.write_bytes(b"half")
    store.to_run([point(0)], force=False)
    assert not left.exists()


def test_assemble_is_every_done_point_s_rows_sorted_by_point(tmp_path):
    store = SweepStore(tmp_path)
    params = {2: {"nv": 8}, 0: {"nv": 2}, 5: {"nv": 4, "buffer_num": 2}}  # 5 adds a column
    for i, ps in params.items():
        done(store, point(i, **ps))
    target = store.assemble([5, 0, 2])
    assert target == tmp_path / SUMMARY_FILE
    got = pq.read_table(target).to_pandas()
    assert got.columns[0] == "point" and got["point"].tolist() == [0, 2, 5]
    assert got["makespan_cycles"].tolist() == [1000, 1002, 1005]
    assert got["nv"].tolist() == [2, 8, 4]
    assert got["buffer_num"].isna().tolist() == [True, True, False]
    assert pq.read_table(target).schema.metadata is None  # no one point's pandas metadata


def test_assemble_with_nothing_done_removes_an_old_summary(tmp_path):
    store = SweepStore(tmp_path)
    done(store, point(0))
    store.assemble([0])
    assert store.assemble([]) is None and not (tmp_path / SUMMARY_FILE).exists()


def test_remove_forgets_a_point_entirely(tmp_path):
    store = SweepStore(tmp_path)
    done(store, point(0), {"items": pd.DataFrame({"a": [1]})})
    done(store, point(1))
    store.remove(0)
    assert store.stored_points() == [1] and store.manifest(0) is None
    assert not (tmp_path / "frames" / "items" / "point=0").exists()
    store.remove(9)  # never stored: nothing to do


def test_a_failed_write_keeps_the_previous_file_and_leaves_no_temporary(tmp_path):
    store = SweepStore(tmp_path)
    target = tmp_path / "x.json"
    target.write_text("old", encoding="utf-8")

    def broken(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write("half")
        raise OSError("disk full")

    with pytest.raises(OSError):
        store._atomic(target, broken)
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_a_directory_without_a_sweep_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cgdr-des sweep") as info:
        SweepStore(tmp_path).status()
    assert info.value.field == "DIR"
    assert SweepStore(tmp_path / "none").stored_points() == []
