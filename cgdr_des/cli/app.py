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

A closed reader ends a command as it ends a Unix tool: ``cgdr-des schema | head`` stops at the first
write after ``head`` has gone, quietly (nothing on stderr), its ``with`` blocks cleaned up as after an
interrupt, with exit code 141 (128 + SIGPIPE, what ``cat`` or ``grep`` report; a shell without
``pipefail`` reports ``head``'s 0 for the pipeline).

Each command lives in its own module of this package and registers itself on :data:`main` when
``cgdr_des.cli`` is imported.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import sys
import threading
import traceback
from contextlib import contextmanager

import click

from cgdr_des.errors import CgdrError, one_line

#: the exit code when stdout's or stderr's reader has gone (``| head``): 128 + SIGPIPE, as a Unix tool's
CLOSED_READER_EXIT = 128 + 13
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


def reader_gone(exc: BaseException) -> bool:
    """Whether ``exc`` is a write to stdout or stderr after its reader closed the pipe (EPIPE, and the
    stream's descriptor polls as an error: a broken pipe to a pool worker is not a closed reader)."""
    if not (isinstance(exc, OSError) and exc.errno == errno.EPIPE):
        return False
    return bool(_closed_fds())


def _closed_fds() -> list[int]:
    """Of stdout and stderr, the descriptors that are pipes whose reader has gone (POLLERR)."""
    if not hasattr(select, "poll"):
        return [1]
    poll = select.poll()
    for fd in (1, 2):
        poll.register(fd, select.POLLOUT)
    return [fd for fd, events in poll.poll(0) if events & select.POLLERR]


@contextmanager
def closed_reader_exits(ctx: click.Context):
    """A write to a stdout or stderr whose reader has gone ends the block, and the command, quietly."""
    try:
        yield
    except OSError as exc:
        if not reader_gone(exc):
            raise
        _end_quietly(ctx)


def _end_quietly(ctx: click.Context) -> None:
    """Exit 141, the closed descriptors pointed at /dev/null first (so that the interpreter's last
    flush of what is still buffered cannot complain)."""
    _silence_closed()
    ctx.exit(CLOSED_READER_EXIT)


def _silence_closed() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in _closed_fds():
        os.dup2(devnull, fd)
    os.close(devnull)


class _Cli(click.Group):
    """A group that applies the error contract of the module docstring."""

    def main(self, *args, **kwargs):
        """Click's main, then a flush of what is still buffered for stdout while a closed reader can
        still end quietly (see the module docstring)."""
        try:
            return super().main(*args, **kwargs)
        finally:
            try:
                sys.stdout.flush()
            except OSError as exc:
                if not reader_gone(exc):
                    raise
                _silence_closed()
                raise SystemExit(CLOSED_READER_EXIT) from None  # replaces click's own exit

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """The group's own options; ``--help`` and ``--version`` write here, before :meth:`invoke`."""
        with closed_reader_exits(ctx):
            return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        """Run the command; bad input, diagnostics and usage errors become one stderr line and exit 2;
        an interrupt one line and exit 130 (143 for SIGTERM)."""
        verbose = bool(ctx.params.get("verbose"))
        # closed_reader_exits: an error line written to a closed stderr (``2>&1 | head``) ends quietly too
        with signals_raise(), closed_reader_exits(ctx):  # until the one line is printed: a second Ctrl-C cannot cut it
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
    if reader_gone(exc):
        _end_quietly(ctx)
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
