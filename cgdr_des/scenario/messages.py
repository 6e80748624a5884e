"""One-line error messages for scenario input: pydantic's ``ValidationError`` as ``InputError``.

Only the first pydantic error is reported, as the dotted field path a user wrote
(``workload.distribution.sigma``), the value (abbreviated when long) and what is allowed.
"""

from __future__ import annotations

import reprlib
from typing import Any

from pydantic import BaseModel, ValidationError

from cgdr_des.errors import InputError
from cgdr_des.workload.lengths import DISTRIBUTIONS

_DIST_KINDS = tuple(DISTRIBUTIONS)


class Shown:
    """Wraps a value so that InputError's ``{value!r}`` stays short (one line for huge lists/tables)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


MISSING = Shown("nothing")
#: longest text an error quotes from a file the user pointed at (a cell, a path written in a cell)
CUT = 40


def cut(value: Any, limit: int = CUT) -> Shown:
    """``value``'s text quoted and cut to ``limit`` characters: an error never echoes a whole cell,
    line or path of a file, only the start of the offending value."""
    text = str(value).replace("\r", "\\r").replace("\n", "\\n")
    return Shown(repr(text if len(text) <= limit else text[: limit - 1] + "…"))


def brief(value: Any) -> Any:
    """``value`` itself when its repr is one short line, else a ``Shown`` abbreviation of it."""
    text = repr(value)
    return Shown(reprlib.repr(value)) if len(text) > 80 or "\n" in text else value


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
        return InputError(path, brief(err["input"]), f"unknown key (allowed: {allowed})")
    if kind == "missing":
        return InputError(path, MISSING, "required")
    if kind == "union_tag_invalid":
        return InputError(f"{path}.kind", ctx.get("tag"), f"one of {ctx.get('expected_tags')}")
    if kind == "union_tag_not_found":
        return InputError(f"{path}.kind", MISSING, f"one of {', '.join(repr(k) for k in _DIST_KINDS)}")
    msg = err["msg"].removeprefix("Value error, ")
    return InputError(path, brief(err["input"]), msg[:1].lower() + msg[1:])


def _allowed_keys(loc: tuple) -> str:
    """The field names of the table at ``loc`` (walks the model classes; union members by tag)."""
    # Imported here: the models import this module for MISSING.
    from cgdr_des.scenario.model import Scenario
    from cgdr_des.scenario.sections import Workload

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
