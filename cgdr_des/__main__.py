"""``python -m cgdr_des`` is the ``cgdr-des`` command."""

from cgdr_des.cli import main

main()
