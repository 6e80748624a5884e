"""The double-buffering variants ([kernel] buffer_num, keep_tiling, prefetch, state_double_buffer):
outputs bit for bit the baseline's, UB accounting against independent formulas, the records each
variant replaces, the overflow report, and prefetch's measured gain against the overlap bound."""

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_cases import args, inputs

import cgdr_des
from cgdr_des.cli.app import main
from cgdr_des.errors import InputError, KernelDiagnostic
from cgdr_des.kernel.batched import compute_numbers
from cgdr_des.kernel.functional import build_launch, make_launch, run_functional
from cgdr_des.kernel.launch import Shape
from cgdr_des.kernel.tiling import compute_tiling, static_diagnostics
from cgdr_des.kernel.variants import VARIANTS, variant_fields
from cgdr_des.scenario import Kernel, Scenario

UB = 253952  # the atlas-300i-duo profile's ub_usable_bytes, what its host tiles against


def up(x, a):
    return (x + a - 1) // a * a


def need(vs, dk, dv, hv, aiv, buffer_num=1, prefetch=False, sdb=False):
    """UB a variant's buffers take at vStep ``vs``, written out from docs/double-buffering.md §1."""
    cs, av, sk, ak = 64, up(vs, 8), up(dk, 8), up(dk, 16)
    dot = max(sk, cs)
    fixed = 2 * cs * ak * 4 + cs * cs * 4 + cs * 4 + dot * 4 + cs * 4
    vpart = 2 * cs * av * 4 + max(dot, av) * 4
    pair = max(cs * cs, sk * av) * 4 if (vs >= dv or hv < aiv) else (cs * cs + sk * av) * 4
    outq = max(sk * av, cs * av) * 2
    inq = (2 * cs * ak + cs * av + av * ak) * 2
    return fixed + vpart + pair + buffer_num * outq + (2 * inq if prefetch else 0) + (sk * av * 4 if sdb else 0)


def scenario(fidelity="phase", lengths=(130, 64), nk=2, nv=2, dk=64, dv=64, **kernel):
    return Scenario.from_dict({"name": "v", "shape": {"nk": nk, "nv": nv, "dk": dk, "dv": dv},
                               "workload": {"lengths": list(lengths)}, "kernel": kernel,
                               "sim": {"fidelity": fidelity}})


def test_defaults_are_the_source_kernel():
    assert Kernel().tiling_options() == variant_fields("baseline")
    for shape in ((64, 64, 8), (128, 128, 16), (128, 256, 1)):
        dk, dv, hv = shape
        plain = compute_tiling(t=128, hqk=hv, dk=dk, hv=hv, dv=dv, batch=1, ub_size=UB, aiv_num=8)
        assert plain == compute_tiling(t=128, hqk=hv, dk=dk, hv=hv, dv=dv, batch=1, ub_size=UB, aiv_num=8,
                                       **Kernel().tiling_options())
        assert plain.ub_needed_bytes == need(plain.v_step, dk, dv, hv, 8)


SAME = ["buffer_num2_same", "prefetch_same", "state_db_same", "all_same"]


@pytest.mark.parametrize("name", SAME)
def test_variant_outputs_equal_the_baseline_bit_for_bit(name):
    """Two heads of three and one chunks (c == 0 and c > 0 steps, first and last chunk, the next
    item's prefetch): out and final_state of every variant are the baseline's, bit for bit."""
    base = cgdr_des.simulate(scenario(lengths=(130, 64)))
    res = cgdr_des.simulate(scenario(lengths=(130, 64), **variant_fields(name)))
    for key in ("out", "final_state"):
        assert np.array_equal(base.outputs[key], res.outputs[key])
    assert res.meta["v_step"] == base.meta["v_step"]
    if name == "buffer_num2_same":  # a second out-queue buffer only removes a wait: never slower
        assert res.summary["makespan_cycles"].iloc[0] <= base.summary["makespan_cycles"].iloc[0]


@pytest.mark.parametrize("name", ["prefetch", "state_db", "buffer_num2"])
def test_host_accounted_variants_keep_the_outputs_on_a_128_shape(name):
    """dk = dv = 128: the host shrinks vStep for the variant, several V-tiles per chunk; same outputs."""
    kw = {"lengths": (70,), "nk": 2, "nv": 2, "dk": 128, "dv": 128}
    base = cgdr_des.simulate(scenario(**kw))
    res = cgdr_des.simulate(scenario(**kw, **variant_fields(name)))
    assert res.meta["v_step"] < base.meta["v_step"]
    for key in ("out", "final_state"):
        assert np.array_equal(base.outputs[key], res.outputs[key])


def _v_step_ubs(dk: int, dv: int, nv: int) -> dict:
    """One UB size per vStep the host picks for the shape (a smaller UB, a narrower tile)."""
    found = {}
    for ub in range(UB, 0, -2048):
        try:
            found.setdefault(compute_tiling(t=256, hqk=nv, dk=dk, hv=nv, dv=dv, batch=2, ub_size=ub,
                                            aiv_num=8).v_step, ub)
        except InputError:
            return found
    return found


