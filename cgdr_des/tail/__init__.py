"""Tail-latency studies: thousands of sampled batches timed under every dispatch policy.

``calibration`` measures each item's duration once with a ``phase``-fidelity run; ``surrogate`` times
many batches at once from those durations (numpy over batches and items); ``study`` samples the
batches, times them under each policy, re-simulates a few at ``phase`` fidelity as a self-check and
writes the frames and plots (``summary`` holds the per-policy percentiles). ``docs/tail.md`` is the
user guide; ``cgdr-des tail`` is the command.
"""

from cgdr_des.tail.calibration import ItemCosts, calibrate, costs_for
from cgdr_des.tail.study import StudyResult, run_study, sample_batches
from cgdr_des.tail.surrogate import Estimate, estimate
from cgdr_des.tail.write import write_study

__all__ = ["Estimate", "ItemCosts", "StudyResult", "calibrate", "costs_for", "estimate", "run_study",
           "sample_batches", "write_study"]
