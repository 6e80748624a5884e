"""The output-directory contract (results/outdir.py) function by function, without the CLI.

The manifest against sizes and sha256 computed here with hashlib; check_complete against files changed
one byte at a time; OutputDir's refusals, its lock, and that a failure inside the block leaves ``out``
as it was (docs/reliability.md).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path

import pytest

from cgdr_des.errors import InputError
from cgdr_des.results import outdir as od


def fill(directory: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


FILES = {"summary.csv": b"a,b\n1,2\n", "frames/ops.parquet": bytes(range(256)) * 9, "empty.json": b"",
         "gantt.png": b"\x89PNG fake"}


def test_manifest_lists_every_file_with_its_size_and_sha256(tmp_path):
    fill(tmp_path, FILES)
    manifest = json.loads(od.write_manifest(tmp_path).read_text(encoding="utf-8"))
    assert manifest["tool"] == "cgdr-des" and manifest["version"] == 1
    want = {name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()} for name, data in FILES.items()}
    assert manifest["files"] == want
    assert not list(tmp_path.glob(".*tmp"))  # written through a temporary name, nothing left


def test_manifest_does_not_list_itself_when_written_again(tmp_path):
    fill(tmp_path, {"x.csv": b"1"})
    od.write_manifest(tmp_path)
    again = json.loads(od.write_manifest(tmp_path).read_text(encoding="utf-8"))
    assert set(again["files"]) == {"x.csv"}


def test_check_complete_returns_the_manifest_of_an_intact_output(tmp_path):
    fill(tmp_path, FILES)
    od.write_manifest(tmp_path)
    assert set(od.check_complete(tmp_path)) == set(FILES)


@pytest.mark.parametrize("name", ["summary.csv", "frames/ops.parquet"])
def test_check_complete_finds_one_changed_byte(tmp_path, name):
    fill(tmp_path, FILES)
    od.write_manifest(tmp_path)
    data = bytearray(FILES[name])
    data[len(data) // 2] ^= 1  # same size: only the hash can tell
    (tmp_path / name).write_bytes(bytes(data))
    with pytest.raises(InputError, match=f"{name} differs"):
        od.check_complete(tmp_path, field="DIR")


def test_check_complete_finds_a_truncated_and_a_missing_file(tmp_path):
    fill(tmp_path, FILES)
    od.write_manifest(tmp_path)
    (tmp_path / "summary.csv").write_bytes(FILES["summary.csv"][:-1])
    with pytest.raises(InputError, match="summary.csv differs"):
        od.check_complete(tmp_path)
    (tmp_path / "summary.csv").unlink()
    with pytest.raises(InputError, match="summary.csv is missing"):
        od.check_complete(tmp_path)


def test_check_complete_does_not_require_the_plots(tmp_path):
    """PNGs are drawn from the frames: listed, but a missing or redrawn one is no damage."""
    fill(tmp_path, FILES)
    od.write_manifest(tmp_path)
    (tmp_path / "gantt.png").unlink()
    assert "gantt.png" in od.check_complete(tmp_path)


def test_check_complete_refuses_a_symlink_in_place_of_a_listed_file(tmp_path):
    fill(tmp_path, FILES)
    od.write_manifest(tmp_path)
    (tmp_path / "elsewhere.csv").write_bytes(FILES["summary.csv"])  # same bytes, but a link
    (tmp_path / "summary.csv").unlink()
    (tmp_path / "summary.csv").symlink_to(tmp_path / "elsewhere.csv")
    with pytest.raises(InputError, match="summary.csv is missing or not a file"):
        od.check_complete(tmp_path)


@pytest.mark.parametrize("text, why", [(None, "no manifest.json"), ("{", "damaged"), ('{"tool": 1}', "damaged")])
def test_check_complete_without_a_readable_manifest(tmp_path, text, why):
    if text is not None:
        (tmp_path / od.MANIFEST).write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=why) as info:
        od.check_complete(tmp_path, field="out_dir")
    assert info.value.field == "out_dir"


def test_is_previous_output(tmp_path):
    assert not od.is_previous_output(tmp_path)
    (tmp_path / od.MANIFEST).write_text(json.dumps({"tool": "other"}), encoding="utf-8")
    assert not od.is_previous_output(tmp_path)
    (tmp_path / od.MANIFEST).write_text(json.dumps({"tool": od.TOOL}), encoding="utf-8")
    assert od.is_previous_output(tmp_path)
    (tmp_path / od.MANIFEST).write_text("[1, 2]", encoding="utf-8")  # JSON, but not an object
    assert not od.is_previous_output(tmp_path)


def test_an_output_written_before_manifests_is_recognised_by_its_files(tmp_path):
    for i, marker in enumerate(od.LEGACY_MARKERS):
        assert not od.is_previous_output(tmp_path)
        (tmp_path / marker).write_text("{}", encoding="utf-8")
        assert od.is_previous_output(tmp_path) == (i == len(od.LEGACY_MARKERS) - 1)


def siblings(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir())


def test_output_dir_appears_whole_with_its_manifest(tmp_path):
    out = tmp_path / "o"
    with od.OutputDir(out) as staging:
        assert staging.parent == tmp_path and staging.name.startswith(".o.cgdr-tmp-")
        assert not out.exists()  # nothing visible until the block ends
        fill(staging, {"a.csv": b"1\n"})
    assert siblings(tmp_path) == [".o.cgdr-lock", "o"]
    assert set(od.check_complete(out)) == {"a.csv"}


def test_a_failure_inside_the_block_leaves_nothing_and_releases_the_lock(tmp_path):
    out = tmp_path / "o"
    with pytest.raises(RuntimeError), od.OutputDir(out) as staging:
        fill(staging, {"a.csv": b"1\n"})
        raise RuntimeError("mid-write")
    assert siblings(tmp_path) == [".o.cgdr-lock"]
    with od.OutputDir(out) as staging:  # the lock was dropped
        fill(staging, {"b.csv": b"2\n"})
    assert set(od.check_complete(out)) == {"b.csv"}


def test_a_second_writer_is_refused_while_the_first_holds_the_lock(tmp_path):
    out = tmp_path / "o"
    with od.OutputDir(out):
        with pytest.raises(InputError, match="no other cgdr-des command") as info, od.OutputDir(out, field="F"):
            pass
        assert info.value.field == "F"


def test_a_previous_output_is_kept_without_force_and_replaced_whole_with_it(tmp_path):
    out = tmp_path / "o"
    with od.OutputDir(out) as staging:
        fill(staging, {"old.csv": b"old", "keep/deep.csv": b"x"})
    with pytest.raises(InputError, match="--force"), od.OutputDir(out):
        pass
    assert set(od.check_complete(out)) == {"old.csv", "keep/deep.csv"}
    with od.OutputDir(out, force=True) as staging:
        fill(staging, {"new.csv": b"new"})
    assert set(od.check_complete(out)) == {"new.csv"} and not (out / "old.csv").exists()
    assert siblings(tmp_path) == [".o.cgdr-lock", "o"]  # the moved-aside previous output is gone


def test_a_failed_replacement_keeps_the_previous_output(tmp_path):
    out = tmp_path / "o"
    with od.OutputDir(out) as staging:
        fill(staging, {"old.csv": b"old"})
    with pytest.raises(KeyError), od.OutputDir(out, force=True) as staging:
        fill(staging, {"new.csv": b"new"})
        raise KeyError("late failure")
    assert set(od.check_complete(out)) == {"old.csv"}


@pytest.mark.parametrize("make, why", [
    (lambda p: p.write_text("x", encoding="utf-8"), "this is a file"),
    (lambda p: (p.mkdir(), (p / "thesis.tex").write_text("x", encoding="utf-8")), "holds other files"),
    (lambda p: (p.parent.joinpath("real").mkdir(), p.symlink_to(p.parent / "real")), "not a symlink"),
])
def test_refused_targets_are_left_untouched(tmp_path, make, why):
    out = tmp_path / "o"
    make(out)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(InputError, match=why), od.OutputDir(out, force=True):
        pass
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_an_empty_existing_directory_is_written_into(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    with od.OutputDir(out) as staging:
        fill(staging, {"a.csv": b"1"})
    assert set(od.check_complete(out)) == {"a.csv"}


def test_leftovers_of_a_killed_run_are_removed_by_the_next(tmp_path):
    for name in (".o.cgdr-tmp-dead", ".o.cgdr-old-dead", ".other.cgdr-tmp-x"):
        fill(tmp_path / name, {"half.csv": b"1"})
    with od.OutputDir(tmp_path / "o") as staging:
        fill(staging, {"a.csv": b"1"})
    assert siblings(tmp_path) == [".o.cgdr-lock", ".other.cgdr-tmp-x", "o"]  # another output's are not ours


def test_the_output_gets_the_umask_permissions_not_mkdtemps(tmp_path):
    old = os.umask(0o022)
    try:
        with od.OutputDir(tmp_path / "o") as staging:
            fill(staging, {"a.csv": b"1"})
    finally:
        os.umask(old)
    assert (tmp_path / "o").stat().st_mode & 0o777 == 0o755


def test_a_path_that_is_not_utf8_is_refused_before_anything_is_created(tmp_path):
    bad = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/out-\xff"))
    with pytest.raises(InputError, match="valid UTF-8") as info:
        od.check_encodable(bad, "--out")
    assert "\\xff" in str(info.value)
    with pytest.raises(InputError), od.OutputDir(bad):
        pass
    assert siblings(tmp_path) == []


@pytest.mark.parametrize("code, reason", [(errno.ENOSPC, "no space left on device"),
                                          (errno.EROFS, "read-only file system"),
                                          (errno.EACCES, "permission denied"),
                                          (errno.EDQUOT, "disk quota exceeded")])
def test_os_errors_become_one_line_with_the_reason(code, reason):
    with pytest.raises(InputError) as info, od.os_errors("--out", Path("/x/o"), "room"):
        raise OSError(code, os.strerror(code))
    err = info.value
    assert err.field == "--out" and str(err).count("\n") == 0
    assert f"room ({reason})" in str(err) and "/x/o" in str(err)


def test_os_errors_pass_other_exceptions_and_input_errors_through():
    with pytest.raises(ValueError), od.os_errors("--out", Path("o"), "room"):
        raise ValueError("not an OS error")
    mine = InputError("f", 1, "two")
    with pytest.raises(InputError) as info, od.os_errors("--out", Path("o"), "room"):
        raise mine
    assert info.value is mine
    with od.os_errors("--out", Path("o"), "room"):
        pass  # no error: nothing raised
