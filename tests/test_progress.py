"""Progress: stages named, totals that never change inside a stage, a terminal bar redrawn in place,
and, without a terminal, lines no more often than every 10 s besides a stage's start and end. Then
every long command: its stderr (not a terminal) names its stages with fixed denominators."""

from __future__ import annotations

import io
import re
import threading

import pytest
from click.testing import CliRunner
from sweep_cases import GRID, TINY, write_sweep

from cgdr_des.cli import main
from cgdr_des.results import progress as progress_mod
from cgdr_des.results.progress import END_LINE_AFTER, LINE_INTERVAL, QUIET_LINE, TICK, TTY_INTERVAL, Progress


@pytest.fixture(autouse=True)
def _auto(monkeypatch):
    """The default mode here (conftest turns progress off for the other tests)."""
    monkeypatch.setenv("CGDR_DES_PROGRESS", "auto")


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class TTY(io.StringIO):
    def isatty(self):
        return True


def run_stage(progress: Progress, clock: Clock, name: str, total: int, seconds_per_step: float) -> None:
    with progress.stage(name, total, "items") as stage:
        for _ in range(total):
            clock.now += seconds_per_step
            stage.advance()


def counts(text: str, name: str) -> list[tuple[int, int]]:
    """Every ``done/total`` drawn for stage ``name`` (bar redraws or lines)."""
    found = []
    for piece in re.split(r"[\r\n]", text):
        if name in piece:
            found += [(int(d), int(t)) for d, t in re.findall(r"(\d+)/(\d+)", piece.split(name, 1)[1])]
    return found


# ---------------------------------------------------------------- without a terminal: lines


def test_lines_name_every_stage_and_keep_its_denominator():
    clock, stream = Clock(), io.StringIO()
    p = Progress(stream=stream, clock=clock, ticker=False)
    assert p.mode == "lines"
    run_stage(p, clock, "calibrating", 1, 30.0)
    run_stage(p, clock, "checking 40 batches", 40, 1.0)
    text = stream.getvalue()
    lines = text.splitlines()
    assert lines[0] == "progress   calibrating: started, 0/1 items"
    assert "progress   calibrating: done, 1/1 items in 30.0 s" in lines
    assert "progress   checking 40 batches: started, 0/40 items" in lines
    assert {t for _, t in counts(text, "checking 40 batches")} == {40}
    done = [d for d, _ in counts(text, "checking 40 batches")]
    assert done == sorted(done) and done[-1] == 40


def test_lines_are_throttled_to_one_per_interval_plus_start_and_end():
    clock, stream = Clock(), io.StringIO()
    p = Progress(stream=stream, clock=clock, ticker=False)
    steps, dt = 1000, 0.25  # 250 s of work, reported 1000 times
    run_stage(p, clock, "timing", steps, dt)
    lines = stream.getvalue().splitlines()
    updates = [x for x in lines if "started" not in x and "done," not in x]
    assert len(updates) <= steps * dt / LINE_INTERVAL
    assert len(updates) >= steps * dt / LINE_INTERVAL - 1  # and a long stage is not silent
    assert lines[0].endswith("started, 0/1000 items") and "done, 1000/1000 items in 250.0 s" in lines[-1]


def test_a_quick_stage_is_one_line():
    clock, stream = Clock(), io.StringIO()
    run_stage(Progress(stream=stream, clock=clock, ticker=False), clock, "sampling", 3, END_LINE_AFTER / 10)
    assert stream.getvalue() == "progress   sampling: started, 0/3 items\n"


def test_a_stage_without_a_total_takes_the_first_one_and_refuses_another():
    clock, stream = Clock(), io.StringIO()
    p = Progress(stream=stream, clock=clock, ticker=False)
    with p.stage("simulating", unit="work items") as stage:
        clock.now += LINE_INTERVAL
        stage(1, 8)
        assert stage.total == 8
        with pytest.raises(ValueError, match="has 8 steps, not 9"):
            stage(2, 9)
    assert stream.getvalue().splitlines()[:2] == ["progress   simulating: started",
                                                 "progress   simulating: 1/8 work items, 10 s, about 1:10 left"]


