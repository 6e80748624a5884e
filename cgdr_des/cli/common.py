"""Helpers shared by the commands: the lazy simulator, the output directory, one simulated run.

Every command module imports this one when ``cgdr_des.cli`` loads, so it imports nothing heavy at
module level: numpy, the scenario model, the simulator and the writers (pandas, pyarrow, matplotlib,
SimPy) are imported inside the helpers that use them, and ``cgdr-des --help`` or a one-line refusal
never loads them (tests/test_startup.py). Tests replace :func:`_simulate` with a stub. Output
directories are staged and renamed into place (``cgdr_des/results/outdir.py``); ``check_estimate``
prints and enforces the memory estimate.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cgdr_des.errors import InputError

if TYPE_CHECKING:
    from cgdr_des.results.outdir import OutputDir
    from cgdr_des.scenario import Scenario

#: the options every command that allocates shares
max_memory_option = click.option(
    "--max-memory", default=None, metavar="SIZE",
    help="Refuse a launch whose estimated peak memory is above SIZE (512M, 4G; 'none': no cap). "
         "Default: half of this machine's RAM.")
force_option = click.option("--force", is_flag=True,
                            help="Replace --out when it holds a previous cgdr-des output (replaced whole).")


def _simulate():
    from cgdr_des.simulation import simulate  # lazy: the simulation stack is heavy and not needed elsewhere

    return simulate


def prepare_out(out: Path) -> Path:
    """Create ``out`` (and parents); a directory that cannot be made is an InputError on ``--out``."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError("--out", str(out), f"a writable directory ({exc.strerror})") from None
    return out


def output_dir(out: Path, force: bool, command: str = "run", *, in_place: bool = False) -> OutputDir:
    """The staged, locked ``--out`` of ``command`` (see ``results/outdir.py``); checked before any work."""
    from cgdr_des.results.outdir import OutputDir

    return OutputDir(out, force=force, field="--out", command=command, in_place=in_place)


def check_estimate(sc: Scenario, max_memory: str | None, *, parallel: int = 1, quiet: bool = False) -> None:
    """Print the memory/time estimate of ``sc`` (unless ``quiet``) and refuse it, ``parallel`` of them at
    once (a sweep's workers), above ``--max-memory``."""
    from cgdr_des.estimate import check_memory, cpu_share, parse_size, scenario_estimate
    from cgdr_des.scenario import validate_tiling

    est = scenario_estimate(sc, validate_tiling(sc))
    if not quiet:
        click.echo(est.line(cpu_share()))
    check_memory(replace(est, memory_bytes=est.memory_bytes * parallel), parse_size(max_memory))


def check_study_memory(sc: Scenario, batches: int | None, policies: int | None, max_memory: str | None,
                       parallel: int = 1, workers: int = 1) -> None:
    """Refuse a tail study (``parallel`` of them at once: a sweep's workers; its checks on ``workers``
    processes) whose estimated peak memory is above ``--max-memory`` (estimate.py ``study_estimate``),
    before any calibration."""
    from cgdr_des.estimate import check_memory, parse_size, study_estimate
    from cgdr_des.scenario import validate_tiling

    est = study_estimate(sc, validate_tiling(sc), batches, policies, workers)
    check_memory(replace(est, memory_bytes=est.memory_bytes * parallel), parse_size(max_memory))


#: ``tail``'s checks go to a pool by default only when, one after another, they could take this many
#: CPU seconds (estimate.py ``check_estimate``, an upper bound): a pool worker's start-up, a fresh
#: interpreter importing the simulator, is ~2 s (analysis/benchmarks/bench_tail_checks.py)
POOL_WORTH_SECONDS = 10.0


