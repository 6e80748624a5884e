"""The ``cgdr-des`` command line; one module per command, all registered on :data:`main`.

``app`` holds the group and the error contract, ``common`` what several commands share.
"""

from cgdr_des.cli import (  # noqa: F401  (each registers its commands)
    calibrate,
    compare,
    inspect_cmds,
    measured,
    run,
    sensitivity,
    sweep,
    tail,
)
from cgdr_des.cli.app import main

__all__ = ["main"]
