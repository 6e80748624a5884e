"""The code-change variants ([kernel] sub, state_rows, state_load, query_rows; docs/kernel.md §5.y):
outputs bit for bit the baseline's under kernel and exact numerics on dk, dv from {64, 128, 256} (one
shape per branch: SHAPES), the UB blocks they reuse against independent sizes, their DataCopy
diagnostics, and per (chunk, phase) the records each changes against the count formulas of
docs/kernel.md §5.y."""

import functools
from collections import Counter

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_cases import args, inputs

import cgdr_des
from cgdr_des.cli.app import main
from cgdr_des.errors import InputError, KernelDiagnostic
from cgdr_des.isa import Dma, Scalar, Tag, record_kind
from cgdr_des.kernel import code_variants as code
from cgdr_des.kernel.functional import make_launch, run_functional
from cgdr_des.kernel.launch import Shape, op_shape
from cgdr_des.kernel.program import core_program
from cgdr_des.kernel.tiling import CODE_FIELDS, code_variant_ub, compute_tiling, static_diagnostics
from cgdr_des.kernel.variants import BASELINE, VARIANTS, variant_fields
from cgdr_des.scenario import Kernel, Scenario

UB = 253952  # atlas-300i-duo's ub_usable_bytes
CODE = ["sub", "state_rows_2d", "state_load_dma", "query_rows_ub", "state_store_dma", "attn_dots_row", "code_all"]
SINGLE = CODE[:-1]


def functional(x, numerics, ub=UB, emit=True, **kernel):
    """The functional run of ``x`` with these ``[kernel]`` fields; ``emit`` False computes the numbers only."""
    shape, tensors = op_shape(*args(x)[:5], x.g, x.scale_value)
    launch = make_launch(shape, x.actual_seq_lengths, x.g, tensors, numerics=numerics, ub_size=ub, aiv_num=8,
                         **kernel)
    return run_functional(launch, emit=emit)


#: (dk, dv) -> what the shape exercises, under this test's UB, two heads and sequences of 65 and 3 tokens:
#: every branch the code variants take on dk (TransDataTo5HD for dk % 16 == 0 and dk <= 128, the scalar
#: transposition above) and on the V-tiling (one tile; two tiles, equal or with a narrower padded last; three
#: tiles, so a middle one). The full {64, 128, 256}^2 grid adds no branch: (64, 128) and (128, 64) are one
#: tile like (64, 64); (256, 64) and (256, 256) (2 and 6 tiles of 48 on the scalar branch, ~45 s of the
#: suite) have nothing (256, 128) does not (3 tiles: a middle one and a padded last one of 32).
SHAPES = {(64, 64): "one tile, 5HD", (128, 128): "one tile, 5HD at its largest dk",
          (64, 256): "vStep 224: a full tile and a padded 32-wide one", (128, 256): "two equal tiles of 128",
          (256, 128): "dk > 128, the scalar branch; vStep 48: three tiles, the last padded"}


def _shapes():
    """The shapes of :data:`SHAPES`; those splitting dv into several narrow tiles (every tile an item that
    recomputes Phases 1-5) take 5-20 s on a busy machine: slow."""
    for (dk, dv), _why in SHAPES.items():
        slow = dv == 256 or dk == 256
        yield pytest.param(dk, dv, marks=[pytest.mark.slow] if slow else [], id=f"dk{dk}-dv{dv}")


@pytest.mark.parametrize("numerics", ["kernel", "exact"])
@pytest.mark.parametrize("dk,dv", list(_shapes()))
def test_outputs_are_the_baselines_bit_for_bit(dk, dv, numerics):
    """Two heads, a two-chunk and a one-chunk sequence (c == 0 and c > 0, first and last chunks), each
    core's program computing every number (not the head-batched pass): all six variants at once give the
    baseline's out and final_state (each alone: the next test), on one shape per branch of
    :data:`SHAPES` rather than the whole {64, 128, 256}^2 grid. The programs emit no records: a phase
    computes its numbers before it emits anything (kernel/phases.py), which the head-batched numbers of
    ``phase`` fidelity rely on too (tests/test_kernel_batched.py); emitting them was ~97 % of this test's
    CPU (2.8 M records at dk = 256). The machine runs code_all's records with numbers below."""
    x = inputs([65, 3], 1, 2, dk, dv, seed=dk + dv)
    base = functional(x, numerics, emit=False)
    res = functional(x, numerics, emit=False, **variant_fields("code_all"))
    assert res.launch.tiling.v_step == base.launch.tiling.v_step
    np.testing.assert_array_equal(res.out, base.out)
    np.testing.assert_array_equal(res.final_state, base.final_state)


