"""``chunk_gantt.png`` of ``cgdr-des compare``: a setting whose run kept spans only says so instead of
drawing an empty panel under a title that names a core and a chunk."""

from __future__ import annotations

from conftest import TINY_DICT

from cgdr_des import simulate
from cgdr_des.results import compare_plots
from cgdr_des.scenario import Scenario


def test_a_run_that_kept_spans_only_gets_a_panel_that_says_so(tmp_path, monkeypatch):
    sc = Scenario.from_dict(TINY_DICT)
    results = {"with ops": simulate(sc), "spans only": simulate(sc, keep_ops=False)}
    drawn = []
    monkeypatch.setattr(compare_plots, "save_figure", lambda fig, path: drawn.append(fig) or path)
    compare_plots.plot_chunk_gantt(results, tmp_path / "chunk_gantt.png")
    kept, spans = drawn[0].axes[:2]
    assert kept.get_title(loc="left").startswith("with ops: core ") and len(kept.collections) == 4
    assert spans.get_title(loc="left") == ("spans only: no per-op rows (the run kept spans only: "
                                           "[sim] ops = false, or more ops than a run keeps)")
    assert not spans.collections
