"""Every count cgdr-des accepts, bounded before any work (the table in docs/reliability.md).

One module for the bounds a count can hit from a scenario file, a sweep file or a CLI flag alike, so
that the file form and the flag form of one count (``[study] batches`` and ``tail --batches``) can
never disagree. The scenario's field bounds that follow from the kernel (heads, dims, cycles) stay
beside their fields in ``sections``; this module holds the counts of work and the limits of reading.
"""

from __future__ import annotations

from typing import Any

from cgdr_des.errors import InputError

#: numpy's default_rng and SeedSequence take any non-negative integer; int64 keeps it portable
MAX_SEED = 2**63 - 1
#: batches a tail study samples (``[study] batches``, ``tail --batches``, a sweep's ``[tail] batches``)
MAX_STUDY_BATCHES = 1_000_000
#: batches a tail study re-simulates at phase fidelity as its self-check
MAX_CHECK_BATCHES = 50
#: bootstrap resamples behind a tail study's percentile intervals
MIN_BOOTSTRAP, MAX_BOOTSTRAP = 10, 10_000
#: a sweep's ``replications``
MAX_REPLICATIONS = 10_000
#: a sweep's ``[sample] n``
MAX_SAMPLE_DRAWS = 100_000
#: a sweep's points: grid combinations x sample draws x replications
MAX_SWEEP_POINTS = 100_000
#: ``sensitivity --samples``: joint Latin-hypercube samples, one simulation each
MAX_SAMPLES = 100_000
#: ``sweep --workers``: worker processes
MAX_WORKERS = 1024
#: every TOML document the tool reads: bytes, and nesting of tables and arrays
MAX_TOML_BYTES = 16 * 1024 * 1024
MAX_TOML_DEPTH = 32


def check_count(field: str, value: Any, low: int, high: int, what: str = "") -> int:
    """``value`` as an int in ``[low, high]``, else a one-line InputError on ``field``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(field, value, f"an integer in [{low:,}, {high:,}]{f' ({what})' if what else ''}")
    return value


def check_seed(field: str, value: Any) -> int:
    """A seed: an integer in ``[0, MAX_SEED]``."""
    return check_count(field, value, 0, MAX_SEED, "numpy's generators take non-negative seeds")