@pytest.mark.parametrize("numerics", ["kernel", "exact"])
def test_each_variant_alone_keeps_the_outputs(numerics):
    """dk = dv = 64 (one tile, the 5HD branch; dv = 128 here was the same branch at twice the records)."""
    x = inputs([70, 9], 1, 2, 64, 64, seed=3)
    base = functional(x, numerics, emit=False)      # numbers only, as above
    for name in SINGLE:
        res = functional(x, numerics, emit=False, **variant_fields(name))
        np.testing.assert_array_equal(res.out, base.out, err_msg=name)
        np.testing.assert_array_equal(res.final_state, base.final_state, err_msg=name)


def scenario(fidelity, dk=64, dv=64, lengths=(70, 9), **kernel):
    return Scenario.from_dict({"name": "c", "shape": {"nk": 1, "nv": 2, "dk": dk, "dv": dv},
                               "workload": {"lengths": list(lengths)}, "kernel": kernel,
                               "sim": {"fidelity": fidelity, "ops": False}})  # outputs and makespans only


@pytest.mark.slow
@pytest.mark.parametrize("others", [{}, {"buffer_num": 2, "prefetch": True, "state_double_buffer": True,
                                         "keep_tiling": True}])
def test_the_machine_runs_code_all_alone_and_with_the_buffering_variants(others):
    """instr fidelity (every record timed) and phase: the same outputs as the baseline, and code_all
    faster than the baseline (it only removes work from the scalar unit's path)."""
    for fidelity in ("instr", "phase"):
        base = cgdr_des.simulate(scenario(fidelity, **others))
        res = cgdr_des.simulate(scenario(fidelity, **{**variant_fields("code_all"), **others}))
        for key in ("out", "final_state"):
            assert np.array_equal(base.outputs[key], res.outputs[key])
        assert res.summary["makespan_cycles"].iloc[0] < base.summary["makespan_cycles"].iloc[0]


def test_host_accounted_buffering_variants_combine_on_a_128_shape():
    """dk = dv = 128 with prefetch and the state double buffer (the host shrinks vStep: several tiles
    per chunk, prefetch's staged first tile next to state_load's DMA of the others)."""
    kw = {"dk": 128, "dv": 128, "lengths": (70,)}
    base = cgdr_des.simulate(scenario("phase", **kw))
    res = cgdr_des.simulate(scenario("phase", **kw, **{**variant_fields("code_all"), "prefetch": True,
                                                       "state_double_buffer": True}))
    assert res.meta["v_step"] < base.meta["v_step"]
    for key in ("out", "final_state"):
        assert np.array_equal(base.outputs[key], res.outputs[key])


# ---- UB: what each variant places in a block the baseline leaves idle, sizes written out here ----

def up(x, a):
    return (x + a - 1) // a * a


dims = st.sampled_from([16, 32, 64, 96, 128, 192, 256])


