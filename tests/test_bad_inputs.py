"""The catalogue of bad inputs: every one is one line naming the field, exit code 2, in under 2 s.

Scenario files, CLI flags, lengths CSVs, profile overrides and the file system go through the CLI
in-process (click's CliRunner; simulations are replaced by a stub so that a refusal that comes too
late, after a simulation, would show up as a pass of the stub's run and fail the test); the op API
raises the InputError itself. Each case states the field the error line must start with.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import TINY_OUTPUTS_DICT

from cgdr_des.cli import main
from cgdr_des.errors import InputError

LIMIT_S = 2.0  # seconds of this process's CPU (tests/refusal_time.py says why not wall time)
BASE = TINY_OUTPUTS_DICT


# ---------------------------------------------------------------- helpers


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + "}"


def toml(doc: dict) -> str:
    """A scenario dict as TOML (top-level scalars, then one table per section, nested as inline)."""
    lines = [f"{k} = {toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for section, table in doc.items():
        if isinstance(table, dict):
            lines.append(f"[{section}]")
            lines += [f"{k} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def merged(**changes) -> dict:
    """BASE with sections updated (``shape={"nk": 0}``); a value of None deletes the key."""
    doc = json.loads(json.dumps(BASE))
    for section, table in changes.items():
        if not isinstance(table, dict):
            doc[section] = table
            continue
        target = doc.setdefault(section, {})
        for k, v in table.items():
            if v is None:
                target.pop(k, None)
            else:
                target[k] = v
    return doc


def invoke(*args):
    """The result and the CPU time it took (tests/refusal_time.py: other processes' load does not count)."""
    start = time.process_time()
    res = CliRunner().invoke(main, [str(a) for a in args])
    return res, time.process_time() - start


def assert_refused(res, elapsed: float, prefix: str, code: int = 2) -> str:
    """Exactly one stderr line starting with ``error: <prefix>``, the exit code, no traceback, fast."""
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == code, res.output
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"error: {prefix}"), lines[0]
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert elapsed < LIMIT_S, f"{elapsed:.2f} s"
    return lines[0]


def write(tmp_path: Path, doc: dict | str, name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else toml(doc), encoding="utf-8")
    return p


@pytest.fixture
def stub(monkeypatch):
    """Replace the simulator with a hand-built run (tests/test_cli.py's stub)."""
    from test_cli import stub_simulate  # tests/ is on sys.path under pytest

    import cgdr_des.cli.common as common

    monkeypatch.setattr(common, "_simulate", lambda: stub_simulate)


# ---------------------------------------------------------------- scenario files


