"""The ``cgdr-des`` command group and its error contract.

Errors: every ``CgdrError`` (``InputError``, ``KernelDiagnostic``) becomes one line on stderr,
``error: <message>``, and exit code 2 — never a traceback (``-v`` adds the rest of a multi-line
diagnostic). Click's own usage errors also exit with 2. Each command lives in its own module of this
package and registers itself on :data:`main` when ``cgdr_des.cli`` is imported.
"""

from __future__ import annotations

import click

from cgdr_des.errors import CgdrError


class _Cli(click.Group):
    """A group that turns CgdrError into ``error: <first line>`` on stderr and exit 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except CgdrError as exc:
            first, _, rest = str(exc).partition("\n")
            click.echo(f"error: {first}", err=True)
            if rest and ctx.params.get("verbose"):
                click.echo(rest, err=True)
            ctx.exit(2)


@click.group(cls=_Cli)
@click.option("-v", "--verbose", is_flag=True, help="Print every line of a multi-line diagnostic.")
def main(verbose: bool) -> None:
    """Discrete-event simulator of the vector-only chunk_gated_delta_rule AscendC kernel."""
