"""Writing a run to disk and reading it back; plots redrawn from saved frames."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_results_frames import ASSIGN, CLOCK, META, synth_run  # tests/ is on sys.path under pytest

from cgdr_des.results.export import read_frames, read_result, replot, write_results
from cgdr_des.results.frames import build_result
from cgdr_des.results.plots import last_core, plot_buffer_compare
from cgdr_des.scenario import Scenario

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def scenario(**output):
    return Scenario.from_dict({"name": "exp", "shape": {"nk": 1, "nv": 3, "dk": 16, "dv": 16},
                               "workload": {"lengths": [128, 64]}, "output": output},
                              check_tiling=False)


def result(keep_ops=True, outputs=None, sc=None):
    run, _ = synth_run(ASSIGN, seed=3, keep_ops=keep_ops)
    return build_result(run, ASSIGN, meta=META, clock_mhz=CLOCK, outputs=outputs, scenario=sc)


def is_png(path: Path) -> bool:
    return path.read_bytes()[:8] == PNG_MAGIC


def test_write_then_read_frames_round_trip(tmp_path):
    res = result()
    written = write_results(res, tmp_path, trace=False, plots=False)
    for name in ("ops", "items", "cores", "summary"):
        assert written[name].name == f"{name}.parquet" and written[name].exists()
        assert not (tmp_path / f"{name}.csv").exists()
    back = read_frames(tmp_path)
    for name in ("ops", "items", "cores", "summary"):
        pd.testing.assert_frame_equal(back[name], getattr(res, name), check_dtype=False,
                                      check_categorical=False)


def test_csv_copies_on_request(tmp_path):
    res = result()
    write_results(res, tmp_path, csv=True, trace=False, plots=False)
    items = pd.read_csv(tmp_path / "items.csv")
    assert items[["batch", "head", "seqlen", "start", "end"]].to_numpy().tolist() == \
        res.items[["batch", "head", "seqlen", "start", "end"]].astype(np.int64).to_numpy().tolist()


@pytest.mark.slow
def test_full_write_has_trace_plots_meta_scenario_and_outputs(tmp_path):
    out = {"out": np.arange(24, dtype=np.float16).reshape(2, 3, 4), "final_state": None}
    sc = scenario()
    res = result(outputs=out, sc=sc)
    write_results(res, tmp_path)
    trace = json.loads((tmp_path / "trace.json").read_text())
    assert any(e["ph"] == "X" for e in trace["traceEvents"])
    core = last_core(res.cores)
    for png in ("core_load.png", "finish_cdf.png", f"gantt_core{core}.png"):
        assert is_png(tmp_path / png), png
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["meta"]["clock_mhz"] == CLOCK and meta["meta"]["avgload"] == META["avgload"]
    resolved = json.loads((tmp_path / "scenario.resolved.json").read_text())
    assert Scenario.from_dict(resolved, check_tiling=False).scenario_hash() == sc.scenario_hash()
    back = read_result(tmp_path)
    np.testing.assert_array_equal(back.out, out["out"])
    assert back.final_state is None


def test_last_core_is_the_one_that_finishes_last():
    res = result()
    finish = res.cores.set_index("core")["finish"]
    assert finish[last_core(res.cores)] == finish.max()


@pytest.mark.slow
def test_gantt_core_and_window_from_the_scenario(tmp_path):
    res = result(sc=scenario(gantt_core=0, gantt_window=[0, 50]))
    written = write_results(res, tmp_path, trace=False)
    assert is_png(written["gantt_core0"])


@pytest.mark.slow
def test_replot_redraws_from_saved_frames(tmp_path):
    write_results(result(keep_ops=False), tmp_path, trace=False)
    pngs = sorted(tmp_path.glob("*.png"))
    assert pngs
    for p in pngs:
        p.unlink()
    redrawn = replot(tmp_path)
    assert sorted(redrawn) == pngs and all(is_png(p) for p in redrawn)


def test_buffer_compare_plot(tmp_path):
    path = plot_buffer_compare({1: result(), 2: result(keep_ops=False)}, tmp_path / "bc.png")
    assert is_png(path)
