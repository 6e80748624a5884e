"""The ``cgdr-des`` command group and its error contract.

Errors never reach the user as a traceback:

- every ``CgdrError`` (``InputError``, ``KernelDiagnostic``) is one line on stderr,
  ``error: <message>``, exit code 2 (``-v`` adds the rest of a multi-line diagnostic);
- what the user's input or machine can cause outside our checks (``MemoryError``, ``OSError`` such
  as a full or read-only disk, numpy's "array is too big") is one line naming the cause, exit 2;
- anything else is a bug of cgdr-des: one line ``internal error: <type>: <message>``, exit 1, and
  ``-v`` prints the traceback.

Click's own usage errors (a missing argument, an unknown option) are one line too, exit 2.

Interrupts end the same way, whatever the command was doing: Ctrl-C (SIGINT) and SIGTERM raise
:class:`Interrupted` in the main thread, so every ``with`` block on the way out runs its cleanup (an
output directory being staged is removed, pool workers are ended); then one line,
``interrupted: <command> stopped; ...``, and exit 130 (SIGINT) or 143 (SIGTERM), the shell's
128 + signal number. A second signal during that cleanup is ignored, so the cleanup finishes.

Each command lives in its own module of this package and registers itself on :data:`main` when
``cgdr_des.cli`` is imported.
"""

from __future__ import annotations

import signal
import threading
import traceback
from contextlib import contextmanager

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
        """Run the command; bad input, diagnostics and usage errors become one stderr line and exit 2;
        an interrupt one line and exit 130 (143 for SIGTERM)."""
        verbose = bool(ctx.params.get("verbose"))
        with signals_raise():  # until the one line is printed: a second Ctrl-C cannot cut it
            try:
                return super().invoke(ctx)
            except (KeyboardInterrupt, click.exceptions.Abort) as exc:
                _interrupted(ctx, exc)
            except click.UsageError as exc:  # one line too, without click's usage banner
                click.echo(f"error: {_usage_message(exc)}", err=True)
                ctx.exit(2)
            except (click.exceptions.Exit, click.ClickException):
                raise
            except CgdrError as exc:
                first, _, rest = str(exc).partition("\n")
                click.echo(f"error: {one_line(first, 2000)}", err=True)
                if rest and verbose:
                    click.echo(rest, err=True)
                ctx.exit(2)
            except Exception as exc:  # noqa: BLE001 -- the contract: no exception leaves as a traceback
                _report(ctx, exc, verbose)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM (its number the one argument), raised in the main thread while a command
    runs (see the module docstring); code that re-raises a copy (``type(exc)(*exc.args)``) keeps it."""

    @property
    def signum(self) -> int:
        """The signal's number."""
        try:
            return int(signal.Signals(self.args[0]))
        except (IndexError, ValueError, TypeError):
            return int(signal.SIGINT)


@contextmanager
def signals_raise():
    """Make SIGINT and SIGTERM raise :class:`Interrupted` for the block; after the first, both are
    ignored until the block is left (its cleanup must finish). A signal this process was started
    ignoring (``nohup``, a background job) stays ignored; off the main thread nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    watched = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not signal.SIG_IGN]
    old = {s: signal.getsignal(s) for s in watched}

    def raise_interrupted(signum, _frame):
        for s in watched:
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signum)

    for s in watched:
        signal.signal(s, raise_interrupted)
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


def _interrupted(ctx: click.Context, exc: BaseException) -> None:
    """One line saying what stopped and what it left, then exit 128 + the signal number."""
    signum = getattr(exc, "signum", signal.SIGINT)
    name = ctx.invoked_subcommand or ctx.info_name
    command = ctx.command.get_command(ctx, name) if isinstance(ctx.command, click.Group) and name else None
    if name == "sweep":
        left = "; the points it finished are stored; run it again to go on"
    elif command is not None and any(p.name == "out" for p in command.params):
        left = "; --out is as it was before"
    else:
        left = ""
    how = "interrupted" if signum == signal.SIGINT else f"terminated ({signal.Signals(signum).name})"
    click.echo(f"{how}: {name} stopped{left}", err=True)
    ctx.exit(128 + signum)


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