BIG_UB = {"overrides": {"ub_bytes": 1 << 20, "ub_usable_bytes": 1 << 20}}  # the tiling sees the usable UB
SCENARIO_CASES = {
    # shape
    "nk zero": (merged(shape={"nk": 0}), "shape.nk"),
    "nk past the head cap": (merged(shape={"nk": 70_000, "nv": 70_000}), "shape.nk"),
    "nv at 2^31": (merged(shape={"nv": 2**31}), "shape.nv"),
    "dk past the dim cap": (merged(shape={"dk": 100_000}), "shape.dk"),
    "dv 1e8 (was a 16 s search)": (merged(shape={"dv": 10**8}), "shape.dv"),
    "dv 1e9 (never answered)": (merged(shape={"dv": 10**9}), "shape.dv"),
    "dv as a float": (merged(shape={"dv": 1e8}), "shape.dv"),
    "dv fits the cap but not UB at dk 512": (merged(shape={"dk": 512, "dv": 65_536}), "tiling.ub_size"),
    "scale 1e6": (merged(shape={"scale_value": 1e6}), "shape.scale_value"),
    "scale 1e308": (merged(shape={"scale_value": 1e308}), "shape.scale_value"),
    "scale inf": (merged(shape={"scale_value": math.inf}), "shape.scale_value"),
    "scale nan": (merged(shape={"scale_value": math.nan}), "shape.scale_value"),
    "scale as a string": (merged(shape={"scale_value": "0.1"}), "shape.scale_value"),
    "nv not a multiple of nk": (merged(shape={"nk": 2, "nv": 3}), "shape.nv"),
    "dk beyond DotFp32's in-place limit": (merged(shape={"dk": 528}, hardware=BIG_UB), "DotFp32 count dk=528"),
    "dv whose last V-tile overruns its row": (merged(shape={"dv": 24}), "WriteAttnTileToGm: curV=24"),
    "no vStep fits UB": (merged(shape={"dk": 8192}), "tiling.ub_size"),
    "has_gamma as a string": (merged(shape={"has_gamma": "yes"}), "shape.has_gamma"),
    "workspace past a 48-bit GM": (merged(shape={"nv": 64, "dk": 256, "dv": 8192},
                                          hardware={"overrides": {"ub_bytes": 1 << 22}},
                                          workload={"lengths": None, "batch": 2**20,
                                                    "distribution": {"kind": "fixed", "length": 1}}),
                                   "tiling.workspace_bytes"),
    # workload
    "batch 1e9": (merged(workload={"lengths": None, "distribution": {"kind": "fixed", "length": 8},
                                   "batch": 10**9}), "workload.batch"),
    "batch 2^31": (merged(workload={"lengths": None, "distribution": {"kind": "fixed", "length": 8},
                                    "batch": 2**31}), "workload.batch"),
    "batch int64 max": (merged(workload={"lengths": None, "distribution": {"kind": "fixed", "length": 8},
                                         "batch": 2**63 - 1}), "workload.batch"),
    "negative seed": (merged(workload={"seed": -1}), "workload.seed"),
    "float seed": (merged(workload={"seed": 1.5}), "workload.seed"),
    "length 2^31": (merged(workload={"lengths": [2**31]}), "workload.lengths[0]"),
    "lengths summing past int32": (merged(workload={"lengths": [2**31 - 1, 2**31 - 1]}), "workload.lengths"),
    "empty lengths": (merged(workload={"lengths": []}), "workload.lengths"),
    "negative length": (merged(workload={"lengths": [8, -3]}), "workload.lengths[1]"),
    "all lengths zero": (merged(workload={"lengths": [0, 0]}), "workload.lengths"),
    "batch not len(lengths)": (merged(workload={"batch": 3}), "workload.batch"),
    "no length source": (merged(workload={"lengths": None}), "workload.lengths"),
    "zipf theta 0": (merged(workload={"lengths": None, "batch": 4, "distribution": {
        "kind": "zipf", "theta": 0.0, "min": 1, "max": 10}}), "workload.distribution.theta"),
    "zipf support past its table": (merged(workload={"lengths": None, "batch": 4, "distribution": {
        "kind": "zipf", "theta": 1.0, "min": 1, "max": 2**31 - 1}}), "workload.distribution.max"),
    "lognormal sigma 50": (merged(workload={"lengths": None, "batch": 4, "distribution": {
        "kind": "lognormal", "median": 64.0, "sigma": 50.0}}), "workload.distribution.sigma"),
    "lognormal median 1e300": (merged(workload={"lengths": None, "batch": 4, "distribution": {
        "kind": "lognormal", "median": 1e300, "sigma": 1.0}}), "workload.distribution.median"),
    "lognormal median 0": (merged(workload={"lengths": None, "batch": 4, "distribution": {
        "kind": "lognormal", "median": 0.0, "sigma": 1.0}}), "workload.distribution.median"),
    "lognormal total past int32": (merged(workload={"lengths": None, "batch": 16, "distribution": {
        "kind": "lognormal", "median": 1e9, "sigma": 1.0}}), "workload.lengths"),
    "uniform min above max": (merged(workload={"lengths": None, "batch": 4, "distribution": {
        "kind": "uniform", "min": 10, "max": 5}}), "workload.distribution.max"),
    "pareto negative alpha": (merged(workload={"lengths": None, "batch": 4, "distribution": {
        "kind": "pareto", "alpha": -1.0, "min": 1, "max": 10}}), "workload.distribution.alpha"),
    "bimodal n_long above batch": (merged(workload={"lengths": None, "batch": 2, "distribution": {
        "kind": "bimodal", "long": 64, "short": 8, "n_long": 3}}), "workload.distribution.n_long"),
    "unknown distribution kind": (merged(workload={"lengths": None, "batch": 2, "distribution": {
        "kind": "gamma"}}), "workload.distribution.kind"),
    "fixed length 2^31": (merged(workload={"lengths": None, "batch": 2, "distribution": {
        "kind": "fixed", "length": 2**31}}), "workload.distribution.length"),
    "distribution without batch": (merged(workload={"lengths": None, "distribution": {
        "kind": "fixed", "length": 8}}), "workload.batch"),
    "unknown beta mode": (merged(workload={"tensors": {"beta": "one"}}), "workload.tensors.beta"),
    # kernel
    "buffer_num 3": (merged(kernel={"buffer_num": 3}), "kernel.buffer_num"),
    "unknown policy": (merged(kernel={"policy": "random"}), "kernel.policy"),
    # sim
    "functional fidelity in a scenario": (merged(sim={"fidelity": "functional"}), "sim.fidelity"),
    "unknown numerics": (merged(sim={"numerics": "fp8"}), "sim.numerics"),
    "trace window reversed": (merged(sim={"trace_window": [10, 5]}), "sim.trace_window"),
    "trace window past int64 headroom": (merged(sim={"trace_window": [0, 2**63 - 1]}), "sim.trace_window[1]"),
    "trace window negative": (merged(sim={"trace_window": [-1, 5]}), "sim.trace_window[0]"),
    "trace core outside the launch": (merged(sim={"trace_cores": [99]}), "sim.trace_cores[0]"),
    "trace core beyond any chip": (merged(sim={"trace_cores": [5000]}), "sim.trace_cores[0]"),
    "no trace cores": (merged(sim={"trace_cores": []}), "sim.trace_cores"),
    "max_trace_events 0": (merged(sim={"max_trace_events": 0}), "sim.max_trace_events"),
    "max_trace_events 1e12": (merged(sim={"max_trace_events": 10**12}), "sim.max_trace_events"),
    "unknown nonfinite policy": (merged(sim={"nonfinite": "ignore"}), "sim.nonfinite"),
    # output
    "gantt core outside the launch": (merged(output={"gantt_core": 99}), "output.gantt_core"),
    "negative gantt core": (merged(output={"gantt_core": -1}), "output.gantt_core"),
    "empty gantt window": (merged(output={"gantt_window": [5, 5]}), "output.gantt_window"),
    # top level
    "empty name": (merged(name=""), "name"),
    "unknown top-level key": (merged(colour="red"), "colour"),
    "unknown section key": (merged(sim={"colour": 1}), "sim.colour"),
    "TOML syntax": ("name = \n", "scenario"),
}


