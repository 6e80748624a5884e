"""``cgdr-des compare``: one scenario under several kernel settings, side by side, and why.

Settings come from ``--buffer-num N`` (only ``[kernel] buffer_num`` changed, as before) and
``--variant NAME`` (a named variant of cgdr_des/kernel/variants.py, or ``field=value,...``); with
neither, ``--buffer-num 1 2``. The first setting that runs is the speed-up reference; ``--variant``
alone puts ``baseline`` first. A setting whose buffers do not fit UB at the kept tiling is not run:
its row says by how many bytes it overflows (docs/double-buffering.md).
"""

from __future__ import annotations

from pathlib import Path

import click

from cgdr_des.cli import common
from cgdr_des.cli.app import main
from cgdr_des.cli.options import load_with_overrides, override_options
from cgdr_des.errors import InputError, KernelDiagnostic


@main.command()
@click.argument("scenario")
@click.argument("more_buffer_nums", nargs=-1, type=int, metavar="")
@click.option("--buffer-num", "buffer_nums", multiple=True, type=int,
              help="buffer_num values to compare: --buffer-num 1 2 (default 1 2 without --variant).")
@click.option("--variant", "variants", multiple=True, metavar="NAME",
              help="A kernel variant: baseline, buffer_num2, buffer_num2_same, prefetch, prefetch_same, "
                   "state_db, state_db_same, all_same, sub, state_rows_2d, state_load_dma, query_rows_ub, "
                   "state_store_dma, attn_dots_row, code_all, or field=value[,field=value] over buffer_num, "
                   "keep_tiling, prefetch, state_double_buffer, sub, state_rows, state_load, query_rows, "
                   "state_store, attn_dots (repeatable).")
@click.option("--kernel", "kernels", multiple=True, type=click.Choice(["vector", "cube", "cube-pre1174"]),
              help="Compare kernel programs instead: --kernel vector --kernel cube (timing only; "
                   "docs/kernel-cube.md).")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--csv", is_flag=True, help="Also write each run's frames as CSV.")
@common.force_option
@common.max_memory_option
@override_options
def compare(scenario: str, more_buffer_nums: tuple[int, ...], buffer_nums: tuple[int, ...],
            variants: tuple[str, ...], kernels: tuple[str, ...], out: Path, csv: bool, force: bool,
            max_memory: str | None, sets: tuple[str, ...], seed: int | None) -> None:
    """Run SCENARIO once per setting; table, critical-path bars and one chunk's Gantt per setting.

    Each run goes to OUT/<setting>/ (OUT/buffer_num_<n>/ for --buffer-num); the table to
    OUT/compare.csv and OUT/compare.parquet, the plots to OUT/critical_path.png, OUT/chunk_gantt.png
    and, with --buffer-num, OUT/buffer_compare.png. With --kernel: the frames OUT/kernels_summary,
    kernels_phases, kernels_pipes, kernels_counts (.csv, .parquet) and the plot OUT/kernels_pipes.png
    (per pipe, one core's mean busy µs under each program).
    """
    base = load_with_overrides(scenario, sets, seed)
    if kernels:
        if buffer_nums or more_buffer_nums or variants:
            raise InputError("--kernel", ",".join(kernels), "alone: not with --buffer-num or --variant")
        _compare_kernels(base, list(dict.fromkeys(kernels)), out, force, max_memory)
        return
    settings = _settings(base, (*buffer_nums, *more_buffer_nums), variants)
    results, rows = {}, []
    target = common.output_dir(out, force, "compare")
    with target as staging:  # the whole comparison is one owned output
        for name, fields, sc, tiling, status in settings:
            if sc is not None:
                common.check_estimate(sc, max_memory)
                results[name], _ = common.run_one(sc, common.prepare_out(staging / name), csv, target,
                                                  stage=f"running setting {name}")
            rows.append((name, fields, tiling, results.get(name), status))
        with target.writing():
            table = _write(results, rows, staging, any(n.startswith("buffer_num_") for n in results))
        common.write_page(target, staging, "compare")
    _report(table, out, list(results))


