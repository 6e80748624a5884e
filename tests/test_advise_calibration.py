"""Item costs are measured on the kernel variant asked for: two variants with different costs get
different tables under different cache keys, and the source kernel keeps the key it always had."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import CALIBRATED_NK

from cgdr_des import cost_cache
from cgdr_des.hw import load_profile
from cgdr_des.item_costs import launch_variant, measure_item_costs, variant_key
from cgdr_des.runtime import package_version, source_hash
from cgdr_des.simulation import run_launch

SHAPE = (CALIBRATED_NK, 2, 16, 16, True, 1)  # nk, nv, dk, dv, has_gamma, buffer_num


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(cost_cache.DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(cost_cache.SWITCH_ENV, raising=False)
    measure_item_costs.cache_clear()
    yield tmp_path / "cache" / "item-costs"
    measure_item_costs.cache_clear()


def test_variant_key_lists_only_what_differs_from_the_source():
    assert variant_key(None) == variant_key({}) == ()
    assert variant_key({"buffer_num": 2, "prefetch": False, "keep_tiling": False}) == ()
    assert variant_key({"prefetch": True, "keep_tiling": False}) == (("prefetch", True),)


@pytest.mark.slow
def test_two_variants_get_their_own_tables_and_keys(cache):
    prof = load_profile("atlas-300i-duo")
    base = measure_item_costs(prof, *SHAPE, run_launch)
    pre = measure_item_costs(prof, *SHAPE, run_launch, variant_key({"prefetch": True}))
    # prefetch changes the per-item fixed cost of this shape (the c == 0 inputs come in by the in-queue)
    assert not np.array_equal(base.sole, pre.sole)
    entries = sorted(p.stem for p in cache.glob("*.json"))
    assert len(entries) == 2
    # the source kernel's entry has the key of the inputs as they were before variants were keyed
    inputs = {"profile": {f: getattr(prof, f) for f in prof.__dataclass_fields__},
              "shape": {"nk": CALIBRATED_NK, "nv": 2, "dk": 16, "dv": 16, "has_gamma": True}, "buffer_num": 1,
              "runner": "cgdr_des.simulation.run_launch"}
    old_key = cost_cache.fingerprint({**cost_cache.canonical(inputs), "package_version": package_version(),
                                      "source_sha256": source_hash()})
    assert old_key in entries


def test_a_cost_weighted_run_dispatches_by_its_variants_costs():
    from cgdr_des.kernel.functional import make_launch
    from cgdr_des.kernel.launch import Shape

    shape = Shape(1, 8, 1, 2, 16, 16, 0.25, False)
    launch = make_launch(shape, [8], None, None, numerics="off", prefetch=True)
    assert launch_variant(launch) == (("prefetch", True),)
    assert launch_variant(make_launch(shape, [8], None, None, numerics="off")) == ()
