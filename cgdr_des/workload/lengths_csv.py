"""Sequence lengths from a CSV file (``[workload] lengths_csv``), read with bounds.

The file is read as a stream and stopped after the rows the batch needs, so a huge file costs nothing;
a refusal names the row and quotes only a numeric-looking cell, truncated, so a wrong file (a system
file, say) is never echoed on the console.
"""

from __future__ import annotations

import csv
import re
from itertools import islice
from pathlib import Path

import numpy as np

from cgdr_des.errors import InputError
from cgdr_des.workload.lengths import MAX_BATCH
from cgdr_des.workload.lengths import MAX_LENGTH as MAX_TOKENS

MAX_CSV_BYTES = 64 * 1024 * 1024
#: the column a CSV of several columns must name in its header
HEADER = "length"
#: a header cell: a word (no digit, no sign, no dot), so that no mistyped length is taken for a header
WORD = re.compile(r"^[a-z_][a-z_ ]*$")


class Shown:
    """A value whose repr is the given text, so that InputError's ``{value!r}`` stays one short line."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def read_lengths_csv(path: Path, shown: str, batch: int | None) -> np.ndarray:
    """Lengths from a CSV: its only column, or the column headed ``length``; first ``batch`` rows.

    The header rule: the first non-blank row is the header exactly when every cell of it is a word
    (letters and underscores, no digit: ``length``, ``tokens``, ``seq_len``); otherwise it is data
    like every other row, so a first row such as ``1.5``, ``-`` or ``x8`` is refused as row 1, never
    skipped. Several columns need a header with a ``length`` column. A UTF-8 byte-order mark is
    allowed; an unterminated quote is refused. A refusal names the file's row and quotes only a
    numeric-looking cell (truncated): a wrong file (say a system file) is never echoed.
    """
    field = "workload.lengths_csv"
    if not path.is_file():
        raise InputError(field, shown, f"an existing CSV file (looked for {path})")
    if path.stat().st_size > MAX_CSV_BYTES:
        raise InputError(field, shown, f"a CSV of at most {MAX_CSV_BYTES // 2**20} MiB")
    limit = MAX_BATCH if batch is None else batch
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:  # -sig: a BOM before the first cell is dropped
            # (file row number, cells) of the header and at most limit + 1 data rows: a huge file is
            # refused without reading it all
            records = ((n, r) for n, r in enumerate(csv.reader(fh, strict=True), 1) if any(c.strip() for c in r))
            rows = list(islice(records, limit + 2))
    except UnicodeDecodeError as exc:
        raise InputError(field, shown, f"a UTF-8 text file (byte {exc.start} is not UTF-8)") from None
    except csv.Error as exc:
        raise InputError(field, shown, f"a well-formed CSV ({str(exc)[:80]})") from None
    if not rows:
        raise InputError(field, shown, "a CSV with at least one length")
    col, body = _length_column(rows, field, shown)
    if batch is None and len(body) > MAX_BATCH:
        raise InputError(field, shown, f"at most {MAX_BATCH} rows (set workload.batch to read the first ones)")
    values = [_csv_length(row, col, n, field, shown) for n, row in body[:limit]]
    if batch is not None and batch > len(values):
        raise InputError("workload.batch", batch, f"<= the {len(values)} rows of {shown}")
    if not values:
        raise InputError(field, shown, "a CSV with at least one length")
    return np.asarray(values, dtype=np.int32)


def _length_column(rows: list[tuple[int, list[str]]], field: str,
                   shown: str) -> tuple[int, list[tuple[int, list[str]]]]:
    """The column of the lengths and the data rows (the header rule of ``read_lengths_csv``)."""
    header = [c.strip().lower() for c in rows[0][1]]
    is_header = all(WORD.match(c) for c in header)
    if is_header and HEADER in header:
        return header.index(HEADER), rows[1:]
    if len(header) == 1:
        return 0, rows[1:] if is_header else rows  # no header: the first row is data like the others
    raise InputError(field, shown, f"a CSV with one column, or a header row naming a '{HEADER}' column")


def _csv_length(row: list[str], col: int, n: int, field: str, shown: str) -> int:
    cell = row[col].strip() if col < len(row) else ""
    if _is_int(cell) and 0 <= int(cell) <= MAX_TOKENS:
        return int(cell)
    looks_numeric = len(cell) <= 40 and all(ch in "0123456789+-.eE_ " for ch in cell)
    what = repr(cell) if looks_numeric else f"a {len(cell)}-character non-numeric cell"
    raise InputError(field, Shown(f"{shown} row {n}: {what}"),
                     f"integer lengths in [0, {MAX_TOKENS}] (a header row holds only words)")


def _is_int(text: str) -> bool:
    if len(text) > 40:  # int() of a huge digit string is slow, and no length has 40 digits
        return False
    try:
        int(text.strip())
    except ValueError:
        return False
    return True
