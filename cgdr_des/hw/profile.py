"""Hardware profiles: every number the machine uses, as data, each with its source and a confidence.

A profile is a TOML file in ``cgdr_des/hw/profiles/`` (or any path). Layout::

    [profile]
    name = "atlas-300i-duo"
    chip = "Ascend 310P3"
    description = "..."

    [fields.clock_mhz]
    value = 1060
    source = "MSOPPROF sim_defs.h CLOCK_SPEED_SERIES_MAP (docs/hardware.md row 52)"
    confidence = "M"          # H: official or hard-coded by Huawei; M: fitted/approximate; L: estimate
    range = [960, 1060]       # optional (with range_reason): plausible values, see cgdr_des.hw.ranges
    range_reason = "..."

Every field of :class:`Profile` must appear exactly once; unknown fields are errors. Units are in the
field names: ``*_cycles`` are core clock cycles, ``*_bytes`` bytes, ``*_per_cycle`` bytes per cycle,
``*_gbps`` 1e9 bytes per second (converted with ``clock_mhz`` by :attr:`Profile.gm_bytes_per_cycle`).

``load_profile(name_or_path, overrides)`` returns an immutable :class:`Profile`; overrides replace
values (nested tables such as ``vec_width`` are merged key by key) and their source becomes
``"override"``. Bad names, fields or values raise :class:`~cgdr_des.errors.InputError`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path

from cgdr_des.errors import InputError
from cgdr_des.hw.flags import DOUBLE_SET
from cgdr_des.hw.ranges import ParamRange, parse_range

CONFIDENCES = ("H", "M", "L")
FLAG_DOUBLE_SET_POLICIES = tuple(DOUBLE_SET)   # what each does: cgdr_des.hw.flags.DoubleSet
VEC_OPS = ("Duplicate", "Muls", "Mul", "Add", "Sub", "Axpy", "Exp", "Cast", "WholeReduceSum")
#: vector ops only the Cube-era kernel issues (docs/kernel-cube.md §3)
CUBE_VEC_OPS = ("Brcb", "Gather", "MulAddDst", "TransDataTo5HD", "CreateVecIndex")
DTYPES = ("fp32", "fp16")


class FrozenMap(Mapping):
    """A read-only, picklable mapping (profiles are shared by worker processes in sweeps)."""

    __slots__ = ("_d",)

    def __init__(self, d: Mapping) -> None:
        object.__setattr__(self, "_d", dict(d))

    def __getitem__(self, key):
        return self._d[key]

    def __iter__(self) -> Iterator:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __setattr__(self, name, value):
        raise AttributeError("FrozenMap is read-only")

    def __repr__(self) -> str:
        return f"FrozenMap({self._d!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._d.items(), key=lambda kv: kv[0])))

    def __reduce__(self):
        return (FrozenMap, (self._d,))


#: fields only the Cube-era kernel reads (a vector-kernel run cannot depend on them)
CUBE_ONLY_FIELDS = ("cube_fractal_cycles", "cube_delay_cycles", "mte1_bytes_per_cycle", "mte1_delay_cycles",
                    "l0c_drain_bytes_per_cycle", "l0c_drain_delay_cycles", "ub_copy_bytes_per_cycle",
                    "ub_copy_delay_cycles", "l1_bytes", "l0a_bytes", "l0b_bytes", "l0c_bytes")
#: fields no simulated makespan reads (added only by the measured comparison)
NOT_IN_MAKESPAN = ("host_overhead_cycles",)

@dataclass(frozen=True)
class Profile:
    """One chip, as the machine sees it. Immutable; build with :func:`load_profile`."""

    name: str
    chip: str
    description: str
    # chip and core
    aiv_num: int                      # vector cores GetCoreNumAiv() reports
    clock_mhz: float                  # one clock for scalar, vector and MTE
    ub_bytes: int                     # GetCoreMemSize(UB): what InitBuffer carves against
    ub_usable_bytes: int              # what the host tiling sees (GetCoreMemSize(UB) less reserves)
    ub_align_bytes: int               # InitBuffer rounds each buffer up to this
    kernel_launch_cycles: int         # every core's scalar unit starts at this cycle
    # pipes and synchronisation
    queue_depth: int                  # entries per V / MTE2 / MTE3 instruction queue
    event_ids_per_hard_event: int     # AllocEventID pool size per HardEvent per core
    event_ids_reserved: tuple         # informational (TPipe / framework ids)
    flag_cycles: int                  # cost of one SetFlag or WaitFlag on its pipe
    flag_double_set: str              # what a SetFlag on a still-set flag does
    # vector unit
    vec_width: FrozenMap              # op -> dtype -> elements per repeat issue slot
    vec_cycles_per_repeat: FrozenMap  # op -> cycles per repeat (WholeReduceSum 7)
    vec_delay_cycles: FrozenMap       # op -> dtype -> op-specific completion delay
    vec_pipe_delay_cycles: int        # added to every vector completion
    raw_interlock: bool               # DotFp32's WholeReduceSum waits for its Mul (as behind PipeBarrier<V>)
    vec_api_scalar_cycles: int        # scalar mask set-up of a count-form vector call
    vec_call_loop_cycles: int         # scalar loop/address work around each vector call
    # scalar unit
    scalar_dispatch_cycles: int       # scalar cycles to hand one instruction to a pipe queue
    scalar_alu_cycles: int
    scalar_ub_load_cycles: int
    scalar_ub_store_cycles: int
    scalar_div_cycles: int
    tpipe_call_cycles: int            # TPipe/TQue bookkeeping call (ids, cursors)
    dcache_line_bytes: int
    dcache_bytes: int
    dcache_miss_cycles: int
    l2_line_bytes: int                # L2 line (the GM access granule)
    l2_bytes: int                     # the chip's L2; each core's share holds what its DataCopy calls moved
    l2_hit_cycles: int                # a scalar GM access that misses the DCache but finds its line in L2
    l2_scalar_hits: bool              # whether scalar GM misses look in L2 at all (off: every miss to GM)
    # DMA and GM
    dma_read_latency_cycles: int      # GM->UB first byte
    dma_write_latency_cycles: int     # UB->GM first byte
    dma_read_overhead_cycles: int     # fixed per-DataCopy cost (the small-transfer penalty)
    dma_write_overhead_cycles: int
    dma_read_peak_per_cycle: float    # one core's MTE2 bytes/cycle
    dma_write_peak_per_cycle: float   # one core's MTE3 bytes/cycle
    dma_aligned_bytes: int            # GM addresses aligned to this move at full rate
    dma_unaligned_efficiency: float   # rate factor otherwise
    dma_outstanding: int              # calls of a back-to-back DataCopy run waiting for first byte at once
    gm_bandwidth_gbps: float          # chip GM bandwidth shared by every core's DMAs
    # Cube side of a coupled AI core (the Cube-era kernel only; cgdr_des/hw/cube_costs.py)
    cube_fractal_cycles: int          # M pipe cycles per 16x16x16 fp16 fractal of an Mmad
    cube_delay_cycles: int            # Mmad completion after its last fractal issues
    mte1_bytes_per_cycle: float       # LoadData L1 -> L0A/L0B rate
    mte1_delay_cycles: int            # LoadData fixed cost before its data is usable
    l0c_drain_bytes_per_cycle: float  # L0C -> UB DataCopy rate on V
    l0c_drain_delay_cycles: int       # L0C -> UB completion after its last byte issues
    ub_copy_bytes_per_cycle: float    # local UB -> UB DataCopy rate on V
    ub_copy_delay_cycles: int         # UB -> UB completion after its last byte issues
    l1_bytes: int                     # L1 capacity
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    # end to end
    host_overhead_cycles: int         # host side of one op call; only measured comparisons add it
    sources: FrozenMap = field(default_factory=lambda: FrozenMap({}), compare=False, repr=False)
    ranges: FrozenMap = field(default_factory=lambda: FrozenMap({}), compare=False, repr=False)

    @property
    def gm_bytes_per_cycle(self) -> float:
        """Chip GM bandwidth in bytes per core cycle (GB/s converted with ``clock_mhz``)."""
        return self.gm_bandwidth_gbps * 1e3 / self.clock_mhz

    def cycles_to_us(self, cycles: float) -> float:
        """``cycles`` of the core clock in µs (``clock_mhz`` cycles per µs)."""
        return cycles / self.clock_mhz

    def field_sources(self) -> dict[str, dict[str, str]]:
        """``{field: {"source": ..., "confidence": "H"|"M"|"L"|"override"}}`` for every field."""
        return {k: dict(v) for k, v in self.sources.items()}

    def vec_latency_cycles(self, op: str, dtype: str) -> int:
        """Completion latency after the last repeat issues: op delay + vector pipe delay."""
        return self.vec_delay_cycles[op][dtype] + self.vec_pipe_delay_cycles


_META = ("name", "chip", "description", "sources", "ranges")
FIELD_NAMES = tuple(f.name for f in fields(Profile) if f.name not in _META)


# ---------------------------------------------------------------- value validation


# Upper bounds on every value (a value past them is an InputError, never a giant allocation or a
# time past int64): they are generous next to every shipped chip, and each follows from what the
# machine allocates per unit (UB bytes, dcache lines, flag tables) or keeps in int64 cycles.
MAX_CORES = 1024
MAX_UB_BYTES = 16 * 1024 * 1024   # the largest UB the host tiling may carve (real chips: 192-256 KiB)
MAX_L2_BYTES = 2**31              # L2 lines are kept only as transfers move them (real chips: 16-192 MiB)
MAX_CYCLES = 10**7                # any single fixed cost, in cycles
MAX_QUEUE_DEPTH = 1024
MAX_EVENT_IDS = 64                # one occupancy bit per id in the per-HardEvent mask
MAX_ELEMENTS = 4096               # vector elements per repeat
MAX_BYTES_PER_CYCLE = 1e6
MIN_BYTES_PER_CYCLE = 1e-3        # slower DMA would put one tile's transfer past 10^10 cycles
MAX_CLOCK_MHZ = 100_000.0
MAX_GBPS = 1e6
MIN_GBPS = 1e-3
MIN_EFFICIENCY = 1e-3


def _int(v, lo: int = 0, hi: int = MAX_CYCLES) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"an integer in [{lo}, {hi}]")
    return v


def _bounded_int(lo: int, hi: int):
    return lambda v: _int(v, lo, hi)


def _pos_int(v) -> int:
    return _int(v, 1)


def _float_in(lo: float, hi: float):
    def check(v) -> float:
        """``v`` as a float when it is a number (not a bool) in ``[lo, hi]``; else ValueError naming the range."""
        if isinstance(v, bool) or not isinstance(v, int | float) or not lo <= v <= hi:
            raise ValueError(f"a number in [{lo:g}, {hi:g}]")
        return float(v)

    return check


def _fraction(v) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not MIN_EFFICIENCY <= v <= 1:
        raise ValueError(f"a number in [{MIN_EFFICIENCY:g}, 1]")
    return float(v)


def _ids(v) -> tuple:
    if (not isinstance(v, list | tuple) or len(v) > MAX_EVENT_IDS
            or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < MAX_EVENT_IDS for i in v)):
        raise ValueError(f"a list of at most {MAX_EVENT_IDS} event ids in [0, {MAX_EVENT_IDS - 1}]")
    return tuple(v)


def _bool(v) -> bool:
    if not isinstance(v, bool):
        raise ValueError("true or false")
    return v


def _policy(v) -> str:
    if v not in FLAG_DOUBLE_SET_POLICIES:
        raise ValueError(f"one of {', '.join(FLAG_DOUBLE_SET_POLICIES)}")
    return v


def _op_table(check, per_dtype: bool):
    def validate(v) -> FrozenMap:
        """``v`` as a FrozenMap op -> checked value (per dtype: op -> {fp32, fp16}); ValueError on any other shape."""
        if not isinstance(v, Mapping) or not v or len(v) > 64:
            raise ValueError("a table op -> " + ("{fp32, fp16}" if per_dtype else "value"))
        out = {}
        for op, inner in v.items():
            if per_dtype:
                if not isinstance(inner, Mapping) or set(inner) != set(DTYPES):
                    raise ValueError(f"{op}: a table with exactly the keys fp32, fp16")
                out[op] = FrozenMap({dt: check(inner[dt]) for dt in DTYPES})
            else:
                out[op] = check(inner)
        return FrozenMap(out)

    return validate


_BYTE_RATE = _float_in(MIN_BYTES_PER_CYCLE, MAX_BYTES_PER_CYCLE)
_VALIDATORS = {
    "aiv_num": _bounded_int(1, MAX_CORES), "clock_mhz": _float_in(1.0, MAX_CLOCK_MHZ),
    "ub_bytes": _bounded_int(1, MAX_UB_BYTES), "ub_usable_bytes": _bounded_int(1, MAX_UB_BYTES),
    "ub_align_bytes": _bounded_int(1, 4096), "kernel_launch_cycles": _int,
    "queue_depth": _bounded_int(1, MAX_QUEUE_DEPTH), "event_ids_per_hard_event": _bounded_int(1, MAX_EVENT_IDS),
    "event_ids_reserved": _ids, "flag_cycles": _int, "flag_double_set": _policy,
    "vec_width": _op_table(_bounded_int(1, MAX_ELEMENTS), True), "vec_cycles_per_repeat": _op_table(_pos_int, False),
    "vec_delay_cycles": _op_table(_int, True), "vec_pipe_delay_cycles": _int, "raw_interlock": _bool,
    "vec_api_scalar_cycles": _int, "vec_call_loop_cycles": _int,
    "dma_outstanding": _bounded_int(1, MAX_QUEUE_DEPTH), "scalar_dispatch_cycles": _int, "scalar_alu_cycles": _int,
    "scalar_ub_load_cycles": _int, "scalar_ub_store_cycles": _int, "scalar_div_cycles": _int,
    "tpipe_call_cycles": _int, "dcache_line_bytes": _bounded_int(1, 4096),
    "dcache_bytes": _bounded_int(1, MAX_UB_BYTES), "dcache_miss_cycles": _int,
    "l2_line_bytes": _bounded_int(1, 4096), "l2_bytes": _bounded_int(1, MAX_L2_BYTES), "l2_hit_cycles": _int,
    "l2_scalar_hits": _bool,
    "dma_read_latency_cycles": _int, "dma_write_latency_cycles": _int,
    "dma_read_overhead_cycles": _int, "dma_write_overhead_cycles": _int,
    "dma_read_peak_per_cycle": _BYTE_RATE, "dma_write_peak_per_cycle": _BYTE_RATE,
    "dma_aligned_bytes": _bounded_int(1, MAX_UB_BYTES), "dma_unaligned_efficiency": _fraction,
    "gm_bandwidth_gbps": _float_in(MIN_GBPS, MAX_GBPS),
    "cube_fractal_cycles": _pos_int, "cube_delay_cycles": _int, "mte1_bytes_per_cycle": _BYTE_RATE,
    "mte1_delay_cycles": _int, "l0c_drain_bytes_per_cycle": _BYTE_RATE, "l0c_drain_delay_cycles": _int,
    "ub_copy_bytes_per_cycle": _BYTE_RATE, "ub_copy_delay_cycles": _int,
    "l1_bytes": _bounded_int(1, MAX_UB_BYTES), "l0a_bytes": _bounded_int(1, MAX_UB_BYTES),
    "l0b_bytes": _bounded_int(1, MAX_UB_BYTES), "l0c_bytes": _bounded_int(1, MAX_UB_BYTES),
    "host_overhead_cycles": _int,
}
assert set(_VALIDATORS) == set(FIELD_NAMES), "every Profile field needs a validator"
_ENTRY_CHECK = {"vec_width": _pos_int, "vec_cycles_per_repeat": _pos_int, "vec_delay_cycles": _int}
_KEYS, _RANGE_KEYS = {"value", "source", "confidence"}, {"range", "range_reason"}


def _validate(name: str, value, where: str):
    try:
        return _VALIDATORS[name](value)
    except (ValueError, TypeError) as exc:
        raise InputError(f"{where}.{name}", value, str(exc)) from None


def merge_tables(old, new):
    """Nested tables merge key by key so an override can change one op's width only."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        out = dict(old)
        for k, v in new.items():
            out[k] = merge_tables(old[k], v) if k in old else v
        return out
    return new