@pytest.mark.parametrize("case", sorted(SCENARIO_CASES))
def test_bad_scenario(tmp_path, case):
    doc, prefix = SCENARIO_CASES[case]
    assert_refused(*invoke("validate", write(tmp_path, doc)), prefix)


# ---------------------------------------------------------------- profile overrides

PROFILE_CASES = {
    "unknown profile": ({"profile": "atlas-9000"}, "hardware.profile"),
    "unknown override": ({"overrides": {"colour": 1}}, "hardware.overrides.colour"),
    "event ids 1e8 (7.9 GB)": ({"overrides": {"event_ids_per_hard_event": 10**8}},
                               "hardware.overrides.event_ids_per_hard_event"),
    "queue depth 1e9": ({"overrides": {"queue_depth": 10**9}}, "hardware.overrides.queue_depth"),
    "ub 1e12 bytes": ({"overrides": {"ub_bytes": 10**12}}, "hardware.overrides.ub_bytes"),
    "launch cycles int64 max": ({"overrides": {"kernel_launch_cycles": 2**63 - 1}},
                                "hardware.overrides.kernel_launch_cycles"),
    "bandwidth 1e-300": ({"overrides": {"gm_bandwidth_gbps": 1e-300}}, "hardware.overrides.gm_bandwidth_gbps"),
    "clock inf": ({"overrides": {"clock_mhz": math.inf}}, "hardware.overrides.clock_mhz"),
    "clock 0": ({"overrides": {"clock_mhz": 0}}, "hardware.overrides.clock_mhz"),
    "dma peak nan": ({"overrides": {"dma_read_peak_per_cycle": math.nan}},
                     "hardware.overrides.dma_read_peak_per_cycle"),
    "efficiency 1.5": ({"overrides": {"dma_unaligned_efficiency": 1.5}},
                       "hardware.overrides.dma_unaligned_efficiency"),
    "unknown flag policy": ({"overrides": {"flag_double_set": "maybe"}}, "hardware.overrides.flag_double_set"),
    "vector width 1e6": ({"overrides": {"vec_width": {"Mul": {"fp32": 10**6, "fp16": 128}}}},
                         "hardware.overrides.vec_width"),
    "zero cores": ({"overrides": {"aiv_num": 0}}, "hardware.overrides.aiv_num"),
    "a million cores": ({"overrides": {"aiv_num": 10**6}}, "hardware.overrides.aiv_num"),
    "reserved id past the mask": ({"overrides": {"event_ids_reserved": [1000]}},
                                  "hardware.overrides.event_ids_reserved"),
    "dcache 10 GB": ({"overrides": {"dcache_bytes": 10**10}}, "hardware.overrides.dcache_bytes"),
    "flag cost as a string": ({"overrides": {"flag_cycles": "1"}}, "hardware.overrides.flag_cycles"),
    "usable UB above UB": ({"overrides": {"ub_usable_bytes": 300_000}}, "hardware."),
}


