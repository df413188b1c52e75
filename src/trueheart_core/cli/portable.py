"""``export`` and ``import``: a store (or one scope) as a TrueHeart export file, and an
export file into an empty store (see docs/export-format.md).

``export`` opens the store read-only and writes the file to ``--output`` (a new file) or
to stdout, then reports what it wrote: on stdout (text, or one JSON document with
``--json``) when the file went to ``--output``, and as one line on stderr when the export
itself went to stdout. ``import`` reads ``FILE`` (``-`` for stdin) into the store at
``DB`` and prints what it stored. When no file is at ``DB``, it builds the store under a
temporary name beside it and links it into place once the import has committed: a
refused import leaves nothing behind, and a file another process creates at ``DB``
meanwhile is never replaced or removed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from trueheart_core import stores
from trueheart_core.cli import render
from trueheart_core.cli.commands import opened, progress
from trueheart_core.cli.common import Input, names_no_file
from trueheart_core.cli.failures import CommandFailure, TargetExists, TargetRefused
from trueheart_core.cli.newfile import built_in_place
from trueheart_core.cli.progress import task as progress_task
from trueheart_core.domain.portable import ExportReceipt, ImportReceipt
from trueheart_core.service.trueheart import TrueHeart

__all__ = ["add_parsers", "export", "import_"]

OK = 0
STDIO = "-"

Sub = Callable[..., argparse.ArgumentParser]


class ExportNeedsOutput(CommandFailure):
    """``--json`` of an export written to stdout: the document would mix with the
    export (exit status 2)."""

    status = 2

    def __init__(self) -> None:
        super().__init__("--json needs --output FILE: the export itself goes to stdout")


class OutputNamesNoFile(CommandFailure):
    """``--output`` empty, or ending in ``/``, ``.`` or ``..``: it names no file to create
    (exit status 2, before the store is opened)."""

    status = 2

    def __init__(self, why: str) -> None:
        super().__init__(f"--output must be the path of a file, {why}")


class ImportFileMissing(CommandFailure):
    """No file to import at the given path (exit status 3)."""

    status = 3

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: export file not found")


def add_parsers(sub: Sub) -> None:
    """Register ``export`` and ``import`` with the parser's subcommand factory."""
    p = sub("export", export, "write the store to a TrueHeart export file", scope="optional")
    p.add_argument(
        "--output",
        "-o",
        default=STDIO,
        metavar="FILE",
        help="path of the new export file (must not exist), or - for stdout (default)",
    )
    p = sub("import", import_, "load a TrueHeart export file into an empty store", creates=True)
    p.add_argument("file", metavar="FILE", help="path of the export file, or - for stdin")


def _receipt(value: ExportReceipt | ImportReceipt) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "scope": render.scope_text(value.scope),
        "rows": value.rows,
        "rows_by_kind": dict(value.counts),
        "digest": value.digest,
    }
    if isinstance(value, ExportReceipt):
        doc["exported_at"] = render.when(value.exported_at)
    else:
        doc["search_entries"] = value.search_entries
    return doc


def _report(args: argparse.Namespace, out: TextIO, doc: dict[str, Any]) -> None:
    if args.json:
        render.document(out, doc)
        return
    items: list[tuple[str, object]] = [
        ("scope", doc["scope"] or "(whole store)"),
        ("rows", doc["rows"]),
    ]
    items += [(f"rows of kind {kind}", n) for kind, n in doc["rows_by_kind"].items()]
    items += [(k, v) for k, v in doc.items() if k not in ("scope", "rows", "rows_by_kind")]
    render.pairs(out, items)


@contextlib.contextmanager
def _utf8(stream: TextIO) -> Iterator[TextIO]:
    """UTF-8 text with ``\\n`` line ends over a text stream's bytes (when it has them),
    whatever the locale's encoding; the stream itself is left open."""
    stream.flush()
    raw = getattr(stream, "buffer", None)
    if raw is None:
        yield stream
        return
    wrapper = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
    try:
        yield wrapper
        wrapper.flush()
    finally:
        # Detached even after a failure: collected attached, it would close the stream.
        with contextlib.suppress(OSError, ValueError):
            wrapper.detach()


def export(args: argparse.Namespace, out: TextIO) -> int:
    to_stdout = args.output == STDIO
    if to_stdout and args.json:
        raise ExportNeedsOutput()
    if not to_stdout:
        why = names_no_file(args.output)
        if why is not None:
            raise OutputNamesNoFile(why)
        if os.path.lexists(args.output):
            raise TargetExists(args.output, "export writes a new file")
        side_file = stores.side_file_of_another(args.output)
        if side_file is not None:
            raise TargetRefused(args.output, side_file)
    with opened(args, write=False) as service:
        if to_stdout:
            with _utf8(out) as text:
                receipt = service.export_store(text, scope=args.scope)
            progress(f"exported {receipt.rows} rows, digest {receipt.digest}")
            return OK
        with progress_task(f"exporting {args.db} to {args.output}"):
            receipt = _export_to_file(service, args.output, args)
    _report(args, out, _receipt(receipt))
    return OK


def _export_to_file(service: TrueHeart, path: str, args: argparse.Namespace) -> ExportReceipt:
    """Export into a new file at ``path``, readable and writable by its owner only (it
    holds every body, as a backup does); a file left part-way is removed."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        raise TargetExists(path, "export writes a new file") from None
    try:
        handle = open(fd, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.remove(path)
        raise
    try:
        with handle:
            return service.export_store(handle, scope=args.scope)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.remove(path)
        if isinstance(error, OSError) and error.filename is None:
            # Writing the output failed (a full disk): name the output, not the store.
            raise OSError(error.errno, error.strerror, path) from None
        raise


@contextlib.contextmanager
def _lines(path: str) -> Iterator[Input]:
    """The file at ``path``, or stdin for ``-``, as an :class:`Input` that names it in
    its read errors."""
    if path == STDIO:
        yield Input(sys.stdin.buffer, "stdin")
        return
    try:
        file = open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        raise ImportFileMissing(path) from None
    with file:
        yield Input(file, path)


def _import_into_new_file(args: argparse.Namespace, source: Input) -> ImportReceipt:
    """Import into a new SQLite file at ``args.db`` (see :mod:`~trueheart_core.cli.newfile`)."""

    def build(temporary: str) -> ImportReceipt:
        with opened(
            argparse.Namespace(**{**vars(args), "db": temporary}), write=True, create=True
        ) as service:
            return service.import_store(source)

    return built_in_place(args.db, build, busy_timeout=args.busy_timeout, purpose="import")


def import_(args: argparse.Namespace, out: TextIO) -> int:
    with (
        _lines(args.file) as source,
        progress_task(f"importing {'stdin' if args.file == STDIO else args.file} into {args.db}"),
    ):
        if stores.is_server_url(args.db) or os.path.lexists(args.db):
            # A server's new schema stays when the import is refused (empty, as a
            # refused import leaves it).
            with opened(args, write=True, create=True) as service:
                receipt = service.import_store(source)
        else:
            receipt = _import_into_new_file(args, source)
    _report(args, out, _receipt(receipt))
    return OK
