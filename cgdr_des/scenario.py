"""Scenario files: one TOML file describes one simulated kernel launch and the question it answers.

Lifecycle: ``load_scenario(path)`` reads TOML -> ``Scenario.from_dict`` validates it (pydantic v2, every
section ``extra="forbid"`` and frozen, strict types: TOML's types must match, no string-to-number
coercion) -> resolves the sequence lengths once (explicit list, seeded distribution, or CSV file) ->
checks that the host tiling finds a V step that fits UB. The result is immutable; ``with_changes``
returns a re-validated copy (sweeps and ``compare`` build their points with it).

Every failure is an ``InputError`` with one line naming the dotted field path (``shape.nv``,
``workload.distribution.sigma``), the value and what is allowed: pydantic's ``ValidationError`` is
converted here (first error only). Validators inside the models raise ``InputError`` with the field
*relative to their table*; the converter prefixes the table's location.

Sections (see ``cgdr-des schema`` for the full JSON schema): ``name``, ``description``, ``[hardware]``,
``[shape]``, ``[workload]`` (+ ``[workload.distribution]``, ``[workload.tensors]``), ``[kernel]``,
``[sim]``, ``[output]``, ``[study]``. Units: lengths in tokens, windows in core clock cycles.
"""

from __future__ import annotations

import hashlib
import json
import math
import reprlib
import tomllib
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from cgdr_des.errors import InputError
from cgdr_des.workload.lengths import (
    DISTRIBUTIONS,
    MAX_BATCH,  # noqa: F401  (part of the scenario's bounds)
    Distribution,
    Length,
    sample_lengths,
)
from cgdr_des.workload.lengths import MAX_LENGTH as MAX_TOKENS
from cgdr_des.workload.lengths_csv import read_lengths_csv

