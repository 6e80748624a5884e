"""Measured latencies for calibration: a CSV with one row per scenario.

Columns: ``scenario`` (a scenario file, relative to the CSV's folder), and either ``latency_us``
(the measured kernel latency) or ``msprof_csv`` (an msprof op summary CSV, relative to the same
folder, whose rows of the op give the latency as the median of their ``Task Duration(us)``).
Other columns (``source``, notes) are kept and ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from cgdr_des.errors import InputError

MSPROF_DURATION = "Task Duration(us)"
MSPROF_OP_COLUMNS = ("OP Type", "Op Name")
OP_NAME = "chunkgateddeltarule"


class Measurement(NamedTuple):
    """One measured point: the scenario file (the CSV's folder joined with its ``scenario`` cell) and its
    latency in µs."""

    scenario: Path
    latency_us: float


def _read_csv(path: Path, field: str) -> pd.DataFrame:
    if not path.is_file():
        raise InputError(field, str(path), "an existing CSV file")
    try:
        return pd.read_csv(path, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError(field, str(path), f"a readable CSV ({exc})") from None


def msprof_latency(path: Path) -> float:
    """Median ``Task Duration(us)`` of the chunk_gated_delta_rule rows of an msprof op summary
    (every row when no op column names it)."""
    df = _read_csv(path, "msprof_csv")
    if MSPROF_DURATION not in df.columns:
        raise InputError("msprof_csv", str(path), f"an msprof op summary with a {MSPROF_DURATION!r} column")
    rows = df
    for col in MSPROF_OP_COLUMNS:
        if col in df.columns:
            named = df[df[col].astype(str).str.lower().str.replace("_", "").str.contains(OP_NAME)]
            if len(named):
                rows = named
                break
    vals = pd.to_numeric(rows[MSPROF_DURATION], errors="coerce").dropna()
    if vals.empty or (vals <= 0).any():
        raise InputError("msprof_csv", str(path), f"positive numbers in {MSPROF_DURATION!r}")
    return float(np.median(vals))


def read_measurements(path: str | Path) -> list[Measurement]:
    """The measurements of a CSV (see the module docstring); every problem is an InputError."""
    path = Path(path)
    df = _read_csv(path, "measurements")
    if "scenario" not in df.columns or not ({"latency_us", "msprof_csv"} & set(df.columns)):
        raise InputError("measurements", str(path), "a CSV with columns scenario and latency_us (or msprof_csv)")
    out = []
    for i, row in df.iterrows():
        where = f"measurements row {i + 2}"
        lat = row.get("latency_us")
        if isinstance(row.get("msprof_csv"), str):
            lat = msprof_latency(path.parent / row["msprof_csv"])
        try:
            lat = float(lat)
        except (TypeError, ValueError):
            lat = float("nan")
        if not lat > 0:
            raise InputError(f"{where}.latency_us", row.get("latency_us"), "a latency in µs > 0 (or an msprof_csv)")
        out.append(Measurement(path.parent / str(row["scenario"]), lat))
    if not out:
        raise InputError("measurements", str(path), "at least one row")
    return out
