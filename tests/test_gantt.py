"""What the run's Gantt shows (results/plots.py ``gantt_view``) and ``cgdr-des plot --core --window``.

Checked against selections made here from a real run's frames: the default is the critical core's
longest work item, whole, as the items frame has it; a window selects exactly the core's operations
that meet it; past the cap the window is shortened to where the first operation left out starts,
and the note says how many were left out; bad options are one-line refusals naming the option.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import cgdr_des
from cgdr_des.cli import main
from cgdr_des.results.export import write_results
from cgdr_des.results.plots import gantt_view, last_core
from cgdr_des.scenario import Scenario

# 2 heads on 8 cores: one long sequence's items and many 8-token ones, so a core has several items
DOC = {"name": "gantt", "shape": {"nk": 1, "nv": 2, "dk": 64, "dv": 64},
       "workload": {"lengths": [300, 8, 8, 8, 8, 8, 8, 8, 8, 8]}, "sim": {"fidelity": "phase", "numerics": "off"}}


@pytest.fixture(scope="module")
def run():
    return cgdr_des.simulate(Scenario.from_dict(DOC))


@pytest.fixture(scope="module")
def run_dir(run, tmp_path_factory):
    out = tmp_path_factory.mktemp("gantt") / "run"
    write_results(run, out, trace=False)
    return out


def clock(run) -> float:
    return float(run.meta["clock_mhz"])


def meeting(ops, core, t0, t1) -> list[int]:
    """Index of the core's ops that meet [t0, t1), by a loop over rows."""
    return sorted(i for i, (c, s, e) in enumerate(zip(ops["core"], ops["start"], ops["end"], strict=True))
                  if c == core and s < t1 and (e > t0 or s >= t0))


def test_the_default_is_the_critical_core_s_longest_item_whole(run):
    items, cores = run.items, run.cores
    critical = int(cores.loc[cores["finish"].idxmax(), "core"])  # one core finishes last here
    assert (cores["finish"] == cores["finish"].max()).sum() == 1
    mine = [(int(e - s), -int(s), int(s), int(e)) for c, s, e in zip(items["core"], items["start"], items["end"],
                                                                      strict=True) if c == critical]
    assert len(mine) > 1
    _, _, start, end = max(mine)
    view = gantt_view(run.ops, items, cores, clock_mhz=clock(run))
    assert view.core == critical == last_core(cores)
    assert view.window == (start, end)
    assert sorted(view.rows.index) == meeting(run.ops, critical, start, end)
    assert f"its other {len(mine) - 1} work items" in view.left_out and "cap" not in view.left_out
    assert "whole" in view.why and "critical core" in view.why


def test_a_window_selects_exactly_the_ops_that_meet_it(run):
    c = clock(run)
    t0, t1 = int(run.ops["start"].quantile(0.3)), int(run.ops["start"].quantile(0.6))
    for core in range(int(run.cores["core"].max()) + 1):
        view = gantt_view(run.ops, run.items, run.cores, clock_mhz=c, core=core, window=(t0, t1))
        assert view.core == core and view.window == (t0, t1)
        assert sorted(view.rows.index) == meeting(run.ops, core, t0, t1)
        assert view.left_out == ""


def test_past_the_cap_the_window_ends_where_the_first_op_left_out_starts(run):
    view0 = gantt_view(run.ops, run.items, run.cores, clock_mhz=clock(run))
    everything = meeting(run.ops, view0.core, *view0.window)
    cap = len(everything) // 3
    view = gantt_view(run.ops, run.items, run.cores, clock_mhz=clock(run), max_ops=cap)
    starts = sorted(int(run.ops["start"][i]) for i in everything)
    assert view.window == (view0.window[0], starts[cap])
    assert sorted(view.rows.index) == meeting(run.ops, view.core, *view.window)
    assert 0 < len(view.rows) <= cap
    left = len(everything) - len(view.rows)
    assert f"{left:,} of the window's {len(everything):,} operations" in view.left_out
    assert "its start" in view.why and "whole" not in view.why