def test_a_long_step_still_shows_the_run_is_alive_once_a_minute():
    clock, stream = Clock(), io.StringIO()
    p = Progress(stream=stream, clock=clock, ticker=False)
    with p.stage("checking 3 batches", 3, "batches") as stage:
        for _ in range(int(3 * QUIET_LINE / TICK)):  # three quiet minutes, as the redraw thread sees them
            clock.now += TICK
            p.tick()
        stage.advance()
    lines = stream.getvalue().splitlines()
    assert lines[1:4] == [f"progress   checking 3 batches: 0/3 batches, {60 * k} s" for k in (1, 2, 3)]
    assert len(lines) == 5 and lines[4].startswith("progress   checking 3 batches: done, 1/3 batches in 180.0 s")


@pytest.mark.slow
def test_the_redraw_thread_moves_the_bar_clock_and_stops_with_the_stage():
    stream = TTY()
    p = Progress(stream=stream)
    with p.stage("waiting", 2):
        deadline = threading.Event()
        deadline.wait(2.5 * TICK)
        assert stream.getvalue().count("\r") >= 2  # the first draw and at least one redraw
    deadline.wait(2 * TICK)
    assert p._ticker is None and stream.getvalue().endswith("\n")


# ---------------------------------------------------------------- on a terminal: a bar


def test_the_bar_is_redrawn_in_place_throttled_and_ends_its_line():
    clock, stream = Clock(), TTY()
    p = Progress(stream=stream, clock=clock, ticker=False)
    assert p.mode == "bar"
    run_stage(p, clock, "running setting buffer_num_2", 500, TTY_INTERVAL / 5)
    text = stream.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1
    draws = text.split("\r")[1:]
    assert len(draws) <= 500 / 5 + 3  # throttled: not one draw per step
    assert all(d.startswith("running setting buffer_num_2 [") for d in draws)
    assert {t for _, t in counts(text, "running setting buffer_num_2")} == {500}
    assert "[" + "#" * progress_mod.WIDTH + "] 500/500 items" in draws[-1] and "done in 10.0 s" in draws[-1]


def test_two_stages_are_two_lines_on_a_terminal():
    clock, stream = Clock(), TTY()
    p = Progress(stream=stream, clock=clock, ticker=False)
    run_stage(p, clock, "one", 2, 0.5)
    run_stage(p, clock, "two", 3, 0.5)
    finals = [line.split("\r")[-1] for line in stream.getvalue().split("\n") if line]
    assert finals[0].startswith("one [") and "2/2 items" in finals[0]
    assert finals[1].startswith("two [") and "3/3 items" in finals[1]


def test_an_exception_leaves_the_bar_where_it_stopped_on_its_own_line():
    clock, stream = Clock(), TTY()
    p = Progress(stream=stream, clock=clock, ticker=False)
    with pytest.raises(KeyboardInterrupt), p.stage("long", 10) as stage:
        stage.advance()
        raise KeyboardInterrupt
    assert stream.getvalue().endswith("\n") and "done in" not in stream.getvalue()


@pytest.mark.parametrize(("value", "tty", "mode"), [
    ("off", True, "off"), ("off", False, "off"), ("lines", True, "lines"), ("bar", False, "bar"),
    ("auto", True, "bar"), ("bogus", False, "lines")])
def test_the_environment_variable_chooses(monkeypatch, value, tty, mode):
    monkeypatch.setenv("CGDR_DES_PROGRESS", value)
    p = Progress(stream=TTY() if tty else io.StringIO())
    assert p.mode == mode
    if mode == "off":
        with p.stage("x", 3) as stage:
            stage.advance(3)
        assert p.stream.getvalue() == ""


# ---------------------------------------------------------------- every long command


@pytest.fixture
def lines(monkeypatch):
    monkeypatch.setenv("CGDR_DES_PROGRESS", "lines")


