"""``cgdr-des compare --kernel vector cube``: both programs on one scenario, four frames written.

A full 64-token chunk with dk = 64 takes the Cube-era fast path (a shorter chunk falls back to the
vector path), so the Cube program uses M and MTE1 and the vector program does not."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import TINY
from test_bad_inputs import assert_refused, invoke


@pytest.mark.slow
def test_compare_kernels_writes_the_frames_and_prints_the_table(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY, encoding="utf-8")
    res, _ = invoke("compare", path, "--kernel", "vector", "--kernel", "cube", "--out", tmp_path / "out",
                    "--set", "shape.dk=64", "--set", "shape.dv=64", "--set", "workload.lengths=[64, 64]")
    assert res.exit_code == 0, res.output
    summary = pd.read_parquet(tmp_path / "out" / "kernels_summary.parquet")
    assert list(summary["kernel_version"]) == ["vector", "cube"]
    assert (summary["makespan_cycles"] > 0).all()
    pipes = pd.read_csv(tmp_path / "out" / "kernels_pipes.csv")
    assert set(pipes.loc[pipes["kernel_version"] == "cube", "pipe"]) >= {"M", "MTE1", "V"}
    assert "M" not in set(pipes.loc[pipes["kernel_version"] == "vector", "pipe"])
    counts = pd.read_parquet(tmp_path / "out" / "kernels_counts.parquet")
    by_version = counts.set_index("kernel_version")
    assert by_version.loc["vector", "mmads"] == 0 and by_version.loc["cube", "mmads"] > 0
    for name in ("summary", "phases", "pipes", "counts"):
        assert (tmp_path / "out" / f"kernels_{name}.csv").is_file()
    assert str(summary["makespan_cycles"].iloc[1]) in res.output.replace(",", "")


def test_kernel_is_not_mixed_with_variants(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY, encoding="utf-8")
    res, elapsed = invoke("compare", path, "--kernel", "cube", "--variant", "prefetch", "--out", tmp_path / "o")
    assert_refused(res, elapsed, "--kernel: got 'cube'; alone")
