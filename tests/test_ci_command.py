"""The README's quick start and ``.ci/run`` run the same test command (the README promises it)."""

from __future__ import annotations

import re

from conftest import REPO


def pytest_command(text: str) -> list[str]:
    """Every ``python -m pytest ...`` invocation in ``text`` (to the end of its line or ``&&``)."""
    return [m.strip() for m in re.findall(r"python -m pytest[^\n&#]*", text)]


def test_the_readme_test_command_is_the_one_ci_runs():
    ci = [c for c in pytest_command((REPO / ".ci" / "run").read_text()) if "-n 2" in c]
    quick_start = (REPO / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    readme = [c for c in pytest_command(quick_start) if '-m "not slow"' not in c]
    assert len(ci) == 1 and readme, (ci, readme)
    assert set(readme) == set(ci), (readme, ci)