def study_workers(sc: Scenario, batches: int | None, policies: int | None, max_memory: str | None) -> int:
    """``tail``'s default ``--workers``: one per check up to the CPUs other work leaves idle
    (``pool.idle_cpus``), fewer while the study with that many checks at once is estimated above
    ``--max-memory`` (at least 1: then the study alone is held to it); 1 when the checks are too
    short to repay a pool (:data:`POOL_WORTH_SECONDS`)."""
    from cgdr_des.estimate import check_estimate, parse_size, study_estimate
    from cgdr_des.pool import idle_cpus
    from cgdr_des.scenario import validate_tiling

    cap, tiling = parse_size(max_memory), validate_tiling(sc)
    k = sc.study.check_batches
    if k * check_estimate(sc, tiling, sc.study.batches if batches is None else batches).seconds < POOL_WORTH_SECONDS:
        return 1
    workers = max(1, min(k, idle_cpus()))
    while workers > 1 and cap is not None and study_estimate(sc, tiling, batches, policies, workers).memory_bytes > cap:
        workers -= 1
    return workers


def run_one(sc: Scenario, out: Path, csv: bool, target: OutputDir,
            stage: str | None = None) -> tuple[object, dict[str, Path]]:
    """Simulate ``sc`` with progress (stage name ``stage``, default ``simulating <name>``) and write its
    frames, trace and plots into ``out`` (a directory inside ``target``'s staging); prints what the
    trace leaves out and a kept NaN."""
    import numpy as np

    from cgdr_des.results.export import write_files
    from cgdr_des.results.progress import Progress

    progress = Progress()
    # overflow is diagnosed from the outputs (kernel/output_check.py), not as numpy warnings on stderr
    with progress.stage(stage or f"simulating {sc.name}", unit="work items") as bar, \
            np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        result = _simulate()(sc, progress=bar)
    with progress.stage("writing frames" + (f" of {out.name}" if stage else ""), 1) as bar, target.writing():
        written, notes = write_files(result, out, csv=csv or sc.output.csv, trace=sc.sim.trace,
                                     plots=sc.output.plots)
        bar.advance()
    if result.meta.get("nonfinite"):
        notes.append(f"{result.meta['nonfinite']} (written as asked by [sim] nonfinite = \"keep\")")
    for note in notes:
        click.echo(f"{getattr(note, 'kind', 'warning'):<10} {note}", err=True)
    return result, written


def time_unit(stream=None) -> str:
    """``µs``, or ``us`` when ``stream`` (default: stdout) has an encoding that cannot write µ."""
    import sys

    encoding = getattr(stream if stream is not None else sys.stdout, "encoding", None) or "utf-8"
    try:
        "µs".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return "us"
    return "µs"


def write_page(target: OutputDir, directory: Path, command: str) -> None:
    """``index.html`` of ``command``'s output in ``directory`` (``results/page.py``), last in the staged write."""
    from cgdr_des.results.page import write_index

    with target.writing():
        write_index(directory, command)


def echo_outputs(lines: list[str], out: Path, written: dict, caught: list) -> None:
    """A study command's console ending: its result lines, the files it wrote, then the warnings the
    study raised (on stderr, after the answer they qualify)."""
    for line in lines:
        click.echo(line)
    click.echo(f"outputs    {out}: {', '.join(sorted(p.name for p in written.values()))}")
    for w in caught:
        click.echo(f"WARNING: {w.message}", err=True)


def summary_lines(result) -> list[str]:
    """The three console lines that describe a run: what ran, its makespan, its balance."""
    s = result.summary.iloc[0]
    us = time_unit()
    return [
        f"scenario   {s['scenario_name']} ({s['scenario_hash']}) on {s['hardware']}: policy {s['policy']}, "
        f"buffer_num {s['buffer_num']}, fidelity {s['fidelity']}, numerics {s['numerics']}",
        f"makespan   {int(s['makespan_cycles']):,} cycles = {s['makespan_us']:,.3f} {us} "
        f"(lower bound {int(s['lower_bound_cycles']):,} cycles)",
        f"balance    imbalance {s['imbalance']:.3f}, cv {s['cv']:.3f}, "
        f"p99 core finish {s['finish_p99_cycles']:,.0f} cycles over {int(s['n_cores'])} cores",
    ]
