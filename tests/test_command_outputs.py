"""Every command's output directory on tiny inputs: the pictures each writes, ``cgdr-des plot DIR``
redrawing them in place (new files, manifest updated), and docs/frames.md naming every file.

One module-scoped fixture runs each command once (real simulations of 1-2 short sequences; the
``run --with-range`` study is cut to one field and two samples, as tests/test_sensitivity.py does).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ONE_ITEM
from conftest import REPO as ROOT
from matplotlib.figure import Figure
from matplotlib.text import Text

import cgdr_des.cli.sensitivity as cli_sens
from cgdr_des.cli import main
from cgdr_des.results.outdir import MANIFEST, check_complete
from cgdr_des.scenario.sections import DEFAULT_PROFILE

pytestmark = pytest.mark.slow

#: nk 1, nv 2, dk = dv = 32: test_tail.py's SHAPE on the default profile, so in one run of the suite the
#: tail and advise commands here read the baseline's calibration test_tail.py made (the calibration cache
#: is shared by the run's workers); the pictures need no wider head (dk = dv = 64 before, same pictures)
TINY = """name = "tiny"
[shape]
nk = 1
nv = 2
dk = 32
dv = 32
[workload]
lengths = [64, 40]
[sim]
numerics = "off"
trace = false
[study]
batches = 20
check_batches = 1
bootstrap = 10
"""
SHORT = ONE_ITEM
TAIL = TINY.replace("lengths = [64, 40]", 'batch = 2\ndistribution = { kind = "uniform", min = 8, max = 64 }')
SWEEP = """name = "tiny_grid"
base = "short.toml"
[grid]
"kernel.policy" = ["greedy", "round_robin"]
"shape.dv" = [16, 32]
"""
#: command -> the PNGs its directory must hold (besides the per-setting run plots)
PICTURES = {
    "run": ["core_load.png", "finish_cdf.png", "range/tornado.png", "range/joint_makespan.png"],
    "compare": ["critical_path.png", "chunk_gantt.png", "buffer_compare.png", "buffer_num_1/core_load.png"],
    "compare_kernels": ["kernels_pipes.png"],
    "tail": ["makespan_cdf.png", "makespan_over_lb.png", "load_balance.png", "makespan_vs_max_seqlen.png"],
    "measured": ["measured.png"],
    "calibrate": ["calibration.png"],
    "sensitivity": ["tornado.png", "joint_makespan.png"],
    "sweep": ["sweep_summary.png"],
    "advise": ["advice_gain.png"],
}


def _cli(*args) -> str:
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("commands")
    (tmp / "tiny.toml").write_text(TINY, encoding="utf-8")
    (tmp / "short.toml").write_text(SHORT, encoding="utf-8")
    (tmp / "sweep.toml").write_text(SWEEP, encoding="utf-8")
    (tmp / "tail.toml").write_text(TAIL, encoding="utf-8")
    (tmp / "m.csv").write_text("scenario,latency_us\ntiny.toml,500\nshort.toml,300\n", encoding="utf-8")
    sc, out = tmp / "tiny.toml", {name: tmp / name for name in PICTURES}
    real = cli_sens.sensitivity_of
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli_sens, "sensitivity_of", lambda s, fields, samples, seed: real(s, ["flag_cycles"], 2, seed))
        with _drawing(DRAWN["run"]):
            _cli("run", sc, "--out", out["run"], "--with-range")
    with _drawing(DRAWN["compare"]):
        _cli("compare", sc, "--buffer-num", "1", "--buffer-num", "2", "--out", out["compare"])
    with _drawing(DRAWN["compare_kernels"]):
        _cli("compare", sc, "--kernel", "vector", "--kernel", "cube", "--out", out["compare_kernels"])
    with _drawing(DRAWN["tail"]):
        _cli("tail", tmp / "tail.toml", "--out", out["tail"], "--policy", "greedy,round_robin")
    with _drawing(DRAWN["measured"]):
        _cli("measured", tmp / "m.csv", "--hypotheses", "vector", "--out", out["measured"])
    with _drawing(DRAWN["calibrate"]):
        _cli("calibrate", tmp / "m.csv", "--fields", "vec_pipe_delay_cycles", "--out", out["calibrate"])
    with _drawing(DRAWN["sensitivity"]):
        _cli("sensitivity", sc, "--fields", "flag_cycles,vec_pipe_delay_cycles", "--samples", "6",
             "--out", out["sensitivity"])
    with _drawing(DRAWN["sweep"]):
        _cli("sweep", tmp / "sweep.toml", "--workers", "0", "--out", out["sweep"])
    with _drawing(DRAWN["advise"]):
        _cli("advise", tmp / "tail.toml", "--out", out["advise"], "--variants", "state_db", "--policies", "greedy",
             "--samples", "0", "--fields", "flag_cycles")  # the ends: a gain interval to draw
    return out


#: command -> the pictures whose titles must name the scenario and the profile, and the scenario
#: words they name (measured's scenarios are its shapes)
TITLED = {
    "run": (["range/tornado.png", "range/joint_makespan.png"], "tiny"),
    "measured": (["measured.png"], "2 shapes"),
    "sensitivity": (["tornado.png", "joint_makespan.png"], "tiny"),
    "sweep": (["sweep_summary.png"], "short"),
    "advise": (["advice_gain.png"], "tiny"),
}
#: command -> {picture's path: what its figure drew}, as the command drew them (filled by the fixture)
DRAWN: dict[str, dict[str, dict]] = {command: {} for command in PICTURES}


@contextlib.contextmanager
def _drawing(drawn: dict[str, dict]):
    """Record in ``drawn``, for every figure saved meanwhile, by its path: its ``titles`` (axes and
    figure: what a reader sees on top of each PNG) and the titles, axis labels and legends that
    reach outside the saved picture (``cut``: what a reader cannot read whole)."""
    savefig = Figure.savefig

    def record(fig, fname, *args, **kwargs):
        saved = savefig(fig, fname, *args, **kwargs)
        # measured as the PNG was drawn: at its DPI, with the positions its layout pass left (laid out
        # again they would be the same), the artists placed by a draw that paints no pixel
        fig.set_dpi(kwargs.get("dpi") or fig.dpi)
        fig.set_layout_engine("none")
        fig.draw_without_rendering()
        path = re.sub(r"/\.([^/]+)\.\d+\.tmp\.png$", r"/\1", Path(fname).as_posix())  # a sweep's, before its rename
        drawn[path] = {"titles": [fig.get_suptitle(), *(ax.get_title(loc) for ax in fig.axes
                                                        for loc in ("left", "center", "right"))],
                       "cut": _cut_off(fig)}
        return saved

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "savefig", record)
        yield drawn


def _cut_off(fig: Figure) -> list[str]:
    """The titles, axis labels and legends of ``fig`` that reach past its edges (1 px of slack)."""
    renderer = fig.canvas.get_renderer()
    parts = [fig._suptitle, fig._supxlabel, fig._supylabel, *fig.legends]
    for ax in fig.axes:
        parts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, ax.get_legend()]
    box = fig.bbox
    cut = []
    for part in parts:
        if part is None or not part.get_visible() or (isinstance(part, Text) and not part.get_text()):
            continue
        ext = part.get_window_extent(renderer)
        if ext.x0 < box.x0 - 1 or ext.x1 > box.x1 + 1 or ext.y0 < box.y0 - 1 or ext.y1 > box.y1 + 1:
            cut.append(part.get_text() if isinstance(part, Text) else "a legend")
    return cut


def _picture(drawn: dict[str, dict], name: str) -> dict:
    """What was drawn into ``name`` (``range/tornado.png``: a path ending so)."""
    found = [v for k, v in drawn.items() if k.endswith(f"/{name}")]
    assert len(found) == 1, (name, list(drawn))
    return found[0]


def _names_scenario_and_profile(titles: list[str], scenario: str) -> bool:
    return any(scenario in t and DEFAULT_PROFILE in t for t in titles)


@pytest.mark.parametrize("command", list(TITLED))
def test_titles_name_the_scenario_and_profile(outputs, tmp_path, command):
    """As the command draws them, and as ``plot DIR`` redraws them from the saved files."""
    names, scenario = TITLED[command]
    for name in names:
        titles = _picture(DRAWN[command], name)["titles"]
        assert _names_scenario_and_profile(titles, scenario), (name, titles)
    directory = tmp_path / command
    shutil.copytree(outputs[command], directory)
    redrawn: dict[str, dict] = {}
    with _drawing(redrawn):
        _cli("plot", directory)
    for name in names:
        titles = _picture(redrawn, name)["titles"]
        assert _names_scenario_and_profile(titles, scenario), (name, titles)


@pytest.mark.parametrize("command", list(PICTURES))
def test_no_title_label_or_legend_runs_off_a_picture(outputs, command):
    cut = {path: drawn["cut"] for path, drawn in DRAWN[command].items() if drawn["cut"]}
    assert DRAWN[command] and not cut, cut


def _files(directory: Path) -> list[str]:
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())


@pytest.mark.parametrize("command", list(PICTURES))
def test_each_command_writes_its_pictures(outputs, command):
    for name in PICTURES[command]:
        data = (outputs[command] / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000, name  # a drawn picture, not a stub


@pytest.mark.parametrize("command", list(PICTURES))
def test_plot_redraws_every_picture_of_each_command(outputs, tmp_path, command):
    directory = tmp_path / command
    shutil.copytree(outputs[command], directory)  # other tests read the originals
    before = {name: (directory / name).stat().st_ino for name in _files(directory) if name.endswith(".png")}
    for name in before:
        (directory / name).write_bytes(b"stale")  # what plot must replace
    if command != "sweep":
        from cgdr_des.results.outdir import write_manifest

        write_manifest(directory)  # the stale bytes are now the listed ones: a redraw must list the new
    printed = _cli("plot", directory).split()
    assert sorted(Path(p).relative_to(directory).as_posix() for p in printed) == sorted(before)
    for name, inode in before.items():
        path = directory / name
        assert path.read_bytes()[:4] == b"\x89PNG", name
        assert path.stat().st_ino != inode, name  # written anew and swapped in, not patched in place
    if command != "sweep":  # a sweep stores its points in place, without a manifest
        files = check_complete(directory, "DIRECTORY")
        for name in before:
            assert files[name]["bytes"] == (directory / name).stat().st_size
        assert json.loads((directory / MANIFEST).read_text())["command"] == command.split("_")[0]


def test_plot_refuses_a_directory_no_command_wrote(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("hi")
    res = CliRunner().invoke(main, ["plot", str(tmp_path / "x")])
    assert res.exit_code == 2 and res.stderr.startswith("error: DIRECTORY")


def test_core_and_window_are_for_a_run_only(outputs):
    res = CliRunner().invoke(main, ["plot", str(outputs["measured"]), "--core", "0"])
    assert res.exit_code == 2 and res.stderr.startswith("error: --core")


def _normalised(name: str) -> str:
    """A file's name as frames.md writes it: per-setting and per-point parts by their placeholders."""
    name = re.sub(r"point=\d+", "point=<id>", name)
    name = re.sub(r"gantt_core\d+\.png", "gantt_core{N}.png", name)
    return name


