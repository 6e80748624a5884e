"""The templating layer: every number in the report's text is read from a frame file, and recorded.

``Quotes.frame(name, df)`` writes ``frames/<name>.csv`` and reads it back: the text quotes the file as
a reader (or a test) will read it, not the DataFrame in memory. ``Quotes.q(name, column, fmt,
**where)`` selects exactly one row of that frame (``where`` holds column = value pairs), formats
the cell with ``fmt`` and records the quote: frame, selection, column, format, raw value and text.
``quotes.csv`` holds every record, so ``tests/test_report.py`` can re-read each frame, select the
same row and check that formatting its value gives the text the README contains.

A number that is not a single cell (a mean over rows, a count) is first put into a frame, so it
has a file and a row to come from; :meth:`Quotes.fact` adds one such row to the ``facts`` frame.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

QUOTES_FILE = "quotes.csv"


class Quotes:
    """The frames a report quotes, and the record of every quote (see the module docstring)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        (self.folder / "frames").mkdir(parents=True, exist_ok=True)
        self.frames: dict[str, pd.DataFrame] = {}
        self.records: list[dict] = []
        self._facts: list[dict] = []

    def frame(self, name: str, df: pd.DataFrame) -> pd.DataFrame:
        """Write ``frames/<name>.csv`` and return it as read back from the file."""
        path = self.folder / "frames" / f"{name}.csv"
        df.to_csv(path, index=False)
        self.frames[name] = read_frame(path)
        return self.frames[name]

    def fact(self, key: str, value: float) -> None:
        """Record a derived number under ``key`` (written with :meth:`close_facts` as the ``facts`` frame)."""
        self._facts.append({"key": key, "value": float(value)})

    def close_facts(self) -> pd.DataFrame:
        """Write the ``facts`` frame (one row per :meth:`fact`)."""
        return self.frame("facts", pd.DataFrame(self._facts, columns=["key", "value"]))

    def f(self, key: str, fmt: str) -> str:
        """Quote a fact by its key."""
        return self.q("facts", "value", fmt, key=key)

    def q(self, name: str, column: str, fmt: str, **where) -> str:
        """``fmt.format(value)`` of the one row of frame ``name`` matching ``where``, recorded."""
        value = select(self.frames[name], where)[column]
        text = fmt.format(value)
        self.records.append({"frame": name, "where": json.dumps(where, sort_keys=True, default=str),
                             "column": column, "fmt": fmt, "value": value, "text": text})
        return text

    def has(self, name: str, **where) -> bool:
        """Whether frame ``name`` has exactly one row matching ``where`` (a cell the grid may lack)."""
        try:
            select(self.frames[name], where)
        except LookupError:
            return False
        return True

    def write(self) -> Path:
        """``quotes.csv``: every quote made so far."""
        path = self.folder / QUOTES_FILE
        pd.DataFrame(self.records, columns=["frame", "where", "column", "fmt", "value", "text"]).to_csv(
            path, index=False)
        return path


def read_frame(path: Path) -> pd.DataFrame:
    """A report frame as the text reads it (CSV, pandas' default parsing)."""
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def select(df: pd.DataFrame, where: dict):
    """The one row of ``df`` whose columns equal ``where``'s values; anything but one row is an error."""
    mask = pd.Series(True, index=df.index)
    for col, val in where.items():
        mask &= df[col] == val
    rows = df[mask]
    if len(rows) != 1:
        raise LookupError(f"{len(rows)} rows match {where} (columns {list(df.columns)})")
    return rows.iloc[0]
