"""``write_study``: a study's frames, summary, checks and plots into one directory."""

from __future__ import annotations

import json
from pathlib import Path

from cgdr_des.tail.study import StudyResult


def write_study(result: StudyResult, out: Path, *, plots: bool = True) -> dict[str, Path]:
    """Write every file of the study into ``out`` (created); returns ``{name: path}``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = {
        "batches": out / "batches.parquet", "core_finish": out / "core_finish.parquet",
        "tail_summary_csv": out / "tail_summary.csv", "tail_summary": out / "tail_summary.parquet",
        "checks": out / "checks.csv", "study": out / "study.json",
    }
    result.batches.to_parquet(written["batches"], index=False)
    result.core_finish.to_parquet(written["core_finish"], index=False)
    result.summary.to_csv(written["tail_summary_csv"], index=False)
    result.summary.to_parquet(written["tail_summary"], index=False)
    result.checks.to_csv(written["checks"], index=False)
    written["study"].write_text(json.dumps(result.meta, indent=2) + "\n", encoding="utf-8")
    if plots:
        from cgdr_des.results.tail_plots import plot_study

        written |= plot_study(result, out)
    return written
