"""Golden makespans and per-core finishes of shipped scenarios, pinned before the machine is rebuilt.

The numbers were recorded from the machine as it stood at commit 500063b (the hand-scheduled pipes);
any redesign of the machine layer must reproduce them to the cycle. They are not a truth about the
hardware, only about the model: a change that moves them on purpose must say why and re-pin them
(qwen3_next_gqa_a2 was, once: see its comment).
"""

from __future__ import annotations

import pytest

GOLDEN = {
    "small": (1042722, [1042521, 1042599, 1042654, 1042685, 1042685, 1042722, 1042687, 1042692]),
    "representative": (6576079, [6570779, 6571675, 6572391, 6573798, 6575902, 6576079, 6576068, 6576057]),
    "long_tail": (180733196, [87268231, 87273136, 87286010, 87285999, 180733196, 2948, 2948, 2948]),
    # re-pinned (75 204 325 before): this launch splits V-tiles (vStep 80 of dv 128, nv 32 < 48 cores),
    # and phase fidelity now gives each core its own data cache. On the same shape cut down to
    # (2, 4, 128, 128) with lengths [200, 100] the shared cache was +0.80 % off instr, per-core
    # caches -0.06 % (tests/test_phase_core_cache.py holds split shapes to instr within 0.5 %).
    "qwen3_next_gqa_a2": (74012578, [
        74012034, 73833475, 74012064, 73833578, 74012092, 73833736, 74012124, 73833761, 74012156, 73833763,
        74012188, 73833765, 74012222, 73833766, 74012288, 73833766, 74012421, 73833760, 74012561, 73833743,
        74012578, 61990408, 62161682, 62338967, 62161679, 62338935, 62161678, 62338902, 62161678, 62338873,
        62161678, 62338847, 62161678, 62338820, 63197558, 63545120, 63545135, 63545127, 63545111, 63545089,
        64580944, 66134655, 66134623, 52908127, 2206, 2206, 2206, 2206]),
}


#: qwen3_next_gqa_a2 shortened to two 72-token sequences (conftest.shortened: every phase
#: signature of the full run, on the same 48 cores, split V-tiles and per-core caches) in ~2 s instead
#: of ~25 s, so the quick loop (-m "not slow") holds a split-tile launch to the cycle too. Recorded
#: from the code at 432c156, with the full run's pin above unchanged.
SHORT_GOLDEN = {"qwen3_next_gqa_a2": (5941504, [
    5941055, 5765752, 5941067, 5765764, 5941081, 5765777, 5941096, 5765792, 5941113, 5765809, 5941132, 5765829,
    5941154, 5765854, 5941189, 5765893, 5941238, 5765947, 5941323, 5765993, 5941419, 5766024, 5941485, 5766035,
    5941503, 5766034, 5941504, 5766026, 5941496, 5766015, 5941484, 5766001, 5941469, 5765986, 5941451, 5765968,
    5941431, 5765949, 5941405, 5765929, 5941376, 5765907, 3902919, 1406, 1406, 1406, 1406, 1406])}
SLOW = {"qwen3_next_gqa_a2"}  # whole runs over ~10 s


def assert_golden(res, golden):
    makespan, finishes = golden
    assert int(res.summary["makespan_cycles"].iloc[0]) == makespan
    assert res.cores["finish"].astype(int).tolist() == finishes


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in sorted(GOLDEN)])
def test_shipped_scenario_times_to_the_cycle(name, shipped_result):
    assert_golden(shipped_result(name), GOLDEN[name])


@pytest.mark.parametrize("name", sorted(SHORT_GOLDEN))
def test_shortened_shipped_scenario_times_to_the_cycle(name, shipped_result):
    assert_golden(shipped_result(name, short=True), SHORT_GOLDEN[name])
