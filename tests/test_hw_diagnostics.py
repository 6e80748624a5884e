"""Every diagnostic the machine raises has a program that triggers it, and correct programs raise none."""

import pytest
from test_hw_support import copy_compute_copy, dma, rows, run, vec

from cgdr_des.errors import InputError, KernelDiagnostic
from cgdr_des.hw import Machine
from cgdr_des.isa import (
    AllocEventID,
    AllocTensor,
    DataCopyExtParams,
    DataCopyParams,
    DeQue,
    Dma,
    EnQue,
    EventHandle,
    FreeTensor,
    InitBuffer,
    PipeBarrier,
    Scalar,
    SetFlag,
    Tag,
    VecOp,
    WaitFlag,
)
from cgdr_des.kernel.emit import scalar_exp_call


def _diag(programs, profile: str = "atlas-300i-duo", **overrides) -> str:
    with pytest.raises(KernelDiagnostic) as exc:
        run(programs, profile, **overrides)
    return str(exc.value)


def test_wait_flag_on_a_pipe_that_is_never_set_is_a_deadlock_naming_the_pipe():
    msg = _diag([[Tag("P1", 0, 2), vec(), WaitFlag("MTE2_V", 3), vec("Add")]])
    first = msg.splitlines()[0]
    assert "deadlock" in first and "core 0 V" in first and "WaitFlag<MTE2_V>(3)" in first
    assert "record #2" in first and "P1" in first and "h=2" in first


def test_scalar_wait_that_is_never_set_names_the_scalar_unit():
    msg = _diag([[Scalar("alu")], [Scalar("alu"), WaitFlag("V_S", 1)]])
    assert "core(s) 1" in msg and "core 1 S" in msg and "WaitFlag<V_S>(1)" in msg
    assert "core 0" not in msg.replace("core(s)", "")


def test_deadlock_lists_every_blocked_automaton():
    # S waits for room in a full V queue; V waits for an S_V flag the scalar unit sets only later
    prog = [WaitFlag("S_V")] + [vec() for _ in range(6)] + [SetFlag("S_V")]
    msg = _diag([prog], queue_depth=4)
    assert "core 0 S: waits for a free slot in the full V queue" in msg
    assert "core 0 V: waits in WaitFlag<S_V>(0)" in msg


def test_ninth_alloc_event_id_on_one_hard_event_is_exhaustion():
    prog = [AllocEventID("V_MTE2", EventHandle()) for _ in range(8)]
    run([prog])                                                     # eight are fine
    msg = _diag([[Tag("P2")] + prog + [AllocEventID("V_MTE2", EventHandle())]])
    assert "event ids exhausted" in msg and "AllocEventID<V_MTE2>" in msg and "record #9" in msg
    run([prog + [AllocEventID("MTE2_V", EventHandle())]])          # another HardEvent has its own pool


def test_alloc_tensor_beyond_buffer_num_without_a_free():
    base = [InitBuffer("inQ", "VECIN", 2, 1024), AllocTensor("inQ"), AllocTensor("inQ")]
    msg = _diag([base + [AllocTensor("inQ")]])
    assert "AllocTensor on TQue 'inQ'" in msg and "BUFFER_NUM=2" in msg
    run([base + [FreeTensor("inQ"), AllocTensor("inQ")]])         # a free in between makes it legal


def test_ub_over_allocation():
    msg = _diag([[InitBuffer("a", "VECCALC", 1, 200_000), InitBuffer("b", "VECOUT", 2, 40_000)]])
    assert "UB over-allocation" in msg and "'b'" in msg and "262144" in msg
    run([[InitBuffer("a", "VECCALC", 1, 200_000), InitBuffer("b", "VECOUT", 1, 62_144)]])   # exactly full


def test_ub_capacity_comes_from_the_profile():
    prog = [[InitBuffer("a", "VECCALC", 1, 190_000)]]
    run(prog, "atlas-a2-910b2")
    with pytest.raises(KernelDiagnostic, match="UB over-allocation"):
        run(prog, "atlas-a2-910b2", ub_bytes=196608 - 8192, ub_usable_bytes=1)
    with pytest.raises(KernelDiagnostic, match="UB over-allocation"):
        run([[InitBuffer("a", "VECCALC", 1, 200_000)]], "atlas-a2-910b2")


@pytest.mark.parametrize("params, field", [
    (DataCopyParams(1, 70000, 0, 0), "DataCopyParams.block_len"),
    (DataCopyParams(1, 2, 65536, 0), "DataCopyParams.src_stride"),
    (DataCopyParams(1, 2, 0, -1), "DataCopyParams.dst_stride"),
    (DataCopyParams(4096, 1, 0, 0), "DataCopyParams.block_count"),
    (DataCopyExtParams(1, 2097152, 0, 0), "DataCopyExtParams.block_len"),
    (DataCopyExtParams(4096, 32, 0, 0), "DataCopyExtParams.block_count"),
])
def test_datacopy_field_outside_its_hardware_range(params, field):
    msg = _diag([[Dma("GM2UB", 64, params, 0, 0)]])
    assert field in msg and "truncate" in msg


