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
import shutil
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


def test_check_readable_reads_a_part_through_the_enclosing_manifest(tmp_path):
    """A setting directory of a comparison has no manifest of its own: the comparison's lists its files."""
    fill(tmp_path, {"compare.csv": b"s\n", **{f"buffer_num_1/{k}": v for k, v in FILES.items()}})
    od.write_manifest(tmp_path, "compare")
    part = tmp_path / "buffer_num_1"
    whole = od.check_complete(tmp_path)
    assert od.check_readable(part) == {k: whole[f"buffer_num_1/{k}"] for k in FILES}
    assert set(od.check_readable(tmp_path)) == set(od.check_complete(tmp_path))  # the whole, as before
    (part / "summary.csv").write_bytes(b"a,b\n1,3\n")
    with pytest.raises(InputError, match="summary.csv differs") as err:
        od.check_readable(part, field="DIR")
    assert err.value.value == str(part)


def test_check_readable_refuses_a_directory_no_manifest_lists(tmp_path):
    fill(tmp_path, {"compare.csv": b"s\n"})
    od.write_manifest(tmp_path, "compare")
    fill(tmp_path, {"extra/summary.csv": FILES["summary.csv"]})  # written after the manifest: not part of it
    with pytest.raises(InputError, match="no manifest.json"):
        od.check_readable(tmp_path / "extra")


def test_a_part_of_an_output_is_not_replaced_alone(tmp_path):
    """``run --out COMPARE/buffer_num_1 --force`` would leave the comparison's manifest listing files
    that are no longer there: refused, nothing touched."""
    fill(tmp_path, {"compare.csv": b"s\n", "buffer_num_1/meta.json": b"{}",
                    "buffer_num_1/scenario.resolved.json": b"{}"})
    od.write_manifest(tmp_path, "compare")
    before = (tmp_path / "buffer_num_1" / "meta.json").stat().st_ino
    assert od.enclosing_owner(tmp_path / "buffer_num_1") == "compare"
    assert od.enclosing_owner(tmp_path) is None
    with pytest.raises(InputError, match="part of the 'compare' output"), \
            od.OutputDir(tmp_path / "buffer_num_1", force=True, command="run"):
        pass
    assert (tmp_path / "buffer_num_1" / "meta.json").stat().st_ino == before
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


# ---------------------------------------------------------------- one rule for every command


def test_the_manifest_records_the_writing_command(tmp_path):
    with od.OutputDir(tmp_path / "o", command="calibrate") as staging:
        fill(staging, {"fit.json": b"{}"})
    assert json.loads((tmp_path / "o" / od.MANIFEST).read_text(encoding="utf-8"))["command"] == "calibrate"
    assert od.output_owner(tmp_path / "o") == "calibrate"


@pytest.mark.parametrize("force", [False, True])
def test_another_commands_output_is_refused_even_with_force(tmp_path, force):
    out = tmp_path / "o"
    with od.OutputDir(out, command="run") as staging:
        fill(staging, {"meta.json": b"{}"})
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(InputError, match="it holds a 'run' output, which --force does not replace") as info, \
            od.OutputDir(out, force=force, command="sensitivity"):
        pass
    assert str(info.value).count("\n") == 0
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    assert set(od.check_complete(out)) == {"meta.json"}


def test_a_sweep_directory_belongs_to_sweep(tmp_path):
    out = tmp_path / "o"
    fill(out, {"sweep.json": b"{}", "manifest/point=0.json": b"{}"})
    assert od.output_owner(out) == "sweep"
    with pytest.raises(InputError, match="'sweep' output"), od.OutputDir(out, force=True, command="run"):
        pass
    with od.OutputDir(out, command="sweep", in_place=True) as here:  # in place: no --force, no staging
        assert here == out
        (here / "more.json").write_text("{}", encoding="utf-8")
    assert sorted(p.name for p in out.iterdir()) == ["manifest", "more.json", "sweep.json"]


def test_an_output_from_before_commands_were_recorded_is_any_commands(tmp_path):
    out = tmp_path / "o"
    fill(out, {"x.csv": b"1"})
    (out / od.MANIFEST).write_text(json.dumps({"tool": od.TOOL, "files": {}}), encoding="utf-8")
    assert od.output_owner(out) == od.ANY
    with od.OutputDir(out, force=True, command="tail") as staging:
        fill(staging, {"y.csv": b"2"})
    assert od.output_owner(out) == "tail"


# ---------------------------------------------------------------- the swap, interrupted at every instant

OLD, NEW = {"which.txt": b"old", "deep/a.csv": b"1,2\n"}, {"which.txt": b"new", "b.csv": b"3\n"}


class Interrupt(BaseException):
    """Stands for a KeyboardInterrupt (a BaseException) landing between two file-system calls."""


def state(out: Path) -> str:
    """What a reader finds at ``out``: "old" or "new" (complete, after a reader's recovery), or why not."""
    try:
        od.check_complete(out)
    except InputError as exc:
        return f"unreadable: {exc}"
    return (out / "which.txt").read_text(encoding="utf-8")


def interrupt_at(k: int, monkeypatch, snapshot_to: Path, work: Path) -> list[str]:
    """Patch every file-system step of outdir to raise :class:`Interrupt` at the ``k``-th call, after
    copying ``work`` to ``snapshot_to``: the copy is the disk as a SIGKILL at that instant leaves it."""
    calls = []

    def wrap(owner, name):
        real = getattr(owner, name)

        def step(*args, **kwargs):
            calls.append(name)
            if len(calls) == k:
                shutil.copytree(work, snapshot_to, symlinks=True)
                raise Interrupt(f"at call {k}: {name}")
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, step)

    for owner, name in [(os, "rename"), (os, "replace"), (os, "link"), (shutil, "rmtree"), (od, "exchange"),
                        (od, "write_manifest")]:
        wrap(owner, name)
    return calls


