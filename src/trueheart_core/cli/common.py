"""What every subcommand shares: opening the store, the confirmation prompt, the
one-line progress and hint messages on stderr, and the default time.

Read-only commands open the store read-only and never create a file; every command but
``demo`` refuses a path where no database exists. Destructive commands ask for
confirmation when stdin is a terminal, unless ``--yes`` is given.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, BinaryIO, TextIO

from trueheart_core import stores
from trueheart_core.cli import progress as progress_line
from trueheart_core.cli import render
from trueheart_core.cli.failures import DatabaseMissing, NotConfirmed, TargetRefused
from trueheart_core.cli.scopes import format_scope
from trueheart_core.domain.semantic.embedders import Embedder
from trueheart_core.errors import ValidationError
from trueheart_core.ports import Repository
from trueheart_core.service.trueheart import TrueHeart

__all__ = [
    "CORRUPT",
    "OK",
    "Input",
    "confirmed",
    "hint",
    "names_no_file",
    "now",
    "on_terminal",
    "open_store",
    "opened",
    "progress",
    "refuse_new_store",
    "remove_store",
]

OK = 0
CORRUPT = 4


def progress(message: str) -> None:
    """One line on stderr: progress before a long operation, a hint, a report. Its
    unprintable characters (of a path or an ID as typed) are escaped, so it stays one
    line and cannot drive the terminal."""
    progress_line.emit(sys.stderr, f"trueheart: {render.printable(message)}\n")


def hint(args: argparse.Namespace, as_of: datetime, out: TextIO, what: str) -> None:
    """One line on stderr when a read shows nothing (text output only), after what
    ``out`` holds so far."""
    out.flush()
    scopes = render.command("trueheart", "scopes", args.db)
    progress(
        f"hint: {what} in {format_scope(args.scope)} as of {render.when(as_of)}; "
        f"try another --as-of, or list the scopes with {scopes}"
    )


def on_terminal() -> bool:
    """Whether stdin is a terminal (where destructive commands ask first)."""
    stdin = sys.stdin
    try:
        return stdin is not None and stdin.isatty()
    except ValueError:  # closed
        return False


def confirmed(args: argparse.Namespace, question: str, answer: str | None = None) -> None:
    """Ask ``question`` on stderr when stdin is a terminal and ``--yes`` was not given,
    and raise :class:`NotConfirmed` unless the reply is ``answer`` (or, when ``answer``
    is ``None``, y or yes). Off a terminal, or with ``--yes``, proceeds without asking."""
    if args.yes or not on_terminal():
        return
    progress_line.emit(sys.stderr, f"trueheart: {render.printable(question)} ")
    try:
        line = sys.stdin.readline()  # "" at the end of input: declined
    except OSError:  # the terminal went away
        line = ""
    if answer is None:
        accepted = line.strip().lower() in ("y", "yes")
    else:  # exactly, spaces included: a subject ID may begin or end with one
        accepted = line.rstrip("\r\n") == answer
    if not accepted:
        raise NotConfirmed


class Input(io.IOBase):
    """A binary input (a file, or stdin) read a line at a time, whose read errors name
    it: an ``OSError`` with no file name of its own (a device error, a reset socket) is
    raised again with ``name``, so that the command reports the input rather than the
    store. Closing it leaves ``raw`` open."""

    def __init__(self, raw: BinaryIO, name: str) -> None:
        super().__init__()
        self._raw = raw
        self.name = name

    def readable(self) -> bool:
        return True

    def readline(self, size: int | None = -1, /) -> bytes:
        try:
            return self._raw.readline(-1 if size is None else size)
        except OSError as error:
            if error.filename is not None:
                raise
            raise OSError(error.errno, error.strerror, self.name) from None


def names_no_file(path: str) -> str | None:
    """Why the path of a file a command creates names no file: ``"not empty"``, or, for
    a path that ends in ``/``, ``.`` or ``..`` (a directory), the path and why; ``None``
    when it ends with a file name. Checked before any work, which would otherwise find
    it out only when it came to create the file."""
    if not path:
        return "not empty"
    if os.path.basename(path) in ("", ".", ".."):
        return f"not {path} (a path ending in /, . or .. names a directory)"
    return None


def remove_store(path: str) -> None:
    """Remove a SQLite file this command created, with its side files."""
    for name in (path, f"{path}-wal", f"{path}-shm", f"{path}-journal"):
        with contextlib.suppress(OSError):
            os.remove(name)


def refuse_new_store(target: str) -> None:
    """Refuse a new SQLite store at ``target`` where SQLite would mix it up with another
    database's files, before anything is written: side files of a removed database lie
    at it (their pages would be taken for the new store's, and a failed command's
    cleanup would remove them), or it is the side file path of an existing file (SQLite
    would remove it as that database's log)."""
    rule = stores.orphaned_side_files(target) or stores.side_file_of_another(target)
    if rule is not None:
        raise TargetRefused(target, rule)


def open_store(target: str, *, busy_timeout: float, read_only: bool) -> Repository:
    """``stores.open_repository``, with a refused path named as it was given (the
    library names it ``path``)."""
    try:
        return stores.open_repository(target, busy_timeout=busy_timeout, read_only=read_only)
    except ValidationError as error:
        field, _, rule = str(error).partition(": ")
        if field != "path":
            raise
        raise TargetRefused(stores.redacted(target), rule) from None


@contextmanager
def opened(
    args: argparse.Namespace,
    *,
    write: bool,
    embedder: Embedder | None = None,
    create: bool = False,
) -> Iterator[TrueHeart]:
    """The store at ``args.db``; read-only unless ``write``. Creates no file unless
    ``create`` (for a writing command that fills a new store). With ``embedder``, the
    service projects into its vector space only when asked (``auto_index=False``)."""
    if not (create and write):
        if not stores.store_exists(args.db):
            raise DatabaseMissing(stores.redacted(args.db))
    elif stores.is_server_url(args.db):
        # One attempt, as every command makes: a server that is not there is reported
        # at once, where the repository's pool would retry until its connect timeout.
        stores.store_exists(args.db)
    repository = open_store(args.db, busy_timeout=args.busy_timeout, read_only=not write)
    try:
        service = TrueHeart(repository, embedder=embedder, auto_index=False)
    except BaseException:
        repository.close()
        raise
    with service:
        yield service


def now(value: datetime | None) -> datetime:
    """``value``, or the current time in UTC."""
    return datetime.now(UTC) if value is None else value


class OutputFailed(OSError):
    """Standard output could not be written (a full disk, a device error)."""


class ClosedStream(io.TextIOBase):
    """A standard stream the command started without (``>&-``, ``<&-``): reading or
    writing it fails as a closed descriptor does, naming it."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    @property
    def buffer(self) -> ClosedStream:
        return self

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def error(self) -> OSError:
        """The error reading or writing this stream raises."""
        error = errno.EBADF
        if self.name == "stdout":
            return OutputFailed(error, os.strerror(error))
        return OSError(error, os.strerror(error), self.name)

    def write(self, text: Any) -> int:
        raise self.error()

    def read(self, size: int | None = -1) -> Any:
        raise self.error()

    def readline(self, size: int | None = -1) -> Any:
        raise self.error()

    def flush(self) -> None:
        pass  # nothing was written
