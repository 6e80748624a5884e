"""Measured latencies for calibration: a CSV with one row per scenario.

Columns: ``scenario`` (a scenario file, relative to the CSV's folder), and either ``latency_us``
(the measured kernel latency) or ``msprof_csv`` (an msprof op summary CSV, relative to the same
folder, whose rows of the op give the latency as the median of their ``Task Duration(us)``).
Other columns (``source``, notes) are kept and ignored.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from cgdr_des.errors import InputError
from cgdr_des.scenario.messages import Shown, cut

MSPROF_DURATION = "Task Duration(us)"
MSPROF_OP_COLUMNS = ("OP Type", "Op Name")
OP_NAME = "chunkgateddeltarule"
#: rows of a measurements CSV: each is at least one simulation per hypothesis
MAX_ROWS = 10_000


class Measurement(NamedTuple):
    """One measured point: the scenario file (the CSV's folder joined with its ``scenario`` cell) and its
    latency in µs."""

    scenario: Path
    latency_us: float


def shown(value) -> Shown:
    """A cell, a path or a path written in a cell, as an error quotes it: cut to ~40 characters."""
    return cut(value)


def is_file(path: Path) -> bool:
    """``path.is_file()``, False for a path the system refuses (a name past NAME_MAX, say)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _read_csv(path: Path, field: str, quoted: object) -> pd.DataFrame:
    """``quoted``: how an error shows the file (the path typed on the command line whole, a path
    written in a cell cut)."""
    if not is_file(path):
        raise InputError(field, quoted, "an existing CSV file")
    try:
        return pd.read_csv(path, skipinitialspace=True, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        reason = f"byte {exc.start} is not UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)[:60]
        raise InputError(field, quoted, f"a readable CSV ({reason})") from None


def _latency(text: str) -> float | None:
    """A finite latency > 0 in a cell, else None (inf, NaN, 0, negative, words)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value > 0 else None


def msprof_latency(path: Path, cell: str | None = None) -> float:
    """Median ``Task Duration(us)`` of the chunk_gated_delta_rule rows of an msprof op summary
    (every row when no op column names it); ``cell`` is how the measurements CSV named it."""
    quoted = shown(cell if cell is not None else path.name)
    df = _read_csv(path, "msprof_csv", quoted)
    if MSPROF_DURATION not in df.columns:
        raise InputError("msprof_csv", quoted, f"an msprof op summary with a {MSPROF_DURATION!r} column")
    rows = df
    for col in MSPROF_OP_COLUMNS:
        if col in df.columns:
            named = df[df[col].astype(str).str.lower().str.replace("_", "").str.contains(OP_NAME)]
            if len(named):
                rows = named
                break
    vals = [_latency(v) for v in rows[MSPROF_DURATION] if str(v).strip()]
    if not vals or None in vals:
        bad = next((v for v in rows[MSPROF_DURATION] if str(v).strip() and _latency(v) is None), "nothing")
        raise InputError(f"msprof_csv {MSPROF_DURATION!r}", shown(bad), "finite numbers > 0 (µs)")
    return float(np.median(vals))


def read_measurements(path: str | Path) -> list[Measurement]:
    """The measurements of a CSV (see the module docstring); every problem is an InputError that quotes
    at most the offending cell, cut to ~40 characters."""
    path = Path(path)
    df = _read_csv(path, "measurements", str(path))
    columns = [str(c).strip() for c in df.columns]
    df.columns = columns
    if "scenario" not in columns or not ({"latency_us", "msprof_csv"} & set(columns)):
        raise InputError("measurements", str(path), "a CSV with columns scenario and latency_us (or msprof_csv)")
    if len(df) > MAX_ROWS:
        raise InputError("measurements", Shown(f"{len(df)} rows"), f"at most {MAX_ROWS} rows (one simulation each)")
    out = []
    for i, row in enumerate(df.to_dict("records")):
        where = f"measurements row {i + 2}"
        scenario = str(row.get("scenario", "")).strip()
        if not scenario:
            raise InputError(f"{where}.scenario", Shown("nothing"), "a scenario file, relative to the CSV")
        cell = str(row.get("latency_us", "")).strip()
        prof = str(row.get("msprof_csv", "")).strip()
        lat = msprof_latency(path.parent / prof, prof) if prof else _latency(cell)
        if lat is None:
            raise InputError(f"{where}.latency_us", shown(cell) if cell else Shown("nothing"),
                             "a finite latency in µs > 0 (or an msprof_csv)")
        out.append(Measurement(path.parent / scenario, lat))
    if not out:
        raise InputError("measurements", str(path), "at least one row")
    return out


def check_scenario_files(measurements: list[Measurement]) -> None:
    """Every row's scenario file exists (checked before anything runs; the error quotes the cell cut)."""
    for i, m in enumerate(measurements):
        if not is_file(m.scenario):
            raise InputError(f"measurements row {i + 2}.scenario", shown(m.scenario.name),
                             "an existing scenario file, relative to the CSV's folder")