DEFAULT_PROFILE = "atlas-300i-duo"
# Upper bounds (docs/reliability.md): each keeps validate O(1) or O(batch) and the launch inside
# the kernel's integer fields; memory beyond them is the estimate's business (cgdr_des/estimate.py).
MAX_HEADS = 65_536          # nk, nv: head indices and head counts in the tiling's 32-bit fields
MAX_HEAD_DIM = 65_536       # dk, dv: far past any UB (dk > 512 is refused by DotFp32 anyway)
MAX_CYCLE = 2**62           # windows, in cycles (int64 times with headroom)
MAX_TRACE_EVENTS = 50_000_000
MAX_SEED = 2**63 - 1        # numpy's default_rng takes any non-negative integer; int64 keeps it portable
MAX_SCALE = 65_504.0        # fp16's largest finite value: past it q.k * scale overflows fp16 outputs
PositiveInt = Annotated[int, Field(ge=1)]
HeadCount = Annotated[int, Field(ge=1, le=MAX_HEADS)]
HeadDim = Annotated[int, Field(ge=1, le=MAX_HEAD_DIM)]
CoreId = Annotated[int, Field(ge=0, le=1023)]
CycleWindow = Annotated[list[Annotated[int, Field(ge=0, le=MAX_CYCLE)]], Field(min_length=2, max_length=2)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _check_window(window: list[int] | None, field: str) -> None:
    if window is not None and window[1] <= window[0]:
        raise InputError(field, window, "[start, end] with end > start (cycles)")


def known_profiles() -> list[str]:
    """Names of the shipped hardware profiles (``cgdr_des.hw.list_profiles()``)."""
    from cgdr_des.hw import list_profiles

    return list(list_profiles())


class Hardware(_Section):
    """``[hardware]``: a named profile plus field overrides (checked by ``cgdr_des.hw.load_profile``)."""

    profile: str = DEFAULT_PROFILE
    overrides: dict[str, Any] = Field(default_factory=dict)

    @field_validator("profile")
    @classmethod
    def _known(cls, v: str) -> str:
        known = known_profiles()
        if v not in known and not v.endswith(".toml"):  # a profile file (calibrate writes them)
            raise ValueError(f"one of {', '.join(sorted(known))}, or a path to a .toml profile")
        return v


class Shape(_Section):
    """``[shape]``: heads and head dims; ``scale_value`` defaults to ``1/sqrt(dk)`` (kernel tests do so)."""

    nk: HeadCount
    nv: HeadCount
    dk: HeadDim
    dv: HeadDim
    scale_value: Annotated[float, Field(allow_inf_nan=False, ge=-MAX_SCALE, le=MAX_SCALE)] | None = None
    has_gamma: bool = True

    @model_validator(mode="after")
    def _gqa(self):
        # The kernel maps value head h to q/k head h // (nv/nk) and never checks divisibility.
        if self.nv % self.nk:
            raise InputError("nv", self.nv, f"a multiple of nk ({self.nk})")
        return self

    def resolved_scale(self) -> float:
        return 1.0 / math.sqrt(self.dk) if self.scale_value is None else self.scale_value


class Tensors(_Section):
    """``[workload.tensors]``: how the synthetic inputs are drawn (see ``cgdr_des.workload.tensors``)."""

    beta: Literal["sigmoid", "zero"] = "sigmoid"
    initial_state: Literal["randn", "zeros"] = "randn"


class Workload(_Section):
    """``[workload]``: exactly one length source, the batch size, the seed of every random draw."""

    lengths: Annotated[list[Length], Field(min_length=1, max_length=MAX_BATCH)] | None = None
    distribution: Distribution | None = None
    lengths_csv: Annotated[str, Field(min_length=1, max_length=4096)] | None = None
    batch: Annotated[int, Field(ge=1, le=MAX_BATCH)] | None = None
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 0
    tensors: Tensors = Field(default_factory=Tensors)

    @model_validator(mode="after")
    def _one_source(self):
        given = [k for k in ("lengths", "distribution", "lengths_csv") if getattr(self, k) is not None]
        if len(given) != 1:
            raise InputError("lengths", given or _MISSING, "exactly one of lengths, distribution, lengths_csv")
        if self.distribution is not None and self.batch is None:
            raise InputError("batch", _MISSING, "a positive integer (required with distribution)")
        if self.lengths is not None and self.batch not in (None, len(self.lengths)):
            raise InputError("batch", self.batch, f"omitted or equal to len(lengths) = {len(self.lengths)}")
        return self


PolicyName = Literal["greedy", "round_robin", "float_share", "longest_first", "cost_greedy", "cost_lpt",
                     "minmax_contiguous", "optimal"]


class Kernel(_Section):
    """``[kernel]``: the kernel variant (data, not a fork of the program)."""

    buffer_num: Literal[1, 2] = 1
    policy: PolicyName = "greedy"
    #: which program runs: the vector-only kernel (!1108), the Cube-era kernel (!1174,
    #: docs/kernel-cube.md), or the Cube-era kernel before !1174 (no M_V / V_M around the L0C drains)
    kernel_version: Literal["vector", "cube", "cube-pre1174"] = "vector"

    @model_validator(mode="after")
    def _cube_variant(self):
        if self.kernel_version != "vector" and self.buffer_num != 1:
            raise ValueError(f"buffer_num {self.buffer_num} with kernel_version {self.kernel_version!r}: "
                             "the Cube-era kernel has BUFFER_NUM = 1 only")
        return self


class Sim(_Section):
    """``[sim]``: fidelity, numerics mode and what the Chrome trace keeps."""

    fidelity: Literal["instr", "phase"] = "phase"
    numerics: Literal["kernel", "exact", "off"] = "kernel"
    trace: bool = True
    trace_window: CycleWindow | None = None
    trace_cores: Annotated[list[CoreId], Field(min_length=1, max_length=1024)] | None = None
    max_trace_events: Annotated[int, Field(ge=1, le=MAX_TRACE_EVENTS)] = 200_000
    #: an inf/NaN output is a diagnostic ("error") or written anyway with a console warning ("keep")
    nonfinite: Literal["error", "keep"] = "error"

    @model_validator(mode="after")
    def _window(self):
        _check_window(self.trace_window, "trace_window")
        return self


class Output(_Section):
    """``[output]``: extra files; ``gantt_core=None`` means the core that finishes last."""

    csv: bool = False
    plots: bool = True
    gantt_core: CoreId | None = None
    gantt_window: CycleWindow | None = None

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

    batches: Annotated[int, Field(ge=1, le=1_000_000)] = 1000
    policies: Annotated[list[PolicyName], Field(min_length=1)] | None = None
    check_batches: Annotated[int, Field(ge=0, le=50)] = 3
    bootstrap: Annotated[int, Field(ge=10, le=10_000)] = 200


class Scenario(_Section):
    """A validated scenario. Build with ``load_scenario`` or ``Scenario.from_dict`` (errors -> InputError)."""

    name: Annotated[str, Field(min_length=1)]
    description: str = ""
    hardware: Hardware = Field(default_factory=Hardware)
    shape: Shape
    workload: Workload
    kernel: Kernel = Field(default_factory=Kernel)
    sim: Sim = Field(default_factory=Sim)
    output: Output = Field(default_factory=Output)
    study: Study = Field(default_factory=Study)

    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    # (workload it was resolved from, lengths): keyed by identity so that model_copy(update=...) with a
    # new workload never serves stale lengths.
    _lengths: tuple[Workload, np.ndarray] | None = PrivateAttr(default=None)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, base_dir: str | Path | None = None,
                  check_tiling: bool = True) -> Scenario:
        """Validate ``data`` (a parsed TOML/JSON document), resolve lengths, check the tiling.

        ``base_dir`` anchors ``workload.lengths_csv`` (default: the current directory).
        """
        try:
            sc = cls.model_validate(dict(data))
        except ValidationError as exc:
            raise validation_error_to_input_error(exc) from None
        sc._base_dir = Path(base_dir).resolve() if base_dir is not None else Path.cwd()
        sc.lengths()  # resolve now: a bad length source fails at load, not mid-run
        if check_tiling:
            validate_tiling(sc)
        return sc

    def with_changes(self, changes: Mapping[str, Any]) -> Scenario:
        """A re-validated copy with ``changes`` deep-merged (``{"kernel": {"buffer_num": 2}}``)."""
        data = _deep_merge(self.model_dump(mode="json", exclude_none=True), changes)
        return Scenario.from_dict(data, base_dir=self._base_dir)

    def profile_ref(self) -> str:
        """``hardware.profile`` as ``load_profile`` takes it: a profile file relative to the scenario's folder."""
        p = self.hardware.profile
        return str(self._base_dir / p) if p.endswith(".toml") and not Path(p).is_absolute() else p

    def lengths(self) -> np.ndarray:
        """The resolved ``actual_seq_lengths`` (tokens, int32, one per batch entry); a fresh copy."""
        if self._lengths is None or self._lengths[0] is not self.workload:
            self._lengths = (self.workload, resolve_lengths(self.workload, self._base_dir))
        return self._lengths[1].copy()

    def resolved_dict(self) -> dict[str, Any]:
        """JSON-able dict with every default filled in and the lengths written out.

        The workload keeps only the resolved ``lengths`` (plus ``batch``, ``seed``, ``tensors``), so the
        dict loads again with ``Scenario.from_dict`` and describes exactly the simulated launch.
        """
        d = self.model_dump(mode="json", exclude={"study"})  # a study samples many launches; not this one's
        if d["kernel"].get("kernel_version") == "vector":  # the default: every earlier hash stays valid
            del d["kernel"]["kernel_version"]
        d["shape"]["scale_value"] = self.shape.resolved_scale()
        lengths = self.lengths()
        d["workload"] = {"lengths": lengths.tolist(), "batch": int(lengths.size),
                         "seed": self.workload.seed, "tensors": d["workload"]["tensors"]}
        return d

    def study_dict(self) -> dict[str, Any]:
        """JSON-able dict of the scenario as a study sees it: the length *distribution* and ``[study]`` kept.

        A tail study samples many batches from the distribution, so ``resolved_dict`` (one batch's lengths)
        would describe the wrong thing; this dict loads again with ``Scenario.from_dict``.
        """
        d = self.model_dump(mode="json", exclude_none=True)
        d["shape"]["scale_value"] = self.shape.resolved_scale()
        return d

    def scenario_hash(self) -> str:
        """First 12 hex digits of the sha256 of the canonical JSON of ``resolved_dict()``."""
        text = json.dumps(self.resolved_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a TOML scenario file; every problem is one-line InputError."""
    data = read_toml(path, "scenario", "TOML file")
    return Scenario.from_dict(data, base_dir=Path(path).parent)


def read_toml(path: str | Path, field: str, kind: str) -> dict[str, Any]:
    """The parsed TOML document at ``path``; a missing or malformed file is one-line InputError on
    ``field`` (``kind`` says what was expected: "TOML file", "TOML sweep file")."""
    p = Path(path)
    if not p.is_file():
        raise InputError(field, str(path), f"path of an existing {kind}")
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(field, str(path), f"valid TOML ({exc})") from None


# ---------------------------------------------------------------- lengths


def resolve_lengths(workload: Workload, base_dir: Path) -> np.ndarray:
    """The batch's sequence lengths (int32 tokens) from whichever source the workload names."""
    if workload.lengths is not None:
        lengths = np.asarray(workload.lengths, dtype=np.int32)
    elif workload.distribution is not None:
        rng = np.random.default_rng(workload.seed)
        try:
            lengths = sample_lengths(workload.distribution, workload.batch, rng)
        except InputError as exc:
            raise InputError(f"workload.distribution.{exc.field}", exc.value, exc.allowed) from None
    else:
        lengths = read_lengths_csv(base_dir / workload.lengths_csv, workload.lengths_csv, workload.batch)
    total = int(lengths.sum(dtype=np.int64))
    if total <= 0:
        raise InputError("workload.lengths", _brief(lengths.tolist()), "at least one positive length")
    if total > MAX_TOKENS:
        raise InputError("workload.lengths", _Shown(f"{lengths.size} lengths summing to {total}"),
                         f"a total of at most {MAX_TOKENS} tokens (T is int32 on the device)")
    return lengths


# ---------------------------------------------------------------- tiling check


def validate_tiling(sc: Scenario):
    """Run the host tiling at load so that a shape with no V step fitting UB fails before simulating.

    Returns the ``Tiling``.
    """
    from cgdr_des.hw import load_profile
    from cgdr_des.kernel.tiling import compute_tiling, static_diagnostics

    with _prefixed("hardware"):
        profile = load_profile(sc.profile_ref(), dict(sc.hardware.overrides) or None)
    lengths = sc.lengths()
    s = sc.shape
    if sc.kernel.kernel_version != "vector":
        return _validate_cube_tiling(sc, profile, lengths)
    with _prefixed("tiling"):
        tiling = compute_tiling(t=int(lengths.sum()), hqk=s.nk, dk=s.dk, hv=s.nv, dv=s.dv,
                                batch=int(lengths.size), ub_size=profile_ub_bytes(profile),
                                aiv_num=profile_core_count(profile), has_gamma=s.has_gamma,
                                buffer_num=sc.kernel.buffer_num)
        static_diagnostics(tiling)
    _check_cores(sc, tiling.block_dim)
    return tiling


def _validate_cube_tiling(sc: Scenario, profile, lengths):
    """The Cube-era host tiling (kernel_version cube / cube-pre1174) at load."""
    from cgdr_des.kernel.cube.tiling import compute_cube_tiling

    s = sc.shape
    with _prefixed("tiling"):
        tiling = compute_cube_tiling(t=int(lengths.sum()), hqk=s.nk, dk=s.dk, hv=s.nv, dv=s.dv,
                                     batch=int(lengths.size), ub_size=profile_ub_bytes(profile),
                                     aiv_num=profile_core_count(profile), has_gamma=s.has_gamma,
                                     kernel_version=sc.kernel.kernel_version)
    _check_cores(sc, tiling.block_dim)
    return tiling


def _check_cores(sc: Scenario, block_dim: int) -> None:
    """Core ids the output options name must be cores the launch uses (0 .. blockDim - 1)."""
    allowed = f"a core id of this launch, 0..{block_dim - 1} (blockDim {block_dim})"
    if sc.output.gantt_core is not None and sc.output.gantt_core >= block_dim:
        raise InputError("output.gantt_core", sc.output.gantt_core, allowed)
    for i, core in enumerate(sc.sim.trace_cores or ()):
        if core >= block_dim:
            raise InputError(f"sim.trace_cores[{i}]", core, allowed)


@contextmanager
def _prefixed(section: str):
    """Re-raise another layer's InputError with the scenario section it came from in the field path."""
    try:
        yield
    except InputError as exc:
        if exc.field.startswith(f"{section}."):
            raise
        raise InputError(f"{section}.{exc.field}", exc.value, exc.allowed) from None


def profile_ub_bytes(profile: Any) -> int:
    """UB bytes the host tiling sees (``GetCoreMemSize(UB)`` less what AscendC reserves)."""
    return int(profile.ub_usable_bytes)


def profile_core_count(profile: Any) -> int:
    """Vector core count the host tiling sees (``GetCoreNumAiv()``)."""
    return int(profile.aiv_num)


# ---------------------------------------------------------------- errors


class _Shown:
    """Wraps a value so that InputError's ``{value!r}`` stays short (one line for huge lists/tables)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


_MISSING = _Shown("nothing")


def _brief(value: Any) -> Any:
    text = repr(value)
    return _Shown(reprlib.repr(value)) if len(text) > 80 or "\n" in text else value


def _path(loc: tuple) -> str:
    """``('workload', 'distribution', 'lognormal', 'sigma')`` -> ``workload.distribution.sigma``."""
    parts: list[str] = []
    for i, item in enumerate(loc):
        if isinstance(item, int):
            parts[-1] += f"[{item}]"
        elif i > 0 and loc[i - 1] == "distribution" and item in _DIST_KINDS:
            continue  # pydantic puts the union tag in the location; users never wrote it
        else:
            parts.append(str(item))
    return ".".join(parts)


def validation_error_to_input_error(exc: ValidationError) -> InputError:
    """The first pydantic error as one-line InputError (field path, value, what is allowed)."""
    err = exc.errors(include_url=False)[0]
    kind, loc, ctx = err["type"], tuple(err["loc"]), err.get("ctx") or {}
    path = _path(loc)
    cause = ctx.get("error")
    if isinstance(cause, InputError):
        return InputError(".".join(p for p in (path, cause.field) if p), cause.value, cause.allowed)
    if kind == "extra_forbidden":
        allowed = _allowed_keys(loc[:-1])
        return InputError(path, _brief(err["input"]), f"unknown key (allowed: {allowed})")
    if kind == "missing":
        return InputError(path, _MISSING, "required")
    if kind == "union_tag_invalid":
        return InputError(f"{path}.kind", ctx.get("tag"), f"one of {ctx.get('expected_tags')}")
    if kind == "union_tag_not_found":
        return InputError(f"{path}.kind", _MISSING, f"one of {', '.join(repr(k) for k in _DIST_KINDS)}")
    msg = err["msg"].removeprefix("Value error, ")
    return InputError(path, _brief(err["input"]), msg[:1].lower() + msg[1:])


_DIST_KINDS = tuple(DISTRIBUTIONS)


def _allowed_keys(loc: tuple) -> str:
    """The field names of the table at ``loc`` (walks the model classes; union members by tag)."""
    model: type[BaseModel] = Scenario
    for item in loc:
        if isinstance(item, int):
            continue
        if item in DISTRIBUTIONS and model is Workload:
            model = DISTRIBUTIONS[item]
            continue
        ann = model.model_fields[item].annotation
        nested = [a for a in (ann, *getattr(ann, "__args__", ())) if isinstance(a, type)
                  and issubclass(a, BaseModel)]
        if not nested:
            continue  # the tagged union: the next location item is its tag
        model = nested[0]
    return ", ".join(model.model_fields)


def _deep_merge(base: dict, changes: Mapping) -> dict:
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
