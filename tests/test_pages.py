"""index.html of every command's output: self-contained, every plot inline, tables filled, the answer
taken from the frames (the numbers are recomputed here from the files, independently of page.py).

The simulations are stubbed where the page's content does not depend on them (run, compare,
sensitivity, measured, calibrate); tail and sweep run for real on tiny scenarios."""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sweep_cases import TINY, write_sweep
from test_cli import GOOD, scenario_file, stub_simulate

from cgdr_des.cli import main
from cgdr_des.results.page import CAPTIONS, FALLBACK_CAPTION, caption_of

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class PageParser(HTMLParser):
    """Every reference, image, table and answer paragraph of a page."""

    def __init__(self):
        super().__init__()
        self.refs, self.images, self.tags = [], [], []
        self.tables: list[int] = []  # <td> count per <table>
        self.answers: list[str] = []
        self._in_answer = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        self.refs += [a[k] for k in ("src", "href", "action", "data") if k in a]
        if tag == "img":
            self.images.append(a.get("src", ""))
        elif tag == "table":
            self.tables.append(0)
        elif tag == "td":
            self.tables[-1] += 1
        elif tag == "p" and a.get("class") == "answer":
            self._in_answer = True
            self.answers.append("")

    def handle_endtag(self, tag):
        if tag == "p":
            self._in_answer = False

    def handle_data(self, data):
        if self._in_answer:
            self.answers[-1] += data


def check_page(out: Path, *, manifest: bool = True, plots: bool = True) -> str:
    """The checks every page passes (``plots``: the command draws at least one); returns its answer text."""
    text = (out / "index.html").read_text(encoding="utf-8")
    page = PageParser()
    page.feed(text)
    assert all(r.startswith(("data:", "#")) for r in page.refs), page.refs
    assert "script" not in page.tags and "link" not in page.tags and "http://" not in text and "https://" not in text
    pngs = sorted(out.rglob("*.png"))
    assert len(page.images) == len(pngs) and (pngs or not plots)
    inline = set()
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        data = base64.b64decode(src.split(",", 1)[1], validate=True)
        assert data.startswith(PNG_SIGNATURE)
        inline.add(data)
    assert inline == {p.read_bytes() for p in pngs}  # each file of the directory, no other
    assert page.tables and all(n > 0 for n in page.tables), page.tables
    assert page.answers and all(a.strip() for a in page.answers)
    if manifest:
        assert "index.html" in json.loads((out / "manifest.json").read_text())["files"]
    return " ".join(page.answers)