def _check_consistency(values: dict, where: str) -> None:
    for table in ("vec_width", "vec_cycles_per_repeat", "vec_delay_cycles"):
        missing = set(values["vec_width"]) ^ set(values[table])
        if missing:
            raise InputError(f"{where}.{table}", sorted(missing), "the same ops in vec_width, "
                             "vec_cycles_per_repeat and vec_delay_cycles")
    if values["ub_usable_bytes"] > values["ub_bytes"]:
        raise InputError(f"{where}.ub_usable_bytes", values["ub_usable_bytes"], "at most ub_bytes")


# ---------------------------------------------------------------- loading


def list_profiles() -> list[str]:
    """Names of the profiles shipped with the package, sorted."""
    folder = resources.files("cgdr_des.hw") / "profiles"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def _read(name_or_path: str | Path) -> tuple[str, str]:
    """The profile's TOML text and where it came from (a shipped name or the path)."""
    text_name = str(name_or_path)
    if text_name in list_profiles():
        res = resources.files("cgdr_des.hw") / "profiles" / f"{text_name}.toml"
        return res.read_text(encoding="utf-8"), text_name
    path = Path(name_or_path)
    if path.suffix == ".toml" and path.is_file():
        return path.read_text(encoding="utf-8"), str(path)
    shown = text_name if len(text_name) <= 40 else text_name[:39] + "…"  # a path: never echoed whole
    raise InputError("hardware.profile", shown,
                     f"one of {', '.join(list_profiles())} or a path to a .toml profile file")


