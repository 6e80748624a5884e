"""A tiny stderr progress bar for long simulations (no dependency; silent when stderr is not a TTY).

Lifecycle: create -> call ``bar(done, total)`` (or ``bar.update(done, total)``) any number of times
from the simulation loop -> ``close()`` (or leave the ``with`` block), which ends the line. Redraws are
throttled to one per ``min_interval`` seconds so that calling it per work item costs nothing; the
final state (done == total) is always drawn. ``done``/``total`` are in whatever unit the caller counts
(work items, chunks, records).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """A one-line progress bar on ``stream`` (stderr); ``enabled`` None means only when it is a TTY."""

    def __init__(self, label: str = "", *, stream: TextIO | None = None, width: int = 30,
                 min_interval: float = 0.1, enabled: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.label, self.width, self.min_interval = label, width, min_interval
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty()) if enabled is None else enabled
        self._last = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        self.update(done, total)

    def update(self, done: int, total: int) -> None:
        """Redraw the bar for ``done`` of ``total`` (throttled; always drawn when done == total)."""
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < self.min_interval:
            return
        self._last = now
        frac = min(max(done / total, 0.0), 1.0) if total > 0 else 1.0
        filled = int(round(frac * self.width))
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {frac:6.1%} ({done}/{total})")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the bar's line, if one was drawn; calling it again does nothing."""
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
