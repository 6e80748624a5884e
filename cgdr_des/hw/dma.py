"""DataCopy records: the hardware range checks of their parameters and the numbers their DMA needs.

Ranges (docs/hardware.md rows 43-44): ``DataCopyParams`` fields are uint16 counts of 32-byte blocks
with ``blockCount`` at most 4095; ``DataCopyExtParams`` has ``blockCount`` <= 4095, ``blockLen`` in
bytes up to 2097151 and uint32 strides. A value outside its range would be truncated by the
hardware field, so the machine reports it instead of timing a transfer the kernel does not make.
"""

from __future__ import annotations

from cgdr_des.hw.costs import dma_first_byte_cycles, dma_rate_cap
from cgdr_des.hw.diagnostics import HwFault
from cgdr_des.hw.profile import Profile
from cgdr_des.hw.rules import burst_cap
from cgdr_des.isa import DataCopyExtParams, DataCopyParams, Dma, Nd2NzParams

UINT16 = 65535
UINT32 = 2**32 - 1
MAX_BLOCK_COUNT = 4095
EXT_MAX_BLOCK_LEN = 2097151
LIMITS = {
    DataCopyParams: {"block_count": MAX_BLOCK_COUNT, "block_len": UINT16, "src_stride": UINT16,
                     "dst_stride": UINT16},
    DataCopyExtParams: {"block_count": MAX_BLOCK_COUNT, "block_len": EXT_MAX_BLOCK_LEN, "src_stride": UINT32,
                        "dst_stride": UINT32},
    # a GM -> L1 copy's Nd2NzParams: every field is a uint16_t in AscendC
    Nd2NzParams: dict.fromkeys(Nd2NzParams.__dataclass_fields__, UINT16),
}


# Checks that passed, keyed by identity (holding the object, so that its id is not reused): records
# are frozen, phase fidelity replays the same few Dma objects thousands of times, and instr fidelity
# builds fresh records around shared params objects. Not keyed by value: 1 == 1.0 == True, so a
# record with a float or bool field would be let through on an equal integer record's verdict.
_PASSED_RECS: dict[int, tuple[Dma, int]] = {}     # id(rec) -> (rec, ub_bytes)
_PASSED_PARAMS: dict[int, object] = {}            # id(params) -> params
_NUMBERS: dict[int, tuple[Dma, Profile, tuple[bool, int, float]]] = {}   # id(rec) -> (rec, profile, numbers)
_CACHE_MAX = 4096                                 # entries per cache before it starts over


def _remember(cache: dict, obj, value) -> None:
    if len(cache) >= _CACHE_MAX:
        cache.clear()
    cache[id(obj)] = value


def _is_int(v) -> bool:
    return type(v) is int or (isinstance(v, int) and not isinstance(v, bool))


#: DataCopy directions: GM -> UB (MTE2), UB -> GM (MTE3), GM -> L1 (MTE2; the Cube era's Nd2Nz loads)
DIRECTIONS = ("GM2UB", "UB2GM", "GM2L1")


def check_dma(rec: Dma, ub_bytes: int, l1_bytes: int = 0) -> None:
    """Raise HwFault when a DataCopy would not do on hardware what the record says. ``ub_addr`` is
    the local address: in UB, or (GM2L1) in L1 of ``l1_bytes``."""
    hit = _PASSED_RECS.get(id(rec))
    if hit is not None and hit[0] is rec and hit[1] == ub_bytes:
        return
    if rec.direction not in DIRECTIONS:
        raise HwFault(f"Dma direction {rec.direction!r} not one of {', '.join(DIRECTIONS)}")
    params = rec.params
    if _PASSED_PARAMS.get(id(params)) is not params:
        if (rec.direction == "GM2L1") != (type(params) is Nd2NzParams):
            raise HwFault(f"Dma {rec.direction} with {type(params).__name__}: a GM -> L1 copy takes "
                          "Nd2NzParams, the others DataCopyParams or DataCopyExtParams")
        _check_params(params)
        _remember(_PASSED_PARAMS, params, params)
    if rec.direction == "GM2L1":
        _check_fields(rec, l1_bytes, "L1")
    else:
        _check_fields(rec, ub_bytes)
    _remember(_PASSED_RECS, rec, (rec, ub_bytes))


def _check_params(params) -> None:
    limits = LIMITS.get(type(params))
    if limits is None:
        raise HwFault(f"Dma params {type(params).__name__} not one of {', '.join(t.__name__ for t in LIMITS)}")
    name = type(params).__name__
    for field, hi in limits.items():
        v = getattr(params, field)
        if not _is_int(v) or not 0 <= v <= hi:
            kind = "uint16" if hi == UINT16 else ("blockCount" if field == "block_count" else "field")
            raise HwFault(f"{name}.{field} = {v!r} is outside [0, {hi}] ({kind} range): the hardware "
                          "field would truncate")


def _check_fields(rec: Dma, ub_bytes: int, memory: str = "UB") -> None:
    if not _is_int(rec.repeat) or rec.repeat < 1:
        raise HwFault(f"Dma repeat = {rec.repeat!r}, must be an integer >= 1")
    if not _is_int(rec.nbytes) or rec.nbytes < 0:
        raise HwFault(f"Dma nbytes = {rec.nbytes!r}, must be an integer >= 0")
    if not _is_int(rec.ub_addr) or rec.ub_addr < 0 or rec.ub_addr + rec.nbytes > ub_bytes:
        raise HwFault(f"Dma {memory} range [{rec.ub_addr}, {rec.ub_addr}+{rec.nbytes}) is outside the "
                      f"{ub_bytes}-byte {memory}")
    if not _is_int(rec.gm_addr) or rec.gm_addr < 0:
        raise HwFault(f"Dma gm_addr = {rec.gm_addr!r}, must be an integer >= 0")


def dma_numbers(profile: Profile, rec: Dma) -> tuple[bool, int, float]:
    """``(is_read, first_byte_cycles, rate_cap)`` of a checked DataCopy; of a merged run of
    ``repeat`` calls (phase fidelity), its first call's first byte and its bytes spread over its
    calls' time (:func:`~cgdr_des.hw.rules.burst_cap`)."""
    hit = _NUMBERS.get(id(rec))
    if hit is not None and hit[0] is rec and hit[1] is profile:
        return hit[2]
    read = rec.direction != "UB2GM"
    first_byte, cap = dma_first_byte_cycles(profile, read), dma_rate_cap(profile, read, rec.gm_addr)
    if rec.repeat > 1:
        cap = burst_cap(rec.nbytes, rec.repeat, dma_first_byte_cycles(profile, read, rec.repeat), first_byte, cap)
    out = read, first_byte, cap
    _remember(_NUMBERS, rec, (rec, profile, out))
    return out
