"""Golden makespans and per-core finishes of shipped scenarios, pinned before the machine is rebuilt.

The numbers were recorded from the machine as it stood at commit 500063b (the hand-scheduled pipes);
any redesign of the machine layer must reproduce them to the cycle. They are not a truth about the
hardware, only about the model: a change that moves them on purpose must say why and re-pin them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import cgdr_des

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"

GOLDEN = {
    "small": (1042722, [1042521, 1042599, 1042654, 1042685, 1042685, 1042722, 1042687, 1042692]),
    "representative": (6576079, [6570779, 6571675, 6572391, 6573798, 6575902, 6576079, 6576068, 6576057]),
    "long_tail": (180733196, [87268231, 87273136, 87286010, 87285999, 180733196, 2948, 2948, 2948]),
    "qwen3_next_gqa_a2": (75204325, [
        75092834, 75204024, 75092861, 75204144, 75092889, 75204301, 75092922, 75204325, 75092955, 75204325,
        75092987, 75204325, 75093028, 75204325, 75093104, 75204325, 75093219, 75204319, 75093314, 75204301,
        75093316, 63066724, 63238009, 63261588, 63238009, 63261565, 63238009, 63261543, 63238009, 63261517,
        63238009, 63261496, 63238009, 63261463, 64238867, 64500846, 64500855, 64500845, 64500833, 64500813,
        65501647, 67002825, 67002793, 53602663, 2206, 2206, 2206, 2206]),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_shipped_scenario_times_to_the_cycle(name):
    sc = cgdr_des.load_scenario(SCENARIOS / f"{name}.toml")
    res = cgdr_des.simulate(sc)
    makespan, finishes = GOLDEN[name]
    assert int(res.summary["makespan_cycles"].iloc[0]) == makespan
    assert res.cores["finish"].astype(int).tolist() == finishes