def _settings(base, buffer_nums: tuple[int, ...], variants: tuple[str, ...]) -> list[tuple]:
    """(name, kernel fields, scenario or None, tiling or None, status) per setting, in order."""
    from cgdr_des.kernel.variants import directory_name, variant_fields
    from cgdr_des.scenario import validate_tiling

    values = list(dict.fromkeys(buffer_nums)) or ([] if variants else [1, 2])
    for v in values:
        if v not in (1, 2):
            raise InputError("--buffer-num", v, "1 or 2")
    wanted = [(f"buffer_num_{v}", {"buffer_num": v}) for v in values]
    names = list(dict.fromkeys(variants))
    if names and not values and "baseline" not in names:
        names.insert(0, "baseline")
    wanted += [(directory_name(n), variant_fields(n)) for n in names]
    settings = []
    for name, fields in wanted:
        try:
            sc = base.with_changes({"kernel": fields})
        except KernelDiagnostic as exc:  # the variant's buffers overflow UB at the kept tiling
            settings.append((name, fields, None, _tiling_of(base, fields), str(exc).splitlines()[0]))
            continue
        except InputError as exc:  # no vStep leaves the host room for the variant's buffers
            if not exc.field.startswith("tiling."):
                raise
            settings.append((name, fields, None, None, f"the host finds no vStep: {exc.allowed}"))
            continue
        settings.append((name, fields, sc, validate_tiling(sc), "ok"))
    return settings


def _tiling_of(base, fields: dict):
    """The host tiling of a setting that does not validate (its UB shortfall is the diagnostic)."""
    from cgdr_des.hw import load_profile
    from cgdr_des.kernel.tiling import compute_tiling
    from cgdr_des.scenario import profile_core_count, profile_ub_bytes

    prof = load_profile(base.profile_ref(), dict(base.hardware.overrides) or None)
    lengths, s = base.lengths(), base.shape
    return compute_tiling(t=int(lengths.sum()), hqk=s.nk, dk=s.dk, hv=s.nv, dv=s.dv, batch=int(lengths.size),
                          ub_size=profile_ub_bytes(prof), aiv_num=profile_core_count(prof),
                          has_gamma=s.has_gamma, **fields)


def _write(results: dict, rows: list[tuple], staging: Path, buffer_plot: bool):
    from cgdr_des.results.compare_plots import compare_title, plot_chunk_gantt, plot_critical_path
    from cgdr_des.results.comparison import comparison_table, setting_row

    table = comparison_table([setting_row(name, fields, tiling, res, status)
                              for name, fields, tiling, res, status in rows])
    table.to_csv(staging / "compare.csv", index=False)
    table.to_parquet(staging / "compare.parquet", index=False)
    plot_critical_path(table, staging / "critical_path.png", compare_title(results))
    if results:
        plot_chunk_gantt(results, staging / "chunk_gantt.png", compare_title(results))
    if buffer_plot:
        from cgdr_des.results.plots import plot_buffer_compare

        plot_buffer_compare({int(n.rsplit("_", 1)[1]): r for n, r in results.items()
                             if n.startswith("buffer_num_")}, staging / "buffer_compare.png")
    return table


def _report(table, out: Path, ran: list[str]) -> None:
    cols = [c for c in ("setting", "status", "makespan_cycles", "speedup", "v_step", "v_tiles", "ub_used_bytes",
                        "cp_S", "cp_V", "cp_MTE2", "cp_MTE3", "cp_flags", "exposed_dma", "overlap_bound")
            if c in table]
    shown = table[cols].copy()
    shown["status"] = shown["status"].where(shown["status"] == "ok", "not run")
    click.echo(shown.to_string(index=False))
    for sentence in table["cause"]:
        click.echo(f"why        {sentence}")
    pictures = sorted(p.name for p in out.glob("*.png"))  # buffer_compare.png only with --buffer-num
    click.echo(f"outputs    {out}: compare.csv, compare.parquet, {', '.join(pictures)}, "
               + ", ".join(f"{n}/" for n in ran))


def _compare_kernels(base, versions: list[str], out: Path, force: bool, max_memory: str | None) -> None:
    """``--kernel``: the programs side by side; frames summary, phases, pipes, counts to OUT."""
    from cgdr_des.kernels_compare import compare_kernels

    for v in versions:
        common.check_estimate(base.with_changes({"kernel": {"kernel_version": v}}), max_memory)
    from cgdr_des.results.progress import Progress

    cmp = compare_kernels(base, versions, progress=Progress())
    target = common.output_dir(out, force, "compare")
    with target as staging, target.writing():
        for name, frame in cmp._asdict().items():
            frame.to_csv(staging / f"kernels_{name}.csv", index=False)
            frame.to_parquet(staging / f"kernels_{name}.parquet", index=False)
        from cgdr_des.cli.redraw import draw_compare

        draw_compare(staging)  # kernels_pipes.png, from the frames just written (as `plot` redraws it)
        common.write_page(target, staging, "compare")
    click.echo(cmp.summary.to_string(index=False))
    click.echo(cmp.pipes.pivot(index="pipe", columns="kernel_version", values="busy_cycles_mean_per_core").fillna(0)
               .astype("int64").to_string())
    click.echo(f"outputs    {out}: kernels_summary, kernels_phases, kernels_pipes, kernels_counts (.csv, .parquet), "
               "kernels_pipes.png")
