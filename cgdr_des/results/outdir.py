"""Owned, atomic output directories: one rule for every command that writes (docs/reliability.md).

- ``OutputDir(out, force=..., command=...)`` refuses an ``out`` that is a symlink, a file, or a
  non-empty directory that is not a previous cgdr-des output. A previous output of the *same*
  command is replaced only with ``force``; another command's output (a ``sweep`` directory where
  ``run`` writes, a ``run`` where ``calibrate`` writes) is refused even with ``force``: ``--force``
  means "redo this", never "destroy something else". The manifest records the writing command; a
  manifest written before commands were recorded (or the legacy files of a run) counts as any
  command's.
- A lock (``.<name>.cgdr-lock`` next to ``out``, an ``flock`` the kernel drops when the process
  dies, so a killed run never leaves a stale lock) refuses a second writer while the first runs;
  ``plot``, which redraws in place, takes it too.
- Files are written into a fresh temporary sibling (``.<name>.cgdr-tmp-*``), so no symlink of a
  previous output is ever followed. On success ``manifest.json`` (every file with its size and
  sha256) is written last and the directory is swapped into place.
- The swap leaves ``out`` as the old output or the new one at every instant, never neither: on
  Linux ``renameat2(RENAME_EXCHANGE)`` exchanges the two directories in one system call (the
  staging name then holds the old output, deleted after). Where the exchange is unavailable the old
  output is renamed to ``.<name>.cgdr-old``, the new one into place, and ``.cgdr-old`` deleted; a
  process that dies between the two renames leaves ``out`` missing and ``.cgdr-old`` whole, and
  :func:`recover` (called by the next writer under the lock, and by every reader) renames it back.
- A sweep writes its points in place, each file atomically (``sweep/store.py``), so that a killed
  sweep resumes: ``OutputDir(..., in_place=True)`` checks and locks ``out`` the same way and hands
  out ``out`` itself.

:func:`check_complete` is what readers call: every data file the manifest lists must exist with
exactly its size and hash (the PNG plots and index.html are listed but not required: ``plot`` redraws
them).
Every refusal is an :class:`~cgdr_des.errors.InputError` on ``field`` (``--out`` on the CLI).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from cgdr_des.errors import InputError

MANIFEST = "manifest.json"
#: files a reader never reads (the plots and the page, drawn from the frames): listed, not required
DERIVED = (".png", ".svg", ".pdf", "index.html")
WRITE_NEEDS = "a file system with room for the output; nothing was written"
TOOL = "cgdr-des"
#: files that mark a directory written by cgdr-des before manifests existed (a run's)
LEGACY_MARKERS = ("meta.json", "scenario.resolved.json")
#: the file that marks a sweep directory (sweep/store.py)
SWEEP_MARKER = "sweep.json"
#: the owner of an output written before manifests recorded the command: any command may replace it
ANY = "*"


class OutputDir:
    """Context manager: ``with OutputDir(out, force=f, command="run") as staging:`` write into ``staging``."""

    def __init__(self, out: str | Path, *, force: bool = False, field: str = "--out", command: str = "run",
                 in_place: bool = False):
        self.out, self.force, self.field, self.command = Path(out), force, field, command
        self.in_place = in_place
        self._made = False  # in place: whether this run created ``out`` (removed again if left empty)
        self._lock_fd: int | None = None
        self.staging: Path | None = None

    def __enter__(self) -> Path:
        check_encodable(self.out, self.field)
        self._check_target()
        parent = self.out.absolute().parent
        with os_errors(self.field, self.out, "a writable directory"):
            parent.mkdir(parents=True, exist_ok=True)
            self._lock_fd = _lock(lock_path(self.out), self.field, self.out)
        try:
            recover(self.out)
            self._check_target()  # again under the lock: another run may have finished meanwhile
            _remove_leftovers(parent, self.out.name)
            with os_errors(self.field, self.out, "a writable directory"):
                if self.in_place:
                    self._made = not self.out.exists()
                    self.out.mkdir(exist_ok=True)
                    self.staging = self.out
                else:
                    self.staging = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.cgdr-tmp-", dir=parent))
                    self.staging.chmod(0o777 & ~_umask())  # mkdtemp's 0700 would outlive the rename
                    self._fill(self.staging)
        except BaseException:
            self._discard()
            raise
        return self.staging

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            if exc_type is None and not self.in_place:
                with os_errors(self.field, self.out, WRITE_NEEDS):
                    write_manifest(self.staging, self.command)
                    swap_in(self.staging, self.out)
        finally:
            self._discard()
        return False

    def writing(self) -> os_errors:
        """Wrap the writes into the staging directory: an OSError (disk full, quota) becomes one line."""
        return os_errors(self.field, self.out, WRITE_NEEDS)

    def _fill(self, staging: Path) -> None:
        """What the staging directory starts with: nothing (a subclass starts from the previous output)."""

    def _discard(self) -> None:
        """Remove what is left of the staging directory (a failure, or the old output after a swap); unlock."""
        try:
            if self.staging is not None and not self.in_place and os.path.lexists(self.staging):
                shutil.rmtree(self.staging, ignore_errors=True)
            if self._made and self.out.is_dir() and not any(self.out.iterdir()):
                self.out.rmdir()  # refused or failed before storing anything: leave no empty directory
        finally:
            self._unlock()

    def _check_target(self) -> None:
        out = self.out
        if out.is_symlink():
            raise InputError(self.field, str(out), "a directory, not a symlink (symlinks are not followed)")
        if out.exists() and not out.is_dir():
            raise InputError(self.field, str(out), "a directory (this is a file)")
        if out.is_dir() and any(out.iterdir()):
            whole = enclosing_owner(out)
            if whole is not None:  # a comparison's setting: replaced alone, its comparison's manifest would lie
                raise InputError(self.field, str(out), f"a directory of its own; this one is part of the '{whole}' "
                                 f"output {out.absolute().parent.name} (--force replaces only a whole output)")
            owner = output_owner(out)
            if owner is None:
                raise InputError(self.field, str(out), "an empty or new directory, or a previous cgdr-des "
                                 "output (this one holds other files)")
            if owner not in (ANY, self.command):
                raise InputError(self.field, str(out), f"a new directory or a previous '{self.command}' output; "
                                 f"it holds a '{owner}' output, which --force does not replace")
            if not self.force and not self.in_place:
                raise InputError(self.field, str(out), "a new directory; it holds a previous output "
                                 "(--force replaces it whole)")

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing drops the flock
            self._lock_fd = None


class Redraw(OutputDir):
    """``with Redraw(out, draw_field) as staging:``: a complete previous output of ``command``, copied
    into a staging directory under the lock (data files as hard links, plots as copies) so that the
    caller can redraw the plots there; the whole is swapped into place on exit like a new output.

    A writer holding the lock makes it refuse; while it holds the lock no writer can replace ``out``,
    so the plots it draws are always those of the output it swaps back in.
    """

    def __init__(self, out: str | Path, *, field: str = "DIRECTORY", command: str = "run"):
        super().__init__(out, force=True, field=field, command=command)

    def _check_target(self) -> None:
        if os.path.lexists(self.out) or not try_recover(self.out):  # a swap that died: the old output back
            if self.out.is_symlink() or not self.out.is_dir() or output_owner(self.out) not in (ANY, self.command):
                raise InputError(self.field, str(self.out), f"a directory written by 'cgdr-des {self.command}'")

    def _fill(self, staging: Path) -> None:
        files = check_complete(self.out, self.field)
        shutil.copyfile(self.out / MANIFEST, staging / MANIFEST)  # rewritten on exit
        for name in files:
            src, dst = self.out / name, staging / name
            if not src.is_file():
                continue  # a listed plot that is gone: it is redrawn
            dst.parent.mkdir(parents=True, exist_ok=True)
            if name.endswith(DERIVED):
                shutil.copyfile(src, dst)  # redrawn in place: a link would write into the old output's file
            else:
                _link_or_copy(src, dst)


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)  # the data files are never written again: sharing their inodes is safe
    except OSError:
        shutil.copyfile(src, dst)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def lock_path(out: Path) -> Path:
    """The lock file of ``out``: a sibling, so that it survives the swap."""
    return out.absolute().parent / f".{out.name}.cgdr-lock"


def check_encodable(path: Path, field: str) -> None:
    """Paths go into JSON and onto the console: they must be valid UTF-8."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        shown = str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise InputError(field, shown, "a path that is valid UTF-8") from None


