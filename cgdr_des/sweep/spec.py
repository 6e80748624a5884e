"""The sweep file: one base scenario, the fields that vary, how many replications, what a point runs.

```toml
name = "policy_vs_sigma"
base = "../lognormal_batch.toml"     # a scenario file, relative to this file
kind = "run"                         # each point: "run" (one simulation), "tail" (a tail study) or "advise"
replications = 3                     # workload seeds from SeedSequence(seed).spawn(replications)
seed = 0                             # default: the base scenario's workload.seed
frames = false                       # also store each point's frames (true, or a list: ["batches"])

[set]                                # applied to every point
"sim.numerics" = "off"

[grid]                               # every combination, first field slowest
"kernel.policy" = ["greedy", "round_robin"]
"workload.distribution.sigma" = [0.5, 1.0, 1.5]

[sample]                             # n random draws, crossed with the grid
n = 8
seed = 1
"workload.distribution.median" = {kind = "loguniform", low = 256, high = 4096, integer = true}

[tail]                               # keyword arguments of cgdr_des.tail.run_study (kind = "tail")
batches = 1000

[advise]                             # keyword arguments of cgdr_des.advise.run_advice (kind = "advise")
variants = ["prefetch", "state_db"]
samples = 0
```

Field paths are dotted (quoted keys) or nested tables (``[grid.kernel] policy = [...]``). Values follow
``cgdr_des.overrides``: a table value for ``workload.distribution`` with another ``kind`` replaces the
law. ``load_sweep`` checks the file's own fields; each point is validated when the points are built.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cgdr_des.bounds import MAX_REPLICATIONS, MAX_SAMPLE_DRAWS, MAX_SAMPLES, MAX_STUDY_BATCHES, MAX_SWEEP_POINTS
from cgdr_des.errors import InputError
from cgdr_des.overrides import check_path
from cgdr_des.scenario import MAX_SEED, PolicyName, Scenario, load_scenario, read_toml
from cgdr_des.scenario.messages import Shown

SAMPLERS = ("uniform", "loguniform", "choice", "normal")


class Sampler(BaseModel):
    """One ``[sample]`` field: a law to draw from (``integer = true`` rounds to int)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    kind: Literal["uniform", "loguniform", "choice", "normal"]
    low: Annotated[float, Field(allow_inf_nan=False)] | None = None
    high: Annotated[float, Field(allow_inf_nan=False)] | None = None
    mean: Annotated[float, Field(allow_inf_nan=False)] | None = None
    std: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    values: Annotated[list[Any], Field(min_length=1)] | None = None
    integer: bool = False

    @model_validator(mode="after")
    def _complete(self):
        need = {"uniform": ("low", "high"), "loguniform": ("low", "high"), "choice": ("values",),
                "normal": ("mean", "std")}[self.kind]
        missing = [k for k in need if getattr(self, k) is None]
        if missing:
            raise InputError(missing[0], "nothing", f"required by kind = {self.kind!r}")
        if self.kind in ("uniform", "loguniform") and not self.low < self.high:
            raise InputError("high", self.high, f"greater than low ({self.low})")
        if self.kind == "uniform" and not math.isfinite(self.high - self.low):
            raise InputError("high", self.high, f"within a float's range of low ({self.low}): high - low overflows")
        if self.kind == "loguniform" and self.low <= 0:
            raise InputError("low", self.low, "positive for loguniform")
        return self


class TailOptions(BaseModel):
    """``[tail]``: the keyword arguments of ``cgdr_des.tail.run_study`` a tail point passes (bounded
    like ``[study]``), checked with the file, not when the first point runs."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    batches: Annotated[int, Field(ge=1, le=MAX_STUDY_BATCHES)] | None = None
    policies: Annotated[list[PolicyName], Field(min_length=1)] | None = None
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] | None = None

    def kwargs(self) -> dict[str, Any]:
        """What ``run_study`` is called with (the options given)."""
        return self.model_dump(exclude_none=True)


class AdviseOptions(BaseModel):
    """``[advise]``: the keyword arguments of ``cgdr_des.advise.run_advice`` an advise point passes
    (bounded like the command's options), checked with the file."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    variants: Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]],
                        Field(min_length=1, max_length=64)] | None = None
    policies: Annotated[list[PolicyName], Field(min_length=1)] | None = None
    batches: Annotated[int, Field(ge=1, le=MAX_STUDY_BATCHES)] | None = None
    samples: Annotated[int, Field(ge=0, le=MAX_SAMPLES)] | None = None
    fields: Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]], Field(min_length=1)] | None = None

    @field_validator("variants")
    @classmethod
    def _names(cls, v):
        if v is not None:
            from cgdr_des.advise.settings import parse_names

            try:
                parse_names(v)
            except InputError as exc:  # named by the file's path (sweep.advise.variants), not the CLI's option
                raise ValueError(f"{exc.allowed} (got {str(exc.value)[:40]!r})") from None
        return v

    def kwargs(self) -> dict[str, Any]:
        """What ``run_advice`` is called with (the options given)."""
        return self.model_dump(exclude_none=True)


