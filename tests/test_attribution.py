"""Critical-path attribution (cgdr_des/results/attribution.py): an independent per-cycle painting of
the same definition, the parts summing to the makespan on every shipped scenario, and refusals."""


import numpy as np
import pandas as pd
import pytest
from test_variants_bound import SHORT

import cgdr_des
from cgdr_des.results.attribution import PARTS, AttributionUnavailable, attribute, attribute_result

DMA_EVENTS = ("FetchEventID:", "SetFlag:", "WaitFlag:", "AllocEventID:", "ReleaseEventID:")


def painted(ops: pd.DataFrame, cores: pd.DataFrame) -> dict:
    """The attribution by painting one boolean per cycle, interval by interval (no breakpoints)."""
    core = int(cores.loc[cores["finish"].idxmax(), "core"])
    end = int(cores["finish"].max())
    rows = ops[ops["core"] == core]
    paint = {k: np.zeros(end, dtype=bool) for k in ("s_busy", "s_wait", "mte2", "mte3", "vec", "pb_all",
                                                   "dma_ev", "state0")}
    s_last = 0
    for r in rows.itertuples():
        a, b, op, pipe = int(r.start), min(int(r.end), end), str(r.op), str(r.pipe)
        wait = op.startswith(("WaitFlag", "PipeBarrier"))
        if pipe == "S":
            s_last = max(s_last, b)
            paint["s_wait" if wait else "s_busy"][a:b] = True
            paint["pb_all"][a:b] |= op.startswith("PipeBarrier:ALL")
            paint["dma_ev"][a:b] |= op.startswith(DMA_EVENTS) and "MTE" in op.split(":", 1)[1]
            paint["state0"][a:b] |= str(r.phase) == "S3_LoadState" and int(r.chunk) == 0
        elif op.startswith("DataCopy"):
            paint["mte2" if pipe == "MTE2" else "mte3"][a:b] = True
        elif pipe == "V" and not wait and not op.startswith("SetFlag"):
            paint["vec"][a:b] = True
    t = np.arange(end)
    launch = t < int(rows["start"].min())
    busy = paint["s_busy"] & ~launch
    waiting = ~launch & ~busy & (paint["s_wait"] | (t >= s_last) | paint["mte2"] | paint["mte3"])
    mte2 = waiting & paint["mte2"]
    mte3 = waiting & ~mte2 & paint["mte3"]
    vec = waiting & ~mte2 & ~mte3 & paint["vec"]
    out = {"launch": launch, "S": ~launch & ~waiting, "V": vec, "MTE2": mte2, "MTE3": mte3,
           "flags": waiting & ~mte2 & ~mte3 & ~vec, "barrier_V": vec & paint["pb_all"],
           "dma_sync": busy & paint["dma_ev"], "state_load_S": ~launch & ~waiting & paint["state0"]}
    return {k: int(v.sum()) for k, v in out.items()}


def small_scenario(fidelity: str, **kernel):
    return cgdr_des.scenario.Scenario.from_dict({
        "name": "a", "shape": {"nk": 2, "nv": 2, "dk": 32, "dv": 32}, "workload": {"lengths": [100]},
        "kernel": kernel, "sim": {"fidelity": fidelity}})


@pytest.mark.slow
@pytest.mark.parametrize("fidelity", ["instr", "phase"])
@pytest.mark.parametrize("kernel", [{}, {"prefetch": True, "state_double_buffer": True}])
def test_attribution_equals_a_per_cycle_painting(fidelity, kernel):
    res = cgdr_des.simulate(small_scenario(fidelity, **kernel))
    got = attribute_result(res)
    want = painted(res.ops, res.cores)
    assert {k: getattr(got, k) for k in want} == want
    assert sum(want[p] for p in PARTS) == got.makespan == int(res.summary["makespan_cycles"].iloc[0])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["small", "representative", "low_head_dv256", *SHORT])
def test_parts_add_up_to_the_makespan_on_every_shipped_scenario(name, shipped_result):
    """Whole runs for the three quick scenarios (small at its own instr fidelity), shortened runs
    (conftest.shortened: same profile, shape, kernel and fidelity) for the others."""
    res = shipped_result(name, short=name in SHORT)
    a = attribute_result(res)
    assert sum(getattr(a, p) for p in PARTS) == a.makespan == int(res.summary["makespan_cycles"].iloc[0])
    assert min(getattr(a, p) for p in PARTS) >= 0
    assert a.barrier_V <= a.V and a.dma_sync + a.state_load_S <= a.S
    assert a.launch == int(res.ops[res.ops["core"] == a.core]["start"].min())


def test_aggregated_ops_are_refused():
    ops = pd.DataFrame({"core": [0], "pipe": ["ALL"], "op": ["P1"], "phase": ["P1"], "chunk": [0], "start": [0],
                        "end": [10], "aggregated": [True]})
    with pytest.raises(AttributionUnavailable, match="aggregated"):
        attribute(ops, pd.DataFrame({"core": [0], "finish": [10]}))