def invoke(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res.stderr


def assert_stages(stderr: str, *names: str) -> None:
    """Each stage named in a start line, and one denominator per stage."""
    for name in names:
        assert f"progress   {name}: started" in stderr, stderr
        assert len({t for _, t in counts(stderr, name)}) <= 1, stderr
    assert all(line.startswith("progress   ") for line in stderr.splitlines() if "progress" in line)


def test_run_shows_its_stages(lines, tmp_path):
    (tmp_path / "s.toml").write_text(TINY, encoding="utf-8")
    assert_stages(invoke("run", tmp_path / "s.toml", "--out", tmp_path / "o"), "simulating tiny", "writing frames")


@pytest.mark.slow
def test_tail_shows_its_stages(lines, tmp_path):
    (tmp_path / "s.toml").write_text('name = "t"\n[shape]\nnk = 1\nnv = 2\ndk = 32\ndv = 32\n[workload]\nbatch = 2\n'
                                     '[workload.distribution]\nkind = "uniform"\nmin = 1\nmax = 90\n'
                                     '[study]\nbatches = 10\ncheck_batches = 2\nbootstrap = 10\n', encoding="utf-8")
    err = invoke("tail", tmp_path / "s.toml", "--out", tmp_path / "o", "--policy", "greedy,cost_lpt", "--workers", 2)
    assert_stages(err, "calibrating item costs (phase-fidelity launches, or the calibration cache)",
                  "sampling 10 batches", "timing 10 batches x 2 policies",
                  "checking 2 batches at phase fidelity on 2 workers", "summarising (10 bootstrap resamples)")
    assert "0/2 policies" in err and "0/2 batches" in err


@pytest.mark.slow
def test_compare_names_the_settings(lines, tmp_path):
    (tmp_path / "s.toml").write_text(TINY, encoding="utf-8")
    err = invoke("compare", tmp_path / "s.toml", "--buffer-num", "1", "2", "--out", tmp_path / "o")
    assert_stages(err, "running setting buffer_num_1", "running setting buffer_num_2")
    assert "tiny" not in err  # the setting, not the scenario, names the bar


@pytest.mark.slow
def test_compare_kernels_names_the_programs(lines, tmp_path):
    (tmp_path / "s.toml").write_text(TINY, encoding="utf-8")
    err = invoke("compare", tmp_path / "s.toml", "--kernel", "vector", "--kernel", "cube", "--out", tmp_path / "o",
                 "--set", "shape.dk=64", "--set", "shape.dv=64", "--set", "workload.lengths=[64, 64]")
    assert_stages(err, "running kernel vector", "running kernel cube")


def test_sweep_shows_its_points(lines, tmp_path):
    path = write_sweep(tmp_path, GRID.replace("replications = 2", "replications = 1").replace(
        '"shape.dv" = [16, 24, 32]', '"shape.dv" = [16]'))
    res = CliRunner().invoke(main, ["sweep", str(path), "--out", str(tmp_path / "o"), "--workers", "0"])
    assert res.exit_code == 1  # the nv = 3 points fail validation, as GRID says
    assert_stages(res.stderr, "running 4 points on in-process")
    assert "0/4 points" in res.stderr


@pytest.mark.slow
def test_sensitivity_shows_its_two_stages(lines, tmp_path):
    (tmp_path / "s.toml").write_text(TINY, encoding="utf-8")
    err = invoke("sensitivity", tmp_path / "s.toml", "--out", tmp_path / "o", "--fields", "vec_pipe_delay_cycles",
                 "--samples", "2")
    assert_stages(err, "nominal and 2 one-at-a-time ends of 1 fields", "2 joint Latin-hypercube samples")
    assert "0/3 runs" in err and "0/2 samples" in err


@pytest.mark.slow
def test_measured_shows_its_predictions(lines, tmp_path):
    (tmp_path / "s.toml").write_text(TINY, encoding="utf-8")
    (tmp_path / "m.csv").write_text("scenario,latency_us\ns.toml,500\n", encoding="utf-8")
    err = invoke("measured", tmp_path / "m.csv", "--out", tmp_path / "o", "--hypotheses", "vector")
    assert_stages(err, "predicting 1 shapes x 1 hypotheses (3 runs each)")
    assert "0/1 predictions" in err


@pytest.mark.slow
def test_calibrate_shows_the_fit_and_the_refits(lines, tmp_path):
    for name, lengths in (("a", "[8]"), ("b", "[8, 3]")):
        (tmp_path / f"{name}.toml").write_text(TINY.replace('"tiny"', f'"{name}"').replace("[8, 3]", lengths),
                                               encoding="utf-8")
    (tmp_path / "m.csv").write_text("scenario,latency_us\na.toml,30\nb.toml,40\n", encoding="utf-8")
    err = invoke("calibrate", tmp_path / "m.csv", "--fields", "vec_pipe_delay_cycles", "--out", tmp_path / "o")
    assert_stages(err, "fitting 1 field to 2 points: Levenberg-Marquardt",
                  "fitting 1 field to 2 points: compass search", "leave-one-out: 2 refits")
    assert "0/8 iterations" in err and "0/2 refits" in err
