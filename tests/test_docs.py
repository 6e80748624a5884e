"""Every reference into docs/ names a file, section or row that exists, and the docs point only at
files the repository holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO as ROOT

DOCS = ROOT / "docs"
SCANNED = [ROOT / "README.md", *(p for d in ("cgdr_des", "tests", "analysis", "scenarios", "docs")
                                 for p in sorted((ROOT / d).rglob("*")) if p.suffix in (".py", ".md", ".toml"))]
#: written by the tail / sweep work; references to them are checked once they exist
PENDING = {"tail.md", "sweeps.md"}

DOC_REF = re.compile(r"docs/([\w-]+\.md)((?:\s*§\s*[\dx.]+(?:\s*(?:-|–|and|,)\s*§?[\dx.]+)*)?)")
ROW_REF = re.compile(r"docs/hardware\.md(?:\s+§[\d.]+\s+and)?\s+rows?\s+(\d+)"
                     r"(?:\s*(?:-|–)\s*(\d+))?(?:\s+and\s+row\s+(\d+))?")
SECTION = re.compile(r"§\s*([\dx]+(?:\.[\dx]+)?)")


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def references() -> list[tuple[Path, str, str]]:
    """(file, doc name, the "§..." tail) of every reference into docs/ in the scanned files."""
    out = []
    for path in SCANNED:
        for m in DOC_REF.finditer(text(path)):
            out.append((path, m.group(1), m.group(2) or ""))
    return out


def sections(doc: str) -> set[str]:
    """Section numbers of a doc: headings ``## N.`` / ``### N.M`` and items ``N. `` of a numbered
    list directly under ``## N.`` (docs/hardware.md §2's rules are cited as §2.N)."""
    found, current = set(), None
    for line in text(DOCS / doc).splitlines():
        head = re.match(r"#{2,3} (\d+(?:\.[\dx]+)?)[. ]", line)
        if head:
            found.add(head.group(1))
            current = head.group(1) if line.startswith("## ") else current
            continue
        item = re.match(r"(\d+)\. ", line)
        if item and current and "." not in current:
            found.add(f"{current}.{item.group(1)}")
    return found


def table_rows() -> set[int]:
    """Row numbers of the master table in docs/hardware.md §0."""
    body = text(DOCS / "hardware.md").split("## 0.", 1)[1].split("\n## ", 1)[0]
    return {int(m.group(1)) for m in re.finditer(r"^\| (\d+) \|", body, re.M)}


def test_every_doc_file_is_indexed():
    index = text(DOCS / "README.md")
    for doc in DOCS.glob("*.md"):
        if doc.name != "README.md":
            assert f"({doc.name})" in index, doc.name


@pytest.mark.parametrize("doc", ["architecture.md", "kernel.md", "hardware.md", "math.md", "design-notes.md"])
def test_docs_keep_the_numbering_the_code_cites(doc):
    """The section numbers the code cited in the spec documents these docs replace."""
    want = {
        "architecture.md": {"1", "2", "3", "4", "5"},
        "kernel.md": {"1", "2", "3", "4.2", "4.3", "5", "5.0", "5.x", "6", "7.1", "7.4"},
        "hardware.md": {"2", "2.7", "3", "5", "7", "8", "12"},
        "math.md": {"1", "1.1", "2"},
        "design-notes.md": {"1", "2", "5", "6", "7.1", "7.2", "8"},
    }[doc]
    assert want <= sections(doc), want - sections(doc)


def test_every_reference_names_an_existing_doc_and_section():
    refs = references()
    assert len(refs) > 20  # the scan sees the references (the docs themselves hold many)
    missing = []
    for path, doc, tail in refs:
        if doc in PENDING and not (DOCS / doc).exists():
            continue
        if not (DOCS / doc).exists():
            missing.append(f"{path.relative_to(ROOT)}: docs/{doc}")
            continue
        have = sections(doc)
        missing += [f"{path.relative_to(ROOT)}: docs/{doc} §{s}" for s in SECTION.findall(tail) if s not in have]
    assert not missing, "\n".join(missing)


def test_every_row_reference_names_a_row_of_the_hardware_table():
    rows = table_rows()
    assert rows == set(range(1, max(rows) + 1))  # numbered 1..N without a gap
    bad = []
    for path in SCANNED:
        for m in ROW_REF.finditer(text(path)):
            first, last, other = m.group(1), m.group(2) or m.group(1), m.group(3)
            for n in (int(first), int(last), *([int(other)] if other else [])):
                if n not in rows:
                    bad.append(f"{path.relative_to(ROOT)}: row {n}")
    assert not bad, "\n".join(bad)


def test_docs_point_only_at_files_the_repository_holds():
    outside = re.compile(r"DESIGN\.md|notes/[\w-]+\.md|seed/|\.\./shared|/work/")
    bad = [f"{p.name}: {m.group(0)}" for p in DOCS.glob("*.md") for m in outside.finditer(text(p))]
    assert not bad, bad
    for doc in DOCS.glob("*.md"):  # repository paths the docs name exist
        # (tests/ only at top level: math.md also names files of other projects' tests/ trees)
        for m in re.finditer(r"`((?:cgdr_des|scenarios|analysis)/[\w/.-]+\.(?:py|toml)|tests/\w+\.py)", text(doc)):
            assert (ROOT / m.group(1)).exists(), f"{doc.name}: {m.group(1)}"


def test_every_phase_of_the_kernel_has_its_source_lines_in_the_table_and_the_docs():
    """The one PHASES table gives each trace label its function's lines in chunk_gated_delta_rule.h,
    and docs/kernel.md §1's map cites the same lines for the same label; the chunk phases and the
    V-tile steps lie in the header in program order (ProcessChunk calls them in that order, and the
    header defines them in that order, except WriteAttnTileToGm and ComputeRecursiveAttn, which it
    defines among the helpers before ProcessHead)."""
    from cgdr_des.kernel.program import CHUNK_PHASES, PHASES, VTILE_STEPS

    anchor = re.compile(r":(\d+)-(\d+)")
    kernel_map = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([\w.]+)` \| ([^|]+) \|", text(DOCS / "kernel.md"),
                                                              re.M)}
    for info in PHASES:
        m = anchor.fullmatch(info.anchor)
        assert m and int(m.group(1)) < int(m.group(2)), info
        if info.label in kernel_map:
            assert f"({info.anchor}" in kernel_map[info.label], (info.label, kernel_map[info.label])
    helpers = {"P4b_Recursion", "S6b_WriteOut"}
    for group in (CHUNK_PHASES, VTILE_STEPS):
        starts = [int(anchor.fullmatch(p.anchor).group(1)) for p in group if p.label not in helpers]
        assert starts == sorted(starts)
    assert set(kernel_map) >= {p.label for p in (*CHUNK_PHASES, *VTILE_STEPS)}