def test_datacopy_fields_at_their_limits_are_fine():
    run([[Dma("GM2UB", 64, DataCopyParams(4095, 65535, 65535, 65535), 0, 0),
          Dma("UB2GM", 64, DataCopyExtParams(4095, 2097151, 2**32 - 1, 0), 0, 0)]])


def test_second_set_flag_before_the_wait_is_a_diagnostic_and_policies_change_it():
    # V is slow (long Exp behind a barrier), so the scalar unit sets S_V twice before V waits once
    prog = [vec("Exp", 4096), PipeBarrier("V"), SetFlag("S_V"), WaitFlag("S_V"), vec(),
            SetFlag("S_V"), WaitFlag("S_V"), vec()]
    msg = _diag([prog], flag_double_set="diagnostic")
    assert "SetFlag<S_V>(0)" in msg and "still set" in msg
    assert "still set" in _diag([prog], "atlas-a2-910b2")        # the 910B profiles default to it
    r_counter = run([prog], flag_double_set="counter")
    r_stall = run([prog], flag_double_set="stall")
    s_set_counter = rows(r_counter, pipe="S", op="SetFlag:S_V")[1]
    s_set_stall = rows(r_stall, pipe="S", op="SetFlag:S_V")[1]
    first_wait = rows(r_stall, pipe="V", op="WaitFlag:S_V")[0]
    assert s_set_counter["end"] < first_wait["end"]                 # counter: no stall
    assert s_set_stall["end"] == first_wait["end"]                  # stall: fires F after the consume
    assert r_stall.cores[0]["stall_S"] > r_counter.cores[0]["stall_S"]


def test_pipe_side_double_set_is_caught_where_it_becomes_certain():
    # V sets V_S twice; the scalar unit only waits once later, after both sets fired
    prog = [vec(), SetFlag("V_S"), vec(), SetFlag("V_S"), Scalar("div", 20), WaitFlag("V_S"), WaitFlag("V_S")]
    assert "still set" in _diag([prog], flag_double_set="diagnostic")
    run([prog], flag_double_set="counter")


def test_bad_records_are_diagnostics_with_their_location():
    assert "not one of V, MTE2, MTE3, ALL" in _diag([[PipeBarrier("S")]])
    assert "unknown HardEvent" in _diag([[SetFlag("V_X", 0)]])
    assert "outside 0..7" in _diag([[SetFlag("V_S", 8)]])
    assert "outside 0..7" in _diag([[WaitFlag("V_S", -1)]])
    assert "not filled in" in _diag([[SetFlag("V_S", EventHandle())]])
    assert "has no cost" in _diag([[VecOp("Sqrt", "fp32", 64)]])
    assert "not one of alu" in _diag([[Scalar("sqrt")]])
    assert "declares no ALU or division work" in _diag([[Scalar("exp", arg=2.0)]])
    with pytest.raises(KernelDiagnostic, match="never terminates"):     # the kernel refuses to declare it
        scalar_exp_call(float("-inf"))
    assert "negative" in _diag([[Scalar("alu", -2)]])
    assert "used before InitBuffer" in _diag([[EnQue("q")]])
    assert "DeQue on TQue 'q' with nothing enqueued" in _diag([[InitBuffer("q", "VECIN", 1, 32), DeQue("q")]])
    assert "outside the 262144-byte UB" in _diag([[dma("GM2UB", 1024, ub_addr=262144 - 512)]])


def test_an_error_raised_by_the_program_itself_reaches_the_caller_unchanged():
    def program():
        yield Scalar("alu")
        raise InputError("shape.nv", 3, "a multiple of shape.nk")

    with pytest.raises(InputError) as exc:
        Machine("atlas-300i-duo").run([program(), [Scalar("alu")]])
    assert exc.value.field == "shape.nv"


def test_too_many_programs_is_an_input_error():
    with pytest.raises(InputError) as exc:
        Machine("atlas-300i-duo").run([[]] * 9)
    assert exc.value.field == "programs"


def test_correct_programs_raise_nothing():
    run([copy_compute_copy(30, 1, 8192, 8192, [vec("Mul", 2048)])])
    run([copy_compute_copy(30, 2, 8192, 8192, [vec("Exp", 2048), vec("Add", 2048)])] * 8)
    dot = []
    for _ in range(50):
        dot += [vec("Mul"), VecOp("WholeReduceSum", "fp32", 128), SetFlag("V_S"), WaitFlag("V_S"),
                Scalar("ub_load", 2)]
    r = run([dot, []])
    assert r.cores[1]["n_records"] == 0 and r.cores[1]["finish"] == r.profile.kernel_launch_cycles
