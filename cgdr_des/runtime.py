"""What the running process knows about itself and hands to the processes it starts: the installed
version, a hash of the package's source, and environment settings and the cyclic garbage collector scoped to a block.

One place for each, because the sweep fingerprints, the calibration cache keys, the output pages
and the report's fingerprints all record the same version and source hash, and the sweep pool and
the calibration cache both pass settings to worker processes through the environment."""

from __future__ import annotations

import gc
import hashlib
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from importlib import metadata
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def package_version() -> str:
    """The installed cgdr-des version ("0+unknown" when run from a tree that is not installed)."""
    try:
        return metadata.version("cgdr-des")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def tree_hash(folder: Path, pattern: str) -> str:
    """sha256 over the files ``folder.rglob(pattern)`` (sorted by relative path): each path, then its bytes'
    sha256."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob(pattern), key=lambda p: p.relative_to(folder).as_posix()):
        if "__pycache__" in path.parts:
            continue
        h.update(path.relative_to(folder).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


@lru_cache(maxsize=1)
def source_hash() -> str:
    """:func:`tree_hash` of this package's ``.py`` files, computed once per process: an edited checkout
    never passes for the one that computed a stored result."""
    return tree_hash(PACKAGE, "*.py")


@contextmanager
def scoped_environ(values: Mapping[str, str | None]) -> Iterator[None]:
    """Set (a value) or unset (None) environment variables for the block, the caller's restored after;
    processes started inside inherit them."""
    old = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """The cyclic garbage collector off for the block, as it was after it. For blocks that make
    millions of objects and no reference cycles (the machine's rows, the ops frame, the trace's
    events): a collection there only walks them, and how often it does depends on what the process
    made before (a run of ``cgdr-des run`` spent ~0.9 s of its trace in collections)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
