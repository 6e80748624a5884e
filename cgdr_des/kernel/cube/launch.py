"""A launch of the Cube-era kernel: its host tiling, the GM map and the shared launch state.

The launch state is the vector kernel's :class:`cgdr_des.kernel.launch.Launch` (inputs, outputs, the
fp32 state workspace) carrying a :class:`~cgdr_des.kernel.cube.tiling.CubeTiling`.
"""

from __future__ import annotations

import numpy as np

from cgdr_des.errors import InputError
from cgdr_des.kernel.cube.tiling import compute_cube_tiling
from cgdr_des.kernel.gm import build_gm_map
from cgdr_des.kernel.launch import NUMERICS, Launch, Shape, op_shape


def make_cube_launch(shape: Shape, lengths, g, tensors: dict | None, *, numerics: str = "kernel",
                     ub_size: int = 262144, aiv_num: int = 8, kernel_version: str = "cube") -> Launch:
    """Tiling, GM map and launch state; ``tensors`` may be None only with numerics ``off``."""
    if numerics not in NUMERICS:
        raise InputError("numerics", numerics, f"allowed: {', '.join(NUMERICS)}")
    if tensors is None and numerics != "off":
        raise InputError("numerics", numerics, "a run without tensors needs numerics 'off'")
    sh = shape
    tiling = compute_cube_tiling(t=sh.t, hqk=sh.nk, dk=sh.dk, hv=sh.nv, dv=sh.dv, batch=sh.batch,
                                 ub_size=ub_size, aiv_num=aiv_num, has_gamma=sh.has_gamma,
                                 kernel_version=kernel_version)
    gm = build_gm_map(t=sh.t, nk=sh.nk, nv=sh.nv, dk=sh.dk, dv=sh.dv, batch=sh.batch,
                      workspace_bytes=tiling.workspace_bytes)
    tensors = tensors or dict.fromkeys(("query", "key", "value", "beta", "initial_state"))
    return Launch(sh, tiling, gm, numerics, lengths=np.asarray(lengths), g=g, block_dim=tiling.block_dim,
                  **tensors)


def build_cube_launch(query, key, value, beta, initial_state, actual_seq_lengths, g=None, scale_value=1.0, *,
                      numerics="kernel", ub_size=262144, aiv_num=8, kernel_version="cube") -> Launch:
    """The op's tensors as the host reads them (the Cube-era twin of functional.build_launch)."""
    shape, tensors = op_shape(query, key, value, beta, initial_state, g, scale_value)
    return make_cube_launch(shape, actual_seq_lengths, g, tensors, numerics=numerics, ub_size=ub_size,
                            aiv_num=aiv_num, kernel_version=kernel_version)
