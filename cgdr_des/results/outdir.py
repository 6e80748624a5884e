"""Owned, atomic output directories: a run's files appear complete or not at all.

Contract (docs/reliability.md):

- ``OutputDir(out, force=...)`` refuses an ``out`` that is a symlink, a file, or a non-empty
  directory that is not a previous cgdr-des output; a previous output is replaced only with
  ``force``. It takes a lock (``.<name>.cgdr-lock`` next to ``out``, an ``flock`` the kernel drops
  when the process dies, so a killed run never leaves a stale lock), so a second run into the same
  ``out`` is refused while the first is running.
- Files are written into a fresh temporary sibling (``.<name>.cgdr-tmp-*``), which nobody else has
  written into, so no symlink of a previous output is ever followed. On success ``manifest.json``
  (every file with its size and sha256) is written last and the directory is renamed into place;
  a previous output is moved aside first and deleted after. On failure the temporary directory is
  removed and ``out`` is untouched. Leftovers of a killed run (temporary or moved-aside siblings)
  are removed by the next run that takes the lock.
- :func:`check_complete` is what readers call: every data file the manifest lists must exist with
  exactly its size and hash (the PNG plots are listed but not required: ``plot`` redraws them).

Every refusal is an :class:`~cgdr_des.errors.InputError` on ``field`` (``--out`` on the CLI).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from cgdr_des.errors import InputError

MANIFEST = "manifest.json"
#: files a reader never reads (the plots, drawn from the frames): listed, not required
DERIVED = (".png",)
WRITE_NEEDS = "a file system with room for the output; nothing was written"
TOOL = "cgdr-des"
#: files that mark a directory written by cgdr-des before manifests existed
LEGACY_MARKERS = ("meta.json", "scenario.resolved.json")


class OutputDir:
    """Context manager: ``with OutputDir(out, force=f) as staging:`` write into ``staging``."""

    def __init__(self, out: str | Path, *, force: bool = False, field: str = "--out"):
        self.out, self.force, self.field = Path(out), force, field
        self._lock_fd: int | None = None
        self.staging: Path | None = None

    def __enter__(self) -> Path:
        check_encodable(self.out, self.field)
        self._check_target()
        parent = self.out.absolute().parent
        with os_errors(self.field, self.out, "a writable directory"):
            parent.mkdir(parents=True, exist_ok=True)
            self._lock_fd = _lock(parent / f".{self.out.name}.cgdr-lock", self.field, self.out)
        try:
            self._check_target()  # again under the lock: another run may have finished meanwhile
            _remove_leftovers(parent, self.out.name)
            with os_errors(self.field, self.out, "a writable directory"):
                self.staging = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.cgdr-tmp-", dir=parent))
                self.staging.chmod(0o777 & ~_umask())  # mkdtemp's 0700 would outlive the rename
        except BaseException:
            self._unlock()
            raise
        return self.staging

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            if exc_type is None:
                with os_errors(self.field, self.out, WRITE_NEEDS):
                    write_manifest(self.staging)
                    _swap_in(self.staging, self.out)
        finally:
            if self.staging.exists():  # a failure: nothing half-written is left behind
                shutil.rmtree(self.staging, ignore_errors=True)
            self._unlock()
        return False

    def writing(self) -> os_errors:
        """Wrap the writes into the staging directory: an OSError (disk full, quota) becomes one line."""
        return os_errors(self.field, self.out, WRITE_NEEDS)

    def _check_target(self) -> None:
        out = self.out
        if out.is_symlink():
            raise InputError(self.field, str(out), "a directory, not a symlink (symlinks are not followed)")
        if out.exists() and not out.is_dir():
            raise InputError(self.field, str(out), "a directory (this is a file)")
        if out.is_dir() and any(out.iterdir()):
            if not is_previous_output(out):
                raise InputError(self.field, str(out), "an empty or new directory, or a previous cgdr-des "
                                 "output (this one holds other files)")
            if not self.force:
                raise InputError(self.field, str(out), "a new directory; it holds a previous output "
                                 "(--force replaces it whole)")

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing drops the flock
            self._lock_fd = None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_encodable(path: Path, field: str) -> None:
    """Paths go into JSON and onto the console: they must be valid UTF-8."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        shown = str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise InputError(field, shown, "a path that is valid UTF-8") from None


