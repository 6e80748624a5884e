"""The scenario's TOML tables as frozen pydantic models, and the bounds every value is checked against.

One model per table: ``[hardware]``, ``[shape]``, ``[workload]`` (+ ``[workload.distribution]``,
``[workload.tensors]``), ``[kernel]``, ``[sim]``, ``[output]``, ``[study]``. Every model forbids unknown
keys and coerces nothing (TOML's types must match). A validator here raises ``InputError`` with the field
*relative to its table*; ``cgdr_des.scenario.messages`` prefixes the table's location.
Units: lengths in tokens, windows in core clock cycles.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cgdr_des.bounds import (
    MAX_BOOTSTRAP,
    MAX_CHECK_BATCHES,
    MAX_SEED,
    MAX_STUDY_BATCHES,
    MIN_BOOTSTRAP,
)
from cgdr_des.errors import InputError
from cgdr_des.kernel.tiling import CODE_FIELDS
from cgdr_des.scenario.messages import MISSING
from cgdr_des.workload.lengths import MAX_BATCH, Distribution, Length

DEFAULT_PROFILE = "atlas-300i-duo"
# Upper bounds (docs/reliability.md): each keeps validate O(1) or O(batch) and the launch inside
# the kernel's integer fields; memory beyond them is the estimate's business (cgdr_des/estimate.py).
MAX_HEADS = 65_536          # nk, nv: head indices and head counts in the tiling's 32-bit fields
MAX_HEAD_DIM = 65_536       # dk, dv: far past any UB (dk > 512 is refused by DotFp32 anyway)
MAX_CYCLE = 2**62           # windows, in cycles (int64 times with headroom)
MAX_TRACE_EVENTS = 50_000_000
MAX_SCALE = 65_504.0        # fp16's largest finite value: past it q.k * scale overflows fp16 outputs
PositiveInt = Annotated[int, Field(ge=1)]
HeadCount = Annotated[int, Field(ge=1, le=MAX_HEADS)]
HeadDim = Annotated[int, Field(ge=1, le=MAX_HEAD_DIM)]
CoreId = Annotated[int, Field(ge=0, le=1023)]
CycleWindow = Annotated[list[Annotated[int, Field(ge=0, le=MAX_CYCLE)]], Field(min_length=2, max_length=2)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, use_attribute_docstrings=True)


def _check_window(window: list[int] | None, field: str) -> None:
    if window is not None and window[1] <= window[0]:
        raise InputError(field, window, "[start, end] with end > start (cycles)")


class Hardware(_Section):
    """``[hardware]``: a named profile plus field overrides (checked by ``cgdr_des.hw.load_profile``)."""

    profile: str = DEFAULT_PROFILE
    """Hardware profile: a shipped profile name (default atlas-300i-duo) or a path to a .toml profile file, e.g. one
    cgdr-des calibrate wrote."""
    overrides: dict[str, Any] = Field(default_factory=dict)
    """Profile fields replaced for this scenario, field name to value, in the profile's own units (cycles, bytes, GB/s,
    MHz); checked against the profile's fields."""

    @field_validator("profile")
    @classmethod
    def _known(cls, v: str) -> str:
        # Looked up through the package at call time: ``cgdr_des.scenario.known_profiles`` is the one
        # name callers (and tests) replace to change the list.
        import cgdr_des.scenario as package

        known = package.known_profiles()
        if v not in known and not v.endswith(".toml"):  # a profile file (calibrate writes them)
            raise ValueError(f"one of {', '.join(sorted(known))}, or a path to a .toml profile")
        return v


class Shape(_Section):
    """``[shape]``: heads and head dims; ``scale_value`` defaults to ``1/sqrt(dk)`` (kernel tests do so)."""

    nk: HeadCount
    """Number of query/key heads, 1 to 65 536."""
    nv: HeadCount
    """Number of value heads, 1 to 65 536; a multiple of nk (grouped heads)."""
    dk: HeadDim
    """Query/key head dimension, in elements, 1 to 65 536."""
    dv: HeadDim
    """Value head dimension, in elements, 1 to 65 536."""
    scale_value: Annotated[float, Field(allow_inf_nan=False, ge=-MAX_SCALE, le=MAX_SCALE)] | None = None
    """Scale applied to q·k (dimensionless, -65 504 to 65 504); default 1/sqrt(dk)."""
    has_gamma: bool = True
    """Whether the operator has the per-token gate g (decay); default true."""

    @model_validator(mode="after")
    def _gqa(self):
        # The kernel maps value head h to q/k head h // (nv/nk) and never checks divisibility.
        if self.nv % self.nk:
            raise InputError("nv", self.nv, f"a multiple of nk ({self.nk})")
        return self

    def resolved_scale(self) -> float:
        """The scale applied to q·k: ``scale_value`` when given, else ``1/sqrt(dk)``."""
        return 1.0 / math.sqrt(self.dk) if self.scale_value is None else self.scale_value


