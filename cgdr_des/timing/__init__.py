"""Timing a user can trust: the ranges of the profile's uncertain fields, what they do to the makespan
(one at a time and jointly, :mod:`.sensitivity`), and fitting them to measured latencies
(:mod:`.calibrate`). Every simulation here is a ``phase``-fidelity, ``numerics = "off"`` run of a
scenario with profile overrides (:mod:`.evaluate`); docs/timing.md explains the choices."""

#: the sensitivity study's defaults, here rather than in :mod:`.sensitivity` (pandas) because the
#: command's options show them in ``--help``, which must not import pandas
DEFAULT_SAMPLES = 32
DEFAULT_SEED = 0
