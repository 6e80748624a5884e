"""The file formats plots are saved in: always PNG (each output's index.html inlines it), and on request a
vector copy beside it (``cgdr-des plot --format svg|pdf``). A context variable, so that the drawing
functions of every command need no format argument; light, so that ``plot`` can set it before
matplotlib loads."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

#: what ``--format`` accepts
FORMATS = ("png", "svg", "pdf")
_EXTRA: ContextVar[tuple[str, ...]] = ContextVar("figure_formats", default=())


@contextmanager
def figure_formats(*formats: str):
    """While open, ``results.plots.save_figure`` also writes each figure as ``<name>.svg`` / ``.pdf``
    beside its PNG (a paper or slide wants vectors; the page and the plots the manifest lists stay PNG)."""
    token = _EXTRA.set(tuple(f for f in formats if f != "png"))
    try:
        yield
    finally:
        _EXTRA.reset(token)


def extra_formats() -> tuple[str, ...]:
    """The formats besides PNG that figures are saved in now."""
    return _EXTRA.get()
