"""cgdr-des: a discrete-event simulator of the vector-only chunk_gated_delta_rule AscendC kernel.

Public contract (docs/architecture.md §5): ``load_scenario``, ``simulate``, ``chunk_gated_delta_rule`` and
``cgdr_des.kernel.tiling.compute_tiling``.
"""

from cgdr_des import kernel  # noqa: F401  (cgdr_des.kernel.tiling.compute_tiling is public)
from cgdr_des.errors import CgdrError, InputError, KernelDiagnostic
from cgdr_des.kernel import tiling  # noqa: F401
from cgdr_des.op import chunk_gated_delta_rule
from cgdr_des.scenario import load_scenario
from cgdr_des.simulation import simulate

__all__ = ["CgdrError", "InputError", "KernelDiagnostic", "chunk_gated_delta_rule", "load_scenario", "simulate"]
