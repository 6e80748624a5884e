"""The kinds of error a user can meet, all reported as one line by the CLI (exit code 2).

``InputError``: what the user gave is invalid (a field, its value, what is allowed).
``KernelDiagnostic``: the input is well formed but the real kernel would mishandle it (UB overflow,
a DMA field that would truncate, event ids exhausted, a deadlock, an output that overflowed), so it
is not simulated (or returned) as if fine.
"""

from __future__ import annotations

#: Longest value text an error message quotes; anything longer is cut with an ellipsis, so an
#: error never echoes a file's contents beyond the offending value.
MAX_SHOWN = 120


def one_line(text: object, limit: int = MAX_SHOWN) -> str:
    """``text`` as one line of at most ``limit`` characters (newlines escaped, tail cut with …)."""
    s = str(text).replace("\r", "\\r").replace("\n", "\\n")
    return s if len(s) <= limit else s[: limit - 1] + "…"


class CgdrError(Exception):
    """Base class of every error cgdr-des reports to the user."""


class InputError(CgdrError, ValueError):
    """Invalid user input. The message names the field, the value and what is allowed."""

    def __init__(self, field: str, value: object, allowed: str):
        self.field, self.value, self.allowed = field, value, allowed
        super().__init__(f"{field}: got {one_line(repr(value))}; {allowed}")

    def __reduce__(self):
        # rebuilt from its three parts (Exception's default passes the message alone): a pool
        # worker's InputError reaches the parent as the same error
        return type(self), (self.field, self.value, self.allowed)


class KernelDiagnostic(CgdrError, RuntimeError):
    """A configuration the real kernel (or machine) would mishandle; message says what and where."""