def output_owner(out: Path) -> str | None:
    """The command that wrote ``out`` (:data:`ANY` for an output older than that record), else None."""
    manifest = out / MANIFEST
    if manifest.is_file() and not manifest.is_symlink():
        try:
            doc = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(doc, dict) or doc.get("tool") != TOOL:
            return None
        command = doc.get("command", ANY)
        return command if isinstance(command, str) else None
    sweep = out / SWEEP_MARKER
    if sweep.is_file() and not sweep.is_symlink():
        return "sweep"
    return ANY if all((out / m).is_file() for m in LEGACY_MARKERS) else None


def is_previous_output(out: Path) -> bool:
    """True when ``out`` holds a cgdr-des manifest, a sweep, or the files of a run written before manifests."""
    return output_owner(out) is not None


def write_manifest(directory: Path, command: str | None = None) -> Path:
    """``manifest.json``: every regular file under ``directory`` with its size and sha256, and the
    command that wrote them (kept from the previous manifest when ``command`` is None)."""
    target = directory / MANIFEST
    if command is None:
        try:
            command = json.loads(target.read_text(encoding="utf-8")).get("command")
        except (OSError, ValueError, AttributeError):
            command = None
    files = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and p.name != MANIFEST):
        files[path.relative_to(directory).as_posix()] = {"bytes": path.stat().st_size, "sha256": _sha256(path)}
    doc = {"tool": TOOL, "version": 1, "files": files}
    if command is not None:
        doc["command"] = command
    tmp = directory / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, target)
    return target


