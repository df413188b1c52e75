"""``trueheart``: operate a TrueHeart store from the command line.

A thin layer over :class:`trueheart_core.TrueHeart`: every subcommand takes the
database path as its first argument, prints aligned text (or one JSON document with
``--json``) on stdout, and exits with 0 on success, 2 on a usage error, 3 when the
database or an entity is not found (or was deleted), 4 on corruption (or problems
found by ``verify``, or an erasure that did not verify), 5 when the store is busy or
read-only, and 1 on any other library error, printed as ``trueheart: <message>`` on
stderr without a traceback. See docs/cli.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TextIO

from trueheart_core.cli import commands, demo
from trueheart_core.cli.scopes import ScopeSyntaxError, parse_scope
from trueheart_core.domain import Scope
from trueheart_core.errors import (
    EntityDeleted,
    EntityNotFound,
    RepositoryBusy,
    RepositoryCorruption,
    RepositoryReadOnly,
    ScopeMismatch,
    TrueHeartError,
)

__all__ = ["EXIT_CODES", "main"]

EXIT_CODES = {
    "ok": 0,
    "error": 1,
    "usage": 2,
    "not_found": 3,
    "corruption": 4,
    "busy_or_read_only": 5,
}

Command = Callable[[argparse.Namespace, TextIO], int]


def _scope(text: str) -> Scope:
    try:
        return parse_scope(text)
    except ScopeSyntaxError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _instant(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be an ISO 8601 time") from None
    if value.tzinfo is None or value.utcoffset() is None:
        raise argparse.ArgumentTypeError("must have a UTC offset, such as Z or +02:00")
    return value


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a whole number") from None
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError("must be from 1 through 100")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a number of seconds") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError("must be from 0 through 3600 seconds")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="trueheart",
        description="Operate a TrueHeart Core store: statistics, verification, reads, "
        "governance, erasure, index rebuilds and backups.",
        epilog="Scopes are written tenant/owner/subject; inside a part, write '/' as %%2F "
        "and '%%' as %%25.",
    )
    subs = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("db", metavar="DB", help="path of the database file")
    common.add_argument("--json", action="store_true", help="print one JSON document")
    common.add_argument(
        "--busy-timeout",
        type=_seconds,
        default=5.0,
        metavar="SECONDS",
        help="how long to wait for another writer (default 5)",
    )

    def sub(name: str, run: Command, text: str, *, scope: str = "") -> argparse.ArgumentParser:
        p = subs.add_parser(name, parents=[common], help=text, description=text)
        p.set_defaults(run=run)
        if scope:
            p.add_argument(
                "--scope",
                type=_scope,
                required=scope == "required",
                metavar="T/O/S",
                help="exact scope tenant/owner/subject"
                + ("" if scope == "required" else " (default: the whole store)"),
            )
        return p

    sub("stats", commands.stats, "row counts and file sizes", scope="optional")
    sub("verify", commands.verify, "check every row and derived index", scope="optional")
    p = sub("audit", commands.audit, "newest audit records of a scope", scope="required")
    p.add_argument("--limit", type=_limit, default=20, help="1 to 100 (default 20)")
    p = sub("recall", commands.recall, "recall the memories of a scope", scope="required")
    p.add_argument("--as-of", type=_instant, help="ISO 8601 time (default: now)")
    p.add_argument("--limit", type=_limit, default=20, help="1 to 100 (default 20)")
    p.add_argument("--kind", action="append", default=[], help="only this kind (repeatable)")
    p = sub("search", commands.search, "search the memories of a scope", scope="required")
    p.add_argument("text", metavar="TEXT", help="what to search for")
    p.add_argument("--as-of", type=_instant, help="ISO 8601 time (default: now)")
    p.add_argument("--limit", type=_limit, default=20, help="1 to 100 (default 20)")
    p.add_argument("--budget", type=_positive, default=512, help="token budget (default 512)")
    p.add_argument("--kind", action="append", default=[], help="only this kind (repeatable)")
    p = sub("show", commands.show, "one memory, or one event receipt", scope="required")
    p.add_argument("id", metavar="ID", help="memory ID (event ID with --event)")
    p.add_argument("--event", action="store_true", help="show an event receipt")
    p = sub("forget", commands.forget, "forget one memory", scope="required")
    p.add_argument("memory_id", metavar="MEMORY_ID")
    p.add_argument("--at", type=_instant, help="when it is forgotten (default: now)")
    p.add_argument("--reason", default="command line request", help="not stored")
    p = sub("erase-subject", commands.erase_subject, "erase a whole scope", scope="required")
    p.add_argument("--at", type=_instant, help="when it is erased (default: now)")
    p.add_argument("--dry-run", action="store_true", help="report only, change nothing")
    sub("rebuild", commands.rebuild, "rebuild every derived index")
    p = sub("backup", commands.backup, "copy the store to a new file")
    p.add_argument("target", metavar="TARGET", help="path of the copy (must not exist)")
    p = subs.add_parser("demo", help="create a demo store and walk through its lifecycle")
    p.add_argument("path", metavar="PATH", help="path of the new store (must not exist)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=demo.run)
    return parser


def _fail(message: str, status: int) -> int:
    sys.stderr.write(f"trueheart: {message}\n")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (see the module docstring)."""
    args = build_parser().parse_args(argv)
    try:
        status: int = args.run(args, sys.stdout)
    except commands.DatabaseMissing as missing:
        return _fail(f"database not found: {missing.args[0]}", EXIT_CODES["not_found"])
    except (EntityNotFound, ScopeMismatch, EntityDeleted) as error:
        return _fail(str(error), EXIT_CODES["not_found"])
    except RepositoryCorruption as error:
        return _fail(str(error), EXIT_CODES["corruption"])
    except (RepositoryBusy, RepositoryReadOnly) as error:
        return _fail(str(error), EXIT_CODES["busy_or_read_only"])
    except TrueHeartError as error:
        return _fail(str(error), EXIT_CODES["error"])
    return status
