"""cgdr-des: a discrete-event simulator of the vector-only chunk_gated_delta_rule AscendC kernel.

Public contract (docs/architecture.md §5): ``load_scenario``, ``simulate``, ``chunk_gated_delta_rule``,
``make_inputs``, the errors ``CgdrError``/``InputError``/``KernelDiagnostic``, and the subpackages
``kernel`` (``cgdr_des.kernel.tiling.compute_tiling``), ``tail``, ``sweep`` and ``timing``.

``import cgdr_des`` loads none of them: each name is imported on first use (PEP 562), so the command
line and a script that needs one corner do not pay for pandas, matplotlib, pyarrow and SimPy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

#: public name -> the module that defines it (a subpackage maps to itself)
_LAZY = {
    "CgdrError": "cgdr_des.errors",
    "InputError": "cgdr_des.errors",
    "KernelDiagnostic": "cgdr_des.errors",
    "chunk_gated_delta_rule": "cgdr_des.op",
    "load_scenario": "cgdr_des.scenario",
    "make_inputs": "cgdr_des.workload.tensors",
    "simulate": "cgdr_des.simulation",
    "kernel": "cgdr_des.kernel",
    "sweep": "cgdr_des.sweep",
    "tail": "cgdr_des.tail",
    "timing": "cgdr_des.timing",
}

__all__ = ["CgdrError", "InputError", "KernelDiagnostic", "chunk_gated_delta_rule", "kernel", "load_scenario",
           "make_inputs", "simulate", "sweep", "tail", "timing"]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports on demand
    from cgdr_des import kernel, sweep, tail, timing
    from cgdr_des.errors import CgdrError, InputError, KernelDiagnostic
    from cgdr_des.op import chunk_gated_delta_rule
    from cgdr_des.scenario import load_scenario
    from cgdr_des.simulation import simulate
    from cgdr_des.workload.tensors import make_inputs


def __getattr__(name: str):
    """Import a public name on first use and keep it (later lookups do not come here)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cgdr_des' has no attribute {name!r}")
    mod = importlib.import_module(module)
    value = mod if module == f"cgdr_des.{name}" else getattr(mod, name)
    if name == "kernel":  # cgdr_des.kernel.tiling.compute_tiling is public: the submodule comes with it
        importlib.import_module("cgdr_des.kernel.tiling")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
