"""The maintenance subcommands: ``rebuild`` (every derived index), ``compact`` (the space
of erased rows reclaimed by a rewrite of the store) and ``backup`` (an online copy into a
new file). Each shows its progress on stderr."""

from __future__ import annotations

import argparse
import os
from typing import TextIO

from trueheart_core import stores
from trueheart_core.cli import progress, render
from trueheart_core.cli.common import OK, opened
from trueheart_core.cli.failures import TargetExists, TargetRefused
from trueheart_core.errors import ValidationError
from trueheart_core.service.trueheart import TrueHeart

__all__ = ["backup", "compact", "rebuild"]


def rebuild(args: argparse.Namespace, out: TextIO) -> int:
    with (
        opened(args, write=True) as service,
        progress.task(f"rebuilding the indexes of {args.db}"),
    ):
        report = service.rebuild_indexes()
    doc = render.rebuild(report)
    if args.json:
        render.document(out, doc)
    else:
        render.pairs(out, list(doc.items()))
    return OK


def _size(args: argparse.Namespace, service: TrueHeart) -> int | None:
    """The bytes the store takes. A file's size, not the store's statistics: those count
    every row of the store; a server's schema has no size but theirs."""
    if stores.is_server_url(args.db):
        return service.stats().database_bytes
    return os.path.getsize(args.db)


def compact(args: argparse.Namespace, out: TextIO) -> int:
    with opened(args, write=True) as service:
        before = _size(args, service)
        with progress.task(f"rewriting {args.db} into fresh pages"):
            service.compact()
        after = _size(args, service)
    doc = {"database_bytes_before": before, "database_bytes": after}
    if args.json:
        render.document(out, doc)
    else:
        render.pairs(out, list(doc.items()))
    return OK


def backup(args: argparse.Namespace, out: TextIO) -> int:
    if os.path.lexists(args.target):
        raise TargetExists(args.target, "backup writes a new file")
    with (
        opened(args, write=False) as service,
        progress.task(f"backing up {args.db} to {args.target}"),
    ):
        try:
            report = service.backup(args.target)
        except ValidationError as error:
            field, _, rule = str(error).partition(": ")
            if field != "path":
                raise
            raise TargetRefused(args.target, rule) from None
    doc = render.backup(report)
    if args.json:
        render.document(out, doc)
    else:
        render.pairs(out, list(doc.items()))
    return OK