@pytest.mark.parametrize("mode", ["exchange", "fallback"])
def test_a_replacement_interrupted_at_every_step_leaves_the_old_output_or_the_new(tmp_path, monkeypatch, mode):
    """Interrupted (an exception unwinds) or killed (the disk as it was at that instant) before each
    file-system call of a --force replacement in turn, ``out`` always reads as the old output or the
    new one; the next writer leaves no leftovers."""
    seen = {"interrupted": set(), "killed": set()}
    for k in range(1, 60):
        work = tmp_path / f"w{k}"
        out = work / "o"
        with od.OutputDir(out) as staging:
            fill(staging, OLD)
        with monkeypatch.context() as m:
            if mode == "fallback":
                m.setattr(od, "exchange", lambda a, b: False)
            calls = interrupt_at(k, m, tmp_path / f"snap{k}", work)
            try:
                with od.OutputDir(out, force=True) as staging:
                    fill(staging, NEW)
            except Interrupt:
                pass
            else:
                assert len(calls) < k
                break
        killed = tmp_path / f"snap{k}" / "o"
        if mode == "exchange":  # one system call swaps them: not even a reader's recovery is needed
            assert killed.is_dir(), f"out missing at call {k}"
        for kind, where in (("interrupted", out), ("killed", killed)):
            found = state(where)
            assert found in ("old", "new"), f"{kind} at call {k} ({calls[-1]}): {found}"
            seen[kind].add(found)
        with od.OutputDir(out, force=True) as staging:  # the next writer cleans up after either
            fill(staging, NEW)
        assert siblings(work) == [".o.cgdr-lock", "o"] and state(out) == "new"
    assert k > 4, "the loop never got past the first steps"
    assert seen == {"interrupted": {"old", "new"}, "killed": {"old", "new"}}


def test_a_reader_restores_an_output_left_aside_by_a_dead_swap(tmp_path):
    out = tmp_path / "o"
    with od.OutputDir(out) as staging:
        fill(staging, OLD)
    os.rename(out, tmp_path / ".o.cgdr-old")  # the fallback swap died between its two renames
    assert state(out) == "old" and siblings(tmp_path) == [".o.cgdr-lock", "o"]


def test_the_next_writer_restores_it_before_deciding(tmp_path):
    out = tmp_path / "o"
    with od.OutputDir(out) as staging:
        fill(staging, OLD)
    os.rename(out, tmp_path / ".o.cgdr-old")
    with pytest.raises(InputError, match="--force"), od.OutputDir(out):  # restored: a previous output again
        pass
    assert state(out) == "old"


# ---------------------------------------------------------------- plot's redraw: the same rule


def test_redraw_replaces_the_plots_whole_and_shares_the_data_files(tmp_path):
    out = tmp_path / "o"
    with od.OutputDir(out) as staging:
        fill(staging, {"frames.parquet": b"data", "p.png": b"old plot"})
    inode = (out / "frames.parquet").stat().st_ino
    with od.Redraw(out) as staging:
        assert (staging / "p.png").read_bytes() == b"old plot"
        (staging / "p.png").write_bytes(b"new plot")  # a copy: the old output's plot is untouched
        assert (out / "p.png").read_bytes() == b"old plot"
    assert (out / "p.png").read_bytes() == b"new plot" and set(od.check_complete(out)) == {"frames.parquet", "p.png"}
    assert (out / "frames.parquet").stat().st_ino == inode  # linked, not copied
    assert json.loads((out / od.MANIFEST).read_text(encoding="utf-8"))["files"]["p.png"]["bytes"] == 8
    assert siblings(tmp_path) == [".o.cgdr-lock", "o"]


def test_redraw_is_refused_while_a_writer_holds_the_lock(tmp_path):
    out = tmp_path / "o"
    with od.OutputDir(out) as staging:
        fill(staging, {"p.png": b"old"})
    with od.OutputDir(out, force=True) as staging:
        fill(staging, {"p.png": b"new"})
        with pytest.raises(InputError, match="no other cgdr-des command"), od.Redraw(out):
            pass
    assert (out / "p.png").read_bytes() == b"new"


@pytest.mark.parametrize("make", [
    lambda out: fill(out, {"thesis.tex": b"x"}),
    lambda out: (fill(out, {"a": b"1"}), (out / od.MANIFEST).write_text(
        json.dumps({"tool": od.TOOL, "command": "tail", "files": {}}), encoding="utf-8")),
    lambda out: None,
])
def test_redraw_refuses_what_is_not_a_runs_output(tmp_path, make):
    out = tmp_path / "o"
    make(out)
    with pytest.raises(InputError, match="a directory written by 'cgdr-des run'"), od.Redraw(out):
        pass


def test_a_failed_redraw_leaves_the_previous_plots(tmp_path):
    out = tmp_path / "o"
    with od.OutputDir(out) as staging:
        fill(staging, {"p.png": b"old"})
    with pytest.raises(KeyboardInterrupt), od.Redraw(out) as staging:
        (staging / "p.png").write_bytes(b"half")
        raise KeyboardInterrupt
    assert (out / "p.png").read_bytes() == b"old" and siblings(tmp_path) == [".o.cgdr-lock", "o"]