def read_doc(name_or_path: str | Path) -> tuple[dict, str]:
    """A profile's TOML document (a fresh dict) and where it came from."""
    text, where = _read(name_or_path)
    return _document(text, where), where


def _loads(text: str, where: str) -> dict:
    from cgdr_des.toml_read import parse_toml  # lazy: cgdr_des.scenario imports this module

    return parse_toml(text, "hardware.profile", where, "a valid TOML file")


def _parse_fields(doc: dict, where: str) -> tuple[dict, dict]:
    table = doc.get("fields")
    if not isinstance(table, dict):
        raise InputError(f"{where}.fields", None, "a [fields.<name>] table per profile field")
    unknown = sorted(set(table) - set(FIELD_NAMES))
    if unknown:
        raise InputError(f"{where}.fields", unknown[0], f"a profile field ({', '.join(FIELD_NAMES)})")
    values, sources, ranges = {}, {}, {}
    for name in FIELD_NAMES:
        entry = table.get(name)
        if not isinstance(entry, dict) or not _KEYS <= set(entry) <= _KEYS | _RANGE_KEYS:
            raise InputError(f"{where}.fields.{name}", entry, "a table with value, source, confidence "
                             "(and optionally range, range_reason)")
        if entry["confidence"] not in CONFIDENCES or not str(entry["source"]).strip():
            raise InputError(f"{where}.fields.{name}.confidence", entry["confidence"],
                             "H, M or L with a non-empty source")
        values[name] = _validate(name, entry["value"], f"{where}.fields")
        sources[name] = FrozenMap({"source": entry["source"], "confidence": entry["confidence"]})
        for r in parse_range(name, entry, values[name], _ENTRY_CHECK.get(name, _VALIDATORS[name]),
                             f"{where}.fields.{name}"):
            ranges[r.name] = r
    return values, sources, ranges


