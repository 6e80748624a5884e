"""The machine layer: a SimPy model of an Ascend chip executing :mod:`cgdr_des.isa` records.

Public API::

    load_profile(name_or_path="atlas-300i-duo", overrides=None) -> Profile
    list_profiles() -> list[str]
    with_overrides(profile, overrides) -> Profile
    Machine(profile, *, keep_ops=True).run(programs) -> MachineRun
    OP_COLUMNS, SPAN_COLUMNS, CORE_KEYS
    cgdr_des.hw.phase.PhaseCompiler(profile).compile(records) -> records   (``phase`` fidelity)

Modules: ``profile`` (hardware data, ``profiles/*.toml``), ``costs`` (per-record cost tables from
the profile), ``rules`` (the timing rules, each one pure function, shared by the machine and the
compute-run timer), ``records`` (spans, queue entries), ``machine`` (runs and results), ``core`` (one
AIV: its SimPy processes and resources), ``scalar`` / ``pipes`` (the processes), ``queues`` (the
pipes' issue queues), ``flags`` (flags, event ids), ``tque`` (UB, TQue/TBuf), ``dma`` (DataCopy
checks), ``dcache`` (scalar data cache), ``gm`` (shared GM bandwidth), ``phase`` (Macro
compilation), ``compute_run`` / ``compute_state`` (the one-pass compute-run timer), ``diagnostics``.
"""

from cgdr_des.hw.machine import CORE_KEYS, OP_COLUMNS, SPAN_COLUMNS, Machine, MachineRun
from cgdr_des.hw.profile import FIELD_NAMES, Profile, list_profiles, load_profile, with_overrides

__all__ = ["Machine", "MachineRun", "OP_COLUMNS", "SPAN_COLUMNS", "CORE_KEYS", "Profile", "load_profile",
           "list_profiles", "with_overrides", "FIELD_NAMES"]
