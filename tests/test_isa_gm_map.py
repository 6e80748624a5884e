"""The record contract's helpers (isa.py) and the launch's GM address map (kernel/gm.py).

GM map: every tensor on a 2 MiB boundary, in the op's order, each region large enough for its
element count (computed here from the shape) and none overlapping the next; element addresses are
base + index × element size. isa: the pipes of every HardEvent, the pipe of a DMA, event handles,
``expand`` against an explicit loop, and the count category of every record type.
"""

from __future__ import annotations

import pytest

from cgdr_des import isa
from cgdr_des.kernel import gm as gmm

ALIGN = 2 * 1024 * 1024
ORDER = ("query", "key", "value", "beta", "initial_state", "actual_seq_lengths", "g", "out", "final_state",
         "workspace")


def element_counts(t, nk, nv, dk, dv, batch) -> dict[str, int]:
    """What each GM tensor holds, from the op's shapes (docs/kernel.md §2)."""
    return {"query": t * nk * dk, "key": t * nk * dk, "value": t * nv * dv, "beta": t * nv,
            "initial_state": batch * nv * dv * dk, "actual_seq_lengths": batch, "g": t * nv,
            "out": t * nv * dv, "final_state": batch * nv * dv * dk}


SHAPES = [dict(t=1, nk=1, nv=1, dk=1, dv=1, batch=1), dict(t=130, nk=2, nv=4, dk=64, dv=128, batch=3),
          dict(t=8192, nk=16, nv=32, dk=128, dv=128, batch=4), dict(t=5, nk=1, nv=1, dk=64, dv=64, batch=9)]


@pytest.mark.parametrize("shape", SHAPES)
def test_gm_tensors_are_aligned_ordered_and_disjoint(shape):
    m = gmm.build_gm_map(**shape, workspace_bytes=1 << 20)
    assert list(m.base) == list(ORDER)
    assert all(b % ALIGN == 0 and b > 0 for b in m.base.values())
    sizes = element_counts(**shape)
    for name, nxt in zip(ORDER, ORDER[1:], strict=False):
        end = m.base[name] + sizes[name] * gmm.ELEMENT_BYTES[name]
        assert end <= m.base[nxt], name  # the region holds the tensor and stops before the next
        assert m.base[nxt] - m.base[name] < end - m.base[name] + ALIGN + 1  # padded to the next boundary only


def test_gm_element_sizes_are_the_op_s_dtypes():
    """fp16 tensors, int32 sequence lengths, fp32 g and workspace."""
    fp16 = {"query", "key", "value", "beta", "initial_state", "out", "final_state"}
    assert {n for n, b in gmm.ELEMENT_BYTES.items() if b == 2} == fp16
    assert {n for n, b in gmm.ELEMENT_BYTES.items() if b == 4} == {"actual_seq_lengths", "g", "workspace"}


def test_gm_addresses_step_by_the_element_size():
    m = gmm.build_gm_map(**SHAPES[1], workspace_bytes=0)
    for name, eb in gmm.ELEMENT_BYTES.items():
        assert m.addr(name, 0) == m.base[name]
        assert m.addr(name, 37) - m.addr(name, 36) == eb
        assert list(m.addrs(name, 5, 4)) == [m.addr(name, 5 + i) for i in range(4)]
    assert list(m.addrs("g", 3, 0)) == []


def test_tensors_of_one_launch_never_share_a_cache_line():
    """The bases are 2 MiB apart at least, so the data cache never mixes two tensors in a line."""
    m = gmm.build_gm_map(**SHAPES[0], workspace_bytes=0)
    bases = sorted(m.base.values())
    assert all(b - a >= ALIGN for a, b in zip(bases, bases[1:], strict=False))


