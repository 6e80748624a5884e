"""The outcome of one simulated kernel launch: frames, outputs, and what produced them.

Frames (pandas, one schema each; see ``cgdr_des.results.frames`` for the columns):
- ``ops``: one row per executed operation (or per labelled span when ops were not kept); built on
  first read when handed over as a callable (build_result does);
- ``items``: one row per work item (batch, head, V-tile) with its core and [start, end) in cycles;
- ``cores``: one row per core: items, tokens, finish, busy and stall cycles per pipe;
- ``summary``: one row: makespan, bounds, balance and tail metrics, utilisation, provenance.

``outputs`` holds ``out`` [T, Nv, Dv] and ``final_state`` [B, Nv, Dv, Dk] as numpy arrays, or None when
numerics was ``off``. ``meta`` carries run facts the frames do not (``clock_mhz``, ``avgload``, hardware
name, ...), and is written next to the frames as ``meta.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd


class _BuiltOnRead:
    """A field that may be given as a zero-argument callable, called (once) on first read.

    The ops frame is the largest and the one a timing or op-API caller often never reads (~30 ms of
    a 0.5 s long_t2048 run), so build_result hands it over unbuilt. As a dataclass field default the
    descriptor raises AttributeError on class access, so the field stays required.
    """

    def __set_name__(self, owner, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj, objtype=None):
        if obj is None:
            raise AttributeError(self.slot[1:])
        value = obj.__dict__[self.slot]
        if not isinstance(value, pd.DataFrame) and callable(value):
            value = obj.__dict__[self.slot] = value()
        return value

    def __set__(self, obj, value: pd.DataFrame | Callable[[], pd.DataFrame]) -> None:
        obj.__dict__[self.slot] = value


@dataclass
class Result:
    """One launch's frames, outputs, scenario, tiling and run facts (see the module docstring)."""

    ops: pd.DataFrame = _BuiltOnRead()
    items: pd.DataFrame
    cores: pd.DataFrame
    summary: pd.DataFrame
    outputs: dict[str, np.ndarray | None] = field(default_factory=lambda: {"out": None, "final_state": None})
    scenario: Any = None
    tiling: Any = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def out(self) -> np.ndarray | None:
        """The kernel's ``out`` tensor (None when numerics were off)."""
        return self.outputs.get("out")

    @property
    def final_state(self) -> np.ndarray | None:
        """The kernel's ``final_state`` tensor (None when numerics were off)."""
        return self.outputs.get("final_state")

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with the ops frame built (an unbuilt one is a closure over the machine's records)."""
        self.ops  # noqa: B018 -- the read builds it
        return self.__dict__

    def summary_dict(self) -> dict[str, Any]:
        """The summary row as a plain dict (python scalars)."""
        row = self.summary.iloc[0].to_dict()
        return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
