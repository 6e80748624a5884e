"""One sweep point (sweep/work.py) run in this process: what its outcome holds, and that no failure
escapes it.

A good point's summary is the simulation's summary row with the point's parameters as columns (the
same row ``simulate`` gives for the scenario); frames only when asked; an error recorded at
expansion, a failing kernel, a version mismatch and an exception with a multi-line message each come
back as one line of ``Outcome.error``.
"""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import TINY_DICT as TINY

from cgdr_des.runtime import package_version
from cgdr_des.scenario import Scenario
from cgdr_des.sweep.executors import InProcess
from cgdr_des.sweep.work import RUN_FRAMES, Task, _with_params, one_line, run_point


def task(point=0, scenario=None, **kw) -> Task:
    resolved = Scenario.from_dict(scenario or TINY, check_tiling=False).resolved_dict()
    return Task(point, "run", resolved, kw.pop("params", {"shape.dv": 16, "replication": 0}), **kw)


def test_a_good_point_is_the_simulation_s_summary_with_its_parameters(tiny_result):
    out = run_point(task(params={"kernel.policy": "greedy", "replication": 1}))
    assert out.error is None and out.frames == {} and out.wall_s > 0
    want = tiny_result.summary
    assert out.summary["kernel.policy"].tolist() == ["greedy"] and out.summary["replication"].tolist() == [1]
    pd.testing.assert_frame_equal(out.summary[list(want.columns)], want.reset_index(drop=True))


def test_frames_come_back_only_when_asked():
    out = run_point(task(frames=True))
    assert set(out.frames) == set(RUN_FRAMES)
    assert all(isinstance(f, pd.DataFrame) and len(f) for f in out.frames.values())


def test_an_error_recorded_at_expansion_is_returned_verbatim():
    recorded = "InputError: shape.nv: got 3; a multiple of nk (2)"
    out = run_point(Task(4, "run", None, {}, error=recorded))
    assert (out.point, out.error, out.summary) == (4, recorded, None)


def test_a_failing_kernel_is_one_line_naming_the_diagnostic():
    bad = {**TINY, "shape": {"nk": 1, "nv": 2, "dk": 16, "dv": 24}}  # a tile CopyToGm cannot write
    out = run_point(task(scenario=bad))
    assert out.error.startswith("KernelDiagnostic: ") and "\n" not in out.error and out.summary is None


def test_a_worker_with_another_version_refuses_the_point():
    out = run_point(task(version="0.0.0-other"))
    assert out.error.startswith("RuntimeError: worker has cgdr-des") and "0.0.0-other" in out.error
    assert run_point(task(version=package_version())).error is None


@pytest.mark.parametrize("exc, want", [
    (ValueError("first\nsecond"), "ValueError: first"),
    (KeyError("k"), "KeyError: 'k'"),
    (RuntimeError(""), "RuntimeError"),
    (ZeroDivisionError("  \n  padded\nmore"), "ZeroDivisionError: padded"),  # the first line with text
])
def test_one_line_is_the_type_and_the_first_line(exc, want):
    assert one_line(exc) == want


def test_parameters_are_added_without_touching_the_summary():
    summary = pd.DataFrame({"makespan_cycles": [5, 6]}, index=[7, 9])
    out = _with_params(summary, {"a": 1, "b": "x"})
    assert out.index.tolist() == [0, 1] and out["a"].tolist() == [1, 1] and out["b"].tolist() == ["x", "x"]
    assert list(summary.columns) == ["makespan_cycles"] and summary.index.tolist() == [7, 9]


def test_in_process_executor_runs_every_task_in_order_with_the_given_function():
    tasks = [Task(i, "run", None, {}, error=f"e{i}") for i in (3, 1, 2)]
    with InProcess() as ex:
        outs = list(ex.run(tasks))
        assert [(o.point, o.error) for o in outs] == [(3, "e3"), (1, "e1"), (2, "e2")]
        seen = list(ex.run(tasks, fn=lambda t: run_point(Task(t.point * 10, "run", None, {}, error="x"))))
    assert [o.point for o in seen] == [30, 10, 20]