def test_every_v_step_gives_the_same_fp32_state_and_outputs():
    """dk = dv = 128 at every vStep from 128 down to 16: the fp32 state the workspace carries between
    chunks (far more sensitive than the fp16 outputs: one fp32 bit rarely survives the cast) and
    out and final_state are the full-width tile's, bit for bit."""
    x = inputs([130], 2, 2, 128, 128, seed=11)
    ubs = _v_step_ubs(128, 128, 2)
    assert sorted(ubs) == list(range(16, 129, 16))
    runs = {}
    for v_step, ub in ubs.items():
        launch = build_launch(*args(x), numerics="kernel", ub_size=ub)
        compute_numbers(launch)
        assert launch.tiling.v_step == v_step
        runs[v_step] = launch
    want = runs[128]
    assert np.any(want.workspace != 0)
    for v_step, got in runs.items():
        np.testing.assert_array_equal(got.workspace[..., :128], want.workspace[..., :128], err_msg=f"vStep {v_step}")
        np.testing.assert_array_equal(got.out, want.out, err_msg=f"vStep {v_step}")
        np.testing.assert_array_equal(got.final_state, want.final_state, err_msg=f"vStep {v_step}")


CHILD = """
import hashlib, sys
import numpy as np
layout = np.ones(int(sys.argv[1]), dtype=np.uint8)  # moves every later allocation
import cgdr_des
from cgdr_des.kernel.variants import variant_fields
from cgdr_des.scenario import Scenario

def run(**kernel):
    res = cgdr_des.simulate(Scenario.from_dict({
        "name": "v", "shape": {"nk": 2, "nv": 2, "dk": 128, "dv": 128}, "workload": {"lengths": [70]},
        "kernel": kernel, "sim": {"fidelity": "phase"}}))
    return res.outputs["out"].tobytes() + res.outputs["final_state"].tobytes()

base = run()
for name in ("prefetch", "state_db", "buffer_num2"):
    if run(**variant_fields(name)) != base:
        sys.exit(f"{name}: outputs differ from the baseline's")
print(hashlib.sha256(base).hexdigest())
"""