@pytest.mark.parametrize("case", sorted(PROFILE_CASES))
def test_bad_profile_override(tmp_path, case):
    hardware, prefix = PROFILE_CASES[case]
    assert_refused(*invoke("validate", write(tmp_path, merged(hardware=hardware))), prefix)


# ---------------------------------------------------------------- lengths CSVs


def _csv_doc(name: str, **workload) -> dict:
    return merged(workload={"lengths": None, "lengths_csv": name, **workload})


CSV_CASES = {
    "latin-1 byte": (b"length\n8\n3\xe9\n", "workload.lengths_csv"),
    "131 073-character field": (b"length\n" + b"7" * 131_073 + b"\n", "workload.lengths_csv"),
    "length 2^31": (b"length\n8\n2147483648\n", "workload.lengths_csv"),
    "negative length": (b"8\n-3\n", "workload.lengths_csv"),
    "two unnamed columns": (b"a,b\n1,2\n", "workload.lengths_csv"),
    "empty file": (b"", "workload.lengths_csv"),
    "only a header": (b"length\n", "workload.lengths_csv"),
    "a float length": (b"length\n8.5\n", "workload.lengths_csv"),
    # a first row that is a typo, not a header: refused as row 1, never skipped
    "first row 1.5": (b"1.5\n8\n3\n", "workload.lengths_csv: got l.csv row 1: '1.5'"),
    "first row -": (b"-\n8\n3\n", "workload.lengths_csv: got l.csv row 1: '-'"),
    "first row x8": (b"x8\n8\n3\n", "workload.lengths_csv: got l.csv row 1: a 2-character"),
    "unterminated quote": (b'8\n"3\n', "workload.lengths_csv"),
    "two columns, a header without length": (b"a,b\n1,2\n", "workload.lengths_csv"),
}


@pytest.mark.parametrize("case", sorted(CSV_CASES))
def test_bad_lengths_csv(tmp_path, case):
    data, prefix = CSV_CASES[case]
    (tmp_path / "l.csv").write_bytes(data)
    assert_refused(*invoke("validate", write(tmp_path, _csv_doc("l.csv"))), prefix)


@pytest.mark.parametrize(("data", "lengths"), [
    (b"\xef\xbb\xbf8\n3\n", [8, 3]),             # a BOM before a bare value
    (b"\xef\xbb\xbflength\n8\n3\n", [8, 3]),     # and before a header
    (b"tokens\n8\n3\n", [8, 3]),                  # a header is a word
    (b"8\n3\n", [8, 3]),                           # no header: every row is data
    (b"id,length\n1,8\n\n2,3\n", [8, 3]),        # a blank line is no row
])
def test_csv_header_rule_never_drops_a_data_row(tmp_path, data, lengths):
    from cgdr_des.scenario import load_scenario

    (tmp_path / "l.csv").write_bytes(data)
    assert load_scenario(write(tmp_path, _csv_doc("l.csv"))).lengths().tolist() == lengths


def test_csv_missing_file(tmp_path):
    assert_refused(*invoke("validate", write(tmp_path, _csv_doc("gone.csv"))), "workload.lengths_csv")


def test_csv_that_is_a_directory(tmp_path):
    (tmp_path / "d.csv").mkdir()
    assert_refused(*invoke("validate", write(tmp_path, _csv_doc("d.csv"))), "workload.lengths_csv")


def test_csv_batch_above_its_rows(tmp_path):
    (tmp_path / "l.csv").write_text("8\n3\n", encoding="utf-8")
    assert_refused(*invoke("validate", write(tmp_path, _csv_doc("l.csv", batch=3))), "workload.batch")


