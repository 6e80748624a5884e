"""A sweep's output directory: one hive partition per point, written atomically, and a manifest each.

Layout under DIR:
- ``sweep.json``: the sweep's name, kind, package version, base scenario and the profiles its points
  run on, and every point (id, fingerprint, params);
- ``summary/point=<id>/part-0.parquet``: the point's summary rows (its parameters are columns; the
  point id is the partition);
- ``frames/<frame>/point=<id>/part-0.parquet``: its frames, when the sweep asks for them;
- ``manifest/point=<id>.json``: fingerprint, status (``done`` or ``failed``), the one-line error, wall
  time. Written last, so a point counts as stored only once everything it wrote is in place;
- ``summary.parquet``: every done point's rows, sorted by point id, assembled with pyarrow datasets.

Every file is written under a temporary name in the same directory and renamed into place
(``os.replace`` is atomic on POSIX), so a killed sweep leaves either the old file or the new one.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from cgdr_des.errors import InputError
from cgdr_des.sweep.points import Point
from cgdr_des.sweep.work import Outcome

SWEEP_FILE = "sweep.json"
SUMMARY_FILE = "summary.parquet"
POINT_SCHEMA = pa.schema([("point", pa.int64())])


@dataclass(frozen=True)
class Status:
    """Point ids by state; ``errors`` maps each failed point to its one-line error."""

    done: list[int]
    failed: list[int]
    pending: list[int]
    errors: dict[int, str]


class SweepStore:
    """Reads and writes one sweep directory (see the module docstring for the layout)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    # ------------------------------------------------------------ points

    def manifest(self, point: int) -> dict[str, Any] | None:
        """The stored manifest of ``point``, or None when it was never finished."""
        path = self.root / "manifest" / f"point={point}.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    def stored_points(self) -> list[int]:
        """Ids of every point with a manifest."""
        folder = self.root / "manifest"
        if not folder.is_dir():
            return []
        return sorted(int(p.stem.partition("=")[2]) for p in folder.glob("point=*.json"))

    def to_run(self, points: list[Point], *, force: bool) -> list[Point]:
        """The points still to run; a stored point with another fingerprint is an error unless ``force``.

        Failed points are run again. With ``force``, mismatching and leftover points are removed first.
        """
        for tmp in self.root.rglob(".*.tmp"):  # left by a sweep killed mid-write; never read
            tmp.unlink(missing_ok=True)
        wanted = {p.point: p for p in points}
        stale = [i for i in self.stored_points()
                 if i not in wanted or self.manifest(i)["fingerprint"] != wanted[i].fingerprint]
        if stale and not force:
            raise InputError("--out", str(self.root),
                             f"a sweep directory whose points {_ids(stale)} were stored with another fingerprint "
                             "(other scenario, options or package version); use --force to recompute "
                             "them, or a new --out")
        for i in stale:
            self.remove(i)
        return [p for p in points if (self.manifest(p.point) or {}).get("status") != "done"]

    def write_sweep(self, info: dict[str, Any], points: list[Point]) -> None:
        """Record what the sweep is and its points (for ``status``)."""
        rows = [{"point": p.point, "fingerprint": p.fingerprint, "params": p.params} for p in points]
        self._write_bytes(self.root / SWEEP_FILE, json.dumps({**info, "points": rows}, indent=1).encode())

    def put(self, point: Point, outcome: Outcome) -> None:
        """Store one finished point: its Parquet files first, its manifest last."""
        if outcome.error is None:
            self._write_table(self._part("summary", point.point), outcome.summary)
            for name, frame in outcome.frames.items():
                self._write_table(self._part(f"frames/{name}", point.point), frame)
        manifest = {"point": point.point, "fingerprint": point.fingerprint,
                    "status": "failed" if outcome.error else "done", "error": outcome.error,
                    "wall_s": round(outcome.wall_s, 6), "params": point.params}
        self._write_bytes(self.root / "manifest" / f"point={point.point}.json",
                          json.dumps(manifest, indent=1).encode())

    def remove(self, point: int) -> None:
        """Forget a stored point (manifest first, so it is never half-present)."""
        (self.root / "manifest" / f"point={point}.json").unlink(missing_ok=True)
        for folder in [self.root / "summary", *(self.root / "frames").glob("*")]:
            shutil.rmtree(folder / f"point={point}", ignore_errors=True)

    # ------------------------------------------------------------ whole sweep

    def status(self) -> Status:
        """done / failed / pending point ids of the sweep recorded in ``sweep.json``."""
        info = self.info()
        done, failed, pending, errors = [], [], [], {}
        for row in info["points"]:
            m = self.manifest(row["point"])
            if m is None or m["fingerprint"] != row["fingerprint"]:
                pending.append(row["point"])
            elif m["status"] == "done":
                done.append(row["point"])
            else:
                failed.append(row["point"])
                errors[row["point"]] = m["error"]
        return Status(done, failed, pending, errors)

    def info(self) -> dict[str, Any]:
        """The parsed ``sweep.json``; an InputError when DIR holds no sweep."""
        path = self.root / SWEEP_FILE
        if not path.is_file():
            raise InputError("DIR", str(self.root), "a directory written by 'cgdr-des sweep'")
        return json.loads(path.read_text(encoding="utf-8"))

    def assemble(self, done: list[int]) -> Path | None:
        """Write ``summary.parquet``: the done points' summaries as one table sorted by point id."""
        files = [self._part("summary", i) for i in sorted(done)]
        target = self.root / SUMMARY_FILE
        if not files:
            target.unlink(missing_ok=True)
            return None
        part = ds.partitioning(POINT_SCHEMA, flavor="hive")
        dataset = ds.dataset([str(f) for f in files], format="parquet", partitioning=part,
                             partition_base_dir=str(self.root / "summary"))
        # pandas' per-file metadata would describe one point's frame, not the assembled table
        schema = pa.unify_schemas([f.physical_schema for f in dataset.get_fragments()] + [POINT_SCHEMA])
        schema = schema.remove_metadata()
        table = dataset.replace_schema(schema).to_table().sort_by("point")
        table = table.select(["point", *[c for c in table.column_names if c != "point"]])
        self._atomic(target, lambda tmp: pq.write_table(table, tmp))
        return target

    # ------------------------------------------------------------ atomic writes

    def _part(self, what: str, point: int) -> Path:
        return self.root / what / f"point={point}" / "part-0.parquet"

    def _write_table(self, path: Path, frame) -> None:
        table = pa.Table.from_pandas(frame, preserve_index=False)
        self._atomic(path, lambda tmp: pq.write_table(table, tmp))

    def _write_bytes(self, path: Path, data: bytes) -> None:
        self._atomic(path, lambda tmp: Path(tmp).write_bytes(data))

    @staticmethod
    def _atomic(path: Path, write: Callable[[str], None]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = str(path.with_name(f".{path.name}.{os.getpid()}.tmp"))  # one writer per directory
        try:
            write(tmp)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _ids(ids: list[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:5])
    return shown + (f" (+{len(ids) - 5} more)" if len(ids) > 5 else "")
