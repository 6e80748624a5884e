"""Global-memory address map of one kernel launch.

The machine needs byte addresses for DMAs (alignment penalties) and scalar GM accesses (data cache
lines). Tensors are laid out one after another, each starting on a 2 MiB boundary as a device
allocator would place them, in the op's input/output order (def.cpp): query, key, value, beta,
initial_state, actual_seq_lengths, g, out, final_state, then the user workspace.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgdr_des.integers import ceil_align

_ALIGN = 2 * 1024 * 1024

ELEMENT_BYTES = {
    "query": 2, "key": 2, "value": 2, "beta": 2, "initial_state": 2,
    "actual_seq_lengths": 4, "g": 4, "out": 2, "final_state": 2, "workspace": 4,
}


@dataclass(frozen=True)
class GmMap:
    """Base byte address of every GM tensor; ``addr(name, index)`` gives an element's byte address."""

    base: dict[str, int]

    def addr(self, name: str, index: int) -> int:
        """Byte address of element ``index`` of tensor ``name``."""
        return self.base[name] + index * ELEMENT_BYTES[name]

    def addrs(self, name: str, index: int, n: int) -> range:
        """Byte addresses of elements ``index .. index + n - 1``."""
        eb = ELEMENT_BYTES[name]
        first = self.base[name] + index * eb
        return range(first, first + n * eb, eb)


def build_gm_map(*, t: int, nk: int, nv: int, dk: int, dv: int, batch: int, workspace_bytes: int) -> GmMap:
    """The launch's GM map: each tensor (sized from the shape) at a 2 MiB-aligned base, in the op's order."""
    sizes = {
        "query": t * nk * dk, "key": t * nk * dk, "value": t * nv * dv, "beta": t * nv,
        "initial_state": batch * nv * dv * dk, "actual_seq_lengths": batch, "g": t * nv,
        "out": t * nv * dv, "final_state": batch * nv * dv * dk,
    }
    base: dict[str, int] = {}
    cursor = _ALIGN
    for name, count in sizes.items():
        base[name] = cursor
        cursor += ceil_align(max(count * ELEMENT_BYTES[name], 1), _ALIGN)
    base["workspace"] = cursor
    _ = workspace_bytes  # the workspace is last, so its size bounds nothing after it
    return GmMap(base)
