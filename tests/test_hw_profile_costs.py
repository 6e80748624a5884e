"""The numbers the machine derives from a profile (hw/profile.py, hw/costs.py), for every shipped
profile and under overrides, each recomputed here from the profile's own fields.

GM bandwidth per cycle, µs per cycle, vector latencies and the ``vec_params`` table, per-kind scalar
cycles, a DMA's first byte for merged runs of calls, a transfer's rate cap at aligned and unaligned
addresses, and the fidelity check of ``dma_outstanding``.
"""

from __future__ import annotations

import math

import pytest

from cgdr_des.errors import InputError
from cgdr_des.hw import costs, list_profiles, load_profile

PROFILES = list(list_profiles())


@pytest.fixture(params=PROFILES)
def prof(request):
    return load_profile(request.param)


def test_gm_bandwidth_in_bytes_per_cycle(prof):
    """GB/s = 1e9 bytes/s; one cycle is 1 / (clock_mhz * 1e6) s."""
    assert prof.gm_bytes_per_cycle == pytest.approx(prof.gm_bandwidth_gbps * 1e9 / (prof.clock_mhz * 1e6))
    assert prof.cycles_to_us(prof.clock_mhz) == pytest.approx(1.0)
    assert prof.cycles_to_us(0) == 0


def test_vec_params_are_width_cycles_per_repeat_and_latency_of_every_op(prof):
    table = costs.vec_params(prof)
    for op, widths in prof.vec_width.items():
        for dtype, width in widths.items():
            latency = prof.vec_delay_cycles[op][dtype] + prof.vec_pipe_delay_cycles
            assert table[dtype][op] == (width, prof.vec_cycles_per_repeat[op], latency)
            assert prof.vec_latency_cycles(op, dtype) == latency
    assert sum(len(ops) for ops in table.values()) == sum(len(w) for w in prof.vec_width.values())


def test_scalar_kind_cycles_are_the_profile_s(prof):
    assert costs.scalar_kind_cycles(prof) == {"alu": prof.scalar_alu_cycles, "ub_load": prof.scalar_ub_load_cycles,
                                              "ub_store": prof.scalar_ub_store_cycles, "div": prof.scalar_div_cycles}


@pytest.mark.parametrize("calls", [1, 2, 5, 16])
@pytest.mark.parametrize("outstanding", [1, 2, 4])
def test_a_merged_run_pays_each_overhead_and_one_latency_per_group(calls, outstanding):
    prof = load_profile("atlas-300i-duo", {"dma_outstanding": outstanding})
    for read, lat, over in ((True, prof.dma_read_latency_cycles, prof.dma_read_overhead_cycles),
                            (False, prof.dma_write_latency_cycles, prof.dma_write_overhead_cycles)):
        groups = math.ceil(calls / outstanding)
        assert costs.dma_first_byte_cycles(prof, read, calls) == calls * over + groups * lat
    assert costs.dma_first_byte_cycles(prof, True) == prof.dma_read_latency_cycles + prof.dma_read_overhead_cycles


@pytest.mark.parametrize("offset", [0, 1, 31, 32, 100, 511, 512])
def test_the_rate_cap_drops_off_the_alignment(prof, offset):
    align = prof.dma_aligned_bytes
    for read, peak in ((True, prof.dma_read_peak_per_cycle), (False, prof.dma_write_peak_per_cycle)):
        for base in (0, 7 * align):
            addr = base + offset
            want = peak if addr % align == 0 else peak * prof.dma_unaligned_efficiency
            assert costs.dma_rate_cap(prof, read, addr) == want


def test_dma_outstanding_other_than_one_is_refused_at_instr_fidelity_only():
    prof = load_profile("atlas-300i-duo", {"dma_outstanding": 2})
    with pytest.raises(InputError) as info:
        costs.check_timing_fields(prof, "instr")
    assert info.value.field == "hardware.overrides.dma_outstanding"
    assert costs.check_timing_fields(prof, "phase") == prof.raw_interlock


@pytest.mark.parametrize("interlock", [False, True])
def test_check_timing_fields_returns_raw_interlock(interlock):
    prof = load_profile("atlas-300i-duo", {"raw_interlock": interlock})
    assert costs.check_timing_fields(prof, "instr") is interlock


def test_an_override_moves_only_what_derives_from_it():
    base = load_profile("atlas-300i-duo")
    faster = load_profile("atlas-300i-duo", {"gm_bandwidth_gbps": base.gm_bandwidth_gbps * 2,
                                             "vec_pipe_delay_cycles": base.vec_pipe_delay_cycles + 3})
    assert faster.gm_bytes_per_cycle == pytest.approx(2 * base.gm_bytes_per_cycle)
    for op in base.vec_width:
        for dtype in base.vec_width[op]:
            assert faster.vec_latency_cycles(op, dtype) == base.vec_latency_cycles(op, dtype) + 3
    assert costs.scalar_kind_cycles(faster) == costs.scalar_kind_cycles(base)
    assert faster.field_sources()["gm_bandwidth_gbps"]["confidence"] == "override"
