"""``--max-memory`` for tail studies and sweeps: the study's memory model (estimate.py ``study_memory_bytes``)
against its own terms, and the refusals before any work (one line, exit 2, nothing written)."""

from __future__ import annotations

import shutil

from click.testing import CliRunner
from conftest import SCENARIOS, SWEEPS

from cgdr_des.cli import main
from cgdr_des.estimate import (
    STUDY_BASE_BYTES,
    STUDY_BATCH_BYTES,
    STUDY_CORE_BYTES,
    STUDY_ITEM_BYTES,
    study_estimate,
    study_memory_bytes,
)
from cgdr_des.scenario import load_scenario, validate_tiling


def test_the_study_model_is_linear_in_batches_and_policies():
    per = 192 * STUDY_ITEM_BYTES + 8 * STUDY_CORE_BYTES + STUDY_BATCH_BYTES
    assert study_memory_bytes(0, 7, 192, 8) == STUDY_BASE_BYTES
    assert study_memory_bytes(1000, 7, 192, 8) - STUDY_BASE_BYTES == 1000 * 7 * per
    assert study_memory_bytes(2000, 7, 192, 8) - study_memory_bytes(1000, 7, 192, 8) == 1000 * 7 * per


def test_the_headline_study_counts_its_items_cores_and_policies():
    sc = load_scenario(SCENARIOS / "tail_lognormal_12h.toml")
    t = validate_tiling(sc)
    est = study_estimate(sc, t, 40_000)
    items = sc.workload.batch * sc.shape.nv  # 12 heads on 8 cores: no split V-tiles
    assert est.memory_bytes == study_memory_bytes(40_000, 7, items, t.block_dim)
    assert est.memory_bytes == study_memory_bytes(40_000, 7, items, 8)  # every policy but optimal (192 items)


def _refused(args, tmp_path):
    res = CliRunner().invoke(main, [str(a) for a in args])
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 2, res.output
    assert lines[-1].startswith("error: --max-memory: got '1.0 GiB'; at least the estimated"), res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "o").exists()  # refused before --out is touched


def test_a_tail_study_above_max_memory_is_refused_before_it_calibrates(tmp_path):
    _refused(["tail", SCENARIOS / "tail_lognormal_12h.toml", "--out", tmp_path / "o", "--batches", 1_000_000,
              "--max-memory", "1G"], tmp_path)


def test_a_sweep_whose_tail_points_exceed_max_memory_together_is_refused(tmp_path):
    sweep = tmp_path / "sweeps" / "s.toml"
    sweep.parent.mkdir()
    shutil.copy(SCENARIOS / "lognormal_batch.toml", tmp_path / "lognormal_batch.toml")
    sweep.write_text((SWEEPS / "lognormal_tail.toml").read_text(encoding="utf-8")
                     .replace("batches = 1000", "batches = 200000"), encoding="utf-8")
    _refused(["sweep", sweep, "--out", tmp_path / "o", "--workers", 2, "--max-memory", "1G"], tmp_path)
