"""The usable UB: the host tiling sizes vStep against ``ub_usable_bytes`` (the UB less what AscendC
keeps for itself), while the device still carves its buffers out of ``ub_bytes``."""

import pytest

import cgdr_des
from cgdr_des.errors import InputError
from cgdr_des.hw import load_profile
from cgdr_des.kernel.layout import init_local_buffers
from cgdr_des.kernel.tiling import compute_tiling
from cgdr_des.scenario import Scenario, validate_tiling

P = load_profile("atlas-300i-duo")
SC = {"name": "ub", "shape": {"nk": 1, "nv": 1, "dk": 128, "dv": 128}, "workload": {"lengths": [8]},
      "sim": {"fidelity": "phase", "numerics": "off", "trace": False}}


def _sc(usable: int | None = None) -> Scenario:
    ov = {} if usable is None else {"hardware": {"overrides": {"ub_usable_bytes": usable}}}
    return Scenario.from_dict({**SC, **ov})


@pytest.mark.parametrize("usable", [P.ub_usable_bytes, 262144, 245760, 200000])
def test_the_buffers_of_the_chosen_vstep_fit_the_usable_ub(usable):
    t = validate_tiling(_sc(usable))
    assert t.ub_size == usable
    assert init_local_buffers(t).used_bytes <= usable        # what the host saw bounds what the device uses


def test_vstep_shrinks_with_the_usable_ub():
    steps = [validate_tiling(_sc(u)).v_step for u in (262144, 253952, 245760, 229376, 200000)]
    assert steps == sorted(steps, reverse=True) and steps[0] == 128 and steps[-1] < steps[0]


def test_the_default_keeps_vstep_128_on_the_128_shapes():
    assert validate_tiling(_sc()).v_step == 128


def test_a_smaller_usable_ub_is_simulated_with_the_smaller_vstep():
    res = cgdr_des.simulate(_sc(245760))
    assert res.tiling.v_step == compute_tiling(t=8, hqk=1, dk=128, hv=1, dv=128, batch=1,
                                                           ub_size=245760, aiv_num=8).v_step < 128


def test_more_than_the_ub_is_an_input_error():
    with pytest.raises(InputError, match="ub_usable_bytes"):
        _sc(P.ub_bytes + 32)
