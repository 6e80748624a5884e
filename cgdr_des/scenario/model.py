"""The validated scenario: its tables, the resolved sequence lengths, and reading it from TOML.

``Scenario.from_dict`` validates a parsed document, resolves the lengths once (explicit list, seeded
distribution, or CSV file) and runs the load-time tiling check; ``load_scenario`` does so for a file.
The result is immutable; ``with_changes`` returns a re-validated copy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import Field, PrivateAttr, ValidationError

from cgdr_des.bounds import MAX_TOML_BYTES
from cgdr_des.errors import InputError
from cgdr_des.kernel.tiling import CODE_FIELDS
from cgdr_des.scenario.messages import Shown, brief, validation_error_to_input_error
from cgdr_des.scenario.sections import Hardware, Kernel, Output, Shape, Sim, Study, Workload, _Section
from cgdr_des.scenario.tiling_check import validate_tiling
from cgdr_des.toml_read import parse_toml
from cgdr_des.workload.lengths import MAX_LENGTH as MAX_TOKENS
from cgdr_des.workload.lengths import sample_lengths
from cgdr_des.workload.lengths_csv import read_lengths_csv

#: ``[kernel]`` fields added after scenario hashes were first published, with their defaults: left out
#: of the resolved dict (and so of the hash) when at the default
KERNEL_FIELDS_ADDED_LATER = {"keep_tiling": False, "prefetch": False, "state_double_buffer": False,
                             "kernel_version": "vector",
                             **{name: values[0] for name, values in CODE_FIELDS.items()}}


class Scenario(_Section):
    """A validated scenario. Build with ``load_scenario`` or ``Scenario.from_dict`` (errors -> InputError)."""

    name: Annotated[str, Field(min_length=1)]
    """Name of the scenario: titles of plots and output metadata."""
    description: str = ""
    """Free text about the scenario; not used by the simulation."""
    hardware: Hardware = Field(default_factory=Hardware)
    """The hardware profile and its field overrides ([hardware])."""
    shape: Shape
    """Head counts and head dimensions of the operator ([shape])."""
    workload: Workload
    """The batch's sequence lengths, their source and the seed of every random draw ([workload])."""
    kernel: Kernel = Field(default_factory=Kernel)
    """The kernel program and its variant: buffering, dispatch policy ([kernel])."""
    sim: Sim = Field(default_factory=Sim)
    """Simulation fidelity, numerics and what the Chrome trace keeps ([sim])."""
    output: Output = Field(default_factory=Output)
    """Extra files a run writes: CSV copies, plots, the Gantt's core and window ([output])."""
    study: Study = Field(default_factory=Study)
    """The tail study of this workload run by cgdr-des tail ([study])."""

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

    def __eq__(self, other: object) -> bool:
        """Equal fields and the same folder for relative paths. pydantic's own comparison would also
        compare the cached lengths array, whose truth value numpy refuses for more than one length."""
        if not isinstance(other, Scenario):
            return NotImplemented
        return self._base_dir == other._base_dir and self.model_dump() == other.model_dump()

    __hash__ = None  # a scenario holds dicts (hardware overrides): unhashable, as before

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
        for key, default in KERNEL_FIELDS_ADDED_LATER.items():    # at their defaults: earlier hashes stay valid
            if d["kernel"].get(key) == default:
                del d["kernel"][key]
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
    if p.stat().st_size > MAX_TOML_BYTES:
        raise InputError(field, str(path), f"a {kind} of at most {MAX_TOML_BYTES // 2**20} MiB")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(field, str(path), f"a UTF-8 {kind} (byte {exc.start} is not UTF-8)") from None
    return parse_toml(text, field, str(path))


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
        raise InputError("workload.lengths", brief(lengths.tolist()), "at least one positive length")
    if total > MAX_TOKENS:
        raise InputError("workload.lengths", Shown(f"{lengths.size} lengths summing to {total}"),
                         f"a total of at most {MAX_TOKENS} tokens (T is int32 on the device)")
    return lengths


def _deep_merge(base: dict, changes: Mapping) -> dict:
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


#: the JSON Schema dialect pydantic's schemas follow
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def scenario_json_schema() -> dict[str, Any]:
    """The JSON schema of scenario files (``cgdr-des schema``): every field described, with units."""
    return {"$schema": SCHEMA_DIALECT, **Scenario.model_json_schema()}
