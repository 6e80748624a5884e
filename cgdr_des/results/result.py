"""The outcome of one simulated kernel launch: frames, outputs, and what produced them.

Frames (pandas, one schema each; see ``cgdr_des.results.frames`` for the columns):
- ``ops``: one row per executed operation (or per labelled span when ops were not kept);
- ``items``: one row per work item (batch, head, V-tile) with its core and [start, end) in cycles;
- ``cores``: one row per core: items, tokens, finish, busy and stall cycles per pipe;
- ``summary``: one row: makespan, bounds, balance and tail metrics, utilisation, provenance.

``outputs`` holds ``out`` [T, Nv, Dv] and ``final_state`` [B, Nv, Dv, Dk] as numpy arrays, or None when
numerics was ``off``. ``meta`` carries run facts the frames do not (``clock_mhz``, ``avgload``, hardware
name, ...), and is written next to the frames as ``meta.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd


@dataclass
class Result:
    ops: pd.DataFrame
    items: pd.DataFrame
    cores: pd.DataFrame
    summary: pd.DataFrame
    outputs: dict[str, np.ndarray | None] = field(default_factory=lambda: {"out": None, "final_state": None})
    scenario: Any = None
    tiling: Any = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def out(self) -> np.ndarray | None:
        return self.outputs.get("out")

    @property
    def final_state(self) -> np.ndarray | None:
        return self.outputs.get("final_state")

    def summary_dict(self) -> dict[str, Any]:
        """The summary row as a plain dict (python scalars)."""
        row = self.summary.iloc[0].to_dict()
        return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
