"""``cgdr-des tail``: a tail-latency study (sampled batches x dispatch policies) of one scenario."""

from __future__ import annotations

import warnings
from pathlib import Path

import click

from cgdr_des.bounds import MAX_STUDY_BATCHES, MAX_WORKERS, check_count
from cgdr_des.cli import common
from cgdr_des.cli.app import main
from cgdr_des.cli.options import cache_options, calibration_cache, load_with_overrides, override_options

#: the summary columns the console shows and their headers ({us}: the console's time unit)
TABLE = {"policy": "policy", "p50_us": "p50 {us}", "p99_us": "p99 {us}", "p99_interval": "p99 95% interval {us}",
         "p99_9_us": "p99.9 {us}", "makespan_over_lb_mean": "mean mk/lb", "within_1pct_of_lb": "<=1% of lb",
         "imbalance_mean": "mean imb"}


@main.command()
@click.argument("scenario")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for the study's frames and plots.")
@click.option("--batches", type=int, default=None,
              help=f"Batches to sample, 1 .. {MAX_STUDY_BATCHES:,} (default: [study] batches).")
@click.option("--policy", "policies", multiple=True,
              help="A policy to time; repeat for several (default: [study] policies, else all).")
@click.option("--workers", type=int, default=None,
              help=f"Processes the phase-fidelity checks run on at once, 1 .. {MAX_WORKERS} (1: one after another "
                   "in this process; default: one per check up to the CPUs, fewer if --max-memory needs it, 1 "
                   "when the checks are too short to repay starting processes).")
@common.force_option
@common.max_memory_option
@override_options
@cache_options
def tail(scenario: str, out: Path, batches: int | None, policies: tuple[str, ...], workers: int | None, force: bool,
         max_memory: str | None, sets: tuple[str, ...], seed: int | None, cache_dir: Path | None,
         no_cache: bool) -> None:
    """Sample SCENARIO's workload distribution and time every batch under every dispatch policy.

    ``--seed`` sets ``workload.seed``, which seeds the sampled batches.
    """
    from cgdr_des.results.progress import Progress
    from cgdr_des.tail import run_study, write_study

    if batches is not None:  # bounded like [study] batches, before the scenario is even read
        check_count("--batches", batches, 1, MAX_STUDY_BATCHES, "as [study] batches")
    if workers is not None:
        check_count("--workers", workers, 1, MAX_WORKERS, "1 runs the checks in this process")
    sc = load_with_overrides(scenario, sets, seed)
    names = [p.strip() for arg in policies for p in arg.split(",") if p.strip()] or None
    n_policies = len(names) if names else None
    if workers is None:
        workers = common.study_workers(sc, batches, n_policies, max_memory)
    common.check_study_memory(sc, batches, n_policies, max_memory, workers=workers)
    target = common.output_dir(out, force, "tail")
    with target as staging:  # checked and locked before the study starts; files appear whole or not at all
        with warnings.catch_warnings(record=True) as caught, calibration_cache(cache_dir, no_cache):
            warnings.simplefilter("always")
            result = run_study(sc, batches=batches, policies=names, progress=Progress(), workers=workers)
        with target.writing():
            written = write_study(result, staging, plots=sc.output.plots)
        common.write_page(target, staging, "tail")
    common.echo_outputs(study_lines(result), out, written, caught)


def study_lines(result) -> list[str]:
    """What the study ran, its summary table (µs), and its phase-fidelity checks."""
    from cgdr_des.tail.summary import interval_text

    m = result.meta
    us = common.time_unit()
    table = result.summary.assign(p99_interval=[interval_text(r, "p99") for _, r in result.summary.iterrows()])
    table = table[list(TABLE)].rename(columns={k: v.format(us=us) for k, v in TABLE.items()})
    lines = [f"study      {m['scenario_name']} on {m['hardware']}: {m['batches']:,} batches of {m['batch']} "
             f"sequences, {m['block_dim']} cores, seed {m['seed']}",
             *table.to_string(index=False, float_format=lambda v: f"{v:,.3f}").splitlines()]
    for row in result.checks.itertuples():
        scaled = (f" as a stand-in of {row.tokens_checked:,} tokens ({row.stand_in_scale:.1%} of its own)"
                  if row.stand_in_scale < 1 else "")
        lines.append(f"check      batch {row.batch_index} ({row.kind}, {row.policy}){scaled}: surrogate "
                     f"{row.makespan_surrogate_cycles:,} vs phase {row.makespan_phase_cycles:,} cycles, "
                     f"makespan {row.makespan_rel_err:+.3%}, worst core finish {row.finish_max_rel_err:.3%}")
    return lines
