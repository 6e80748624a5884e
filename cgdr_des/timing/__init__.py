"""Timing a user can trust: the ranges of the profile's uncertain fields, what they do to the makespan
(one at a time and jointly, :mod:`.sensitivity`), and fitting them to measured latencies
(:mod:`.calibrate`). Every simulation here is a ``phase``-fidelity, ``numerics = "off"`` run of a
scenario with profile overrides (:mod:`.evaluate`); docs/timing.md explains the choices."""
