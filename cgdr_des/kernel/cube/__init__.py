"""The Cube-era chunk_gated_delta_rule kernel (merge requests !1135, !1158, !1174), a second program on
the same machine: host tiling (``tiling``), its numbers (``numerics``), the record builders of its
recurring blocks (``blocks``), its phases (``phases``) and the per-core program (``program``).
docs/kernel-cube.md describes it phase by phase.
"""
