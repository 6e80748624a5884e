"""Named kernel settings for ``cgdr-des compare --variant``: the ``[kernel]`` fields of each variant.

Every variant is data over the same program: the buffering ones (docs/double-buffering.md §1)
``buffer_num``, ``keep_tiling``, ``prefetch``, ``state_double_buffer``, and the code-change ones
(docs/kernel.md §5.y) ``sub``, ``state_rows``, ``state_load``, ``query_rows``, ``state_store``,
``attn_dots``. A buffering name without ``_same`` lets the host shrink vStep to make room for what
the variant adds (the host accounting that goes with it); ``_same`` keeps the baseline's vStep and
is reported as a UB overflow, with the bytes, where it does not fit. The code-change variants add
no UB (they reuse idle blocks), so they never move vStep.
"""

from __future__ import annotations

from typing import Any

from cgdr_des.errors import InputError
from cgdr_des.kernel.tiling import CODE_FIELDS

#: the fields a variant sets, at the source's values
BASELINE = {"buffer_num": 1, "keep_tiling": False, "prefetch": False, "state_double_buffer": False,
            **{name: values[0] for name, values in CODE_FIELDS.items()}}
#: every code-change variant at once
CODE_ALL = {name: values[1] for name, values in CODE_FIELDS.items()}

VARIANTS: dict[str, dict[str, Any]] = {
    "baseline": {},
    "buffer_num2": {"buffer_num": 2},
    "buffer_num2_same": {"buffer_num": 2, "keep_tiling": True},
    "prefetch": {"prefetch": True},
    "prefetch_same": {"prefetch": True, "keep_tiling": True},
    "state_db": {"state_double_buffer": True},
    "state_db_same": {"state_double_buffer": True, "keep_tiling": True},
    "all_same": {"buffer_num": 2, "prefetch": True, "state_double_buffer": True, "keep_tiling": True},
    "sub": {"sub": True},
    "state_rows_2d": {"state_rows": "2d"},
    "state_load_dma": {"state_load": "dma"},
    "query_rows_ub": {"query_rows": "ub"},
    "state_store_dma": {"state_store": "dma"},
    "attn_dots_row": {"attn_dots": "row"},
    "code_all": CODE_ALL,
}

_BOOLS = {"true": True, "false": False, "1": True, "0": False}


def variant_fields(name: str) -> dict[str, Any]:
    """The ``[kernel]`` fields of variant ``name``: a name of :data:`VARIANTS`, or a spec
    ``field=value[,field=value...]`` over the fields of :data:`BASELINE` (unset fields keep the
    baseline's value). InputError on ``--variant`` otherwise."""
    allowed = f"one of {', '.join(VARIANTS)}, or field=value[,field=value] over {', '.join(BASELINE)}"
    if name in VARIANTS:
        return {**BASELINE, **VARIANTS[name]}
    if "=" not in name:
        raise InputError("--variant", name, allowed)
    fields = dict(BASELINE)
    for part in name.split(","):
        key, _, text = (s.strip() for s in part.partition("="))
        if key not in BASELINE:
            raise InputError("--variant", name, allowed)
        if key == "buffer_num":
            if text not in ("1", "2"):
                raise InputError("--variant", name, "buffer_num=1 or buffer_num=2")
            fields[key] = int(text)
        elif isinstance(BASELINE[key], str):  # a word field: its allowed words
            words = CODE_FIELDS[key]
            if text.lower() not in words:
                raise InputError("--variant", name, " or ".join(f"{key}={w}" for w in words))
            fields[key] = text.lower()
        elif text.lower() in _BOOLS:
            fields[key] = _BOOLS[text.lower()]
        else:
            raise InputError("--variant", name, f"{key}=true or {key}=false")
    return fields


def directory_name(name: str) -> str:
    """A directory name for variant ``name`` (a spec's ``=`` and ``,`` become ``-`` and ``+``)."""
    return name.replace("=", "-").replace(",", "+").replace(" ", "")
