"""One kernel launch: the shape, the host tiling, the GM tensors and the per-core UB state.

``Launch`` is what every core shares (inputs, outputs, the FP32 state workspace, the GM address map);
``CoreState`` is what one AIV owns (its UB as numpy views at the offsets of InitLocalBuffers, and the
members ``Init`` sets: blockIdx_, alignK_, stateStrideK_, vStepAligned_ ...).

Numerics modes (docs/architecture.md §3):
- ``kernel``: fp16 inputs widened to fp32, every UB buffer fp32, the workspace state fp32 between
  chunks, out and final_state cast to fp16 -- the kernel's precision. Long accumulations (Axpy
  chains, the DotFp32 partial sums) keep the kernel's structure and fp32 rounding, but the order of
  additions inside one matrix product is numpy's, so results differ from the hardware's by fp32
  rounding only.
- ``exact``: the same phases in float64 (ScalarExp replaced by exp), outputs float64.
- ``off``: no numbers at all; the program emits its instructions only (timing studies).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from cgdr_des.integers import ceil_align
from cgdr_des.kernel.dispatch import should_split_v_tiles
from cgdr_des.kernel.gm import GmMap
from cgdr_des.kernel.layout import device_overlap, init_local_buffers
from cgdr_des.kernel.tiling import CHUNK_SIZE, FP32_BYTES

__all__ = ["CHUNK_SIZE", "NUMERICS", "CoreState", "Launch", "Shape", "op_shape", "should_split"]

NUMERICS = ("kernel", "exact", "off")


@dataclass
class Shape:
    """Dimensions the device reads from the tiling struct plus the derived Init members."""

    batch: int
    t: int
    nk: int
    nv: int
    dk: int
    dv: int
    scale: float
    has_gamma: bool

    @property
    def nv_per_nk(self) -> int:
        """Value heads per key head (GQA group size; 1 when nv < nk)."""
        return self.nv // self.nk if self.nv >= self.nk else 1

    @property
    def align_k(self) -> int:  # alignK_
        """dk rounded up to 16 elements (alignK_)."""
        return ceil_align(self.dk, 16)

    @property
    def state_stride_k(self) -> int:  # stateStrideK_ (sK)
        """The state tile's row stride in elements: dk rounded up to 8 (stateStrideK_)."""
        return ceil_align(self.dk, 8)

    @property
    def ws_stride_v(self) -> int:  # stateWorkspaceStrideV_
        """The state workspace's row stride in elements: dv rounded up to 8 (stateWorkspaceStrideV_)."""
        return ceil_align(self.dv, 8)


def op_shape(query, key, value, beta, initial_state, g, scale_value) -> tuple[Shape, dict]:
    """The :class:`Shape` the host parses from the op's tensors (ParseShapeDims) and the tensors by name."""
    t, nk, dk = query.shape
    _, nv, dv = value.shape
    shape = Shape(initial_state.shape[0], t, nk, nv, dk, dv, float(scale_value), g is not None)
    return shape, dict(query=query, key=key, value=value, beta=beta, initial_state=initial_state)


@dataclass
class Launch:
    """Everything the cores of one launch share. Outputs are filled in as the programs run."""

    shape: Shape
    tiling: object
    gm: GmMap
    numerics: str
    query: np.ndarray
    key: np.ndarray
    value: np.ndarray
    beta: np.ndarray
    initial_state: np.ndarray
    lengths: np.ndarray
    g: np.ndarray | None
    block_dim: int
    out: np.ndarray | None = None
    final_state: np.ndarray | None = None
    workspace: np.ndarray | None = None
    ft: type = np.float32
    #: widened copies of the inputs (fp16 -> ft), each made on first use (:class:`Widened`)
    wide: Mapping = field(default_factory=dict)
    #: DotFp32's WholeReduceSum waits for its Mul (the profile's raw_interlock)
    raw_interlock: bool = False

    def __post_init__(self) -> None:
        if self.numerics == "off":
            return
        sh = self.shape
        self.ft = np.float64 if self.numerics == "exact" else np.float32
        odt = np.float64 if self.numerics == "exact" else np.float16
        self.out = np.zeros((sh.t, sh.nv, sh.dv), dtype=odt)
        # final_state of a zero-length batch is its initial state passed through (never touched).
        self.final_state = self.initial_state.astype(odt).copy()
        self.workspace = np.zeros((sh.batch, sh.nv, sh.dk, sh.ws_stride_v), dtype=self.ft)
        self.wide = Widened({name: getattr(self, name) for name in Widened.NAMES}, self.ft)