def test_csv_larger_than_the_cap_is_refused_unread(tmp_path):
    big = tmp_path / "big.csv"
    with big.open("wb") as fh:  # sparse: its size is past the cap, nothing is read
        fh.truncate(65 * 2**20)
    assert_refused(*invoke("validate", write(tmp_path, _csv_doc("big.csv"))), "workload.lengths_csv")


def test_csv_with_more_rows_than_a_batch_may_hold(tmp_path, monkeypatch):
    import cgdr_des.workload.lengths_csv as scen

    monkeypatch.setattr(scen, "MAX_BATCH", 10)
    (tmp_path / "l.csv").write_text("\n".join(["8"] * 11) + "\n", encoding="utf-8")
    assert_refused(*invoke("validate", write(tmp_path, _csv_doc("l.csv"))), "workload.lengths_csv")


def test_csv_of_a_system_file_is_not_echoed(tmp_path):
    text = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
    (tmp_path / "passwd").write_text(text, encoding="utf-8")
    line = assert_refused(*invoke("validate", write(tmp_path, _csv_doc("passwd"))), "workload.lengths_csv")
    assert "daemon" not in line and "nologin" not in line and "row 1:" in line


# ---------------------------------------------------------------- CLI flags


@pytest.mark.parametrize("size", ["1M", "abc", "0", "-5G", "1.5X"])
def test_bad_or_too_small_max_memory(tmp_path, size):
    res, elapsed = invoke("validate", write(tmp_path, BASE), "--max-memory", size)
    assert_refused(res, elapsed, "--max-memory")


def test_max_memory_refuses_before_running(tmp_path, stub):
    out = tmp_path / "out"
    res, elapsed = invoke("run", write(tmp_path, BASE), "--out", out, "--max-memory", "64M")
    assert_refused(res, elapsed, "--max-memory")
    assert not out.exists()


def test_compare_buffer_num_3(tmp_path, stub):
    res, elapsed = invoke("compare", write(tmp_path, BASE), "--buffer-num", "1", "3", "--out", tmp_path / "o")
    assert_refused(res, elapsed, "--buffer-num")


def test_missing_scenario_file(tmp_path):
    assert_refused(*invoke("validate", tmp_path / "none.toml"), "scenario")


def test_scenario_that_is_a_directory(tmp_path):
    assert_refused(*invoke("run", tmp_path, "--out", tmp_path / "o"), "scenario")


# ---------------------------------------------------------------- the file system


def test_out_is_a_file(tmp_path, stub):
    (tmp_path / "f").write_text("x", encoding="utf-8")
    assert_refused(*invoke("run", write(tmp_path, BASE), "--out", tmp_path / "f"), "--out")


def test_out_is_a_symlink(tmp_path, stub):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert_refused(*invoke("run", write(tmp_path, BASE), "--out", tmp_path / "link"), "--out")
    assert not any((tmp_path / "real").iterdir())


def test_out_holds_other_files(tmp_path, stub):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("x", encoding="utf-8")
    assert_refused(*invoke("run", write(tmp_path, BASE), "--out", tmp_path / "mine"), "--out")
    assert (tmp_path / "mine" / "thesis.tex").read_text(encoding="utf-8") == "x"


@pytest.mark.slow
def test_out_holds_a_previous_output_without_force(tmp_path, stub):
    sc = write(tmp_path, BASE)
    assert invoke("run", sc, "--out", tmp_path / "o")[0].exit_code == 0
    assert_refused(*invoke("run", sc, "--out", tmp_path / "o"), "--out")


def test_out_path_not_utf8(tmp_path, stub):
    bad = os.fsdecode(os.fsencode(str(tmp_path)) + b"/out-\xff")
    assert_refused(*invoke("run", write(tmp_path, BASE), "--out", bad), "--out")


def test_out_under_a_file(tmp_path, stub):
    (tmp_path / "f").write_text("x", encoding="utf-8")
    assert_refused(*invoke("run", write(tmp_path, BASE), "--out", tmp_path / "f" / "o"), "--out")


def _written(tmp_path: Path, stub_run=True) -> Path:
    from test_results_export import result

    from cgdr_des.results.export import write_results

    out = tmp_path / "w"
    write_results(result(outputs={"out": np.ones((2, 3, 4), np.float16), "final_state": None}), out,
                  trace=False, plots=False)
    return out


