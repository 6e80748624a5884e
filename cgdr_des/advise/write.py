"""``write_advice``: an advice's frames and settings into one directory (the gain plot is drawn from
them by ``cli/redraw.py``'s ``draw_advise``, as ``cgdr-des plot`` redraws it)."""

from __future__ import annotations

import json
from pathlib import Path

from cgdr_des.advise.study import Advice


def write_advice(advice: Advice, out: Path) -> dict[str, Path]:
    """Write the frames of ``advice`` into ``out`` (which exists); returns ``{name: path}``."""
    out = Path(out)
    written = {"advice_csv": out / "advice.csv", "advice": out / "advice.parquet",
               "variants_csv": out / "variants.csv", "batches": out / "advice_batches.parquet",
               "points": out / "advice_points.parquet", "meta": out / "advice.json"}
    advice.table.to_csv(written["advice_csv"], index=False)
    advice.table.to_parquet(written["advice"], index=False)
    advice.variants.to_csv(written["variants_csv"], index=False)
    advice.batches.to_parquet(written["batches"], index=False)
    advice.points.to_parquet(written["points"], index=False)
    written["meta"].write_text(json.dumps(advice.meta, indent=2) + "\n", encoding="utf-8")
    return written