def load_profile(name_or_path: str | Path = "atlas-300i-duo", overrides: Mapping | None = None) -> Profile:
    """Load a shipped profile by name (see :func:`list_profiles`) or a TOML file by path.

    ``overrides`` maps field names to new values (validated like the file's); unknown fields and
    wrong types raise InputError naming ``overrides.<field>``.
    """
    text, where = _read(name_or_path)
    if not overrides:
        return _from_text(text, where)
    return _build(_document(text, where), where, overrides)


def _document(text: str, where: str) -> dict:
    """A fresh copy of a file's parsed TOML document, for the caller to change."""
    return copy.deepcopy(_parsed(text, where))


@lru_cache(maxsize=16)
def _parsed(text: str, where: str) -> dict:
    """A file's TOML document, parsed once per (text, origin) and never handed out itself (callers
    take a deep copy): a sweep or a report builds a profile with overrides for every point, and
    parsing (~20 ms) was most of it."""
    return _loads(text, where)


@lru_cache(maxsize=64)
def _from_text(text: str, where: str) -> Profile:
    """The Profile a file's text gives, parsed once per (text, origin): a Profile is frozen, and a
    sweep, the op API or a test run loads the same few again and again (parsing costs ~5 ms)."""
    return _build(_document(text, where), where, None)