@pytest.mark.parametrize("command", list(PICTURES))
def test_frames_md_names_every_file_of_each_command(outputs, command):
    doc = (ROOT / "docs" / "frames.md").read_text(encoding="utf-8")
    unnamed = []
    for name in _files(outputs[command]):
        full = _normalised(name)
        parts = full.split("/")
        # a file of a per-setting run (compare) or of run --with-range's range/: named as a run's file
        candidates = {full, parts[-1], f"DIR/{full}", f"{parts[0]}/{parts[-1]}" if len(parts) > 1 else full}
        if not any(re.search(rf"(?<![\w./]){re.escape(c)}(?![\w])", doc) for c in candidates):
            unnamed.append(name)
    assert not unnamed, f"docs/frames.md does not name {unnamed}"


def test_read_result_reads_each_setting_of_a_comparison(outputs, tmp_path):
    """A setting directory has no manifest of its own: read_result checks it against the comparison's."""
    import pandas as pd

    from cgdr_des.errors import InputError
    from cgdr_des.results.export import read_result

    for setting in ("buffer_num_1", "buffer_num_2"):
        result = read_result(outputs["compare"] / setting)
        assert result.meta["buffer_num"] == int(setting[-1])
        pd.testing.assert_frame_equal(result.items, pd.read_parquet(outputs["compare"] / setting / "items.parquet"))
    with pytest.raises(InputError, match="a run's output"):
        read_result(outputs["compare"])  # the comparison itself is not one run
    damaged = tmp_path / "compare"
    shutil.copytree(outputs["compare"], damaged)
    (damaged / "buffer_num_2" / "items.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match="items.parquet differs"):
        read_result(damaged / "buffer_num_2")
