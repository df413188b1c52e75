"""``trueheart``: operate a TrueHeart store from the command line.

A thin layer over :class:`trueheart_core.TrueHeart`: every subcommand takes the
database path as its first argument, prints aligned text (or one JSON document with
``--json``) on stdout, and exits with 0 on success, 2 on a usage error (or an
``--embedder`` path that names no embedder), 3 when the
database, an entity or (for ``erase-subject``) the scope is not found (or was deleted),
4 on corruption (or problems found by ``verify``, or an erasure that did not verify), 5
when the store is busy or read-only, 130 when interrupted (Ctrl-C), 141 when stdout was
closed by its reader (a broken pipe), 143 when terminated (SIGTERM), and 1 on any other
error, printed as ``trueheart: <message>`` on stderr without a traceback (and, with
``--json``, also as one JSON object on stdout). See docs/cli.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from trueheart_core import stores
from trueheart_core.cli import progress, render
from trueheart_core.cli.common import ClosedStream, OutputFailed
from trueheart_core.cli.failures import CommandFailure, message_of, status_of
from trueheart_core.cli.parser import UsageError, build_parser
from trueheart_core.errors import TrueHeartError

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

__all__ = ["EXIT_CODES", "build_parser", "command", "main"]

EXIT_CODES = {
    "ok": 0,
    "error": 1,
    "usage": 2,
    "not_found": 3,
    "corruption": 4,
    "busy_or_read_only": 5,
    "interrupted": 130,  # 128 + SIGINT, as a shell reports a command Ctrl-C stopped
    "broken_pipe": 141,  # 128 + SIGPIPE, as a shell reports `yes | head -1`
    "terminated": 143,  # 128 + SIGTERM, as a shell reports a command `kill` stopped
}


def _wants_json(argv: Sequence[str]) -> bool:
    """Whether ``--json`` (or an abbreviation argparse accepts) is among the options."""
    for token in argv:
        if token == "--":
            return False
        if len(token) >= 3 and "--json".startswith(token):
            return True
    return False


def _broken_pipe() -> int:
    progress.silence(sys.stdout, 1)
    try:
        sys.stderr.flush()
    except OSError:
        progress.silence(sys.stderr, 2)
    return EXIT_CODES["broken_pipe"]


class _Output(io.RawIOBase):
    """A file descriptor whose write errors are raised as :class:`OutputFailed`, told
    apart from the store's own (a closed pipe stays ``BrokenPipeError``)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: ReadableBuffer) -> int:
        try:
            return os.write(self._fd, data)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise OutputFailed(error.errno, error.strerror) from None


@contextlib.contextmanager
def _guarded_stdout(as_json: bool) -> Iterator[None]:
    """``sys.stdout`` over :class:`_Output` while a command runs, when it is a file
    (not a test's capture); the original is put back after.

    Under ``--json`` the output is UTF-8 whatever the locale's encoding, as a JSON
    document is read by programs. Text is for people and stays in the stream's own
    encoding (the terminal's), but a character it cannot encode is written as its
    backslash escape (``\\u2713``) rather than failing the command half-way through
    its output."""
    original = sys.stdout
    try:
        fd = original.fileno()
        original.flush()
    except (AttributeError, OSError, ValueError):
        yield
        return
    guarded = io.TextIOWrapper(
        io.BufferedWriter(_Output(fd)),
        encoding="utf-8" if as_json else original.encoding,
        errors="backslashreplace",
        line_buffering=bool(original.line_buffering),
    )
    sys.stdout = guarded
    try:
        yield
    finally:
        sys.stdout = original
        with contextlib.suppress(OSError, ValueError):  # given up on, or closed
            guarded.flush()
            guarded.detach()


def _report(line: str, doc: dict[str, object] | None) -> None:
    """``line`` on stderr and, unless ``None``, ``doc`` on stdout; a stream that cannot
    be written is given up (pointed at the null device), never raised from."""
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except OSError:
        progress.silence(sys.stderr, 2)
    if doc is not None:
        try:
            render.document(sys.stdout, doc)
            sys.stdout.flush()
        except OSError:
            progress.silence(sys.stdout, 1)


def _fail(name: str, message: str, status: int, as_json: bool) -> int:
    """Report a failure: one line on stderr and, with ``--json``, one JSON object on
    stdout. Returns ``status``.

    The message may hold an ID or a path from the command line, an input file or the
    store: on stderr its unprintable characters are escaped (``\\n``, ``\\x1b``), so it
    stays one line and cannot drive the terminal; the JSON object holds it exact (JSON
    escapes them itself)."""
    progress.settle()
    try:
        sys.stdout.flush()  # what a command printed before it failed comes first
    except OSError:  # a closed pipe, a full disk: the document cannot go there either
        progress.silence(sys.stdout, 1)
        as_json = False
    doc = {"error": name, "message": message, "exit_status": status}
    _report(f"trueheart: {render.printable(message)}\n", doc if as_json else None)
    return status


def _stopped(interrupt: KeyboardInterrupt, as_json: bool) -> int:
    """Report Ctrl-C (130) or SIGTERM (143); a second signal is ignored from now on."""
    _ignore_interrupts()
    # A command may say what it had done when it was stopped (``ingest`` does).
    detail = interrupt.args[0] if interrupt.args and type(interrupt.args[0]) is str else None
    name = "terminated" if isinstance(interrupt, _Terminated) else "interrupted"
    message = name if detail is None else f"{name}; {detail}"
    return _fail(name, message, EXIT_CODES[name], as_json)


