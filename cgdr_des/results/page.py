"""``index.html``: one self-contained page per output directory, the answer first.

Every command that writes an output directory ends with :func:`write_index` inside its staged write,
so the page is swapped into place with the frames it describes and listed in ``manifest.json``
(a sweep, written in place, gets it by temp file and ``os.replace``). The page holds:

- what was run: scenario, profile, fidelity, numerics, cgdr-des version, command line;
- the answer in one or two sentences, computed here from the files the command wrote (so that a
  redraw by ``cgdr-des plot`` gives the same page from the frames alone);
- the summary tables, rendered with pandas ``Styler`` (µs with thousands separators);
- every PNG of the directory and its subdirectories, inlined as base64, each with one caption that
  says what to look for (:data:`CAPTIONS`, :data:`FALLBACK_CAPTION` for a plot not named there).

No network, no script: the page reads the same offline, attached to a mail, or years later. Only
the files are read, so this module imports nothing from the studies above the results layer.
"""

from __future__ import annotations

import base64
import html
import json
import math
import numbers
import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from cgdr_des.runtime import package_version

INDEX = "index.html"
#: what to look for in each plot the commands write (a ``gantt_core{N}`` name matches ``gantt_core``)
CAPTIONS = {
    # run (results/plots.py)
    "core_load.png": "Busy time per core stacked by work item: the tallest bar is the critical core; "
                     "bars of unequal height are the imbalance the dispatch policy left.",
    "finish_cdf.png": "When each core finishes: a vertical step means balanced cores; a long right tail "
                      "means a few cores finish late and set the makespan.",
    "gantt_core": "What each pipe of one core does over time: gaps on V while S or MTE2 is busy are "
                  "time the vector unit waits.",
    "tornado.png": "Makespan change at each end of each ranged profile field, widest first: the top bars "
                   "are the fields worth measuring.",
    # tail (results/tail_plots.py)
    "makespan_cdf.png": "1 − CDF of the makespan per policy on a log axis (p50, p99, p99.9 marked): read p99 "
                        "at 10⁻² and p99.9 at 10⁻³; the lowest curve there has the shortest tail.",
    "makespan_percentiles.png": "p50 … p99.9 of the makespan per policy with bootstrap intervals: "
                                "non-overlapping bars at p99 are a real difference.",
    "makespan_over_lb.png": "Makespan ÷ lower bound per policy: mass at 1.0 means the policy reached the "
                            "bound; a right tail is what it loses.",
    "load_balance.png": "Core busy time ÷ the batch mean, pooled over batches: narrow around 1.0 is a "
                        "balanced policy.",
    "makespan_vs_max_seqlen.png": "Median makespan (p10–p90 band) against the longest sequence of the batch: "
                                  "where a policy rises above the others, long sequences hurt it.",
    # compare (results/compare_plots.py, results/plots.py)
    "critical_path.png": "Where the critical core's time goes per setting: the biggest part is the bounding "
                         "pipe; the hatched part is what overlapping DMA could save at most.",
    "chunk_gantt.png": "One chunk of the critical core under each setting: compare where the pipes overlap "
                       "and where they wait on each other.",
    "buffer_compare.png": "Makespan and per-core finish for each buffer_num: a lower bar is faster.",
    "kernels_pipes.png": "Per-pipe busy time per kernel program: the pipe that grows or shrinks between "
                         "programs is where they differ.",
    # measured, calibrate, sensitivity, sweep
    "measured.png": "Predicted against measured latency (log-log): points on y = x agree; a constant "
                    "factor shows as a parallel offset (the dotted line per hypothesis).",
    "calibration.png": "Error per point (% of measured) before the fit, after it and left out of it: the fit "
                       "helps when the after bars are shorter; leave-one-out shows whether it generalises.",
    "joint_makespan.png": "Makespan over the joint samples of every ranged field, the interval shaded: the "
                          "spread is the uncertainty the profile's ranges leave.",
    "advice_gain.png": "p99 gain of each kernel variant × dispatch policy over the source kernel with greedy, "
                       "best on top; a whisker that crosses zero is a gain the profile's ranges do not "
                       "guarantee.",
    "sweep_summary.png": "The summary metric against each grid axis, one line per value of the other axes: "
                         "slopes show which axis matters.",
}
FALLBACK_CAPTION = "A plot drawn from this directory's frames (docs/frames.md says what it shows)."

STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;border-bottom:1px solid #ccc;margin-top:1.6em}
p.answer{font-size:1.1em;background:#f3f6fa;border-left:4px solid #3b6ea5;padding:.6em .9em}
div.table{overflow-x:auto}table{border-collapse:collapse;margin:.4em 0 1em;font-size:.9em}
th,td{border:1px solid #ddd;padding:.2em .6em;text-align:right}th{background:#f4f4f4}
dl{display:grid;grid-template-columns:max-content auto;gap:.15em 1em}dt{font-weight:600}dd{margin:0}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}figcaption{color:#444}
code{font-size:.9em}"""


@dataclass
class Page:
    """What one page says: the run's description, its answer and its tables (plots are found on disk)."""

    what_ran: dict[str, str]
    answer: list[str]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


def write_index(directory: str | Path, command: str, *, redraw: bool = False) -> Path:
    """Write ``directory/index.html`` for an output of ``command`` from the files in it.

    The page records this process's command line; a ``redraw`` (``plot``) keeps the one the
    previous page recorded."""
    directory = Path(directory)
    cmdline = (previous_cmdline(directory) if redraw else None) or command_line()
    page = DESCRIBE[command](directory)
    return write_page(directory, command=command, what_ran={**page.what_ran, "command line": cmdline},
                      answer=page.answer, tables=page.tables)


def write_page(directory: str | Path, *, command: str, what_ran: dict[str, str], answer: list[str],
               tables: dict[str, pd.DataFrame], captions: dict[str, str] | None = None) -> Path:
    """Render the page into ``directory/index.html`` (temp file + ``os.replace``); returns its path."""
    directory = Path(directory)
    captions = {**CAPTIONS, **(captions or {})}
    what_ran = {**what_ran, "cgdr-des": package_version()}
    about = what_ran.get("scenario") or what_ran.get("sweep")  # not the directory: it is a staging name
    title = f"cgdr-des {command}" + (f": {about}" if about else "")
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>",
             f"<meta name=\"cgdr-des-command-line\" content=\"{_e(what_ran.get('command line', ''))}\">",
             f"<style>{STYLE}</style></head><body>", f"<h1>{_e(title)}</h1>",
             "<h2 id=\"answer\">Answer</h2>", *(f"<p class=\"answer\">{_e(s)}</p>" for s in answer),
             "<h2 id=\"what-ran\">What was run</h2><dl>",
             *(f"<dt>{_e(k)}</dt><dd><code>{_e(v)}</code></dd>" for k, v in what_ran.items()), "</dl>"]
    for name, frame in tables.items():
        if len(frame):
            parts += [f"<h2>{_e(name)}</h2>", styled(frame)]
    pngs = sorted(directory.rglob("*.png"), key=lambda p: _plot_order(directory, p))
    if pngs:
        parts.append("<h2 id=\"plots\">Plots</h2>")
    for png in pngs:
        rel = png.relative_to(directory).as_posix()
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        parts.append(f"<figure><img alt=\"{_e(rel)}\" src=\"data:image/png;base64,{data}\">"
                     f"<figcaption><b>{_e(rel)}</b>: {_e(caption_of(png.name, captions))}</figcaption></figure>")
    parts.append("</body></html>\n")
    target = directory / INDEX
    tmp = directory / f".{INDEX}.tmp"
    tmp.write_text("\n".join(parts), encoding="utf-8")
    os.replace(tmp, target)
    return target


def _plot_order(directory: Path, png: Path) -> tuple:
    """The directory's own plots before its subdirectories', each in :data:`CAPTIONS` order (the answer first)."""
    keys = list(CAPTIONS)
    stem = re.sub(r"\d+$", "", png.name.removesuffix(".png"))
    rank = keys.index(png.name) if png.name in keys else keys.index(stem) if stem in keys else len(keys)
    return len(png.relative_to(directory).parts), str(png.parent), rank, png.name


def caption_of(name: str, captions: dict[str, str] | None = None) -> str:
    """The caption of a PNG file name (``gantt_core3.png`` takes ``gantt_core``'s)."""
    captions = CAPTIONS if captions is None else captions
    if name in captions:
        return captions[name]
    stem = re.sub(r"\d+$", "", name.removesuffix(".png"))
    return captions.get(stem, FALLBACK_CAPTION)


def styled(frame: pd.DataFrame) -> str:
    """A frame as an HTML table through pandas ``Styler``, numbers formatted by :func:`number`."""
    return f'<div class="table">{frame.style.format(number).hide(axis="index").to_html()}</div>'


def number(v) -> str:
    """Integers with thousands separators; floats with 1 decimal from 100 up, 3 decimals from 0.01, else 3 digits."""
    if v is None or isinstance(v, bool | np.bool_):
        return str(v)
    if isinstance(v, numbers.Integral):
        return f"{int(v):,}"
    if isinstance(v, numbers.Real):
        v = float(v)
        if math.isnan(v):
            return "–"
        return f"{v:,.1f}" if abs(v) >= 100 else f"{v:.3f}" if abs(v) >= 0.01 or v == 0 else f"{v:.3g}"
    return str(v)


def us(v: float) -> str:
    """A time in µs as the page writes it: thousands separators, one decimal."""
    return f"{v:,.1f} µs"


def command_line() -> str:
    """This process's command line as ``cgdr-des ...`` (shell-quoted)."""
    argv0 = Path(sys.argv[0]) if sys.argv else Path()
    ours = argv0.name == "cgdr-des" or (argv0.name == "__main__.py" and argv0.parent.name == "cgdr_des")
    args = sys.argv[1:] if ours else None  # else called in-process (tests, a notebook): click's context says
    if args is None:
        try:
            import click

            ctx = click.get_current_context(silent=True)
        except ImportError:
            ctx = None
        if ctx is None:
            return "(called from Python)"
        shown = (f"--{k.replace('_', '-')} {v}" for k, v in ctx.params.items() if v not in (None, (), False))
        return " ".join([ctx.command_path, *shown])
    return shlex.join(["cgdr-des", *args])


def previous_cmdline(directory: Path) -> str | None:
    """The command line a previous page in ``directory`` recorded (a redraw keeps it)."""
    try:
        text = (directory / INDEX).read_text(encoding="utf-8")
    except OSError:
        return None
    m = re.search(r'<meta name="cgdr-des-command-line" content="([^"]*)">', text)
    return html.unescape(m.group(1)) if m else None


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _keyvalue(pairs: dict) -> pd.DataFrame:
    return pd.DataFrame({"field": list(pairs), "value": [number(v) for v in pairs.values()]})


# ----------------------------------------------------------------- what each command's page says

def describe_run(d: Path) -> Page:
    """A run: the makespan, the critical core and what dominates it, the imbalance."""
    s = pd.read_parquet(d / "summary.parquet").iloc[0]
    cores = pd.read_parquet(d / "cores.parquet")
    clock = float(s["clock_mhz"])
    what = {"scenario": f"{s['scenario_name']} ({s['scenario_hash']})", "profile": str(s["hardware"]),
            "fidelity": str(s["fidelity"]), "numerics": str(s["numerics"]),
            "kernel": f"policy {s['policy']}, buffer_num {s['buffer_num']}, {int(s['n_cores'])} cores"}
    crit = cores.loc[cores["finish"].idxmax()]
    pipes = [c.removeprefix("busy_") for c in cores.columns if c.startswith("busy_")]
    top = max(pipes, key=lambda p: crit[f"busy_{p}"])
    share = crit[f"busy_{top}"] / crit["finish"] if crit["finish"] else math.nan
    mean_tokens = cores["tokens"].mean()
    answer = [f"The makespan is {us(s['makespan_us'])} ({int(s['makespan_cycles']):,} cycles), "
              f"{s['makespan_cycles'] / s['lower_bound_cycles']:.2f}× the lower bound; imbalance "
              f"{s['imbalance']:.3f} (slowest core finish ÷ mean).",
              f"Core {int(crit['core'])} finishes last: {_count(int(crit['items']), 'item')}, "
              f"{int(crit['tokens']):,} tokens "
              f"(mean {mean_tokens:,.1f} per core); pipe {top} is busy {us(crit[f'busy_{top}'] / clock)}, "
              f"{share:.0%} of its time, the most of any pipe."]
    if (d / "range" / "interval.json").is_file():
        r = _json(d / "range" / "interval.json")
        answer.append(f"Over the profile's ranged fields the makespan lies in [{us(r['low_us'])}, "
                      f"{us(r['high_us'])}].")
    keys = ["makespan_us", "makespan_cycles", "lower_bound_cycles", "imbalance", "cv", "finish_p99_cycles",
            *(c for c in s.index if c.startswith("util_")), "n_cores", "n_items", "tokens", "clock_mhz"]
    slow = cores.sort_values("finish", ascending=False).head(12)
    table = pd.DataFrame({"core": slow["core"], "items": slow["items"], "tokens": slow["tokens"],
                          "finish µs": slow["finish"] / clock,
                          **{f"busy_{p} µs": slow[f"busy_{p}"] / clock for p in pipes}})
    return Page(what, answer, {"Summary": _keyvalue({k: s[k] for k in keys}),
                               "Slowest cores (µs)": table})


def describe_tail(d: Path) -> Page:
    """A tail study: the best policy by p99, its gain over greedy, the surrogate's self-check."""
    m = _json(d / "study.json")
    t = pd.read_parquet(d / "tail_summary.parquet")
    checks = pd.read_csv(d / "checks.csv")
    what = {"scenario": str(m["scenario_name"]), "profile": str(m["hardware"]),
            "fidelity": "surrogate (checked against phase)", "numerics": "off",
            "study": f"{m['batches']:,} batches of {m['batch']} sequences, {m['block_dim']} cores, seed {m['seed']}, "
                     f"policies {', '.join(m['policies'])}"}
    best = t.loc[t["p99_us"].idxmin()]

    def p99(row) -> str:
        return f"{us(row['p99_us'])} [{row['p99_lo_us']:,.1f}, {row['p99_hi_us']:,.1f}]"

    first = f"{best['policy']} has the lowest p99 makespan: {p99(best)} (95 % bootstrap interval)"
    greedy = t[t["policy"] == "greedy"]
    if len(greedy) and best["policy"] != "greedy":
        g = greedy.iloc[0]
        first += f", {1 - best['p99_us'] / g['p99_us']:.1%} below greedy's {p99(g)}."
    else:
        first += "."
    answer = [first]
    if len(checks):
        err = checks["makespan_rel_err"].abs().max()
        answer.append(f"The surrogate's self-check against phase fidelity is off by at most {err:.3%} on the "
                      f"makespan over {len(checks)} checked batch{'es' if len(checks) > 1 else ''}.")
    cols = ["policy", "p50_us", "p99_us", "p99_lo_us", "p99_hi_us", "p99_9_us", "makespan_over_lb_mean",
            "within_1pct_of_lb", "imbalance_mean"]
    return Page(what, answer, {"Per policy (µs)": t[[c for c in cols if c in t]], "Self-checks": checks})


def describe_compare(d: Path) -> Page:
    """A comparison: the fastest setting and its speed-up, the bounding pipe and the overlap bound."""
    if (d / "kernels_summary.parquet").is_file():
        return _describe_kernels(d)
    t = pd.read_parquet(d / "compare.parquet")
    ok = t[t["status"] == "ok"]
    first = _first_run(d)
    what = {**first, "settings": ", ".join(t["setting"])}
    answer = []
    if len(ok):
        f = ok.loc[ok["makespan_cycles"].idxmin()]
        answer.append(f"{f['setting']} is the fastest: {us(f['makespan_us'])}, speed-up {f['speedup']:.3f}× "
                      f"over {ok.iloc[0]['setting']}.")
        part = f.get("bounding_part")
        if part is None or pd.isna(part):  # the run kept no per-op rows: nothing to attribute
            answer.append(f"Its critical path is not attributed: {f.get('attribution_note', 'no per-op rows')}.")
        else:
            answer.append(f"Its critical core is bound by {part} ({f[f'cp_{part}'] / f['makespan_cycles']:.0%} of the "
                          f"makespan); overlapping every DMA could save at most "
                          f"{us(f['overlap_bound'] * f['makespan_us'] / f['makespan_cycles'])} "
                          f"({f['overlap_bound'] / f['makespan_cycles']:.1%} of it).")
    for _, r in t[t["status"] != "ok"].iterrows():
        answer.append(f"{r['setting']} was not run: {r['status']}")
    cols = ["setting", "status", "makespan_us", "speedup", "v_step", "ub_used_bytes", "bounding_part",
            "cp_S", "cp_V", "cp_MTE2", "cp_MTE3", "cp_flags", "overlap_bound"]
    return Page(what, answer, {"Settings": t[[c for c in cols if c in t]]})


def _describe_kernels(d: Path) -> Page:
    s = pd.read_parquet(d / "kernels_summary.parquet")
    f = s.loc[s["makespan_cycles"].idxmin()]
    what = {"kernels": ", ".join(s["kernel_version"].astype(str)), "fidelity": "timing only"}
    answer = [f"{f['kernel_version']} is the fastest program: {int(f['makespan_cycles']):,} cycles"
              + (f" ({us(f['makespan_us'])})" if "makespan_us" in s else "") + "."]
    tables = {"Kernels": s}
    if (d / "kernels_pipes.parquet").is_file():
        tables["Pipes"] = pd.read_parquet(d / "kernels_pipes.parquet")
    return Page(what, answer, tables)


def _first_run(d: Path) -> dict[str, str]:
    """What ran, from the first setting's summary (the settings share scenario and profile)."""
    for sub in sorted(p for p in d.iterdir() if (p / "summary.parquet").is_file()):
        s = pd.read_parquet(sub / "summary.parquet").iloc[0]
        return {"scenario": str(s["scenario_name"]), "profile": str(s["hardware"]),
                "fidelity": str(s["fidelity"]), "numerics": str(s["numerics"])}
    return {}


def describe_sensitivity(d: Path) -> Page:
    """A sensitivity study: the makespan interval and the field that moves it most."""
    r = _json(d / "interval.json")
    runs = pd.read_parquet(d / "samples.parquet")
    what = {"scenario": str(r["scenario"]), "fidelity": "phase", "numerics": "off",
            "study": f"{r['oat_runs']} one-at-a-time ends, {r['lhs_samples']} joint samples, seed {r['seed']}"}
    answer = [f"The makespan is {us(r['nominal_us'])} at the nominal profile and lies in "
              f"[{us(r['low_us'])}, {us(r['high_us'])}] over {len(r['params'])} ranged fields."]
    oat = runs[runs["kind"] == "oat"]
    table = pd.DataFrame()
    if len(oat):
        moves = oat.assign(abs_change=oat["change_pct"].abs()).groupby("param")["abs_change"].max()
        top = moves.idxmax()
        answer.append(f"{top} moves it most: up to {moves[top]:.1f} % at one end of its range.")
        table = (oat[["param", "end", "value", "makespan_us", "change_pct"]].assign(order=oat["param"].map(moves))
                 .sort_values(["order", "param"], ascending=[False, True]).drop(columns="order"))
    return Page(what, answer, {"Interval (µs)": _keyvalue({k: r[k] for k in ("nominal_us", "low_us", "high_us")}),
                               "One at a time": table})


def describe_measured(d: Path) -> Page:
    """Measured latencies: which hypothesis the measurements fit."""
    df = pd.read_csv(d / "measured.csv", keep_default_na=False)
    v = pd.DataFrame(_json(d / "verdicts.json"))
    what = {"shapes": f"{df['shape'].nunique()} measured shapes", "hypotheses": ", ".join(v["hypothesis"])}
    answer = []
    ran = v[v["error"].astype(str) == ""] if "error" in v else v
    for _, r in ran.iterrows():
        explains = [w for w, k in (("a constant overhead", "offset_explains"), ("a constant factor", "factor_explains"))
                    if r.get(k)]
        answer.append(f"{r['hypothesis']}: {int(r['n_inside'])}/{int(r['n'])} measurements inside its predicted "
                      f"interval; constant factor {r['factor']:.2f}"
                      + (f"; {' or '.join(explains)} explains every shape." if explains else "."))
    if len(ran):
        inside = ran["n_inside"].astype(int)
        best = ran[inside == inside.max()]
        if inside.max() == 0:
            answer.insert(0, "No hypothesis's predicted interval holds any of the measurements.")
        else:
            answer.insert(0, f"The measurements fit {' and '.join(best['hypothesis'])} best "
                             f"({inside.max()} of {int(best['n'].iloc[0])} inside).")
    cols = ["shape", "hypothesis", "measured_us", "predicted_us", "predicted_low_us", "predicted_high_us", "inside",
            "measured_over_device"]
    return Page(what, answer, {"Verdicts": v.drop(columns=[c for c in ("error",) if c in v and not v[c].any()]),
                               "Measured against predicted (µs)": df[[c for c in cols if c in df]]})


def describe_calibrate(d: Path) -> Page:
    """A calibration: the fitted fields (nominal → fitted) and the residuals."""
    fit = _json(d / "fit.json")
    res = pd.read_csv(d / "residuals.csv")
    what = {"fields": ", ".join(fit["fields"]), "points": f"{len(res)} measurements",
            "evaluations": str(fit["evaluations"])}
    fields = "; ".join(f"{n}: {fit['nominal'][n]} → {fit['fitted'][n]}" for n in fit["fields"])
    loo = fit.get("rms_loo_pct")
    answer = [f"Fitted {fields}.",
              f"RMS residual {fit['rms_residual_pct']:.2f} %"
              + (f", leave-one-out {loo:.2f} %." if loo is not None else " (no leave-one-out).")]
    table = pd.DataFrame({"field": fit["fields"], "nominal": [str(fit["nominal"][n]) for n in fit["fields"]],
                          "fitted": [str(fit["fitted"][n]) for n in fit["fields"]]})
    return Page(what, answer, {"Fitted fields": table, "Residuals": res})


def describe_sweep(d: Path) -> Page:
    """A sweep: points done / failed / pending and where the summary is."""
    info = _json(d / "sweep.json")
    done, failed, pending = 0, 0, 0
    for row in info["points"]:
        path = d / "manifest" / f"point={row['point']}.json"
        m = _json(path) if path.is_file() else None
        if m is None or m.get("fingerprint") != row["fingerprint"]:
            pending += 1
        elif m.get("status") == "done":
            done += 1
        else:
            failed += 1
    what = {"sweep": str(info["name"]), "points": f"{len(info['points'])} {info['kind']} points"}
    summary = d / "summary.parquet"
    answer = [f"{done} of {len(info['points'])} points done, {failed} failed, {pending} pending; "
              + (f"the summary of the done points is {summary.name} ({done} points)." if summary.is_file()
                 else "no summary yet.")]
    tables = {}
    if summary.is_file():
        tables["Summary (first 50 rows)"] = pd.read_parquet(summary).head(50)
    return Page(what, answer, tables)


def describe_advise(d: Path) -> Page:
    """An advice: the change to make first (results/advise_page.py)."""
    from cgdr_des.results.advise_page import describe_advise as describe

    return describe(d)


DESCRIBE: dict[str, Callable[[Path], Page]] = {
    "run": describe_run, "tail": describe_tail, "compare": describe_compare, "sensitivity": describe_sensitivity,
    "measured": describe_measured, "calibrate": describe_calibrate, "sweep": describe_sweep,
    "advise": describe_advise,
}
