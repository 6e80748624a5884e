"""The fingerprint of everything that decides the report's numbers, recorded in ``report.json``.

``inputs()`` hashes (sha256) each sweep file the report runs, each base scenario those files name, each
hardware profile TOML, the ``cgdr_des`` package's source (every ``cgdr_des/**/*.py``, sorted by path,
path and contents both hashed, so a renamed module changes it too) and the report's own code
(``analysis/report/*.py``: the tables and rules that turn sweeps into quoted numbers), plus the package
version. ``differences(recorded, current)`` names what changed, one line each.

A changed fingerprint says the report *may* be stale, not that it is: most source edits do not move a
number. ``python -m analysis.report --check`` therefore prints the differences as notes and fails
only on a recomputed number (``analysis/report/check.py``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from cgdr_des.runtime import package_version, tree_hash
from cgdr_des.scenario import read_toml

ROOT = Path(__file__).resolve().parents[2]
SWEEP_GLOB = "report_*.toml"


def sha256_file(path: Path) -> str:
    """sha256 (hex) of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def inputs(root: Path = ROOT) -> dict:
    """The fingerprint (see the module docstring): ``{"sweeps", "scenarios", "profiles": {file: sha256},
    "source", "report_code": sha256, "version": str}``; file names are relative to ``root``."""
    sweep_dir = root / "scenarios" / "sweeps"
    sweeps = sorted(sweep_dir.glob(SWEEP_GLOB))
    bases = sorted({(sweep_dir / read_toml(p, "sweep", "TOML sweep file")["base"]).resolve() for p in sweeps})
    profiles = sorted((root / "cgdr_des" / "hw" / "profiles").glob("*.toml"))

    def rel(paths):
        """{path relative to root: sha256}."""
        return {p.resolve().relative_to(root.resolve()).as_posix(): sha256_file(p) for p in paths}

    return {"sweeps": rel(sweeps), "scenarios": rel(bases), "profiles": rel(profiles),
            "source": tree_hash(root / "cgdr_des", "*.py"),
            "report_code": tree_hash(root / "analysis" / "report", "*.py"), "version": package_version()}


def differences(recorded: dict | None, current: dict) -> list[str]:
    """One line per input whose fingerprint differs (added, removed or changed); [] when they agree."""
    if not recorded:
        return ["the report records no input fingerprints (generated before they were recorded)"]
    lines = []
    for key, now in current.items():
        was = recorded.get(key)
        if isinstance(now, dict):
            was = was if isinstance(was, dict) else {}
            for name in sorted(set(now) | set(was)):
                if name not in was:
                    lines.append(f"{key}: {name} is new since the report")
                elif name not in now:
                    lines.append(f"{key}: {name} is gone since the report")
                elif was[name] != now[name]:
                    lines.append(f"{key}: {name} changed since the report")
        elif was != now:
            lines.append(f"{key}: {str(was)[:12]} in the report, {str(now)[:12]} now")
    return lines