class Tensors(_Section):
    """``[workload.tensors]``: how the synthetic inputs are drawn (see ``cgdr_des.workload.tensors``)."""

    beta: Literal["sigmoid", "zero"] = "sigmoid"
    """How the synthetic beta input is drawn: sigmoid of a normal draw, or zero."""
    initial_state: Literal["randn", "zeros"] = "randn"
    """How the synthetic initial state is drawn: standard normal (randn) or zeros."""


class Workload(_Section):
    """``[workload]``: exactly one length source, the batch size, the seed of every random draw."""

    lengths: Annotated[list[Length], Field(min_length=1, max_length=MAX_BATCH)] | None = None
    """Explicit sequence lengths, in tokens (one per sequence of the batch); exactly one of lengths, distribution,
    lengths_csv."""
    distribution: Distribution | None = None
    """A seeded distribution the batch's sequence lengths are drawn from ([workload.distribution], kind selects it);
    needs batch."""
    lengths_csv: Annotated[str, Field(min_length=1, max_length=4096)] | None = None
    """Path to a CSV file of sequence lengths in tokens (relative to the scenario file's folder)."""
    batch: Annotated[int, Field(ge=1, le=MAX_BATCH)] | None = None
    """Number of sequences in the batch; required with distribution, else len(lengths)."""
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 0
    """Seed of every random draw of the workload: lengths and synthetic tensors (>= 0)."""
    tensors: Tensors = Field(default_factory=Tensors)
    """How the synthetic input tensors are drawn ([workload.tensors])."""

    @model_validator(mode="after")
    def _one_source(self):
        given = [k for k in ("lengths", "distribution", "lengths_csv") if getattr(self, k) is not None]
        if len(given) != 1:
            raise InputError("lengths", given or MISSING, "exactly one of lengths, distribution, lengths_csv")
        if self.distribution is not None and self.batch is None:
            raise InputError("batch", MISSING, "a positive integer (required with distribution)")
        if self.lengths is not None and self.batch not in (None, len(self.lengths)):
            raise InputError("batch", self.batch, f"omitted or equal to len(lengths) = {len(self.lengths)}")
        return self


PolicyName = Literal["greedy", "round_robin", "float_share", "longest_first", "cost_greedy", "cost_lpt",
                     "minmax_contiguous", "optimal"]


class Kernel(_Section):
    """``[kernel]``: the kernel variant (data, not a fork of the program).

    ``keep_tiling``, ``prefetch``, ``state_double_buffer``: the double-buffering variants
    (docs/double-buffering.md §1); ``keep_tiling`` keeps the baseline's vStep instead of letting the
    host shrink it to make room for what the variant adds. ``sub``, ``state_rows``, ``state_load``,
    ``query_rows``, ``state_store``, ``attn_dots``: the code-change variants (docs/kernel.md §5.y), each
    defaulting to the source's code.
    """

    buffer_num: Literal[1, 2] = 1
    """BUFFER_NUM of the vector kernel's queues: 1 (single) or 2 (double buffering)."""
    policy: PolicyName = "greedy"
    """Dispatch policy that assigns work items to cores; greedy is the kernel's own scan."""
    keep_tiling: bool = False
    """Keep the baseline's vStep for a double-buffering variant instead of letting the host shrink it to make room."""
    prefetch: bool = False
    """Double-buffering variant: prefetch the next chunk's inputs while the current one computes."""
    state_double_buffer: bool = False
    """Double-buffering variant: two state buffers, so that the state write-back overlaps the next head's work."""
    sub: bool = False
    """Code-change variant: ComputeVNew subtracts with one Sub instead of Muls(-1) + Add (one vector call and one
    PipeBarrier<V> fewer per row); false is the source."""
    state_rows: Literal["rows", "2d"] = "rows"
    """Code-change variant: the workspace state tile moves as dk single-row DataCopy calls each way (rows, the
    source) or as one 2-D DataCopy with row gaps (2d)."""
    state_load: Literal["scalar", "dma"] = "scalar"
    """Code-change variant: a head's first state tile is read from initial_state by dk*curV scalar GM reads
    (scalar, the source) or by one DataCopy into the out-queue buffer, transposed in UB (dma)."""
    query_rows: Literal["gm", "ub"] = "gm"
    """Code-change variant: ComputeAttnInter reads q by L*dk scalar GM reads per V-tile (gm, the source) or from
    the chunk's q rows staged once in UB by one DataCopy (ub)."""
    state_store: Literal["scalar", "dma"] = "scalar"
    """Code-change variant: a head's final_state tile is written by dk*curV scalar GM stores (scalar, the source) or
    transposed in UB and written by one DataCopy (dma; dk a multiple of 16 up to 128, else the source's store)."""
    attn_dots: Literal["each", "row"] = "each"
    """Code-change variant: ComputeAttnMatrix reduces each dot product with its own WholeReduceSum and V->S round
    trip (each, the source) or a whole score row's products with one of each (row; dk a multiple of 64)."""
    kernel_version: Literal["vector", "cube", "cube-pre1174"] = "vector"
    """Which program runs: vector (the vector-only kernel), cube (the Cube-era kernel), or cube-pre1174 (the Cube-era
    kernel without the M_V / V_M syncs around the L0C drains)."""

    @model_validator(mode="after")
    def _cube_variant(self):
        if self.kernel_version == "vector":
            return self
        if self.buffer_num != 1:
            raise ValueError(f"buffer_num {self.buffer_num} with kernel_version {self.kernel_version!r}: "
                             "the Cube-era kernel has BUFFER_NUM = 1 only")
        for name in ("keep_tiling", "prefetch", "state_double_buffer"):
            if getattr(self, name):
                raise ValueError(f"{name} = true with kernel_version {self.kernel_version!r}: the "
                                 "double-buffering variants are variants of the vector kernel only")
        for name, (source, _) in CODE_FIELDS.items():
            if getattr(self, name) != source:
                raise ValueError(f"{name} = {getattr(self, name)!r} with kernel_version {self.kernel_version!r}: "
                                 "the code-change variants are variants of the vector kernel only")
        return self

    def tiling_options(self) -> dict[str, Any]:
        """The keyword arguments of ``compute_tiling`` / ``make_launch`` this section sets."""
        return {"buffer_num": self.buffer_num, "keep_tiling": self.keep_tiling, "prefetch": self.prefetch,
                "state_double_buffer": self.state_double_buffer,
                **{name: getattr(self, name) for name in CODE_FIELDS}}


