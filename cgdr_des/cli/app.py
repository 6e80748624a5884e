"""The ``cgdr-des`` command group and its error contract.

Errors never reach the user as a traceback:

- every ``CgdrError`` (``InputError``, ``KernelDiagnostic``) is one line on stderr,
  ``error: <message>``, exit code 2 (``-v`` adds the rest of a multi-line diagnostic);
- what the user's input or machine can cause outside our checks (``MemoryError``, ``OSError`` such
  as a full or read-only disk, numpy's "array is too big") is one line naming the cause, exit 2;
- anything else is a bug of cgdr-des: one line ``internal error: <type>: <message>``, exit 1, and
  ``-v`` prints the traceback.

Click's own usage errors (a missing argument, an unknown option) are one line too, exit 2. Each
command lives in its own module of this package and registers itself on :data:`main` when
``cgdr_des.cli`` is imported.
"""

from __future__ import annotations

import traceback

import click

from cgdr_des.errors import CgdrError, one_line

#: numpy raises ValueError for shapes whose byte size overflows; these fragments identify it.
_SIZE_ERRORS = ("array is too big", "maximum supported dimension", "negative dimensions")


def user_caused(exc: BaseException) -> str | None:
    """The one-line message of an exception the user's input or machine caused, else None."""
    if isinstance(exc, MemoryError):
        return "out of memory: the launch needs more RAM than is free (see the estimate; shrink the shape)"
    if isinstance(exc, OSError):
        where = f" ({one_line(exc.filename)})" if getattr(exc, "filename", None) else ""
        return f"file system: {exc.strerror or type(exc).__name__}{where}"
    if isinstance(exc, ValueError) and any(s in str(exc) for s in _SIZE_ERRORS):
        return f"array size: {one_line(str(exc))} (the shape is too large for this machine)"
    return None


class _Cli(click.Group):
    """A group that applies the error contract of the module docstring."""

    def invoke(self, ctx: click.Context):
        """Run the command; bad input, diagnostics and usage errors become one stderr line and exit 2."""
        verbose = bool(ctx.params.get("verbose"))
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # one line too, without click's usage banner
            click.echo(f"error: {_usage_message(exc)}", err=True)
            ctx.exit(2)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except CgdrError as exc:
            first, _, rest = str(exc).partition("\n")
            click.echo(f"error: {one_line(first, 2000)}", err=True)
            if rest and verbose:
                click.echo(rest, err=True)
            ctx.exit(2)
        except Exception as exc:  # noqa: BLE001 -- the contract: no exception leaves as a traceback
            _report(ctx, exc, verbose)


def _usage_message(exc: click.UsageError) -> str:
    """``--out: Directory 'x' is a file.`` for a bad parameter, click's message otherwise."""
    param = getattr(exc, "param", None)
    if isinstance(exc, click.BadParameter) and param is not None:
        name = param.opts[0] if getattr(param, "opts", None) else param.name.upper()
        if isinstance(exc, click.MissingParameter):  # its message is empty: click builds it at print time
            return f"{name}: got nothing; required"
        return one_line(f"{name}: {exc.message}", 2000)
    return one_line(exc.format_message(), 2000)


def _report(ctx: click.Context, exc: Exception, verbose: bool) -> None:
    message = user_caused(exc)
    if verbose:
        click.echo(traceback.format_exc().rstrip(), err=True)
    if message is not None:
        click.echo(f"error: {message}", err=True)
        ctx.exit(2)
    click.echo(f"internal error: {type(exc).__name__}: {one_line(str(exc))} (rerun with -v for the traceback)",
               err=True)
    ctx.exit(1)


@click.group(cls=_Cli)
@click.option("-v", "--verbose", is_flag=True,
              help="Print every line of a multi-line diagnostic, and the traceback of an internal error.")
def main(verbose: bool) -> None:
    """Discrete-event simulator of the vector-only chunk_gated_delta_rule AscendC kernel."""