def test_plot_of_a_zero_byte_outputs_npz(tmp_path):
    out = _written(tmp_path)
    (out / "outputs.npz").write_bytes(b"")
    assert_refused(*invoke("plot", out), "DIRECTORY")


def test_plot_where_ops_parquet_is_a_directory(tmp_path):
    out = _written(tmp_path)
    (out / "ops.parquet").unlink()
    (out / "ops.parquet").mkdir()
    assert_refused(*invoke("plot", out), "DIRECTORY")


def test_plot_without_a_manifest(tmp_path):
    out = _written(tmp_path)
    (out / "manifest.json").unlink()
    assert_refused(*invoke("plot", out), "DIRECTORY")


def test_plot_of_a_damaged_manifest(tmp_path):
    out = _written(tmp_path)
    (out / "manifest.json").write_text("{", encoding="utf-8")
    assert_refused(*invoke("plot", out), "DIRECTORY")


def test_plot_of_an_empty_directory(tmp_path):
    assert_refused(*invoke("plot", tmp_path), "DIRECTORY")


# ---------------------------------------------------------------- the op API


def _inputs():
    from cgdr_des.workload.tensors import make_inputs

    return make_inputs([5, 3], 1, 2, 16, 16, seed=0).kwargs()


def _with(**changes):
    kw = _inputs()
    kw.update(changes)
    return kw


OP_CASES = {
    "positive g": (lambda: _with(g=np.abs(_inputs()["g"])), "g"),
    "scale as a string": (lambda: _with(scale_value="0.1"), "scale_value"),
    "scale 1e6": (lambda: _with(scale_value=1e6), "scale_value"),
    "scale inf": (lambda: _with(scale_value=float("inf")), "scale_value"),
    "scale as a bool": (lambda: _with(scale_value=True), "scale_value"),
    "scale 2**70 (a Python int past int64)": (lambda: _with(scale_value=2**70), "scale_value"),
    "scale 10**400 (past float's range)": (lambda: _with(scale_value=10**400), "scale_value"),
    "query fp32": (lambda: _with(query=_inputs()["query"].astype(np.float32)), "query.dtype"),
    "query a list": (lambda: _with(query=[[1.0]]), "query"),
    "value with a NaN": (lambda: _with(value=np.full_like(_inputs()["value"], np.nan)), "value"),
    "lengths not summing to T": (lambda: _with(actual_seq_lengths=np.array([5, 4], np.int32)),
                                 "actual_seq_lengths"),
    "negative length": (lambda: _with(actual_seq_lengths=np.array([9, -1], np.int32)), "actual_seq_lengths"),
    "g of the wrong shape": (lambda: _with(g=np.zeros((8, 3), np.float32)), "g.shape"),
    "beta of the wrong shape": (lambda: _with(beta=np.zeros((8, 3), np.float16)), "beta.shape"),
}


@pytest.mark.parametrize("case", sorted(OP_CASES))
def test_bad_op_input(case):
    import cgdr_des

    make, field = OP_CASES[case]
    kwargs = make()
    start = time.process_time()
    with pytest.raises(InputError) as info:
        cgdr_des.chunk_gated_delta_rule(**kwargs, fidelity="functional")
    assert time.process_time() - start < LIMIT_S
    assert info.value.field == field and "\n" not in str(info.value)


@pytest.mark.parametrize(("option", "value", "field"), [
    ("fidelity", "cycle", "fidelity"), ("hardware", "atlas-9000", "hardware.profile"),
    ("numerics", "fp8", "numerics"),
])
def test_bad_op_option(option, value, field):
    import cgdr_des

    with pytest.raises(InputError) as info:
        cgdr_des.chunk_gated_delta_rule(**_inputs(), **{option: value})
    assert info.value.field == field and "\n" not in str(info.value)


def test_catalogue_is_at_least_80_inputs():
    direct = 21 + 5 + 3 + 3  # the CSV/flag/file-system/plot functions above and the op options
    assert len(SCENARIO_CASES) + len(PROFILE_CASES) + len(CSV_CASES) + len(OP_CASES) + direct >= 80


# ---------------------------------------------------------------- bounds, checked against truth