def is_previous_output(out: Path) -> bool:
    """True when ``out`` holds a cgdr-des manifest, or the files of an output written before them."""
    manifest = out / MANIFEST
    if manifest.is_file() and not manifest.is_symlink():
        try:
            return json.loads(manifest.read_text(encoding="utf-8")).get("tool") == TOOL
        except (OSError, ValueError, AttributeError):
            return False
    return all((out / m).is_file() for m in LEGACY_MARKERS)


def write_manifest(directory: Path) -> Path:
    """``manifest.json``: every regular file under ``directory`` with its size and sha256."""
    files = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and p.name != MANIFEST):
        files[path.relative_to(directory).as_posix()] = {"bytes": path.stat().st_size, "sha256": _sha256(path)}
    target = directory / MANIFEST
    tmp = directory / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps({"tool": TOOL, "version": 1, "files": files}, indent=1, sort_keys=True),
                   encoding="utf-8")
    os.replace(tmp, target)
    return target


def check_complete(out: str | Path, field: str = "out_dir") -> dict:
    """The manifest of ``out``; InputError when it is missing or any listed file is gone or changed."""
    out = Path(out)
    manifest = out / MANIFEST
    if not manifest.is_file():
        raise InputError(field, str(out), "a directory written by cgdr-des (no manifest.json: not an output, "
                         "or an incomplete one)")
    try:
        files = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        raise InputError(field, str(out), "a readable manifest.json (it is damaged)") from None
    for name, entry in files.items():
        if name.endswith(DERIVED):
            continue  # plots: drawn from the frames, and redrawn by ``plot``
        path = out / name
        if not path.is_file() or path.is_symlink():
            raise InputError(field, str(out), f"a complete output ({name} is missing or not a file)")
        if path.stat().st_size != entry.get("bytes") or _sha256(path) != entry.get("sha256"):
            raise InputError(field, str(out), f"a complete output ({name} differs from the manifest)")
    return files


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _lock(path: Path, field: str, out: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise InputError(field, str(out), "a directory no other cgdr-des run is writing (one is, now)") from None
    return fd


def _remove_leftovers(parent: Path, name: str) -> None:
    for pattern in (f".{name}.cgdr-tmp-*", f".{name}.cgdr-old-*"):
        for left in parent.glob(pattern):
            if left.is_dir() and not left.is_symlink():
                shutil.rmtree(left, ignore_errors=True)


def _swap_in(staging: Path, out: Path) -> None:
    """Rename ``staging`` to ``out``; a previous ``out`` is moved aside first, deleted after."""
    aside = None
    if out.is_dir() and any(out.iterdir()):
        aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.cgdr-old-", dir=staging.parent))
        os.rename(out, aside / "previous")
    os.rename(staging, out)  # onto a missing or empty directory: atomic
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


class os_errors:
    """Turn an OSError into a one-line InputError on ``field`` (``allowed`` says what was needed)."""

    def __init__(self, field: str, out: Path, allowed: str):
        self.field, self.out, self.allowed = field, out, allowed

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and issubclass(exc_type, OSError) and not issubclass(exc_type, InputError):
            raise _as_input_error(exc, self.field, self.out, self.allowed) from None
        return False


def _as_input_error(exc: OSError, field: str, out: Path, allowed: str | None = None) -> InputError:
    reason = {errno.ENOSPC: "no space left on device", errno.EROFS: "read-only file system",
              errno.EACCES: "permission denied", errno.EDQUOT: "disk quota exceeded"}.get(exc.errno,
                                                                                         exc.strerror or str(exc))
    return InputError(field, str(out), f"{allowed or 'a writable directory'} ({reason})")
