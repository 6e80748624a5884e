"""The report's figures: each title asks the question the figure answers, every axis has its unit,
and every colour is the one ``cgdr_des.results.palette`` gives its meaning in the commands' plots too
(a policy, a phase, a kernel variant, a range's end)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from cgdr_des.results import palette
from cgdr_des.results.palette import NEUTRAL, POLICY_COLOURS, policy_colour, range_end_colour, series_colour
from cgdr_des.results.plots import bars, plain_numbers, save_figure

#: the phase claim (e) is about: the output tile's cast and copy out
WRITE_OUT = "S6b_WriteOut"
LAW_ORDER = ("fixed 1024", "lognormal σ=0.5", "lognormal σ=1", "lognormal σ=1.5", "zipf θ=1", "pareto α=1.5",
             "one long, rest short")


def _policies(df: pd.DataFrame) -> list[str]:
    present = set(df["policy"])
    return [p for p in POLICY_COLOURS if p in present]


def _laws(df: pd.DataFrame) -> list[str]:
    present = set(df["law"])
    return [law for law in LAW_ORDER if law in present] + sorted(present - set(LAW_ORDER))


def grid_ratio(grid: pd.DataFrame, nv: int, path: Path) -> Path:
    """p99 of makespan ÷ lower bound against batch size; a panel per (chip, law), a line per policy."""
    g = grid[grid["nv"] == nv]
    chips, laws = sorted(g["chip"].unique()), _laws(g)
    fig = Figure(figsize=(2.3 * len(laws) + 1, 2.4 * len(chips) + 1.2), layout="constrained")
    axes = fig.subplots(len(chips), len(laws), squeeze=False, sharex=True, sharey=True)
    for (i, chip), (j, law) in ((a, b) for a in enumerate(chips) for b in enumerate(laws)):
        ax = axes[i, j]
        part = g[(g["chip"] == chip) & (g["law"] == law)]
        for policy in _policies(part):
            p = part[part["policy"] == policy].sort_values("batch")
            ax.plot(p["batch"], p["lb_ratio_p99"], marker="o", ms=3, color=policy_colour(policy), label=policy)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(g["batch"].unique()), [str(b) for b in sorted(g["batch"].unique())])
        ax.axhline(1.0, color="black", lw=0.6)
        ax.set_title(f"{chip}\n{law}", fontsize="small")
        ax.grid(alpha=0.3)
    fig.supxlabel("batch size B (sequences per launch, log scale)")
    fig.supylabel("p99 of makespan ÷ lower bound (ratio)")
    fig.suptitle(f"How far above the lower bound is each policy's p99, by length law and batch size? (Nv = {nv})")
    _legend(fig, axes[0, 0])
    return save_figure(fig, path)


def _legend(fig: Figure, ax) -> None:
    handles, labels = ax.get_legend_handles_labels()
    seen = dict(zip(labels, handles, strict=True))
    fig.legend(list(seen.values()), list(seen), loc="outside right center", fontsize="small")


def gain_by_nv(grid: pd.DataFrame, path: Path) -> Path:
    """Mean p99 gain over greedy (%) per policy against Nv (B > 1), a panel per chip."""
    g = grid[(grid["batch"] > 1) & (grid["policy"] != "greedy")]
    chips = sorted(g["chip"].unique())
    fig = Figure(figsize=(5 * len(chips), 4.2), layout="constrained")
    axes = fig.subplots(1, len(chips), squeeze=False, sharey=True)[0]
    for ax, chip in zip(axes, chips, strict=True):
        part = g[g["chip"] == chip]
        for policy in _policies(part):
            m = part[part["policy"] == policy].groupby("nv")["p99_gain"].mean()
            ax.plot(m.index, 100 * m.to_numpy(), marker="o", color=policy_colour(policy), label=policy)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(part["nv"].unique()), [str(v) for v in sorted(part["nv"].unique())])
        ax.axhline(0, color="black", lw=0.6)
        ax.set(title=chip, xlabel="value heads Nv")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean p99 gain over greedy (%)")
    fig.suptitle("Which policy shortens the p99 makespan most, and does it depend on the head count?")
    _legend(fig, axes[0])
    return save_figure(fig, path)


def load_balance(ratios: pd.DataFrame, chip: str, path: Path) -> Path:
    """Histogram of core busy ÷ batch mean busy, a panel per policy (two laws overlaid) on one chip."""
    r = ratios[ratios["chip"] == chip]
    policies, laws = _policies(r), _laws(r)
    cols = 4
    rows = -(-len(policies) // cols)
    fig = Figure(figsize=(3.3 * cols, 2.5 * rows + 1.0), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True)
    bins = np.linspace(0, max(2.0, float(r["busy_ratio"].max()) * 1.01), 50)
    for ax, policy in zip(axes.ravel(), policies, strict=False):
        for k, law in enumerate(laws):
            x = r[(r["policy"] == policy) & (r["law"] == law)]["busy_ratio"].to_numpy()
            ax.stairs(np.histogram(x, bins=bins)[0] / max(x.size, 1), bins, fill=k == 0, alpha=0.6 if k == 0 else 1,
                      color=policy_colour(policy) if k == 0 else "black", label=law)
        ax.axvline(1.0, color="black", ls="--", lw=0.8)
        ax.set_title(policy, fontsize="medium", color=policy_colour(policy))
    for ax in axes.ravel()[len(policies):]:
        ax.set_visible(False)
    axes[0, 0].legend(fontsize="x-small")
    fig.supxlabel("core busy time ÷ its batch's mean core busy time (ratio; 1 = even)")
    fig.supylabel("share of cores (pooled over batches)")
    fig.suptitle(f"Does each policy give every core the same busy time? ({chip}, B = 16, Nv = 16)")
    return save_figure(fig, path)


def long_tail(lt: pd.DataFrame, path: Path) -> Path:
    """Per policy, each core's busy time (µs) split into per-item fixed work and the rest."""
    policies = _policies(lt)
    cols = 4
    rows = -(-len(policies) // cols)
    fig = Figure(figsize=(3.4 * cols, 2.7 * rows + 1.0), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharey=True)
    for ax, policy in zip(axes.ravel(), policies, strict=False):
        p = lt[lt["policy"] == policy]
        ax.bar(p["core"], p["fixed_us"] / 1e3, color=palette.CONTEXT, hatch="///", edgecolor=NEUTRAL,
               label="per-item fixed work")
        ax.bar(p["core"], p["per_token_us"] / 1e3, bottom=p["fixed_us"] / 1e3, color=policy_colour(policy),
               label="length-dependent work")
        crit = p[p["critical"]]
        ax.plot(crit["core"], crit["busy_us"] / 1e3, "v", color="black", ms=5)
        ax.set_title(policy, fontsize="medium", color=policy_colour(policy))
        ax.set_xlabel("core")
    for ax in axes.ravel()[len(policies):]:
        ax.set_visible(False)
    axes[0, 0].legend(fontsize="x-small")
    fig.supylabel("busy time (ms)")
    fig.suptitle("long_tail: what fills the critical core (▼), long sequences or per-item fixed work?")
    return save_figure(fig, path)


def skew(sk: pd.DataFrame, path: Path, gpu_fla: float) -> Path:
    """Skew penalty (skewed ÷ even makespan) per policy, a hatched bar per (chip, Nv)."""
    from matplotlib.patches import Patch

    policies = _policies(sk)
    groups = list(sk.groupby(["chip", "nv"], sort=True))
    fig = Figure(figsize=(11, 5.5), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / len(groups)
    hatches = ["", "//", "..", "xx"]
    for k, ((_chip, _nv), part) in enumerate(groups):
        part = part.set_index("policy")
        x = np.arange(len(policies)) + k * width
        ax.bar(x, [part.loc[p, "penalty"] if p in part.index else np.nan for p in policies], width,
               color=[policy_colour(p) for p in policies], hatch=hatches[k % 4], edgecolor="white")
    ax.axhline(1.0, color="black", lw=0.8)
    fla = ax.axhline(gpu_fla, color="black", ls="--", lw=0.8)
    ax.set_xticks(np.arange(len(policies)) + 0.4 - width / 2, policies, rotation=20)
    ax.set_ylabel("skewed ÷ even makespan (ratio)")
    # outside the axes: the bars reach the top at both ends of the policy axis
    ax.legend([*(Patch(facecolor=NEUTRAL, hatch=hatches[k % 4], edgecolor="white") for k in range(len(groups))), fla],
              [*(f"{chip}, Nv = {nv}" for (chip, nv), _ in groups), f"fla on H200, 8 heads: {gpu_fla:.2f}x"],
              fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title("How much does splitting 32 768 tokens as 28 672 + 4 096 instead of 2 × 16 384 cost each policy?")
    return save_figure(fig, path)


def buffering(buf: pd.DataFrame, path: Path) -> Path:
    """Makespan (µs) per shape and kernel variant, with the bounding pipe written on each bar."""
    shapes = list(dict.fromkeys(buf["shape"]))
    variants = list(dict.fromkeys(buf["variant"]))
    fig = Figure(figsize=(10, 4.8), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / len(variants)
    for k, v in enumerate(variants):
        part = buf[buf["variant"] == v].set_index("shape")
        x = np.arange(len(shapes)) + k * width
        y = [part.loc[s, "makespan_us"] if s in part.index else np.nan for s in shapes]
        ax.bar(x, y, width, color=series_colour(k), label=v)
        for xi, s in zip(x, shapes, strict=True):
            if s in part.index:
                ax.text(xi, part.loc[s, "makespan_us"], part.loc[s, "bounding_pipe"], ha="center", va="bottom",
                        fontsize="x-small")
    ax.set_xticks(np.arange(len(shapes)) + 0.4 - width / 2, [s.replace(" (", "\n(") for s in shapes],
                  fontsize="small")
    ax.set_ylabel("makespan (µs)")
    plain_numbers(ax.yaxis)
    ax.legend(fontsize="small")
    ax.set_title("Does double buffering or prefetch shorten the shipped shapes? (label: the busiest pipe)")
    return save_figure(fig, path)


def claim_a(ratios: pd.DataFrame, law: str, path: Path) -> Path:
    """Mean busy ÷ batch mean per core index under greedy and float_share, a panel per chip."""
    r = ratios[(ratios["law"] == law) & ratios["policy"].isin(["greedy", "float_share"])]
    chips = sorted(r["chip"].unique())
    fig = Figure(figsize=(5.5 * len(chips), 4), layout="constrained")
    axes = fig.subplots(1, len(chips), squeeze=False)[0]
    for ax, chip in zip(axes, chips, strict=True):
        part = r[r["chip"] == chip]
        for k, policy in enumerate(("greedy", "float_share")):
            m = part[part["policy"] == policy].groupby("core")["busy_ratio"].mean()
            ax.bar(m.index + (k - 0.5) * 0.4, m.to_numpy(), 0.4, color=policy_colour(policy), label=policy)
        ax.axhline(1.0, color="black", ls="--", lw=0.8)
        ax.set(title=chip, xlabel="core (the source's scan fills cores in this order)",
               ylabel="mean of busy ÷ batch mean busy (ratio)")
        ax.legend(fontsize="small")
    fig.suptitle(f"(a) Does the Ceil avgload leave the last core underfull? ({law}, B = 16, Nv = 16)")
    return save_figure(fig, path)


def claim_b(grid: pd.DataFrame, path: Path) -> Path:
    """float_share's p99 gain over greedy (%) at every grid point with B > 1, by law (marker: chip)."""
    g = grid[(grid["batch"] > 1) & (grid["policy"] == "float_share")]
    laws = _laws(g)
    fig = Figure(figsize=(10, 4.5), layout="constrained")
    ax = fig.add_subplot()
    for k, chip in enumerate(sorted(g["chip"].unique())):
        part = g[g["chip"] == chip]
        x = np.array([laws.index(law) for law in part["law"]]) + (k - 0.5) * 0.25
        ax.scatter(x, 100 * part["p99_gain"], color=policy_colour("float_share"), marker="os"[k % 2],
                   edgecolor="black" if k else "none", label=chip, s=22)
    ax.axhspan(0, 10, color="gray", alpha=0.12, label="single-digit percent")
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xticks(range(len(laws)), laws, rotation=15)
    ax.set_ylabel("p99 gain of float_share over greedy (%)")
    ax.legend(fontsize="small")
    ax.set_title("(b) Does the floating-point share gain only single-digit percent? (every grid point, B > 1)")
    return save_figure(fig, path)


def claim_c(batches: pd.DataFrame, path: Path) -> Path:
    """Makespan ÷ lower bound against the batch's longest sequence, greedy and round_robin, per chip."""
    b = batches[batches["policy"].isin(["greedy", "round_robin"])]
    chips = sorted(b["chip"].unique())
    fig = Figure(figsize=(5.5 * len(chips), 4.2), layout="constrained")
    axes = fig.subplots(1, len(chips), squeeze=False)[0]
    for ax, chip in zip(axes, chips, strict=True):
        for policy, marker in (("greedy", "o"), ("round_robin", "x")):
            p = b[(b["chip"] == chip) & (b["policy"] == policy)]
            ax.scatter(p["max_seqlen"], p["makespan_over_lb"], s=8, alpha=0.5, marker=marker,
                       color=policy_colour(policy), label=policy)
        ax.axhline(1.0, color="black", lw=0.6)
        ax.set(title=chip, xlabel="longest sequence of the batch (tokens)", ylabel="makespan ÷ lower bound (ratio)")
        ax.legend(fontsize="small", markerscale=2)
    law = b["law"].iloc[0] if len(b) else ""
    fig.suptitle(f"(c) Is head-modulo (round_robin) dispatch dragged by the longest sequence? ({law}, B = 16)")
    return save_figure(fig, path)


def claim_d(laws: pd.DataFrame, path: Path) -> Path:
    """Mean p99 gain over greedy (%) per law of the sorting policies (and cost_lpt)."""
    policies = [p for p in ("longest_first", "cost_lpt", "minmax_contiguous") if p in set(laws["policy"])]
    order = _laws(laws)
    fig = Figure(figsize=(10, 4.5), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / max(len(policies), 1)
    for k, policy in enumerate(policies):
        part = laws[laws["policy"] == policy].set_index("law")
        ax.bar(np.arange(len(order)) + k * width, [100 * part.loc[law, "mean_gain"] for law in order], width,
               color=policy_colour(policy), label=policy)
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xticks(np.arange(len(order)) + 0.4 - width / 2, order, rotation=15)
    ax.set_ylabel("mean p99 gain over greedy (%, grid points with B > 1)")
    ax.legend(fontsize="small")
    ax.set_title("(d) Does dealing the longest work first help most where the tail is extreme?")
    return save_figure(fig, path)


def claim_e(ops_by_variant: dict, path: Path, half: int = 2500) -> Path:
    """Core 0's V and MTE3 activity around its second output write-out, one row per kernel variant
    (write-out work in its phase's colour, outlined; other phases grey)."""
    fig = Figure(figsize=(10, 1.7 * len(ops_by_variant) + 1.2), layout="constrained")
    axes = fig.subplots(len(ops_by_variant), 1, squeeze=False)[:, 0]
    for ax, (label, ops) in zip(axes, ops_by_variant.items(), strict=True):
        o = ops[(ops["core"] == 0) & ~ops["op"].astype(str).str.startswith(("WaitFlag", "SetFlag"))]
        out = o[(o["pipe"] == "MTE3") & (o["op"] == "DataCopy:UB2GM") & (o["phase"] == WRITE_OUT)]
        centre = int(out.sort_values("start")["start"].iloc[min(1, len(out) - 1)])
        for y, pipe in ((1, "V"), (0, "MTE3")):
            seg = o[(o["pipe"] == pipe) & (o["end"] > centre - half) & (o["start"] < centre + half)]
            for write_out, part in seg.groupby(seg["phase"] == WRITE_OUT):
                bars(ax, (part["start"] - centre).to_numpy(), (part["end"] - part["start"]).to_numpy(), y - 0.35, 0.7,
                     color=palette.phase_colour(WRITE_OUT) if write_out else NEUTRAL,
                     edgecolor="black" if write_out else "none", linewidth=0.6,
                     label=f"{WRITE_OUT}: WriteAttnTileToGm (Cast, copy out)" if write_out else "other phases")
        ax.set_yticks([0, 1], ["MTE3", "V"])
        ax.set_xlim(-half, half)
        ax.set_title(label, fontsize="small")
    handles, labels = axes[0].get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    fig.legend(list(unique.values()), list(unique), fontsize="small", loc="outside lower center", ncols=2)
    axes[-1].set_xlabel("cycles from the start of core 0's second output copy (MTE3, UB → GM)")
    fig.suptitle("(e) With one out-queue buffer, is Cast → MTE3 → free serial, and does V wait for it?")
    return save_figure(fig, path)


def sensitivity(sens: pd.DataFrame, policy: str, path: Path, top: int = 12) -> Path:
    """The recommended policy's p99 gain over greedy (%) at each end of the parameters that move it most."""
    s = sens[sens["policy"] == policy]
    nominal = float(s[s["kind"] == "nominal"]["p99_gain"].iloc[0])
    oat = s[s["kind"] == "oat"].copy()
    oat["delta"] = (oat["p99_gain"] - nominal).abs()
    order = oat.groupby("param")["delta"].max().sort_values(ascending=False).index[:top][::-1]
    fig = Figure(figsize=(8, 0.35 * len(order) + 2), layout="constrained")
    ax = fig.add_subplot()
    labelled = set()
    for y, param in enumerate(order):
        for _, r in oat[oat["param"] == param].iterrows():
            end = "low" if r["end"] == "low" else "high"  # a choice's alternative counts as its high end
            at = y + (-0.17 if end == "low" else 0.17)  # side by side: ends that move the same way both show
            ax.plot([100 * nominal, 100 * r["p99_gain"]], [at, at], color=range_end_colour(end), lw=4,
                    solid_capstyle="butt", label=None if end in labelled else f"field at its {end} end")
            labelled.add(end)
    ax.axvline(100 * nominal, color="black", lw=0.8)
    ax.axvspan(100 * s["p99_gain"].min(), 100 * s["p99_gain"].max(), color="gray", alpha=0.15,
               label="interval over every run (ends and joint samples)")
    ax.set_yticks(range(len(order)), list(order), fontsize="small")
    ax.set_xlabel(f"p99 gain of {policy} over greedy (%), each field alone at an end of its range")
    ax.legend(fontsize="small", loc="lower right")
    ax.set_title(f"How sure is {policy}'s p99 gain, given the profile's declared ranges?")
    return save_figure(fig, path)


#: the advise figure leaves out (and names) variants whose best row loses more than this share (%)
LOSS_SHOWN = 25.0


def advise_gain(adv: pd.DataFrame, studies: list[str], path: Path, top: int = 12) -> Path:
    """The p99 gain (% of the source kernel's p99 with greedy) of each variant with its best policy (the
    ``top`` best), a panel per study, whiskers over the profile points, bars coloured by policy."""
    fig = Figure(figsize=(6.2 * len(studies), 0.34 * top + 2.2), layout="constrained")
    seen: dict[str, object] = {}
    for k, study in enumerate(studies):
        ax = fig.add_subplot(1, len(studies), k + 1)
        rows = adv[(adv["study"] == study) & adv["rank"].notna()].sort_values("rank")
        rows = rows.drop_duplicates("variant").head(top)
        # a variant that loses a lot at its best would squash the others' bars: named under the panel instead
        lost = rows[rows["gain_p99_pct"] < -LOSS_SHOWN]
        rows = rows[rows["gain_p99_pct"] >= -LOSS_SHOWN][::-1]
        y = np.arange(len(rows))
        gain = rows["gain_p99_pct"].to_numpy(float)
        err = [gain - rows["gain_p99_min_pct"].to_numpy(float), rows["gain_p99_max_pct"].to_numpy(float) - gain]
        for yi, g, p in zip(y, gain, rows["policy"], strict=True):
            seen[p] = ax.barh(yi, g, color=policy_colour(p), height=0.7)
        ax.errorbar(gain, y, xerr=np.clip(err, 0, None), fmt="none", ecolor=NEUTRAL, capsize=3, lw=1)
        alone = adv[(adv["study"] == study) & (adv["policy"] == "greedy")].set_index("variant")["gain_p99_pct"]
        seen["the same change with greedy"] = ax.scatter(rows["variant"].map(alone), y, marker="D", s=22, zorder=3,
                                                         facecolor="white", edgecolor=policy_colour("greedy"))
        ax.axvline(0, color=NEUTRAL, lw=0.8)
        ax.set_yticks(y, [f"{v} · {p}" for v, p in zip(rows["variant"], rows["policy"], strict=True)],
                      fontsize="small")
        note = "" if lost.empty else (f"\nnot shown (lose over {LOSS_SHOWN:g} % at best): "
                                      + ", ".join(f"{v} ({g:.0f} %)" for v, g in zip(lost["variant"],
                                                                                   lost["gain_p99_pct"], strict=True)))
        ax.set_xlabel("p99 gain over the source kernel with greedy (%)" + note)
        ax.set_title(study, fontsize="medium")
    order = [p for p in POLICY_COLOURS if p in seen] + ["the same change with greedy"]
    fig.legend([seen[p] for p in order], order, loc="outside lower center", ncols=min(len(order), 6),
               fontsize="small")
    fig.suptitle("Which kernel change (and policy) buys the most at p99? (whiskers: the profile's ranges)")
    return save_figure(fig, path)