def _walk_v_step(dv, dk, ub, overlap, queue_buffers):
    """The source's SolveVStep, every width from CeilAlign(dv, 16) down: the reference."""
    from cgdr_des.integers import ceil_align
    from cgdr_des.kernel.tiling import compute_out_queue_bytes, compute_tmp_buff_bytes

    for vs in range(ceil_align(dv, 16), 0, -16):
        if compute_tmp_buff_bytes(vs, dv, dk, overlap) + queue_buffers * compute_out_queue_bytes(vs, dk) <= ub:
            return vs
    return None


@pytest.mark.parametrize("ub", [65_536, 196_608, 262_144, 1 << 20])
def test_bounded_v_step_search_equals_the_full_walk(ub):
    from cgdr_des.kernel.tiling import solve_v_step

    for dv in (1, 15, 16, 100, 128, 256, 500, 1000, 4096):
        for dk in (16, 64, 128, 256):
            for overlap in (False, True):
                for qb in (1, 2):
                    assert solve_v_step(dv, dk, ub, overlap, queue_buffers=qb) == _walk_v_step(dv, dk, ub, overlap, qb)


def test_v_step_search_is_bounded_by_ub_not_dv():
    from cgdr_des.kernel.tiling import solve_v_step

    start = time.process_time()
    assert solve_v_step(10**9, 16, 262_144, True) == _walk_v_step(2000, 16, 262_144, True, 1)
    assert time.process_time() - start < 0.05


def test_widest_allowed_dv_validates_fast(tmp_path):
    doc = merged(shape={"dv": 65_536}, hardware={"overrides": {"ub_bytes": 1 << 24}})
    res, elapsed = invoke("validate", write(tmp_path, doc))
    assert res.exit_code == 0, res.output
    assert elapsed < LIMIT_S


@pytest.mark.parametrize(("dk", "dv", "match"), [(528, 16, "DotFp32 count dk=528"), (16, 24, "WriteAttnTileToGm")])
def test_static_diagnostics_are_the_programs_own(dk, dv, match):
    """validate's static check and the simulated program raise the same diagnostic."""
    import cgdr_des
    from cgdr_des.errors import KernelDiagnostic
    from cgdr_des.scenario import Scenario

    data = merged(shape={"dk": dk, "dv": dv}, hardware=BIG_UB)
    with pytest.raises(KernelDiagnostic, match=match) as static:
        Scenario.from_dict(data)
    with pytest.raises(KernelDiagnostic, match=match) as run:
        cgdr_des.simulate(Scenario.from_dict(data, check_tiling=False))
    assert str(static.value).split(":")[0] == str(run.value).split(":")[0]


def test_zipf_whose_weights_all_underflow_is_all_at_min():
    """P(11)/P(10) = (10/11)^400 ~ 3e-17: every draw is 10, where k**-400 underflowed to 0 before."""
    from cgdr_des.workload.lengths import Zipf, sample_lengths

    d = Zipf(kind="zipf", theta=400.0, min=10, max=20)
    assert sample_lengths(d, 1000, np.random.default_rng(0)).tolist() == [10] * 1000


def test_tensor_estimate_is_the_launchs_arrays_exactly():
    """The tensor part of the memory estimate is the byte count of the arrays a launch holds."""
    from cgdr_des.estimate import _tensor_bytes
    from cgdr_des.kernel.functional import build_launch
    from cgdr_des.workload.tensors import make_inputs

    x = make_inputs([70, 30, 5], 2, 4, 32, 48, seed=0)
    for numerics in ("kernel", "exact"):
        launch = build_launch(**x.kwargs(), numerics=numerics)
        arrays = [x.query, x.key, x.value, x.beta, x.initial_state, x.g, launch.out, launch.final_state,
                  launch.workspace, *(a for a in launch.wide.values() if a is not None)]
        actual = sum(a.nbytes for a in arrays)
        assert _tensor_bytes(105, 3, 2, 4, 32, 48, 0, numerics) == actual


@pytest.mark.parametrize(("text", "size"), [("4G", 4 << 30), ("512MiB", 512 << 20), ("1.5g", 3 << 29),
                                            ("1000", 1000), ("none", None), (" 2 kb ", 2048)])
def test_max_memory_sizes(text, size):
    from cgdr_des.estimate import parse_size

    assert parse_size(text) == size


def test_max_memory_default_is_half_the_ram():
    from cgdr_des.estimate import parse_size

    assert parse_size(None) == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