def check_complete(out: str | Path, field: str = "out_dir") -> dict:
    """The manifest of ``out``; InputError when it is missing or any listed file is gone or changed."""
    out = Path(out)
    if not os.path.lexists(out):
        try_recover(out)
    manifest = out / MANIFEST
    if not manifest.is_file():
        raise InputError(field, str(out), "a directory written by cgdr-des (no manifest.json: not an output, "
                         "or an incomplete one)")
    return _checked(out, _listed(out, field), field)


def enclosing_owner(out: Path) -> str | None:
    """The command of the output ``out`` is a part of (a setting of ``compare``: no manifest of its own,
    its files listed by its parent's), else None."""
    parent = out.absolute().parent
    if os.path.lexists(out / MANIFEST) or out.is_symlink() or not (parent / MANIFEST).is_file():
        return None
    try:
        doc = json.loads((parent / MANIFEST).read_text(encoding="utf-8"))
        listed = any(str(name).startswith(f"{out.name}/") for name in doc["files"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return str(doc.get("command", ANY)) if listed else None


def check_readable(out: str | Path, field: str = "out_dir") -> dict:
    """What a reader of one part calls: :func:`check_complete`, or, for a directory without a manifest
    of its own directly inside an output whose manifest lists files under it (a setting of ``compare``),
    those files of the enclosing manifest, checked the same way and named relative to ``out``."""
    out = Path(out)
    parent = out.absolute().parent
    if os.path.lexists(out / MANIFEST) or not out.is_dir() or out.is_symlink() \
            or not (parent / MANIFEST).is_file():
        return check_complete(out, field)
    prefix = f"{out.name}/"
    files = {name[len(prefix):]: entry for name, entry in _listed(parent, field).items() if name.startswith(prefix)}
    return _checked(out, files, field) if files else check_complete(out, field)


def _listed(out: Path, field: str) -> dict:
    """The ``files`` of ``out``'s manifest (InputError when it is damaged)."""
    try:
        files = json.loads((out / MANIFEST).read_text(encoding="utf-8"))["files"]
        files.items()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise InputError(field, str(out), "a readable manifest.json (it is damaged)") from None
    return files


def _checked(out: Path, files: dict, field: str) -> dict:
    """``files`` when every data file among them is in ``out`` with its listed size and hash."""
    for name, entry in files.items():
        if name.endswith(DERIVED):
            continue  # plots: drawn from the frames, and redrawn by ``plot``
        path = out / name
        if not path.is_file() or path.is_symlink():
            raise InputError(field, str(out), f"a complete output ({name} is missing or not a file)")
        if not isinstance(entry, dict) or path.stat().st_size != entry.get("bytes") \
                or _sha256(path) != entry.get("sha256"):
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
        raise InputError(field, str(out), "a directory no other cgdr-des command is writing (one is, now)") from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _aside(out: Path) -> Path:
    return out.absolute().parent / f".{out.name}.cgdr-old"


def recover(out: Path) -> bool:
    """Under the lock: when ``out`` is missing but a swap that died left the previous output aside,
    rename it back. True when something was restored."""
    if os.path.lexists(out):
        return False
    parent = out.absolute().parent
    # the fallback swap's fixed name, then the moved-aside folders of versions before it
    candidates = [_aside(out), *sorted(p / "previous" for p in parent.glob(f".{out.name}.cgdr-old-*"))]
    for aside in candidates:
        if aside.is_dir() and not aside.is_symlink() and is_previous_output(aside):
            os.rename(aside, out)
            return True
    return False


def try_recover(out: Path) -> bool:
    """A reader's :func:`recover`: only when no writer holds the lock, and never an error of its own."""
    try:
        fd = _lock(lock_path(out), "", out)
    except (InputError, OSError):
        return False  # a writer is at work (it restores or swaps itself), or nothing can be written here
    try:
        return recover(out)
    except OSError:
        return False
    finally:
        os.close(fd)


def _remove_leftovers(parent: Path, name: str) -> None:
    for pattern in (f".{name}.cgdr-tmp-*", f".{name}.cgdr-old-*", f".{name}.cgdr-old"):
        for left in parent.glob(pattern):
            if left.is_dir() and not left.is_symlink():
                shutil.rmtree(left, ignore_errors=True)


# ------------------------------------------------------------------ the swap

AT_FDCWD = -100
RENAME_EXCHANGE = 2


def _renameat2() -> Callable | None:
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # not Linux, or a libc older than glibc 2.28
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _renameat2()


def exchange(a: Path, b: Path) -> bool:
    """Exchange two directories atomically (``renameat2(RENAME_EXCHANGE)``); False when this system
    or file system cannot, so that the caller falls back to two renames."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def swap_in(staging: Path, out: Path) -> None:
    """Put ``staging`` at ``out``; a previous ``out`` ends up in ``staging`` (exchange) or is
    deleted. ``out`` is the old output or the new one at every instant (the module docstring)."""
    if not os.path.lexists(out):
        os.rename(staging, out)  # nothing to replace: one atomic rename
        return
    if exchange(staging, out):
        return  # staging now holds the previous output; the caller deletes it
    aside = _aside(out)
    if os.path.lexists(aside):
        shutil.rmtree(aside)
    os.rename(out, aside)
    try:
        os.rename(staging, out)
    except BaseException:
        if not os.path.lexists(out):
            os.rename(aside, out)  # undo; if this process dies first, recover() does it
        raise
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
