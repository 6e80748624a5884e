"""Options several commands share: ``--set section.field=value`` (repeatable) and ``--seed N``.

``@override_options`` adds both to a command (its function receives ``sets`` and ``seed``);
``load_with_overrides`` loads a scenario file and applies them, validated like the file itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from cgdr_des.overrides import apply_overrides, parse_set
from cgdr_des.scenario import Scenario, load_scenario


def override_options(command: Callable) -> Callable:
    """Decorator: add ``--set PATH=VALUE`` (repeatable) and ``--seed N`` to a click command."""
    command = click.option(
        "--seed", type=int, default=None,
        help="Seed of every random draw (workload.seed); a sweep's replication seeds derive from it.")(command)
    return click.option(
        "--set", "sets", multiple=True, metavar="PATH=VALUE",
        help="Change one scenario field, e.g. --set kernel.policy=round_robin --set shape.nv=32 "
             "(value read as TOML; repeatable).")(command)


def overrides_from(sets: tuple[str, ...] | list[str], seed: int | None) -> list[tuple[str, Any]]:
    """The ``(dotted path, value)`` pairs that ``--set`` and ``--seed`` ask for, in order."""
    pairs = [parse_set(text) for text in sets]
    if seed is not None:
        pairs.append(("workload.seed", seed))
    return pairs


def load_with_overrides(path: str, sets: tuple[str, ...] | list[str], seed: int | None) -> Scenario:
    """Load the scenario file at ``path`` and apply ``--set``/``--seed`` (InputError naming the path)."""
    return apply_overrides(load_scenario(path), overrides_from(sets, seed))