class SweepSpec(BaseModel):
    """A validated sweep file (``load_sweep``). Field paths in ``grid``/``sample``/``set`` are flattened."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: Annotated[str, Field(min_length=1)]
    description: str = ""
    base: str
    kind: Literal["run", "tail", "advise"] = "run"
    replications: Annotated[int, Field(ge=1, le=MAX_REPLICATIONS)] = 1
    # bounded like workload.seed: numpy's SeedSequence and default_rng refuse a negative seed
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] | None = None
    frames: bool | list[str] = False
    set: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, Annotated[list[Any], Field(min_length=1)]] = Field(default_factory=dict)
    sample: dict[str, Sampler] = Field(default_factory=dict)
    sample_n: Annotated[int, Field(ge=1, le=MAX_SAMPLE_DRAWS)] | None = None
    sample_seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 0
    tail: TailOptions = Field(default_factory=lambda: TailOptions())
    advise: AdviseOptions = Field(default_factory=lambda: AdviseOptions())
    base_scenario: Scenario

    @model_validator(mode="after")
    def _bounded(self):
        count = self.replications * (self.sample_n or 1)
        for values in self.grid.values():
            count *= len(values)
            if count > MAX_SWEEP_POINTS:  # stop multiplying: a hostile grid's product is never formed
                break
        if count > MAX_SWEEP_POINTS:
            sizes = " x ".join(str(len(v)) for v in self.grid.values()) or "1"
            shown = Shown(f"grid {sizes} x samples {self.sample_n or 1} x replications {self.replications}")
            raise InputError("points", shown, f"at most {MAX_SWEEP_POINTS:,} points in one sweep")
        return self

    @model_validator(mode="after")
    def _frame_names(self):
        if isinstance(self.frames, list):
            from cgdr_des.sweep.work import ADVISE_FRAMES, RUN_FRAMES, TAIL_FRAMES

            known = {"run": RUN_FRAMES, "tail": TAIL_FRAMES, "advise": ADVISE_FRAMES}[self.kind]
            for name in self.frames:
                if name not in known:
                    raise InputError("frames", name, f"true, false or a list of {', '.join(known)} "
                                     f"(the frames of a {self.kind} point)")
        return self

    @field_validator("set", "grid", "sample")
    @classmethod
    def _paths(cls, v: dict) -> dict:
        for path in v:
            check_path(path, path)
        return v

    def point_options(self) -> dict[str, Any]:
        """The keyword arguments of each point's study: ``[tail]``'s or ``[advise]``'s (none for a run)."""
        return {"run": {}, "tail": self.tail.kwargs(), "advise": self.advise.kwargs()}[self.kind]

    def base_seed(self) -> int:
        """The SeedSequence base of the replications: ``seed``, else the base scenario's workload seed."""
        return self.base_scenario.workload.seed if self.seed is None else self.seed


def load_sweep(path: str | Path, *, overrides: list[tuple[str, Any]] = (), seed: int | None = None) -> SweepSpec:
    """Read a sweep file; ``overrides`` (``--set``) join its ``[set]`` table, ``seed`` replaces ``seed``."""
    doc = read_toml(path, "sweep", "TOML sweep file")
    return sweep_from_dict(doc, base_dir=Path(path).parent, overrides=overrides, seed=seed)


def sweep_from_dict(doc: Mapping[str, Any], *, base_dir: Path, overrides: list[tuple[str, Any]] = (),
                    seed: int | None = None) -> SweepSpec:
    """Validate a parsed sweep document (errors name ``sweep.<field>``); loads the base scenario."""
    data = dict(doc)
    base = data.get("base")
    if not isinstance(base, str):
        raise InputError("sweep.base", base if base is not None else "nothing", "path of a scenario file")
    if not (base_dir / base).is_file():
        raise InputError("sweep.base", base, f"path of a scenario file, relative to the sweep file ({base_dir})")
    data["base_scenario"] = load_scenario(base_dir / base)
    data["set"] = {**_flatten(data.get("set", {}), "set", lambda v: False), **dict(overrides)}
    data["grid"] = _flatten(data.get("grid", {}), "grid", lambda v: isinstance(v, list))
    data.update(_sample_table(data.pop("sample", None)))
    if seed is not None:
        data["seed"] = seed
    try:
        return SweepSpec.model_validate(data)
    except ValidationError as exc:
        raise _spec_error(exc) from None


def _flatten(table: Any, where: str, is_leaf) -> dict[str, Any]:
    """``{"kernel": {"policy": [...]}}`` and ``{"kernel.policy": [...]}`` -> ``{"kernel.policy": [...]}``."""
    if not isinstance(table, Mapping):
        raise InputError(f"sweep.{where}", table, "a table of field paths")
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, Mapping) and not is_leaf(value) and "kind" not in value:
            out.update({f"{key}.{k}": v for k, v in _flatten(value, where, is_leaf).items()})
        else:
            out[key] = value
    return out


def _sample_table(table: Any) -> dict[str, Any]:
    if table is None:
        return {}
    if not isinstance(table, Mapping):
        raise InputError("sweep.sample", table, "a table: n, seed and field = {kind = ...}")
    rest = dict(table)
    n, seed = rest.pop("n", None), rest.pop("seed", 0)
    fields = _flatten(rest, "sample", lambda v: "kind" in v)
    if n is None or not fields:
        raise InputError("sweep.sample.n" if n is None else "sweep.sample", n if n is not None else "nothing",
                         "n (number of draws) and at least one field = {kind = ...}")
    return {"sample_n": n, "sample_seed": seed, "sample": fields}


def _spec_error(exc: ValidationError) -> InputError:
    err = exc.errors(include_url=False)[0]
    loc = [str(x) for x in err["loc"]]
    if loc and loc[0] in ("sample_n", "sample_seed"):
        loc = ["sample", loc[0].removeprefix("sample_")]
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, InputError):
        return InputError(".".join(["sweep", *loc, cause.field]), cause.value, cause.allowed)
    if err["type"] == "missing":
        return InputError(".".join(["sweep", *loc]), "nothing", "required")
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        model = {"tail": TailOptions, "advise": AdviseOptions}.get(loc[0] if loc else "", SweepSpec)
        msg = f"unknown key (allowed: {', '.join(k for k in model.model_fields if k != 'base_scenario')})"
    return InputError(".".join(["sweep", *loc]), err.get("input"), msg[:1].lower() + msg[1:])
