"""The on-disk calibration cache: measured item costs kept between commands and shared by workers.

A tail study, a cost-weighted ``run`` and every worker of a sweep need the same item costs
(:mod:`cgdr_des.item_costs`), and measuring them is a phase-fidelity launch. Each entry is one JSON
file ``<dir>/item-costs/<key>.json`` whose key is the sha256 of its inputs: the resolved profile
(every field, overrides applied, and which fields were overridden), the shape, ``buffer_num``, the
other ``[kernel]`` fields of a kernel variant (only those that differ from the source kernel, so the
source kernel's key is the one it always had), the launch runner, the package version and a hash
of the package's own source, so that an edited checkout never reads costs measured by other code. The
inputs are stored beside the costs and compared on read.

Where: ``CGDR_DES_CACHE_DIR`` if set, else the user's cache directory (``platformdirs``);
``CGDR_DES_CACHE=off`` turns the cache off (the CLI's ``--cache-dir`` and ``--no-cache`` set both for
the command and the worker processes it starts). Entries are written to a temporary file and
renamed into place, so a reader sees a whole entry or none. A per-key lock file (``fcntl.flock``)
makes the first process that asks compute and the others wait and read its entry. An unreadable,
malformed or foreign entry is reported in one ``warning`` line on stderr and recomputed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from cgdr_des.runtime import package_version, scoped_environ, source_hash

try:  # POSIX; elsewhere concurrent workers may each compute an entry (still written atomically)
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

#: Bumped when the entry layout changes; an entry of another schema is ignored and rewritten.
SCHEMA = 1
DIR_ENV = "CGDR_DES_CACHE_DIR"
SWITCH_ENV = "CGDR_DES_CACHE"


def cache_dir() -> Path | None:
    """The directory entries live in, or None when the cache is off."""
    if os.environ.get(SWITCH_ENV, "").strip().lower() == "off":
        return None
    given = os.environ.get(DIR_ENV, "").strip()
    if given:
        return Path(given).expanduser()
    import platformdirs  # only when an entry is read or written

    return Path(platformdirs.user_cache_dir("cgdr-des"))


def settings(directory: Path | str | None = None, enabled: bool = True):
    """Within the block (a context manager), the cache is at ``directory`` (None: unchanged) or off;
    worker processes started inside inherit it (through the environment). Restores the caller's
    setting on exit."""
    values = {}
    if directory is not None:
        values[DIR_ENV] = str(Path(directory).expanduser().resolve())
    if not enabled:
        values[SWITCH_ENV] = "off"
    return scoped_environ(values)


def canonical(value: Any) -> Any:
    """``value`` as plain JSON types (mappings sorted by key, tuples as lists, a dataclass instance as the
    mapping of its fields: a profile), for hashing and storing."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy arrays and scalars
        return canonical(value.tolist())
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def fingerprint(inputs: Mapping) -> str:
    """The key of an entry: sha256 of its canonical inputs."""
    text = json.dumps(canonical(inputs), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def cached(kind: str, inputs: Mapping, compute: Callable[[], dict], valid: Callable[[dict], str | None]) -> dict:
    """The stored value for ``inputs``, else ``compute()`` stored (see the module doc).

    ``compute`` returns a JSON-able dict; ``valid(value)`` returns None for a usable stored value, else
    why it is not. ``inputs`` are completed with the package version and source hash here.
    """
    root = cache_dir()
    if root is None:
        return compute()
    inputs = {**canonical(inputs), "package_version": package_version(), "source_sha256": source_hash()}
    key = fingerprint(inputs)
    folder = root / kind
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # an unwritable cache must not stop a study
        _warn(key, f"cannot create {folder}: {exc.strerror or exc}")
        return compute()
    entry = folder / f"{key}.json"
    with _locked(folder / f"{key}.lock"):
        value = _read(entry, key, inputs, valid)
        if value is not None:
            return value
        value = compute()
        _write(entry, {"schema": SCHEMA, "key": key, "inputs": inputs, "value": value})
        return value


def _read(entry: Path, key: str, inputs: dict, valid) -> dict | None:
    """The entry's value, or None (missing, or ignored with a warning)."""
    try:
        text = entry.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _warn(key, f"unreadable: {exc.strerror or exc}")
        return None
    try:
        doc = json.loads(text)
    except ValueError:  # UnicodeDecodeError included
        _warn(key, "not valid JSON")
        return None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("value"), dict):
        _warn(key, f"schema is not {SCHEMA}")
        return None
    if doc.get("key") != key or doc.get("inputs") != inputs:
        _warn(key, "its fingerprint inputs differ from this calibration's")
        return None
    why = valid(doc["value"])
    if why is not None:
        _warn(key, why)
        return None
    return doc["value"]


def _write(entry: Path, doc: dict) -> None:
    """Atomically: a temporary file in the same directory, then ``os.replace``."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=entry.stem + ".", suffix=".tmp", dir=entry.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(doc, f, separators=(",", ":"))
            os.replace(tmp, entry)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:  # a full or read-only disk costs the next command a calibration, nothing more
        _warn(doc["key"], f"not written: {exc.strerror or exc}")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (the first process computes, the others wait, then read)."""
    if fcntl is None:
        yield
        return
    try:
        f = open(path, "a")  # noqa: SIM115 (held open for the lock's lifetime)
    except OSError:
        yield
        return
    with f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _warn(key: str, why: str) -> None:
    print(f"warning    calibration cache: {key}: ignored ({why})", file=sys.stderr, flush=True)
