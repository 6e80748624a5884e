"""``cgdr-des advise``: which kernel change (and dispatch policy) buys the most tail latency.

``settings`` resolves the kernel variants and checks each against UB; ``costs`` holds the two numbers
that decide the tail and the probe shift that moves a variant's item costs to another profile point;
``study`` times every (variant, policy) on the same sampled batches and the gain intervals; ``ranking``
builds the ranked table; ``write`` writes the files. ``docs/advise.md`` is the user guide.
"""

from cgdr_des.advise.study import DEFAULT_SAMPLES, Advice, run_advice
from cgdr_des.advise.write import write_advice

__all__ = ["DEFAULT_SAMPLES", "Advice", "run_advice", "write_advice"]