class Sim(_Section):
    """``[sim]``: fidelity, numerics mode and what the Chrome trace keeps."""

    fidelity: Literal["instr", "phase"] = "phase"
    """Simulation fidelity: instr (every instruction) or phase (each distinct phase timed once and replayed: faster)."""
    numerics: Literal["kernel", "exact", "off"] = "kernel"
    """Numerics: kernel (the kernel's fp16/fp32 arithmetic), exact (fp64 reference), or off (timing only)."""
    ops: bool = True
    """Whether the ops frame keeps a row per operation (false: a row per phase span; the same cycles, less CPU)."""
    trace: bool = True
    """Whether a run writes the Chrome trace trace.json."""
    trace_window: CycleWindow | None = None
    """Time window [start, end] the trace keeps, in core clock cycles (end > start); default the whole run."""
    trace_cores: Annotated[list[CoreId], Field(min_length=1, max_length=1024)] | None = None
    """Cores the trace keeps (core ids 0 to 1023); default every core."""
    max_trace_events: Annotated[int, Field(ge=1, le=MAX_TRACE_EVENTS)] = 200_000
    """Most events the trace keeps (the earliest), 1 to 50 000 000; default 200 000."""
    nonfinite: Literal["error", "keep"] = "error"
    """What an inf/NaN output does: error (a diagnostic, exit 2) or keep (written, with a console warning)."""

    @model_validator(mode="after")
    def _window(self):
        _check_window(self.trace_window, "trace_window")
        return self


class Output(_Section):
    """``[output]``: extra files; ``gantt_core=None`` means the core that finishes last."""

    csv: bool = False
    """Whether a run also writes its frames as CSV."""
    plots: bool = True
    """Whether a run or a tail study draws its PNG plots."""
    gantt_core: CoreId | None = None
    """Core of the Gantt plot (0 to 1023); default the core that finishes last."""
    gantt_window: CycleWindow | None = None
    """Time window [start, end] of the Gantt plot, in core clock cycles (end > start); default the core's longest work
    item."""

    @model_validator(mode="after")
    def _window(self):
        _check_window(self.gantt_window, "gantt_window")
        return self


class Study(_Section):
    """``[study]``: a tail study of this workload (``cgdr-des tail``): sampled batches x policies.

    ``policies`` None means every policy that applies (``optimal`` only for batches of at most 20
    work items); ``check_batches`` batches are re-simulated at phase fidelity as a self-check;
    ``bootstrap`` is the number of resamples behind the percentiles' 95 % intervals.
    """

    batches: Annotated[int, Field(ge=1, le=MAX_STUDY_BATCHES)] = 1000
    """Number of batches the tail study samples, 1 to 1 000 000; default 1000."""
    policies: Annotated[list[PolicyName], Field(min_length=1)] | None = None
    """Dispatch policies the study times; default every policy that applies (optimal only for batches of at most 20
    work items)."""
    check_batches: Annotated[int, Field(ge=0, le=MAX_CHECK_BATCHES)] = 3
    """Batches re-simulated at phase fidelity as the study's self-check, 0 to 50; default 3."""
    check_max_token_heads: Annotated[int, Field(ge=0, le=2**31 - 1)] = 1_048_576
    """A checked batch of more tokens x value heads is checked as a stand-in: its lengths scaled down to this
    much work; 0 checks every batch whole; default 1 048 576."""
    bootstrap: Annotated[int, Field(ge=MIN_BOOTSTRAP, le=MAX_BOOTSTRAP)] = 200
    """Bootstrap resamples behind the percentiles' 95 % intervals, 10 to 10 000; default 200."""
