"""``cgdr-des advise``: which kernel change (and dispatch policy) buys the most at the tail."""

from __future__ import annotations

import warnings
from pathlib import Path

import click

from cgdr_des.bounds import MAX_SAMPLES, MAX_STUDY_BATCHES, check_count
from cgdr_des.cli import common
from cgdr_des.cli.app import main
from cgdr_des.cli.options import cache_options, calibration_cache, load_with_overrides, override_options

#: joint samples by default (cgdr_des.advise.study.DEFAULT_SAMPLES; here so that --help imports no pandas)
DEFAULT_SAMPLES = 8
#: rows of the ranking the console shows (advice.csv has them all)
TOP_ROWS = 12


@main.command()
@click.argument("scenario")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for advice.csv/.parquet, the gain plot and index.html.")
@click.option("--variants", "variants", multiple=True, metavar="NAME",
              help="Kernel variants to rank: names (kernel/variants.py), field=value[,field=value] specs, or "
                   "a+b combinations; repeat or separate by spaces (default: every named variant that is not "
                   "a _same form). baseline is always included.")
@click.option("--policies", "policies", multiple=True,
              help="Dispatch policies, comma-separated or repeated (default: [study] policies, else every "
                   "one that applies); greedy is always included.")
@click.option("--batches", type=int, default=None,
              help=f"Batches to sample, 1 .. {MAX_STUDY_BATCHES:,} (default: [study] batches).")
@click.option("--samples", type=int, default=DEFAULT_SAMPLES, show_default=True,
              help=f"Joint Latin-hypercube samples of the ranged profile fields (0 .. {MAX_SAMPLES:,}).")
@click.option("--fields", default=None, help="Comma-separated ranged fields of the intervals (default: all).")
@common.force_option
@common.max_memory_option
@override_options
@cache_options
def advise(scenario: str, out: Path, variants: tuple[str, ...], policies: tuple[str, ...], batches: int | None,
           samples: int, fields: str | None, force: bool, max_memory: str | None, sets: tuple[str, ...],
           seed: int | None, cache_dir: Path | None, no_cache: bool) -> None:
    """Rank kernel variants x dispatch policies of SCENARIO by their p99 gain over the source kernel
    with greedy, each gain with its interval over the ranged profile fields (docs/advise.md).

    ``--seed`` sets ``workload.seed``: it seeds the sampled batches and the joint profile samples.
    """
    from cgdr_des.advise.study import check_request, run_advice
    from cgdr_des.advise.write import write_advice
    from cgdr_des.cli.redraw import draw_advise
    from cgdr_des.cli.sensitivity import parse_fields
    from cgdr_des.results.progress import Progress

    if batches is not None:
        check_count("--batches", batches, 1, MAX_STUDY_BATCHES, "as [study] batches")
    sc = load_with_overrides(scenario, sets, seed)
    names = [p.strip() for arg in policies for p in arg.split(",") if p.strip()] or None
    request = dict(variants=list(variants) or None, policies=names, batches=batches, samples=samples,
                   fields=parse_fields(fields))
    req = check_request(sc, **request)  # every input, before the output directory is touched
    common.check_study_memory(sc, batches, len(req.policies) if req.policies else None, max_memory)
    target = common.output_dir(out, force, "advise")
    with target as staging:
        with warnings.catch_warnings(record=True) as caught, calibration_cache(cache_dir, no_cache):
            warnings.simplefilter("always")
            advice = run_advice(sc, **request, progress=Progress())
        with target.writing():
            written = write_advice(advice, staging)
            written["plot"] = draw_advise(staging)[0]  # from the frames just written, as `plot` redraws it
        common.write_page(target, staging, "advise")
    common.echo_outputs(advice_lines(advice), out, written, caught)


def advice_lines(advice) -> list[str]:
    """What ran, the two numbers per variant, the top of the ranking (µs) and the answer."""
    from cgdr_des.results.advise_page import answer

    m, us = advice.meta, common.time_unit()
    what = "1 fixed batch" if m["fixed_batch"] else f"{m['batches']:,} batches"
    lines = [f"advise     {m['scenario_name']} on {m['hardware']}: {what} of {m['batch']} sequences, "
             f"{len(m['variants'])} variants x {len(m['policies'])} policies, {m['points']} profile points "
             f"({len(m['fields'])} ranged fields, {m['samples']} joint samples), seed {m['seed']}"]
    v = advice.variants.copy()
    cols = {"variant": "variant", "status": "status", "item_fixed_us": f"item fixed {us}",
            "chunk_us": f"per chunk {us}", "v_step": "vStep", "ub_needed_bytes": "UB B"}
    for c in ("v_step", "ub_needed_bytes"):  # integers, empty for a variant that did not run
        if c in v:
            v[c] = [f"{int(x):,}" if x == x else "-" for x in v[c]]
    v["status"] = [t if len(t) <= 48 else t[:47] + "…" for t in v["status"]]  # the page has it whole
    v = v[[c for c in cols if c in v]].rename(columns=cols)
    lines += v.to_string(index=False, float_format=lambda x: f"{x:,.1f}", na_rep="-").splitlines()
    t = advice.table.head(TOP_ROWS)
    shown = {"rank": "rank", "variant": "variant", "policy": "policy", "p99_us": f"p99 {us}",
             "gain_p99_us": f"p99 gain {us}", "gain_p99_min_us": "min", "gain_p99_max_us": "max",
             "gain_p50_us": f"p50 gain {us}"}
    t = t[[c for c in shown if c in t]].rename(columns=shown)
    lines += t.to_string(index=False, float_format=lambda x: f"{x:,.1f}", na_rep="-").splitlines()
    lines += [f"answer     {s}" for s in answer(advice.table, advice.variants, m, us)]
    return lines