def _build(doc: dict, where: str, overrides: Mapping | None) -> Profile:
    meta = doc.get("profile", {})
    values, sources, ranges = _parse_fields(doc, where)
    for name, value in (overrides or {}).items():
        if name not in FIELD_NAMES:
            raise InputError(f"overrides.{name}", value, f"a profile field ({', '.join(FIELD_NAMES)})")
        values[name] = _validate(name, merge_tables(values[name], value), "overrides")
        sources[name] = FrozenMap({"source": "override", "confidence": "override"})
    _check_consistency(values, where)
    return Profile(name=str(meta.get("name", where)), chip=str(meta.get("chip", "")),
                   description=str(meta.get("description", "")), sources=FrozenMap(sources),
                   ranges=FrozenMap(ranges), **values)


def with_overrides(profile: Profile, overrides: Mapping) -> Profile:
    """A copy of ``profile`` with validated overrides (same rules as :func:`load_profile`)."""
    values, sources = {}, dict(profile.sources)
    for name, value in overrides.items():
        if name not in FIELD_NAMES:
            raise InputError(f"overrides.{name}", value, f"a profile field ({', '.join(FIELD_NAMES)})")
        values[name] = _validate(name, merge_tables(getattr(profile, name), value), "overrides")
        sources[name] = FrozenMap({"source": "override", "confidence": "override"})
    new = replace(profile, sources=FrozenMap(sources), **values)
    _check_consistency({n: getattr(new, n) for n in FIELD_NAMES}, "overrides")
    return new


__all__ = ["Profile", "FrozenMap", "ParamRange", "load_profile", "list_profiles", "with_overrides", "FIELD_NAMES"]