@settings(max_examples=60, deadline=None)
@given(dk=dims, dv=dims, hv=st.sampled_from([1, 4, 16]))
def test_code_variants_add_no_ub_and_what_they_stage_fits_its_block(dk, dv, hv):
    kw = dict(t=256, hqk=hv, dk=dk, hv=hv, dv=dv, batch=1, ub_size=UB, aiv_num=8)
    base = compute_tiling(**kw)
    t = compute_tiling(**kw, **{k: v for k, v in variant_fields("code_all").items() if k not in BASELINE
                                or v != BASELINE[k]})
    assert (t.v_step, t.ub_needed_bytes, t.ub_rest_bytes) == (base.v_step, base.ub_needed_bytes, base.ub_rest_bytes)
    av, cv = up(t.v_step, 8), min(t.v_step, dv)
    want = {("state_load", "stateOutQueue_"): (cv * dk * 2, max(up(dk, 8) * av, 64 * av) * 2),
            ("query_rows", "kCumdecayFp32"): (64 * dk * 2, 64 * up(dk, 16) * 4)}
    if dk % 16 == 0 and dk <= 128:  # the transposed fp16 tile [dk, V] in chunkVFp32 (cs*V fp32)
        want[("state_load", "chunkVFp32")] = want[("state_store", "chunkVFp32")] = (dk * av * 2, 64 * av * 4)
        want[("state_store", "stateOutQueue_")] = want[("state_load", "stateOutQueue_")]
    batch = min(64, 64 * av // dk)   # products of one batch of attn_dots = "row": chunkVFp32 holds them
    want[("attn_dots", "chunkVFp32")] = (batch * dk * 4, 64 * av * 4)
    want[("attn_dots", "dotProductFp32")] = (batch * (dk // 64) * 4, max(up(dk, 8), 64) * 4)
    got = {(f, b): (placed, size) for f, b, placed, size in code_variant_ub(t)}
    assert got == want
    assert all(placed <= size for placed, size in got.values())


def test_shapes_whose_dma_cannot_be_written_are_one_line_diagnostics():
    kw = dict(t=128, hqk=2, dk=72, hv=2, dv=64, batch=1, ub_size=UB, aiv_num=8)
    static_diagnostics(compute_tiling(**kw, state_load="dma", state_rows="2d", sub=True))  # these run
    with pytest.raises(KernelDiagnostic, match="attn_dots.*dk=72 is not a multiple of 64"):
        static_diagnostics(compute_tiling(**kw, attn_dots="row"))
    with pytest.raises(KernelDiagnostic) as err:
        static_diagnostics(compute_tiling(**kw, query_rows="ub"))
    assert "\n" not in str(err.value) and "dk=72" in str(err.value) and "multiple of 16" in str(err.value)
    assert "blockCount dk=4096 exceeds 4095" in code.state_rows_problem(4096, 64, 64, 64)
    assert "exceeds 65535" in code.state_rows_problem(64, 16, 8 * 70000, 16)
    assert code.state_rows_problem(128, 128, 256, 128) is None
    with pytest.raises(KernelDiagnostic, match="q rows"):
        x = inputs([20], 2, 2, 72, 64, seed=1)
        functional(x, "off", query_rows="ub")


def test_bad_values_name_the_field_and_the_words():
    with pytest.raises(InputError, match="state_load"):
        compute_tiling(t=64, hqk=1, dk=64, hv=1, dv=64, batch=1, ub_size=UB, aiv_num=8, state_load="vector")
    with pytest.raises(InputError) as err:
        variant_fields("state_rows=3d")
    assert "state_rows=rows or state_rows=2d" in str(err.value)
    assert variant_fields("state_load=DMA,sub=true") == {**BASELINE, "state_load": "dma", "sub": True}
    assert variant_fields("code_all") == {**BASELINE, "sub": True, "state_rows": "2d", "state_load": "dma",
                                          "query_rows": "ub", "state_store": "dma", "attn_dots": "row"}
    assert Kernel().tiling_options() == variant_fields("baseline")
    assert {n: VARIANTS[n] for n in SINGLE} == {"sub": {"sub": True}, "state_rows_2d": {"state_rows": "2d"},
                                                  "state_load_dma": {"state_load": "dma"},
                                                  "query_rows_ub": {"query_rows": "ub"},
                                                  "state_store_dma": {"state_store": "dma"},
                                                  "attn_dots_row": {"attn_dots": "row"}}
    with pytest.raises(InputError, match="vector kernel only"):
        Scenario.from_dict({"name": "c", "shape": {"nk": 1, "nv": 1, "dk": 64, "dv": 64},
                            "workload": {"lengths": [8]}, "kernel": {"kernel_version": "cube", "sub": True}})


# ---- per-phase instruction counts against the formulas of docs/kernel.md §5.y ----

def chunk_counts(lengths, dk, dv, ub=UB, nv=1, **kernel) -> dict:
    """Records of core 0 per chunk, per (phase, kind); Scalar weighted by count, DMA bytes apart. The
    same arguments give the same program: each count is walked once per module (the baseline's of a
    shape is shared by its six variants' tests; callers copy before they change one)."""
    return _chunk_counts(tuple(lengths), dk, dv, ub, nv, tuple(sorted(kernel.items())))


@functools.cache
def _chunk_counts(lengths, dk, dv, ub, nv, kernel) -> dict:
    kernel = dict(kernel)
    lengths = np.asarray(lengths)
    shape = Shape(1, int(lengths.sum()), 1, nv, dk, dv, dk ** -0.5, True)
    g = np.full((shape.t, nv), -0.01, dtype=np.float32)
    launch = make_launch(shape, lengths, g, None, numerics="off", ub_size=ub, aiv_num=8, **kernel)
    counts: dict = {}
    c, phase = None, None
    for rec in core_program(launch, 0):
        t = type(rec)
        if t is Tag:  # the counter of the tag's chunk looked up once per tag, not once per record
            phase = rec.phase
            c = counts.get(rec.chunk)
            if c is None:
                c = counts[rec.chunk] = Counter()
            if phase == "S3_LoadState":  # the V-tiles core 0 runs (one of them when tiles split)
                counts.setdefault(("tiles", rec.chunk), []).append(rec.vtile)
            continue
        c[phase, record_kind(rec)] += rec.count if t is Scalar else 1
        if t is Dma:
            c[phase, "bytes_" + rec.pipe] += rec.nbytes
    return counts, launch.tiling


def flags(*events):
    return {k: 1 for ev in events for k in (f"set_{ev}", f"wait_{ev}")} | {"FetchEventID": len(events)}


def delta(name, L, dk, cv, V, *, c, last, n_tiles=1):
    """Per chunk of L tokens, what the variant adds (+) or removes (-) per phase: docs/kernel.md §5.y,
    for n_tiles V-tiles of width cv (row stride V)."""
    d: dict = {}
    if name == "sub":
        d["S4_VNew"] = {"vec": -L * n_tiles, "barrier_V": -L * n_tiles}
    elif name == "state_rows_2d":
        if c > 0:
            d["S3_LoadState"] = {"dma_MTE2": -(dk - 1) * n_tiles}
        if not last:
            d["S7_UpdateState"] = {"dma_MTE3": -(dk - 1) * n_tiles}
    elif name == "state_load_dma" and c == 0:
        s3 = {"scalar_gm_load": -dk * cv, "dma_MTE2": 1, "bytes_MTE2": cv * dk * 2, "AllocTensor": 1,
              "FreeTensor": 1, **flags("S_MTE2", "V_MTE2", "MTE2_V")}
        if dk % 16 == 0 and dk <= 128:   # TransDataTo5HD: no scalar transposition, no zeroing of stateIn
            pad = cv < V
            s3 |= {"scalar_ub_store": -dk * cv, "set_S_V": -1, "wait_S_V": -1, "vec": cv // 16 + pad,
                   "barrier_V": 1 + pad}
        else:                            # scalar UB transposition after a V->S pair
            s3 |= {"scalar_ub_load": dk * cv, "set_V_S": 1, "wait_V_S": 1}
        d["S3_LoadState"] = {k: v * n_tiles for k, v in s3.items()}
    elif name == "state_store_dma" and last and dk % 16 == 0 and dk <= 128:  # else the source's store
        d["S7_UpdateState"] = {k: v * n_tiles for k, v in {
            "vec": cv // 16, "set_V_S": -1, "wait_V_S": -1, "scalar_ub_load": -dk * cv,
            "scalar_gm_store": -dk * cv, "dma_MTE3": 1, "bytes_MTE3": cv * dk * 2}.items()}
    elif name == "attn_dots_row":   # per score row of n products: n - ceil(n/B) reduces and V->S fewer
        batch = 64 * V // dk

        def fewer(n):
            return n - -(-n // batch)

        a = sum(fewer(i) for i in range(1, L))
        m = sum(fewer(i + 1) for i in range(L))
        d["P4a_DotFp32"] = {"vec": -a, "set_V_S": -a, "wait_V_S": -a}
        d["P4c_DotFp32"] = {"vec": -m, "set_V_S": -m, "wait_V_S": -m}
    elif name == "query_rows_ub":
        d["P5_KCumdecay"] = {"dma_MTE2": 1, "bytes_MTE2": L * dk * 2, **flags("S_MTE2", "V_MTE2", "MTE2_S")}
        d["S5_AttnInter"] = {"scalar_gm_load": -L * dk * n_tiles, "scalar_ub_load": L * dk * n_tiles}
    return d


def check(base: Counter, got: Counter, want: dict):
    expect = Counter(base)
    for phase, kinds in want.items():
        for kind, n in kinds.items():
            expect[(phase, kind)] += n
    keys = set(expect) | set(got)
    wrong = {k: (got[k], expect[k]) for k in keys if got[k] != expect[k]}
    assert not wrong, wrong


@pytest.mark.slow
@pytest.mark.parametrize("name", SINGLE)
@pytest.mark.parametrize("dk,dv", [(128, 128), (256, 64), (64, 192)])
def test_per_phase_counts_equal_the_formulas(name, dk, dv):
    """Three chunks (first c == 0, middle, last of L = 5) of one head; dk = 64, dv = 192 under a UB
    that gives vStep = 128 has a full tile and a 64-wide one (padded in V)."""
    ub = UB
    if (dk, dv) == (64, 192):
        ub = next(u for u in range(UB, 0, -1024)
                  if compute_tiling(t=133, hqk=1, dk=dk, hv=1, dv=dv, batch=1, ub_size=u, aiv_num=8).v_step == 128)
    nv = 8 if dv == 192 else 1   # eight heads: no V-tile split, core 0 runs both tiles of its head
    base, tiling = chunk_counts([133], dk, dv, ub, nv)
    got, _ = chunk_counts([133], dk, dv, ub, nv, **variant_fields(name))
    V = up(tiling.v_step, 8)
    for c, L in enumerate((64, 64, 5)):
        widths = [min(tiling.v_step, dv - vt * tiling.v_step) for vt in base[("tiles", c)]]
        assert len(widths) == (2 if dv == 192 else 1)
        per_phase: dict = {}
        for k, cv in enumerate(widths):   # the per-tile formulas summed over the chunk's tiles
            for phase, kinds in delta(name, L, dk, cv, V, c=c, last=c == 2).items():
                if phase.startswith("P") and k:
                    continue    # Phases 1-5 run once per chunk
                for kind, n in kinds.items():
                    per_phase.setdefault(phase, Counter())[kind] += n
        check(base[c], got[c], per_phase)


@pytest.mark.slow
def test_code_all_is_the_sum_of_its_parts():
    """The six edits touch disjoint records: code_all's counts are the baseline's plus each delta."""
    base, tiling = chunk_counts([133], 128, 128)
    got, _ = chunk_counts([133], 128, 128, **variant_fields("code_all"))
    for c, L in enumerate((64, 64, 5)):
        total: dict = {}
        for name in SINGLE:
            for phase, kinds in delta(name, L, 128, 128, 128, c=c, last=c == 2).items():
                for kind, n in kinds.items():
                    total.setdefault(phase, Counter())[kind] += n
        check(base[c], got[c], total)


@pytest.mark.slow
def test_compare_runs_code_variants_side_by_side(tmp_path):
    text = ('name = "cv"\n[shape]\nnk = 1\nnv = 1\ndk = 64\ndv = 64\n[workload]\nlengths = [8]\n'
            '[sim]\nnumerics = "off"\ntrace = false\n[output]\nplots = false\n')  # the table is what is read
    (tmp_path / "s.toml").write_text(text, encoding="utf-8")
    out = tmp_path / "cmp"
    res = CliRunner().invoke(main, ["compare", str(tmp_path / "s.toml"), "--variant", "sub", "--variant",
                                    "state_load_dma", "--variant", "query_rows=ub,state_rows=2d", "--out", str(out)])
    assert res.exit_code == 0, res.output
    import pandas as pd

    table = pd.read_parquet(out / "compare.parquet").set_index("setting")
    assert table.index.tolist() == ["baseline", "sub", "state_load_dma", "query_rows-ub+state_rows-2d"]
    assert (table["status"] == "ok").all()
    assert table.loc["state_load_dma", "state_load"] == "dma" and table.loc["sub", "sub"]
    assert (table["makespan_cycles"].iloc[1:] < table.loc["baseline", "makespan_cycles"]).all()


def test_a_buffering_overflow_with_the_code_variants_is_the_same_one_line_with_the_bytes():
    """The code variants add no byte: prefetch kept at vStep 128 overflows by exactly what it does
    alone, reported in one line naming the bytes."""
    kw = dict(t=128, hqk=16, dk=128, hv=16, dv=128, batch=1, ub_size=UB, aiv_num=8, prefetch=True, keep_tiling=True)
    msgs = []
    for extra in ({}, {k: v for k, v in variant_fields("code_all").items() if k not in BASELINE or k in CODE_FIELDS}):
        with pytest.raises(KernelDiagnostic) as err:
            static_diagnostics(compute_tiling(**kw, **extra))
        msgs.append(str(err.value))
    assert msgs[0] == msgs[1] and "\n" not in msgs[1]
    assert "157184 bytes more than the 253952" in msgs[1]


@pytest.mark.slow
def test_state_rows_2d_merges_the_state_double_buffers_row_dmas_too():
    """With the state double buffer, the write-back and read-back from stateNextFp32 are one 2-D
    DataCopy each: (dk - 1) fewer DMAs per copy, the same bytes (three chunks: 2 write-backs, 2 reads)."""
    kw = {"state_double_buffer": True, "keep_tiling": True}
    base, _ = chunk_counts([150], 64, 64, **kw)
    got, _ = chunk_counts([150], 64, 64, **kw, state_rows="2d")

    def total(counts, kind):
        return sum(n for c, ctr in counts.items() if type(c) is int for (_, k), n in ctr.items() if k == kind)

    for pipe in ("MTE2", "MTE3"):
        assert total(base, f"dma_{pipe}") - total(got, f"dma_{pipe}") == 2 * (64 - 1)
        assert total(base, f"bytes_{pipe}") == total(got, f"bytes_{pipe}")