@pytest.mark.parametrize("event", isa.HARD_EVENTS)
def test_every_hard_event_names_a_setting_and_a_waiting_pipe(event):
    src, dst = isa.event_pipes(event)
    pipes = isa.PIPES + isa.CUBE_PIPES
    assert src in pipes and dst in pipes
    assert f"{src}_{dst}" == event


def test_every_hard_event_is_listed_once_and_its_reverse_too_except_v_v():
    """The AIV's events come in pairs; the Cube side's (MTE2_MTE1, MTE1_M, M_MTE1, M_V, V_M) are the
    ones the Cube-era kernel uses, one way for the loads into L1."""
    assert len(set(isa.HARD_EVENTS)) == len(isa.HARD_EVENTS)
    for event in isa.HARD_EVENTS:
        src, dst = isa.event_pipes(event)
        if event not in isa.CUBE_HARD_EVENTS:
            assert f"{dst}_{src}" in isa.HARD_EVENTS
        else:
            assert {src, dst} & set(isa.CUBE_PIPES)


def test_event_handles_resolve_once_the_machine_fills_them():
    handle = isa.EventHandle()
    assert isa.resolve_event_id(handle) is None and "id=None" in repr(handle)
    handle.id = 5
    assert isa.resolve_event_id(handle) == 5
    assert isa.resolve_event_id(3) == 3


@pytest.mark.parametrize("direction, pipe", [("GM2UB", "MTE2"), ("UB2GM", "MTE3")])
def test_a_dma_runs_on_the_mte_of_its_direction(direction, pipe):
    dma = isa.Dma(direction, 64, isa.DataCopyParams(1, 2, 0, 0), 0, 0)
    assert dma.pipe == pipe and isa.record_kind(dma) == f"dma_{pipe}"


def body(i: int) -> list:
    return [isa.VecOp("Axpy", "fp32", 64, (i * 256, 256)), isa.Scalar("alu", i + 1)]


def test_expand_gives_the_iterations_in_order_and_nested_repeats_too():
    inner = isa.Repeat(3, lambda j: [isa.Scalar("ub_load", 10 + j)])
    records = [isa.Tag("P"), isa.Repeat(4, body), isa.Repeat(2, lambda i: [inner, isa.PipeBarrier("V")])]
    want = [isa.Tag("P")]
    for i in range(4):
        want += body(i)
    for _ in range(2):
        want += [isa.Scalar("ub_load", 10 + j) for j in range(3)] + [isa.PipeBarrier("V")]
    assert isa.expand(records) == want


def test_expand_of_records_without_repeats_is_the_same_list():
    records = body(0)
    assert isa.expand(records) is records
    assert isa.expand([isa.Repeat(0, body)]) == []


KINDS = [
    (isa.Scalar("exp", 1, arg=-0.5), "scalar_exp"),
    (isa.Scalar("ub_store", 9), "scalar_ub_store"),
    (isa.ScalarGm(64, 4), "scalar_gm_load"),
    (isa.ScalarGm(64, 4, store=True), "scalar_gm_store"),
    (isa.VecOp("Mul", "fp16", 128), "vec"),
    (isa.PipeBarrier("ALL"), "barrier_ALL"),
    (isa.SetFlag("V_S", 0), "set_V_S"),
    (isa.WaitFlag("MTE2_V", 1), "wait_MTE2_V"),
    (isa.AllocTensor("outQueue"), "AllocTensor"),
    (isa.Macro("P3", 1, 0, 1), "Macro"),
]


@pytest.mark.parametrize("rec, kind", KINDS, ids=[k for _, k in KINDS])
def test_record_kind_is_the_count_category(rec, kind):
    assert isa.record_kind(rec) == kind


def test_records_are_frozen_values():
    a, b = isa.VecOp("Add", "fp32", 64, (0, 256)), isa.VecOp("Add", "fp32", 64, (0, 256))
    assert a == b and hash(a) == hash(b)
    with pytest.raises(AttributeError):
        a.n = 3  # frozen: a record replayed from a cache cannot be changed by its consumer
