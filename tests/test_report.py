"""``python -m analysis.report --quick``: every section and figure is produced, and every number the
README quotes is the cell of the frame file it names (re-read here from the files, not from memory).

The report runs once (module fixture) on the reduced grid, in this process, into a temporary folder:
~15 s, most of it the four item-cost calibrations and the figures, so the module is marked slow.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO as ROOT

from analysis.report.build import build_report  # analysis/ is importable: conftest puts the repository on sys.path
from analysis.report.quotes import read_frame, select

pytestmark = pytest.mark.slow

SECTIONS = ("## How the numbers were made", "## 1. The makespan tail per policy", "## 2. Load balance",
            "## 3. Where the tail comes from", "## 4. The skew penalty", "## 5. Single and double buffering, prefetch",
            "## 6. The seed notes' claims", "## 7. Recommendation", "## 8. What to change in the kernel",
            "## Regenerating")
#: numbers the text states as rules or cites from the docs, not measurements: the bootstrap level,
#: docs/tail.md's split-tile surrogate bound, phase against instr on kernel variants
RULE_CONSTANTS = {"0.95", "0.2", "0.03"}


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


def test_the_advise_section_quotes_its_frames(report):
    """Section 8 ranks kernel changes from the advise sweeps: its tables' numbers are quotes of the
    advice frames, the combined best is the rank-1 row of its study, and a gain is the source kernel's
    p99 (baseline with greedy, read from the sweep's stored summary) minus the row's."""
    out, _, readme = report
    section = readme.split("## 8. What to change in the kernel")[1].split("## Regenerating")[0]
    quotes = pd.read_csv(out / "quotes.csv", keep_default_na=False)
    used = quotes[quotes["frame"].isin(["advice", "advice_best", "advice_variants"])]
    assert len(used) > 20 and all(text in section for text in used["text"])
    assert "**Headline point (lognormal σ=1)**" in section and "**`long_tail`**" in section
    adv, best = read_frame(out / "frames" / "advice.csv"), read_frame(out / "frames" / "advice_best.csv")
    assert set(adv["study"]) == {"lognormal σ=1", "long_tail"}
    for study, g in adv.groupby("study"):
        top = g[g["rank"] == 1].iloc[0]
        comb = select(best, {"study": study, "choice": "combined"})
        assert (comb["variant"], comb["policy"]) == (top["variant"], top["policy"])
        assert f"`{top['variant']}` + `{top['policy']}`" in section
        # the quick advise sweeps hold one point each: its stored rows are this study's
        stored = pd.read_parquet(out / "_work" / ("advise_long_tail" if study == "long_tail" else "advise")
                                 / "summary.parquet")
        ref = select(stored, {"variant": "baseline", "policy": "greedy"})["p99_us"]
        row = select(stored, {"variant": top["variant"], "policy": top["policy"]})
        assert row["p99_us"] == pytest.approx(top["p99_us"], rel=1e-12)
        assert top["gain_p99_us"] == pytest.approx(ref - row["p99_us"], rel=1e-9, abs=1e-6)
        assert comb["gain_p99_pct"] == pytest.approx(100 * (ref - row["p99_us"]) / ref, rel=1e-9)
        # the interval in percent is taken point by point, and the nominal profile is one of its points
        assert comb["gain_p99_min_pct"] <= comb["gain_p99_pct"] + 1e-9 <= comb["gain_p99_max_pct"] + 2e-9
    assert (out / "advise_gain.png").is_file()


# --- python -m analysis.report --check: the committed report against the code ---------------------------

COMMITTED = ROOT / "analysis" / "report"


@pytest.fixture(scope="module")
def recomputed():
    from analysis.report.check import recompute

    return recompute(COMMITTED)


@pytest.mark.slow
def test_check_passes_on_the_committed_report(recomputed):
    from analysis.report.check import against

    assert {n.frame for n in recomputed} == {"grid", "skew", "buffering"}
    assert all(n.tolerance > 0 for n in recomputed)
    bad = [n.line() for n in against(COMMITTED, recomputed) if not n.ok]
    assert not bad, bad


def _copy_report(dst: Path) -> Path:
    import shutil

    shutil.copytree(COMMITTED / "frames", dst / "frames")
    for name in ("report.json", "quotes.csv", "README.md"):
        shutil.copy(COMMITTED / name, dst / name)
    return dst


@pytest.mark.slow
def test_check_fails_when_a_quoted_number_is_edited(recomputed, tmp_path):
    """A hand edit of one quoted cell by a little more than its printed rounding is caught; by less, not."""
    from analysis.report.check import against

    target = next(n for n in recomputed if n.frame == "skew")
    copy = _copy_report(tmp_path)
    path = copy / "frames" / "skew.csv"
    frame = read_frame(path)
    row = select(frame, target.where).name
    for shift, caught in ((0.4 * target.tolerance, False), (2 * target.tolerance, True)):
        edited = frame.copy()
        edited.loc[row, target.column] = target.committed + shift
        edited.to_csv(path, index=False)
        judged = {n.name: n for n in against(copy, recomputed)}
        assert judged[target.name].ok is not caught
        assert sum(not n.ok for n in judged.values()) == int(caught)


@pytest.mark.slow
def test_check_command_exits_1_with_one_line_per_differing_number(recomputed, tmp_path, monkeypatch):
    """The command as CI runs it, in this process, on the numbers ``recomputed`` already holds (the
    recomputation itself is what the test above checks; CI runs the command for real)."""
    from click.testing import CliRunner

    import analysis.report.check as check
    from analysis.report.__main__ import main

    monkeypatch.setattr(check, "recompute", lambda folder, quick=False: check.against(folder, recomputed))
    copy = _copy_report(tmp_path)
    path = copy / "frames" / "grid.csv"
    grid = read_frame(path)
    head = grid[(grid["chip"] == "atlas-300i-duo") & (grid["nv"] == 16) & (grid["batch"] == 16)
                & (grid["law"] == "lognormal σ=1") & (grid["policy"] == "greedy")]
    grid.loc[head.index, "p99_us"] += 10.0
    grid.to_csv(path, index=False)
    res = CliRunner().invoke(main, ["--check", "--out", str(copy)])
    assert res.exit_code == 1, res.output
    lines = [x for x in res.stdout.splitlines() if "committed" in x]
    assert len(lines) == 1 and lines[0].startswith("headline p99 atlas-300i-duo greedy:"), res.stdout
    assert "tolerance 0.5" in lines[0]


def _fake_tree(root: Path) -> Path:
    """The inputs the fingerprint reads, copied: sweep files, scenarios, profiles, and two source files."""
    import shutil

    shutil.copytree(ROOT / "scenarios", root / "scenarios")
    shutil.copytree(ROOT / "cgdr_des" / "hw" / "profiles", root / "cgdr_des" / "hw" / "profiles")
    (root / "cgdr_des" / "a.py").write_text("A = 1\n")
    (root / "analysis" / "report").mkdir(parents=True)
    (root / "analysis" / "report" / "b.py").write_text("B = 1\n")
    return root


def test_fingerprints_change_when_an_input_changes(tmp_path):
    from analysis.report.inputs import differences, inputs

    root = _fake_tree(tmp_path)
    before = inputs(root)
    assert "scenarios/sweeps/report_grid.toml" in before["sweeps"]
    assert "scenarios/tail_lognormal.toml" in before["scenarios"]  # a base scenario of the sweeps
    assert "cgdr_des/hw/profiles/atlas-300i-duo.toml" in before["profiles"]
    assert differences(before, inputs(root)) == []
    sweep = root / "scenarios" / "sweeps" / "report_skew.toml"
    sweep.write_text(sweep.read_text() + "\n# edited\n")
    (root / "cgdr_des" / "a.py").write_text("A = 2\n")
    after = inputs(root)
    assert after["sweeps"]["scenarios/sweeps/report_skew.toml"] != before["sweeps"]["scenarios/sweeps/report_skew.toml"]
    assert differences(before, after) == ["sweeps: scenarios/sweeps/report_skew.toml changed since the report",
                                          f"source: {before['source'][:12]} in the report, {after['source'][:12]} now"]


def test_report_json_records_the_inputs_and_section_times(report):
    from analysis.report.inputs import inputs

    out, meta, _ = report
    stored = json.loads((out / "report.json").read_text())
    assert stored["inputs"] == inputs()
    assert {f"sweep {n}" for n in ("grid", "skew", "buffering")} <= set(stored["sections_s"])
    assert all(v >= 0 for v in stored["sections_s"].values())
