"""The ``cgdr-des`` command line; one module per command, all registered on :data:`main`.

``app`` holds the group and the error contract, ``common`` what several commands share. Loading the
CLI loads click and these modules only: each command imports the scenario model, the simulator and
the writers (numpy, pandas, pyarrow, matplotlib, SimPy) when it runs, so ``--help`` and a one-line
refusal stay quick (tests/test_startup.py, analysis/benchmarks/bench_startup.py).
"""

from cgdr_des.cli import (  # noqa: F401  (each registers its commands)
    advise,
    calibrate,
    compare,
    inspect_cmds,
    measured,
    run,
    sensitivity,
    sweep,
    tail,
)
from cgdr_des.cli.app import main

__all__ = ["main"]