def _interruption_in(error: BaseException) -> KeyboardInterrupt | None:
    """The ``KeyboardInterrupt`` among the exceptions ``error`` was raised from or while
    handling, if any."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def _usage(error: UsageError, as_json: bool) -> int:
    status = EXIT_CODES["usage"]
    with contextlib.suppress(OSError):
        error.parser.print_usage(sys.stderr)
    doc = {"error": "usage", "message": error.message, "exit_status": status}
    # argparse's message repeats arguments as typed (an unrecognized one, say).
    line = f"{error.parser.prog}: error: {render.printable(error.message)}\n"
    _report(line, doc if as_json else None)
    return status


class _Terminated(KeyboardInterrupt):
    """SIGTERM (sent by ``kill``, ``timeout``, a service manager or a CI cancel) while a
    command runs: raised where the signal lands, as Ctrl-C raises
    :class:`KeyboardInterrupt`, so that the command unwinds the same way and every
    cleanup runs (a partial export file, a temporary store)."""


def _terminate(number: int, frame: object) -> None:
    raise _Terminated


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises :class:`_Terminated` while a command runs; the previous handler
    is put back after. Only in the main thread (where Python runs signal handlers, and
    the only one that may set them), and not over a handler that was not set from
    Python (which could not be put back)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is None:
        yield
        return
    signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _ignore_interrupts() -> None:
    """After a first Ctrl-C or SIGTERM, a second one must not interrupt the report or
    the exit."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _database(args: argparse.Namespace | None) -> str | None:
    if args is None:
        return None
    path = getattr(args, "db", None) or getattr(args, "path", None)
    # A PostgreSQL URL is shown without its password.
    return stores.redacted(path) if isinstance(path, str) else None


def _quiet_drivers() -> None:
    """Keep the PostgreSQL driver's own warnings (each failed connection attempt, with
    the server's text) off stderr, where logging's last resort would print them: the
    command reports a failure itself, as one line. A host that configures logging
    still gets them."""
    driver = logging.getLogger("psycopg")
    if not any(isinstance(handler, logging.NullHandler) for handler in driver.handlers):
        driver.addHandler(logging.NullHandler())


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (see the module docstring)."""
    _quiet_drivers()
    arguments = list(sys.argv[1:] if argv is None else argv)
    as_json = _wants_json(arguments)
    with _guarded_stdout(as_json), _sigterm_interrupts():
        return _main(arguments, as_json)


def command() -> int:
    """The ``trueheart`` program (its console script and ``python -m``): :func:`main`
    on the process's arguments, in a process that ends when it returns."""
    _closed_streams_held()
    status = main()
    # The command is done and has said so: a Ctrl-C that lands while the interpreter
    # exits must not turn its status into 130.
    _ignore_interrupts()
    return status


def _closed_streams_held() -> None:
    """For each standard stream the process started without: the null device on its
    descriptor, so that no file the command opens takes it (and a write meant for the
    stream could never land in that file), and a stream object that fails as closed."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        setattr(sys, name, ClosedStream(name) if fd != 2 else open(os.devnull, "w"))  # noqa: SIM115


def _main(arguments: list[str], as_json: bool) -> int:
    args: argparse.Namespace | None = None
    try:
        try:
            args = build_parser().parse_args(arguments)
        except UsageError as error:
            return _usage(error, as_json)
        except SystemExit as done:  # --help and --version
            if isinstance(sys.stdout, ClosedStream):  # argparse says nothing of it
                raise sys.stdout.error() from None
            sys.stdout.flush()
            return 0 if done.code is None else int(done.code)
        status: int = args.run(args, sys.stdout)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        return _broken_pipe()
    except KeyboardInterrupt as interrupt:
        return _stopped(interrupt, as_json)
    except CommandFailure as failure:
        return _fail(type(failure).__name__, str(failure), failure.status, as_json)
    except TrueHeartError as error:
        return _fail(
            type(error).__name__, message_of(error, _database(args)), status_of(error), as_json
        )
    except OSError as error:
        # The operating system's fixed text (such as "Permission denied"), and the
        # path it concerns when it names one: the output when that is what failed
        # (whatever the command did before it is done), else the store.
        name = type(error).__name__
        where: str | None
        if isinstance(error, OutputFailed):
            where, name = "standard output", "OSError"
            progress.silence(sys.stdout, 1)
        elif isinstance(error.filename, str):
            where = error.filename
        else:
            where = _database(args)
        text = error.strerror or name
        message = text if where is None else f"{where}: {text}"
        return _fail(name, message, EXIT_CODES["error"], as_json)
    except BaseException as error:
        stop = _interruption_in(error)
        if stop is not None:
            # Third-party code (an SDK being imported) that turned the interruption
            # into an error of its own.
            return _stopped(stop, as_json)
        # A bug, or host code (an embedder) that raised anything or exited (Ctrl-C is
        # handled above): its message could hold anything, so it is not shown.
        name = type(error).__name__
        message = f"internal error ({name}); please report it"
        return _fail(name, message, EXIT_CODES["error"], as_json)
