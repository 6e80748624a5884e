"""Sweeps: many scenarios from one base, on this machine or a Dask cluster, resumable and fingerprinted.

- ``spec``: the sweep file (base scenario, ``[set]``, ``[grid]``, ``[sample]``, replications, point kind);
- ``points``: expansion into points, replication seeds, fingerprints;
- ``work``: running one point (a simulation or a tail study) wherever it runs;
- ``executors``: in-process loop, local process pool, Dask;
- ``store``: the hive-partitioned output directory, atomic writes, manifests, status;
- ``runner``: ``run_sweep``, tying them together.

``docs/sweeps.md`` describes the file format and the output directory.
"""

from cgdr_des.sweep.executors import make_executor
from cgdr_des.sweep.points import expand
from cgdr_des.sweep.runner import SweepReport, run_sweep
from cgdr_des.sweep.spec import SweepSpec, load_sweep
from cgdr_des.sweep.store import Status, SweepStore

__all__ = ["Status", "SweepReport", "SweepSpec", "SweepStore", "expand", "load_sweep", "make_executor", "run_sweep"]
