"""``compare --kernel``'s busy column is what its name says: the busy cycles of a phase's work on a
pipe, summed over the launch's cores and divided by their number (sync operations left out)."""

import pandas as pd

from cgdr_des.kernels_compare import BUSY, busy_by_phase
from cgdr_des.results import kernels_plots


def test_busy_is_the_mean_over_cores_of_the_work_ops():
    ops = pd.DataFrame({  # core 0 works 10 + 30 cycles on V in P1, core 1 works 20; a flag wait is not work
        "core": [0, 0, 1, 1], "op": ["Axpy", "Muls", "Adds", "WaitFlag"], "phase": ["P1"] * 4,
        "pipe": ["V", "V", "V", "V"], "start": [0, 50, 0, 20], "end": [10, 80, 20, 500]})
    out = busy_by_phase(ops, n_cores=2)
    assert list(out.columns) == ["phase", "pipe", BUSY] and BUSY == "busy_cycles_mean_per_core"
    assert out[BUSY].tolist() == [(10 + 30 + 20) / 2]


def test_the_plot_reads_the_same_column():
    assert kernels_plots.BUSY == BUSY
