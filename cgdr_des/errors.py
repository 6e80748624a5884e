"""The two kinds of error a user can meet, both reported as one line by the CLI (exit code 2).

``InputError``: what the user gave is invalid (a field, its value, what is allowed).
``KernelDiagnostic``: the input is well formed but the real kernel would mishandle it (UB overflow,
a DMA field that would truncate, event ids exhausted, a deadlock), so it is not simulated as if fine.
"""


class CgdrError(Exception):
    """Base class of every error cgdr-des reports to the user."""


class InputError(CgdrError, ValueError):
    """Invalid user input. The message names the field, the value and what is allowed."""

    def __init__(self, field: str, value: object, allowed: str):
        self.field, self.value, self.allowed = field, value, allowed
        super().__init__(f"{field}: got {value!r}; {allowed}")


class KernelDiagnostic(CgdrError, RuntimeError):
    """A configuration the real kernel (or machine) would mishandle; message says what and where."""