def test_a_window_past_the_run_s_end_is_clipped_and_says_so(run):
    end = int(run.cores["finish"].max())
    view = gantt_view(run.ops, run.items, run.cores, clock_mhz=clock(run), window=(end // 2, 3 * end))
    assert view.window == (end // 2, end)
    assert "clipped" in view.left_out


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.slow
def test_run_prints_a_note_naming_what_the_gantt_shows(run, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('name = "gantt"\n[shape]\nnk = 1\nnv = 2\ndk = 64\ndv = 64\n[workload]\n'
                    'lengths = [300, 8, 8, 8, 8, 8, 8, 8, 8, 8]\n[sim]\nfidelity = "phase"\nnumerics = "off"\n')
    res = invoke("run", path, "--out", tmp_path / "o")
    assert res.exit_code == 0, res.output
    (note,) = [line for line in res.stderr.splitlines() if line.startswith("note")]
    view = gantt_view(run.ops, run.items, run.cores, clock_mhz=clock(run))
    t0, t1 = (t / clock(run) for t in view.window)
    assert f"gantt_core{view.core}.png shows core {view.core}, {t0:,.1f}-{t1:,.1f} µs" in note
    assert "left out: its other" in note
    assert (tmp_path / "o" / f"gantt_core{view.core}.png").is_file()


@pytest.mark.slow
def test_plot_draws_the_core_and_window_asked_for(run, run_dir):
    c = clock(run)
    other = 1 - last_core(run.cores)  # the launch has cores 0 and 1
    res = invoke("plot", run_dir, "--core", other, "--window", "10:20.5")
    assert res.exit_code == 0, res.output
    assert str(run_dir / f"gantt_core{other}.png") in res.stdout.splitlines()
    (note,) = res.stderr.strip().splitlines()
    n = len(meeting(run.ops, other, int(round(10 * c)), int(round(20.5 * c))))
    assert n > 0
    assert note.startswith("note") and f"core {other}, 10.0-20.5 µs (the window asked for" in note
    assert f"{n:,} operations" in note


@pytest.mark.slow
@pytest.mark.parametrize("args, option", [
    (["--core", 2], "--core"), (["--core", "x"], "--core"), (["--core", -1], "--core"),
    (["--window", "5"], "--window"), (["--window", "5:1"], "--window"), (["--window", "-1:3"], "--window"),
    (["--window", "nan:3"], "--window"), (["--window", "a:b"], "--window"), (["--window", "1e9:2e9"], "--window"),
])
def test_bad_plot_options_are_one_line_refusals_naming_the_option(run_dir, args, option):
    res = invoke("plot", run_dir, *args)
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {option}"), res.output
    assert "Traceback" not in res.output


def test_a_refused_plot_leaves_the_directory_as_it_was(run_dir):
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    invoke("plot", run_dir, "--window", "1e9:2e9")
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == before
    assert np.all([p.is_file() for p in run_dir.glob("*.png")])


@pytest.mark.slow
@pytest.mark.parametrize("fmt, magic", [("svg", b"<?xml"), ("pdf", b"%PDF")])
def test_plot_format_writes_a_vector_copy_beside_every_png(run_dir, tmp_path, fmt, magic):
    """``plot --format``: each PNG keeps its place (the page inlines it) and gains a vector twin, both
    listed in the manifest and swapped in with the rest."""
    import shutil

    from cgdr_des.results.outdir import check_complete

    directory = tmp_path / "run"
    shutil.copytree(run_dir, directory)  # the module's run_dir stays as other tests expect it
    res = invoke("plot", directory, "--format", fmt)
    assert res.exit_code == 0, res.output
    pngs = sorted(Path(p).stem for p in res.stdout.split())  # what this plot drew (an older core's Gantt may stay)
    assert pngs and sorted(p.stem for p in directory.glob(f"*.{fmt}")) == pngs
    for stem in pngs:
        assert (directory / f"{stem}.{fmt}").read_bytes()[:len(magic)] == magic, stem
    listed = check_complete(directory, "DIRECTORY")
    assert all(f"{stem}.{fmt}" in listed for stem in pngs)


def test_plot_format_outside_its_choices_is_one_line():
    res = invoke("plot", ".", "--format", "jpg")
    assert res.exit_code == 2 and res.stderr.strip().splitlines()[0].startswith("error: --format")