@pytest.mark.slow  # three fresh interpreters import the package (~2.5 s each) and simulate four runs
def test_the_128_shape_variants_agree_in_fresh_processes_of_other_layouts_and_blas_threads():
    """Three fresh interpreters, each with its heap shifted by a different allocation and with one or
    two BLAS threads: in each the variants give the baseline's outputs, and all give the same."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(cgdr_des.__file__).parents[1]),
                                                       os.environ.get("PYTHONPATH", "")]))
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(size)], env=dict(env, OPENBLAS_NUM_THREADS=threads),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for size, threads in ((1, "1"), (24_593, "2"), (3_000_017, "1"))]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    for _, err, code in results:
        assert code == 0, err
    assert len({out for out, _, _ in results}) == 1


@pytest.mark.slow
def test_instr_fidelity_runs_every_variant_with_the_same_outputs():
    base = cgdr_des.simulate(scenario("instr", lengths=(70,), nk=1, nv=1, dk=32, dv=32))
    res = cgdr_des.simulate(scenario("instr", lengths=(70,), nk=1, nv=1, dk=32, dv=32, **variant_fields("all_same")))
    for key in ("out", "final_state"):
        assert np.array_equal(base.outputs[key], res.outputs[key])


dims = st.sampled_from([16, 32, 64, 96, 128, 192, 256])


@settings(max_examples=60, deadline=None)
@given(dk=dims, dv=dims, hv=st.sampled_from([1, 4, 8, 16]), bn=st.sampled_from([1, 2]), pf=st.booleans(),
       sdb=st.booleans())
def test_ub_accounting_fits_or_reports_the_overflow_in_bytes(dk, dv, hv, bn, pf, sdb):
    kw = dict(t=256, hqk=hv, dk=dk, hv=hv, dv=dv, batch=1, ub_size=UB, aiv_num=8)
    try:
        host = compute_tiling(**kw, buffer_num=bn, prefetch=pf, state_double_buffer=sdb)
    except InputError:  # the host's GRAPH_FAILED: not even vStep = 16 leaves room for the variant
        assert need(16, dk, dv, hv, 8, bn, pf, sdb) > UB
        return
    assert host.ub_needed_bytes == need(host.v_step, dk, dv, hv, 8, bn, pf, sdb) <= UB
    assert host.device_ub_bytes == UB
    kept = compute_tiling(**kw, buffer_num=bn, prefetch=pf, state_double_buffer=sdb, keep_tiling=True)
    assert kept.v_step == compute_tiling(**kw).v_step
    shortfall = need(kept.v_step, dk, dv, hv, 8, bn, pf, sdb) - UB
    if shortfall <= 0:
        assert kept.ub_shortfall_bytes == 0
        if dk <= 512 and (dv - (kept.v_tile_count - 1) * kept.v_step) % 16 == 0:
            static_diagnostics(kept)
        return
    with pytest.raises(KernelDiagnostic, match=f"{shortfall} bytes more than the {UB}"):
        static_diagnostics(kept)


def _counts(**kernel):
    """Records of a functional run of two heads x three chunks, dk = dv = 64, per (phase, kind)."""
    lengths = np.array([150])
    shape = Shape(1, 150, 2, 2, 64, 64, 0.125, True)
    g = np.zeros((150, 2), dtype=np.float32)
    launch = make_launch(shape, lengths, g, None, numerics="off", ub_size=UB, aiv_num=8, **kernel)
    return run_functional(launch).counts


def _total(counts: Counter, kind: str, phases=None) -> int:
    return sum(n for (ph, k), n in counts.items() if k == kind and (phases is None or ph in phases))


@pytest.mark.slow
def test_prefetch_replaces_the_fetched_event_pairs_and_moves_the_same_bytes_plus_the_first_state():
    base, pf = _counts(), _counts(prefetch=True, keep_tiling=True)
    loads = ("P1_LoadChunkKey", "P3.5_QCache", "S1_LoadVBeta")
    for ev in ("S_MTE2", "V_MTE2", "MTE2_V"):
        assert _total(base, f"set_{ev}", loads) == 2 * 3 * 3  # heads x chunks x (K, Q, V)
        assert _total(pf, f"set_{ev}", loads) == 0
    # per head: three chunks of K, Q (cached) and V, plus one staged initial-state tile [64, 64] fp16
    per_head_state = 64 * 64 * 2
    assert _total(pf, "bytes_MTE2") - _total(base, "bytes_MTE2") == 2 * per_head_state
    assert _total(pf, "AllocTensor", loads) == _total(pf, "FreeTensor", ("S1_LoadVBeta", "S3_LoadState")) == 6
    # the first state tile is read from the staged rows: no scalar GM read of initial_state remains
    assert _total(base, "scalar_gm_load", ("S3_LoadState",)) == 2 * 64 * 64
    assert _total(pf, "scalar_gm_load", ("S3_LoadState",)) == 0


@pytest.mark.slow
def test_state_double_buffer_drops_every_pipe_all_and_keeps_the_workspace_traffic():
    base, sdb = _counts(), _counts(state_double_buffer=True, keep_tiling=True)
    assert _total(base, "barrier_ALL") == 2 * (2 + 2) * 2  # per head: 2 write-backs and 2 reads, 2 barriers each
    assert _total(sdb, "barrier_ALL") == 0
    for pipe in ("MTE2", "MTE3"):
        assert _total(sdb, f"bytes_{pipe}") == _total(base, f"bytes_{pipe}")


@pytest.mark.slow
def test_compare_reports_the_overflowing_variant_and_runs_the_rest(tmp_path):
    text = ('name = "ovf"\n[shape]\nnk = 16\nnv = 16\ndk = 128\ndv = 128\n[workload]\nlengths = [64]\n'
            '[sim]\nnumerics = "off"\n')
    (tmp_path / "s.toml").write_text(text, encoding="utf-8")
    out = tmp_path / "cmp"
    res = CliRunner().invoke(main, ["compare", str(tmp_path / "s.toml"), "--variant", "prefetch_same",
                                    "--variant", "state_double_buffer=true", "--out", str(out)])
    assert res.exit_code == 0, res.output
    table = pd.read_parquet(out / "compare.parquet")
    assert table["setting"].tolist() == ["baseline", "prefetch_same", "state_double_buffer-true"]
    row = table.set_index("setting").loc["prefetch_same"]
    expected = need(128, 128, 128, 16, 8, prefetch=True) - UB
    assert f"{expected} bytes more than the {UB}" in row["status"] and pd.isna(row["makespan_cycles"])
    ran = table[table["status"] == "ok"]
    assert (ran["cp_launch"] + ran["cp_S"] + ran["cp_V"] + ran["cp_MTE2"] + ran["cp_MTE3"]
            + ran["cp_flags"] == ran["makespan_cycles"]).all()
    assert (out / "critical_path.png").exists() and (out / "chunk_gantt.png").exists()
    assert (out / "compare.csv").exists() and (out / "baseline" / "summary.parquet").exists()
    assert any(line.startswith("why        baseline: ") and "bound by S" in line for line in res.output.splitlines())


def test_an_unknown_variant_is_one_line_exit_2(tmp_path):
    (tmp_path / "s.toml").write_text('name = "x"\n[shape]\nnk = 1\nnv = 1\ndk = 16\ndv = 16\n'
                                     '[workload]\nlengths = [8]\n', encoding="utf-8")
    res = CliRunner().invoke(main, ["compare", str(tmp_path / "s.toml"), "--variant", "triple", "--out",
                                    str(tmp_path / "o")])
    assert res.exit_code == 2 and res.stderr.strip().startswith("error: --variant: got ")
    assert len(res.stderr.strip().splitlines()) == 1
    assert set(VARIANTS) >= {"baseline", "prefetch", "prefetch_same", "state_db_same", "buffer_num2_same"}

