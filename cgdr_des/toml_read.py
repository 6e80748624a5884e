"""Reading TOML with limits: every TOML document cgdr-des reads goes through :func:`parse_toml`.

``tomllib`` recurses on nested inline tables (a ``RecursionError`` some 330 levels down), builds
arbitrarily deep arrays and dotted-header tables that later code recurses on, and raises a plain
``ValueError`` for an integer literal past Python's 4 300-digit conversion limit. Here each is one
``InputError``: the text is at most ``MAX_TOML_BYTES``, parsing errors of every kind are caught at
this one place, and the parsed document is walked (without recursion) for its depth.
"""

from __future__ import annotations

import tomllib
from typing import Any

from cgdr_des.bounds import MAX_TOML_BYTES, MAX_TOML_DEPTH
from cgdr_des.errors import InputError


def parse_toml(text: str, field: str, shown: object, what: str = "valid TOML") -> dict[str, Any]:
    """``text`` parsed as TOML; too large, too deep or malformed is an InputError on ``field``
    quoting ``shown`` (a path, or the value given) and saying ``what`` was expected."""
    if len(text) > MAX_TOML_BYTES:
        raise InputError(field, shown, f"{what} of at most {MAX_TOML_BYTES // 2**20} MiB")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(field, shown, f"{what} ({str(exc)[:80]})") from None
    except RecursionError:
        raise InputError(field, shown, f"{what} nested at most {MAX_TOML_DEPTH} levels deep") from None
    except ValueError as exc:  # int(): "Exceeds the limit (4300 digits) for integer string conversion"
        digits = "4300" if "4300" in str(exc) else "a few thousand"
        raise InputError(field, shown, f"{what} with integers of at most {digits} digits") from None
    if depth(doc) > MAX_TOML_DEPTH:
        raise InputError(field, shown, f"{what} nested at most {MAX_TOML_DEPTH} levels deep "
                         "(tables, dotted keys and arrays)")
    return doc


def depth(value: Any) -> int:
    """How deeply tables and arrays nest in ``value`` (a scalar is 0), walked with a stack."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level + 1)
        if deepest > MAX_TOML_DEPTH:
            return deepest  # enough: no need to walk a hostile document to its end
        stack.extend((child, level + 1) for child in children)
    return deepest
