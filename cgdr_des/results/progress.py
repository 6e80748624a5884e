"""Progress on stderr for every long command: named stages, each with a total that never changes.

A command makes one :class:`Progress` and opens its stages in turn::

    progress = Progress()
    with progress.stage("timing 1000 batches x 7 policies", total=7, unit="policies") as stage:
        for policy in policies:
            ...
            stage.advance()

How it looks depends on where stderr goes:

- a terminal: one bar per stage, redrawn in place at most every ``TTY_INTERVAL`` seconds
  (``timing 1000 batches x 7 policies [#########-----] 4/7 policies 0:12``), ended with
  ``done in 14.2 s`` and a newline;
- anything else (a log file, a pipe, CI): whole lines, ``progress   <stage>: ...``, one when a
  stage starts, then at most one every ``LINE_INTERVAL`` seconds as it advances (and one after
  ``QUIET_LINE`` seconds without any, so a long step still shows the run is alive), and one when
  it ends if it ran for ``END_LINE_AFTER`` seconds or more: a log names every stage and is never
  silent for long, yet a quick stage costs it one line.

A daemon thread redraws the open stage while nothing advances it (the bar's clock moves every
``TICK`` seconds; the quiet line above); it ends when no stage is open.

The environment variable ``CGDR_DES_PROGRESS`` chooses: ``auto`` (the default, as above),
``off`` (nothing), ``bar`` or ``lines`` (that form whatever stderr is). A stage's total may be left
None when only the work it calls knows it (a simulation counts its work items): the first update
fixes it. A total that changes inside a stage is a bug of the caller and raises ``ValueError``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

#: seconds between two redraws of a terminal bar
TTY_INTERVAL = 0.1
#: seconds between two update lines when stderr is not a terminal (stage starts and ends aside)
LINE_INTERVAL = 10.0
#: a stage that took at least this long (seconds) says so in a last line when stderr is not a terminal
END_LINE_AFTER = 2.0
#: seconds without a line after which a stage that has not advanced says it still runs (not a terminal)
QUIET_LINE = 60.0
#: seconds between two checks of the redraw thread
TICK = 1.0
ENV = "CGDR_DES_PROGRESS"
MODES = ("auto", "off", "bar", "lines")
WIDTH = 30


class Progress:
    """The progress of one command: a sequence of stages drawn on ``stream`` (default stderr)."""

    def __init__(self, *, stream: TextIO | None = None, mode: str | None = None,
                 clock: Callable[[], float] = time.monotonic, ticker: bool = True):
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.mode = _resolve(mode if mode is not None else os.environ.get(ENV, "auto"), self.stream)
        self.lock = threading.RLock()  # the redraw thread and the command draw on one stream
        self.current: Stage | None = None
        self._ticker: threading.Thread | None = None
        self._use_ticker = ticker and self.mode != "off"

    @classmethod
    def off(cls) -> Progress:
        """A Progress that draws nothing (the default of the library functions)."""
        return cls(mode="off")

    def stage(self, name: str, total: int | None = None, unit: str = "") -> Stage:
        """Start stage ``name`` of ``total`` steps (counted in ``unit``); end it with ``end()`` or ``with``."""
        return Stage(self, name, total, unit)

    def write(self, text: str) -> None:
        """Write ``text`` to the stream at once (a killed run has shown everything it drew)."""
        with self.lock:
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):  # a closed or broken stderr must not end the command
                self.mode = "off"

    def tick(self) -> None:
        """Redraw the open stage if it has been quiet (what the redraw thread does every ``TICK`` s)."""
        with self.lock:
            if self.current is not None:
                self.current.quiet_redraw()

    def opened(self, stage: Stage) -> None:
        """``stage`` is now the open one; start the redraw thread if it is not running."""
        with self.lock:
            self.current = stage
            if self._use_ticker and self._ticker is None:
                self._ticker = threading.Thread(target=self._tick_while_open, name="cgdr-des progress", daemon=True)
                self._ticker.start()

    def closed(self, stage: Stage) -> None:
        """``stage`` ended (the redraw thread stops within ``TICK`` s unless another opens)."""
        with self.lock:
            if self.current is stage:
                self.current = None

    def _tick_while_open(self) -> None:
        while True:
            time.sleep(TICK)
            with self.lock:
                if self.current is None:
                    self._ticker = None
                    return
                self.tick()


class Stage:
    """One stage: ``advance()`` or ``update(done)`` as steps finish; callable as ``stage(done, total)``."""

    def __init__(self, progress: Progress, name: str, total: int | None, unit: str):
        self.progress, self.name, self.unit = progress, name, unit
        self.total = None if total is None else int(total)
        self.done, self.note = 0, ""
        self.started = progress.clock()
        self._drawn_at = -float("inf")
        self._width = 0
        self._ended = False
        progress.opened(self)
        if progress.mode == "lines":
            self._line("started" + (f", 0/{self.total}{self._unit()}" if self.total is not None else ""))
        elif progress.mode == "bar":
            self._bar()

    def __call__(self, done: int, total: int | None = None) -> None:
        self.update(done, total)

    def advance(self, steps: int = 1, note: str | None = None) -> None:
        """Count ``steps`` more finished steps."""
        self.update(self.done + steps, note=note)

    def update(self, done: int, total: int | None = None, note: str | None = None) -> None:
        """``done`` steps of ``total`` finished (``total`` fixes a stage opened without one)."""
        if total is not None:
            if self.total is None:
                self.total = int(total)
            elif int(total) != self.total:
                raise ValueError(f"progress: stage {self.name!r} has {self.total} steps, not {total}")
        self.done = int(done)
        if note is not None:
            self.note = note
        with self.progress.lock:
            mode, now = self.progress.mode, self.progress.clock()
            if mode == "bar" and (now - self._drawn_at >= TTY_INTERVAL or self._complete()):
                self._bar(now)
            elif mode == "lines" and now - self._drawn_at >= LINE_INTERVAL:
                self._line(f"{self._count()}, {now - self.started:.0f} s{self._left(now)}")

    def quiet_redraw(self) -> None:
        """Redraw a stage nothing advanced lately: the bar after ``TICK`` s, a line after ``QUIET_LINE`` s."""
        now = self.progress.clock()
        if self._ended:
            return
        if self.progress.mode == "bar" and now - self._drawn_at >= TICK:
            self._bar(now)
        elif self.progress.mode == "lines" and now - self._drawn_at >= QUIET_LINE:
            self._line(f"{self._count()}, {now - self.started:.0f} s{self._left(now)}")

    def end(self) -> None:
        """End the stage: its last state, the time it took, a newline; calling it again does nothing."""
        with self.progress.lock:
            if self._ended:
                return
            self._ended = True
            self.progress.closed(self)
            took = self.progress.clock() - self.started
            if self.progress.mode == "bar":
                self._bar(suffix=f" done in {took:.1f} s\n")
            elif self.progress.mode == "lines" and took >= END_LINE_AFTER:
                self._line(f"done, {self._count(note=False)} in {took:.1f} s")

    def __enter__(self) -> Stage:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.end()
            return
        self.progress.closed(self)
        if self.progress.mode == "bar" and not self._ended:  # leave the bar where it stopped, end its line
            self.progress.write("\n")
        self._ended = True

    def _complete(self) -> bool:
        return self.total is not None and self.done >= self.total

    def _unit(self) -> str:
        return f" {self.unit}" if self.unit else ""

    def _count(self, note: bool = True) -> str:
        total = "?" if self.total is None else self.total
        note = f" ({self.note})" if self.note and note else ""
        return f"{self.done}/{total}{self._unit()}{note}"

    def _left(self, now: float) -> str:
        """``, about 1:05 left`` from the pace so far; nothing before the first step or after the last."""
        if not self.total or not 0 < self.done < self.total:
            return ""
        left = int((now - self.started) / self.done * (self.total - self.done))
        return f", about {left // 60}:{left % 60:02d} left"

    def _line(self, text: str) -> None:
        self._drawn_at = self.progress.clock()
        self.progress.write(f"progress   {self.name}: {text}\n")

    def _bar(self, now: float | None = None, suffix: str = "") -> None:
        now = self.progress.clock() if now is None else now
        self._drawn_at = now
        frac = min(max(self.done / self.total, 0.0), 1.0) if self.total else 0.0
        filled = round(frac * WIDTH)
        elapsed = int(now - self.started)
        text = (f"{self.name} [{'#' * filled}{'-' * (WIDTH - filled)}] {self._count()} "
                f"{elapsed // 60}:{elapsed % 60:02d}{'' if suffix else self._left(now)}{suffix.rstrip(chr(10))}")
        pad = " " * max(self._width - len(text), 0)  # wipe what a longer previous draw left
        self._width = len(text)
        self.progress.write(f"\r{text}{pad}" + ("\n" if suffix.endswith("\n") else ""))


def _resolve(mode: str, stream: TextIO) -> str:
    mode = (mode or "auto").strip().lower()
    if mode not in MODES:
        mode = "auto"  # a typo in an environment variable must not stop a run
    if mode != "auto":
        return mode
    isatty = getattr(stream, "isatty", None)
    try:
        return "bar" if isatty and isatty() else "lines"
    except (OSError, ValueError):
        return "lines"
