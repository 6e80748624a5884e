"""Choices that keep plots readable, tested on their numbers (the pictures themselves are looked at;
tests/test_command_outputs.py checks that no title, label or legend runs off a picture)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cgdr_des.results.plots import profile_name, scenario_on
from cgdr_des.results.tail_plots import busy_shares, share_bins


def test_busy_shares_divide_each_core_by_its_batchs_mean():
    cores = pd.DataFrame({"batch_index": [1, 0, 1, 0], "core": [1, 1, 0, 0], "busy_cycles": [2, 3, 2, 1]})
    # batch 0: cores 0, 1 busy 1 and 3 (mean 2); batch 1: 2 and 2 (mean 2)
    assert busy_shares(cores).tolist() == [0.5, 1.5, 1.0, 1.0]


@pytest.mark.parametrize(("shares", "lo", "hi"), [
    ([0.62, 1.0, 1.17], 0.6, 1.2),  # balanced within ±40 %: not squeezed into a 0-2 axis
    ([1.0, 1.0], 0.9, 1.1),          # perfectly even: 1.0 still has room either side
    ([0.0, 1.0, 2.35], 0.0, 2.4),    # an idle core and an overloaded one are both on the axis
])
def test_share_bins_cover_the_shares_and_an_even_split(shares, lo, hi):
    edges = share_bins(np.array(shares))
    assert edges[0] == pytest.approx(lo) and edges[-1] == pytest.approx(hi)
    assert edges[0] <= min(shares) and max(shares) < edges[-1] and edges[0] < 1.0 < edges[-1]


def test_titles_name_a_profile_file_by_its_name():
    assert scenario_on("small", "atlas-300i-duo") == "small on atlas-300i-duo"
    assert scenario_on("small", "/home/me/fits/profile.toml") == "small on profile.toml"
    assert scenario_on("small", None) == "small on ?"  # an output saved before the profile was recorded
    assert profile_name(None) is None


def test_a_sweeps_lines_per_policy_take_the_policys_colour():
    from matplotlib.colors import to_hex
    from matplotlib.figure import Figure

    from cgdr_des.results.palette import policy_colour, series_colour
    from cgdr_des.results.sweep_plots import _panel

    summary = pd.DataFrame({"kernel.policy": ["greedy", "greedy", "cost_lpt", "cost_lpt"], "shape.dv": [16, 32] * 2,
                            "makespan_us": [1.0, 2.0, 1.5, 2.5]})
    ax = Figure().add_subplot()
    _panel(ax, summary, "shape.dv", ["kernel.policy"], "makespan_us")
    assert {line.get_label(): to_hex(line.get_color()) for line in ax.lines} == {
        "kernel.policy=cost_lpt": policy_colour("cost_lpt"), "kernel.policy=greedy": policy_colour("greedy")}
    ax = Figure().add_subplot()
    _panel(ax, summary.rename(columns={"kernel.policy": "kernel.buffer_num"}), "shape.dv", ["kernel.buffer_num"],
           "makespan_us")
    assert [to_hex(line.get_color()) for line in ax.lines] == [series_colour(0), series_colour(1)]


def test_a_calibration_of_many_fields_keeps_its_title_on_the_picture(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from cgdr_des.results.calibrate_plots import plot_calibration

    extents = []
    savefig = Figure.savefig

    def record(fig, fname, *args, **kwargs):
        saved = savefig(fig, fname, *args, **kwargs)
        fig.set_dpi(kwargs.get("dpi") or fig.dpi)
        fig.canvas.draw()
        extents.append((fig.axes[0].title.get_window_extent(fig.canvas.get_renderer()), fig.bbox))
        return saved

    monkeypatch.setattr(Figure, "savefig", record)
    names = [f"a_rather_long_profile_field_name_{i}_cycles" for i in range(6)]
    points = pd.DataFrame({"scenario": ["s"], "measured_us": [100.0], "nominal_us": [90.0], "residual_pct": [1.0],
                           "loo_error_pct": [float("nan")]})
    plot_calibration(points, {"profile": "atlas-300i-duo", "nominal": dict.fromkeys(names, 10.0),
                              "fitted": dict.fromkeys(names, 12.5), "rms_residual_pct": 1.0}, tmp_path / "c.png")
    (title, box), = extents
    assert box.x0 <= title.x0 and title.x1 <= box.x1 and title.y1 <= box.y1
