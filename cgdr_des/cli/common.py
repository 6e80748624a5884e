"""Helpers shared by the commands: the lazy simulator, the output directory, one simulated run.

``simulate`` is imported only by the commands that simulate, so ``validate``/``schema``/``plot`` stay
fast; tests replace :func:`_simulate` with a stub.
"""

from __future__ import annotations

from pathlib import Path

from cgdr_des.errors import InputError
from cgdr_des.results.export import write_results
from cgdr_des.results.progress import ProgressBar
from cgdr_des.scenario import Scenario


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


def run_one(sc: Scenario, out: Path, csv: bool) -> tuple[object, dict[str, Path]]:
    """Simulate ``sc`` with a progress bar and write its frames, trace and plots into ``out``."""
    with ProgressBar(f"{sc.name}") as bar:
        result = _simulate()(sc, progress=bar)
    written = write_results(result, out, csv=csv or sc.output.csv, trace=sc.sim.trace,
                            plots=sc.output.plots)
    return result, written


def summary_lines(result) -> list[str]:
    """The three console lines that describe a run: what ran, its makespan, its balance."""
    s = result.summary.iloc[0]
    return [
        f"scenario   {s['scenario_name']} ({s['scenario_hash']}) on {s['hardware']}: policy {s['policy']}, "
        f"buffer_num {s['buffer_num']}, fidelity {s['fidelity']}, numerics {s['numerics']}",
        f"makespan   {int(s['makespan_cycles']):,} cycles = {s['makespan_us']:,.3f} us "
        f"(lower bound {int(s['lower_bound_cycles']):,} cycles)",
        f"balance    imbalance {s['imbalance']:.3f}, cv {s['cv']:.3f}, "
        f"p99 core finish {s['finish_p99_cycles']:,.0f} cycles over {int(s['n_cores'])} cores",
    ]