class Widened(Mapping):
    """A launch's inputs widened to its working dtype (``ft``), each made on first use and kept: the
    numbers read them all, a replay that only times reads ``g`` alone (ScalarExp's cost depends on
    its argument), and a launch whose numbers run in a forked child (cgdr_des/forked.py) then never
    pays here for widening q, k and v (16 ms on long_t2048). ``g`` is None without a decay."""

    NAMES = ("query", "key", "value", "beta", "initial_state", "g")

    def __init__(self, inputs: dict, ft: type) -> None:
        self._inputs, self._ft, self._made = inputs, ft, {}

    def __getitem__(self, name: str) -> np.ndarray | None:
        if name not in self._made:
            x = self._inputs[name]  # KeyError for a name not widened
            self._made[name] = None if x is None else x.astype(self._ft)
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._inputs)

    def __len__(self) -> int:
        return len(self._inputs)


class CoreState:
    """One AIV's view of the launch: its block index, UB buffers and the Init members.

    ``flat`` is the tmpBuff TBuf as rows of 4-byte elements, one row per *lane*; every named buffer is a
    view of it at InitLocalBuffers' offset, so the chunkScores/stateIn overlap is real aliasing, exactly
    as on the core (Step 3's Duplicate really destroys A). A core of the program has one lane; the
    head-batched numbers (batched.py) run the same phase functions on one lane per head. ``numbers``
    False: the program emits its records and computes nothing (the numbers are computed elsewhere).
    """

    def __init__(self, launch: Launch, block_idx: int, *, emit: bool = True, numbers: bool = True,
                 all_heads: bool = False, repeats: bool = False):
        self.launch = launch
        self.shape = launch.shape
        self.tiling = launch.tiling
        self.block_idx = block_idx
        self.emit = emit
        self.numerics = launch.numerics if numbers else "off"
        #: False: one lane, the chunk's own head; True: one lane per value head, side by side (batched.py)
        self.all_heads = all_heads
        #: loops of like iterations stay isa.Repeat records (emit.loop): the consumer takes them
        self.compress = repeats
        t = launch.tiling
        self.v_step = t.v_step
        self.v_aligned = t.v_step_aligned  # vStepAligned_ (= avFp32)
        self.split = should_split(launch)
        #: the double-buffering variants' running counts on this core: chunks staged through
        #: inQueue_ (its buffer alternates) and state write-backs (each waits for the previous)
        self.overlap_counts = {"chunks": 0, "writebacks": 0}
        self.layout = init_local_buffers(t, overlap=device_overlap(t, launch.block_dim))
        self.tmp_base = self.layout.tmp_buff_offset
        self.out_queue_offset = self.layout.out_queue[0].offset
        self.views: dict[str, np.ndarray] = {}
        if launch.numerics != "off":
            self._carve_views()

    def ub(self, name: str, elem: int = 0) -> int:
        """Absolute UB byte address of element ``elem`` (4-byte) of tmpBuff buffer ``name``."""
        return self.layout.buffers[name].offset + FP32_BYTES * elem

    def lanes(self, ch) -> tuple:
        """Indexers of the value heads and the q/k heads whose numbers this core computes for chunk ``ch``
        (a slice of one head, or every head; each keeps its axis). Under GQA the q/k heads of all the
        value heads are a gather, value head h reading q/k head h // (Nv / Nk)."""
        if not self.all_heads:
            return slice(ch.head, ch.head + 1), slice(ch.qk_head, ch.qk_head + 1)
        per = self.shape.nv_per_nk
        return slice(None), (slice(None) if per == 1 else np.arange(self.shape.nv) // per)

    def _carve_views(self) -> None:
        n_lanes = self.shape.nv if self.all_heads else 1
        flat = np.zeros((n_lanes, self.tiling.ub_rest_bytes // FP32_BYTES), dtype=self.launch.ft)
        self.flat = flat
        for name, buf in self.layout.buffers.items():
            start = (buf.offset - self.tmp_base) // FP32_BYTES
            self.views[name] = flat[:, start:start + buf.elements]


def should_split(launch: Launch) -> bool:
    """ShouldSplitVTiles with this launch's GetBlockNum() (see dispatch.should_split_v_tiles)."""
    return should_split_v_tiles(launch.shape.dv, launch.tiling.v_step, launch.block_dim, launch.shape.nv)