def invoke(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res


@pytest.fixture
def stubbed(monkeypatch):
    import cgdr_des.cli.common as common

    monkeypatch.setattr(common, "_simulate", lambda: stub_simulate)


@pytest.mark.slow
def test_run_page_names_the_makespan_and_the_critical_core(tmp_path, stubbed):
    out = tmp_path / "run"
    invoke("run", scenario_file(tmp_path, GOOD), "--out", out)
    answer = check_page(out)
    s = pd.read_parquet(out / "summary.parquet").iloc[0]
    cores = pd.read_parquet(out / "cores.parquet")
    assert f"{s['makespan_us']:,.1f} µs" in answer
    assert f"imbalance {s['imbalance']:.3f}" in answer
    assert f"Core {int(cores['core'][cores['finish'].to_numpy().argmax()])} finishes last" in answer


@pytest.mark.slow
def test_plot_rewrites_the_run_page_and_keeps_its_command_line(tmp_path, stubbed):
    out = tmp_path / "run"
    invoke("run", scenario_file(tmp_path, GOOD), "--out", out)
    before = (out / "index.html").read_text(encoding="utf-8")
    line = 'name="cgdr-des-command-line"'
    recorded = [x for x in before.splitlines() if line in x]
    (out / "index.html").write_text(recorded[0] + "\nstale", encoding="utf-8")  # a page plot must replace
    for png in out.glob("*.png"):
        png.unlink()
    invoke("plot", out)
    check_page(out)
    after = (out / "index.html").read_text(encoding="utf-8")
    assert len(recorded) == 1 and " run " in recorded[0] and str(out) in recorded[0]
    assert [x for x in after.splitlines() if line in x] == recorded  # not plot's own command line


@pytest.mark.slow
def test_compare_page_names_the_fastest_setting_and_every_setting_s_plots(tmp_path, stubbed):
    out = tmp_path / "cmp"
    invoke("compare", scenario_file(tmp_path, GOOD), "--buffer-num", "1", "2", "--out", out)
    answer = check_page(out)
    assert any(p.parent != out for p in out.rglob("*.png"))  # the settings' own plots are inline too
    t = pd.read_parquet(out / "compare.parquet")
    fastest = t.loc[t["makespan_cycles"].idxmin()]
    assert f"{fastest['setting']} is the fastest: {fastest['makespan_us']:,.1f} µs" in answer
    assert f"speed-up {fastest['speedup']:.3f}×" in answer


def test_compare_kernels_page(tmp_path, monkeypatch):
    import cgdr_des.kernels_compare as kc

    summary = pd.DataFrame({"kernel_version": ["vector", "cube"], "makespan_cycles": [90_000, 61_234],
                            "makespan_us": [90_000 / 1060, 61_234 / 1060], "scenario": "good",
                            "hardware": "atlas-300i-duo"})
    pipes = pd.DataFrame({"kernel_version": ["vector", "cube"], "pipe": ["V", "M"],
                          "busy_cycles_mean_per_core": [10, 20]})
    monkeypatch.setattr(kc, "compare_kernels", lambda base, versions, progress=None:
                        kc.KernelComparison(summary, pipes.rename(columns={"pipe": "phase"}), pipes,
                                            pd.DataFrame({"kernel_version": ["vector", "cube"], "mmads": [0, 4]})))
    out = tmp_path / "k"
    invoke("compare", scenario_file(tmp_path, GOOD), "--kernel", "vector", "--kernel", "cube", "--out", out)
    assert "cube is the fastest program: 61,234 cycles" in check_page(out)


@pytest.mark.slow
def test_tail_page_names_the_best_policy_and_its_interval(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('name = "pages_tail"\n[shape]\nnk = 1\nnv = 2\ndk = 32\ndv = 32\n'
                    '[workload]\nbatch = 3\n[workload.distribution]\nkind = "uniform"\nmin = 1\nmax = 200\n'
                    '[study]\nbatches = 40\ncheck_batches = 1\nbootstrap = 20\n')
    out = tmp_path / "t"
    invoke("tail", path, "--out", out, "--policy", "greedy,cost_lpt")
    answer = check_page(out)
    t = pd.read_parquet(out / "tail_summary.parquet").set_index("policy")
    best = t["p99_us"].idxmin()
    assert answer.startswith(f"{best} has the lowest p99 makespan: {t.loc[best, 'p99_us']:,.1f} µs "
                             f"[{t.loc[best, 'p99_lo_us']:,.1f}, {t.loc[best, 'p99_hi_us']:,.1f}]")
    err = pd.read_csv(out / "checks.csv")["makespan_rel_err"].abs().max()
    assert f"at most {err:.3%}" in answer


def _sensitivity_stub(sc, fields, samples, seed):
    from cgdr_des.timing.sensitivity import Sensitivity

    us = {"nominal": [100.0], "oat": [95.0, 130.0, 99.0, 101.0], "lhs": [97.0, 120.0]}
    runs = pd.DataFrame({"kind": ["nominal", "oat", "oat", "oat", "oat", "lhs", "lhs"],
                         "param": [None, "a_cycles", "a_cycles", "b_cycles", "b_cycles", None, None],
                         "end": [None, "low", "high", "low", "high", None, None],
                         "value": [None, "1", "9", "2", "3", None, None],
                         "makespan_us": sum(us.values(), [])})
    runs["makespan_cycles"] = (runs["makespan_us"] * 1000).astype(np.int64)
    runs["change_pct"] = 100 * (runs["makespan_us"] / 100.0 - 1)
    return Sensitivity("tiny", runs, ("a_cycles", "b_cycles"), seed)


def test_sensitivity_page_names_the_interval_and_the_strongest_field(tmp_path, monkeypatch):
    import cgdr_des.cli.sensitivity as cli_sens

    monkeypatch.setattr(cli_sens, "sensitivity_of", _sensitivity_stub)
    out = tmp_path / "s"
    invoke("sensitivity", scenario_file(tmp_path, GOOD), "--out", out)
    answer = check_page(out)
    runs = pd.read_parquet(out / "samples.parquet")
    lo, hi = runs["makespan_us"].min(), runs["makespan_us"].max()
    oat = runs[runs["kind"] == "oat"]
    top = oat.loc[oat["change_pct"].abs().idxmax(), "param"]
    assert f"[{lo:,.1f} µs, {hi:,.1f} µs]" in answer and f"{top} moves it most" in answer


@pytest.mark.slow
def test_run_with_range_page_inlines_the_tornado_and_names_the_interval(tmp_path, stubbed, monkeypatch):
    import cgdr_des.cli.sensitivity as cli_sens

    monkeypatch.setattr(cli_sens, "sensitivity_of", _sensitivity_stub)
    out = tmp_path / "run"
    invoke("run", scenario_file(tmp_path, GOOD), "--out", out, "--with-range")
    answer = check_page(out)
    assert (out / "range" / "tornado.png").is_file()  # inline too: check_page counts every PNG below out
    interval = json.loads((out / "range" / "interval.json").read_text())
    assert f"[{interval['low_us']:,.1f} µs, {interval['high_us']:,.1f} µs]" in answer


def test_measured_page_names_the_hypothesis_that_fits(tmp_path, monkeypatch):
    import cgdr_des.measured as measured

    rows = []
    for shape, meas in (("a", 500.0), ("b", 900.0)):
        for hyp, device, inside in (("vector", meas / 3, False), ("cube", meas / 1.1, True)):
            rows.append({"shape": shape, "hypothesis": hyp, "measured_us": meas, "device_us": device,
                         "host_us": 10.0, "host_low_us": 5.0, "host_high_us": 40.0, "predicted_us": device + 10,
                         "predicted_low_us": device * 0.9, "predicted_high_us": device * 1.2, "inside": inside,
                         "measured_over_device": meas / device, "error": ""})
    monkeypatch.setattr(measured, "compare_measured", lambda csv, hyps, progress=None: pd.DataFrame(rows))
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    csv = tmp_path / "m.csv"
    csv.write_text("scenario,latency_us\ntiny.toml,500\n", encoding="utf-8")
    out = tmp_path / "m"
    invoke("measured", csv, "--out", out, "--hypotheses", "vector,cube")
    answer = check_page(out)
    v = pd.DataFrame(json.loads((out / "verdicts.json").read_text()))
    best = v.loc[v["n_inside"].idxmax()]
    assert (v["n_inside"] == best["n_inside"]).sum() == 1  # the stub makes one hypothesis fit
    assert f"fit {best['hypothesis']} best ({int(best['n_inside'])} of {int(best['n'])} inside)" in answer


def test_calibrate_page_names_the_fitted_fields_and_residuals(tmp_path, monkeypatch):
    import cgdr_des.timing.calibrate as cal

    def fit(problem, loo=True, progress=None):
        pts = pd.DataFrame({"scenario": ["tiny"], "measured_us": [80.0], "nominal_us": [75.0], "fitted_us": [79.0]})
        pts["residual_pct"] = 100 * (pts["fitted_us"] / pts["measured_us"] - 1)
        pts["loo_us"], pts["loo_error_pct"] = np.nan, np.nan
        return cal.Fit({"vec_pipe_delay_cycles": 20}, {"vec_pipe_delay_cycles": 23}, 0.01, 7, pts)

    monkeypatch.setattr(cal, "calibrate", fit)
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    csv = tmp_path / "m.csv"
    csv.write_text("scenario,latency_us\ntiny.toml,80\n", encoding="utf-8")
    out = tmp_path / "c"
    invoke("calibrate", csv, "--fields", "vec_pipe_delay_cycles", "--out", out, "--no-loo")
    answer = check_page(out)
    res = pd.read_csv(out / "residuals.csv")
    rms = float(np.sqrt(np.mean(res["residual_pct"] ** 2)))
    assert "vec_pipe_delay_cycles: 20 → 23" in answer and f"RMS residual {rms:.2f} %" in answer


def test_sweep_page_counts_the_points(tmp_path):
    spec = write_sweep(tmp_path, 'name = "pages"\nbase = "tiny.toml"\n[grid]\n"kernel.buffer_num" = [1, 2]\n')
    out = tmp_path / "sw"
    invoke("sweep", spec, "--out", out, "--workers", "0")
    text = (out / "index.html").read_text(encoding="utf-8")
    page = PageParser()
    page.feed(text)
    assert all(r.startswith(("data:", "#")) for r in page.refs)
    assert len(page.images) == len(list(out.rglob("*.png")))
    assert page.tables and all(n > 0 for n in page.tables)
    done = pd.read_parquet(out / "summary.parquet")["point"].nunique()
    assert f"{done} of 2 points done, 0 failed" in " ".join(page.answers)


def test_every_plot_the_commands_write_has_its_caption():
    """Every PNG name the package writes (its string literals, read from the source) has its own caption."""
    import re

    from conftest import PACKAGE

    names = set()
    for src in PACKAGE.rglob("*.py"):
        names |= set(re.findall(r"""["']([a-z_{}0-9]+\.png)["']""", src.read_text(encoding="utf-8")))
    written = {re.sub(r"\{[^}]*\}", "7", n) for n in names}  # gantt_core{core}.png -> gantt_core7.png
    assert "core_load.png" in written and "makespan_cdf.png" in written  # the scan found the plots
    assert [n for n in sorted(written) if caption_of(n) == FALLBACK_CAPTION] == []
    assert caption_of("gantt_core7.png") == CAPTIONS["gantt_core"]
    assert caption_of("something_new.png") == FALLBACK_CAPTION
