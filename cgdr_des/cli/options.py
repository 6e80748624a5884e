"""Options several commands share: ``--set section.field=value`` (repeatable) and ``--seed N``; the
calibration cache's ``--cache-dir DIR`` and ``--no-cache``.

``@override_options`` adds both to a command (its function receives ``sets`` and ``seed``);
``load_with_overrides`` loads a scenario file and applies them, validated like the file itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from cgdr_des.scenario import Scenario


def override_options(command: Callable) -> Callable:
    """Decorator: add ``--set PATH=VALUE`` (repeatable) and ``--seed N`` to a click command."""
    command = click.option(
        "--seed", type=int, default=None,
        help="Seed of every random draw (workload.seed); a sweep's replication seeds derive from it.")(command)
    return click.option(
        "--set", "sets", multiple=True, metavar="PATH=VALUE",
        help="Change one scenario field, e.g. --set kernel.policy=round_robin --set shape.nv=32 "
             "(value read as TOML; repeatable).")(command)


def cache_options(command: Callable) -> Callable:
    """Decorator: add ``--cache-dir DIR`` and ``--no-cache`` (the calibration cache, docs/tail.md) to a
    click command (its function receives ``cache_dir`` and ``no_cache``; see :func:`calibration_cache`)."""
    command = click.option("--no-cache", is_flag=True,
                           help="Measure item costs afresh and store nothing (the calibration cache).")(command)
    return click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                        help="Directory of the calibration cache (default: $CGDR_DES_CACHE_DIR, else the "
                             "user's cache directory).")(command)


def calibration_cache(cache_dir: Path | None, no_cache: bool):
    """Context manager: the calibration cache as ``--cache-dir``/``--no-cache`` ask, for this command and
    the worker processes it starts."""
    from cgdr_des.cost_cache import settings

    return settings(cache_dir, enabled=not no_cache)


def overrides_from(sets: tuple[str, ...] | list[str], seed: int | None) -> list[tuple[str, Any]]:
    """The ``(dotted path, value)`` pairs that ``--set`` and ``--seed`` ask for, in order."""
    from cgdr_des.overrides import parse_set  # the scenario model (pydantic, numpy): only when a command runs

    pairs = [parse_set(text) for text in sets]
    if seed is not None:
        pairs.append(("workload.seed", seed))
    return pairs


def load_with_overrides(path: str, sets: tuple[str, ...] | list[str], seed: int | None) -> Scenario:
    """Load the scenario file at ``path`` and apply ``--set``/``--seed`` (InputError naming the path)."""
    from cgdr_des.overrides import apply_overrides
    from cgdr_des.scenario import load_scenario

    return apply_overrides(load_scenario(path), overrides_from(sets, seed))
