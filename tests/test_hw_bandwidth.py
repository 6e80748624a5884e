"""GM bandwidth: per-core peak, fair sharing of the chip bandwidth, penalties (processor sharing)."""

import math

import pytest
from test_hw_support import dma, rows, run

from cgdr_des.hw import load_profile
from cgdr_des.isa import Scalar

P = load_profile("atlas-300i-duo")
FIRST_RD = P.dma_read_latency_cycles + P.dma_read_overhead_cycles
FIRST_WR = P.dma_write_latency_cycles + P.dma_write_overhead_cycles


def _data_phase(d, first) -> int:
    return d["end"] - d["start"] - first


@pytest.mark.parametrize("nbytes", [32, 4096, 65536, 262144])
@pytest.mark.parametrize("read", [True, False])
def test_one_core_alone_reaches_its_per_core_peak(nbytes, read):
    (d,) = rows(run([[dma("GM2UB" if read else "UB2GM", nbytes)]]))
    peak = P.dma_read_peak_per_cycle if read else P.dma_write_peak_per_cycle
    phase = _data_phase(d, FIRST_RD if read else FIRST_WR)
    assert phase == math.ceil(nbytes / peak)
    assert peak >= nbytes / phase > peak - peak * peak / nbytes       # the peak, up to one rounded cycle


@pytest.mark.parametrize("k", [2, 3, 8])
def test_k_cores_streaming_share_the_chip_bandwidth(k):
    nbytes, n_dma = 65536, 4
    chip = P.gm_bytes_per_cycle
    assert k * P.dma_read_peak_per_cycle > chip            # the chip, not the cores, limits
    r = run([[dma("GM2UB", nbytes, gm_addr=c << 24) for _ in range(n_dma)] for c in range(k)])
    share = chip / k
    for c in range(k):
        d = rows(r, pipe="MTE2", core=c)
        assert len(d) == n_dma
        assert {_data_phase(x, FIRST_RD) for x in d} == {math.ceil(nbytes / share)}
    # aggregate over the time all cores are in their data phase never exceeds the chip bandwidth
    phase = _data_phase(rows(r, pipe="MTE2", core=0)[0], FIRST_RD)
    assert k * nbytes / phase <= chip


def test_a_late_joiner_slows_the_first_transfer_from_the_moment_it_joins():
    nbytes, delay_alu = 200_000, 100            # core 1 starts its DMA 200 cycles later
    r = run([[dma("GM2UB", nbytes)], [Scalar("alu", delay_alu), dma("GM2UB", nbytes, gm_addr=1 << 24)]])
    (d0,), (d1,) = rows(r, pipe="MTE2", core=0), rows(r, pipe="MTE2", core=1)
    peak, chip = P.dma_read_peak_per_cycle, P.gm_bytes_per_cycle
    a0, a1 = d0["start"] + FIRST_RD, d1["start"] + FIRST_RD          # data phases begin
    assert a1 - a0 == delay_alu * P.scalar_alu_cycles
    left0 = nbytes - peak * (a1 - a0)                               # core 0 alone until a1
    both = min(peak, chip / 2)
    end0 = a1 + math.ceil(left0 / both)
    left1 = nbytes - both * (end0 - a1)                             # then core 1 alone again
    end1 = end0 + math.ceil(left1 / min(peak, chip))
    assert (d0["end"], d1["end"]) == (end0, end1)


def test_water_filling_gives_an_unaligned_transfer_its_cap_and_the_rest_to_the_other():
    capacity = 180.0                                              # bytes/cycle, below 2 x peak
    gbps = capacity * P.clock_mhz / 1000
    unaligned_cap = P.dma_read_peak_per_cycle * P.dma_unaligned_efficiency
    assert unaligned_cap < capacity / 2 < P.dma_read_peak_per_cycle
    nbytes = 100_000
    r = run([[dma("GM2UB", nbytes, gm_addr=0)], [dma("GM2UB", nbytes // 2, gm_addr=32)]],
            gm_bandwidth_gbps=gbps)
    (aligned,), (unaligned,) = rows(r, pipe="MTE2", core=0), rows(r, pipe="MTE2", core=1)
    assert _data_phase(unaligned, FIRST_RD) == math.ceil((nbytes // 2) / unaligned_cap)
    t_shared = _data_phase(unaligned, FIRST_RD)
    left = nbytes - (capacity - unaligned_cap) * t_shared
    assert _data_phase(aligned, FIRST_RD) == t_shared + math.ceil(left / P.dma_read_peak_per_cycle)


def test_unaligned_gm_address_moves_at_the_reduced_rate():
    nbytes = 65536
    (d,) = rows(run([[dma("GM2UB", nbytes, gm_addr=P.dma_aligned_bytes // 2)]]), pipe="MTE2")
    assert _data_phase(d, FIRST_RD) == math.ceil(nbytes / (P.dma_read_peak_per_cycle * P.dma_unaligned_efficiency))


def test_dmas_on_one_pipe_do_not_overlap_and_pay_the_first_byte_each():
    n = 5
    r = run([[dma("GM2UB", 1024, gm_addr=k * 1024) for k in range(n)]])
    d = rows(r, pipe="MTE2")
    assert all(b["start"] == a["end"] for a, b in zip(d, d[1:], strict=False))
    assert d[-1]["end"] - d[0]["start"] == n * (FIRST_RD + math.ceil(1024 / P.dma_read_peak_per_cycle))
    assert r.cores[0]["busy_MTE2"] == d[-1]["end"] - d[0]["start"]
