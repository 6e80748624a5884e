"""``python -m analysis.report --quick``: every section and figure is produced, and every number the
README quotes is the cell of the frame file it names (re-read here from the files, not from memory).

The report runs once (module fixture) on the reduced grid, in this process, into a temporary folder:
~15 s, most of it the four item-cost calibrations and the figures, so the module is marked slow.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from analysis.report.build import build_report  # analysis/ is importable: conftest puts the repository on sys.path
from analysis.report.quotes import read_frame, select

pytestmark = pytest.mark.slow

SECTIONS = ("## How the numbers were made", "## 1. The makespan tail per policy", "## 2. Load balance",
            "## 3. Where the tail comes from", "## 4. The skew penalty", "## 5. Single and double buffering, prefetch",
            "## 6. The seed notes' claims", "## 7. Recommendation", "## Regenerating")
#: numbers the text states as rules or cites from the docs, not measurements
RULE_CONSTANTS = {"0.95", "2.5"}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    meta = build_report(out, quick=True, workers=0, work=out / "_work", log=lambda *_: None)
    return out, meta, (out / "README.md").read_text(encoding="utf-8")


def test_every_section_and_claim_is_written(report):
    _, meta, readme = report
    for heading in SECTIONS:
        assert heading in readme, heading
    for claim in "abcde":
        m = re.search(rf"\*\*\({claim}\) .*?\*\*\s+\*\*(confirmed|refuted)", readme, re.S)
        assert m, f"claim ({claim}) has no verdict"
    assert "Quick grid" in readme and meta["quick"]
    assert re.search(r"Ship \*\*`(\w+)`\*\*", readme)
    assert f"cgdr-des `{meta['version']}` at commit `{meta['commit']}`" in readme


def test_every_figure_is_a_png_the_readme_shows(report):
    out, meta, readme = report
    shown = set(re.findall(r"!\[[^]]*\]\(([\w.-]+)\.png\)", readme))
    assert shown == set(meta["figures"])
    assert len(shown) >= 12
    for name in shown:
        data = (out / f"{name}.png").read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name


def test_every_quoted_number_is_the_cell_of_its_frame(report):
    out, _, readme = report
    quotes = pd.read_csv(out / "quotes.csv", keep_default_na=False)
    assert len(quotes) > 150
    frames = {name: read_frame(out / "frames" / f"{name}.csv") for name in quotes["frame"].unique()}
    for q in quotes.itertuples():
        row = select(frames[q.frame], json.loads(q.where))
        assert q.fmt.format(row[q.column]) == q.text, (q.frame, q.where, q.column)
        assert q.text in readme, q.text


def test_no_measured_number_in_the_text_is_unquoted(report):
    """Every number written with a decimal point, a thousands separator or a % sign is a recorded
    quote (or a rule the text states): a hand-typed figure would fail here."""
    out, _, readme = report
    quoted = set(pd.read_csv(out / "quotes.csv", keep_default_na=False)["text"])
    prose = re.sub(r"`[^`]*`|!\[[^]]*\]\([^)]*\)|[σαθ]=[\d.]+", " ", readme)
    tokens = re.findall(r"(?<![\w.,])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?x?", prose)
    measured = [t for t in tokens if any(c in t for c in ".,%")]
    assert measured, "no numbers found: the pattern is wrong"
    stray = sorted({t for t in measured if t not in quoted and t not in RULE_CONSTANTS})
    assert not stray, stray


def test_quoted_percentiles_are_numpys_on_the_stored_batches(report):
    """The grid frame's p99 is numpy's percentile of the sweep's stored batches (independent of the summary)."""
    import numpy as np

    out, _, _ = report
    grid = read_frame(out / "frames" / "grid.csv")
    batches = pd.read_parquet(out / "_work" / "grid" / "frames" / "batches")
    batches["point"] = batches["point"].astype(int)
    for (point, policy), grp in batches.groupby(["point", "policy"], observed=True):
        want = np.percentile(grp["makespan_us"].to_numpy(), 99)
        got = select(grid, {"point": int(point), "policy": policy})["p99_us"]
        assert got == pytest.approx(want, rel=1e-12)
