"""The command line's arguments: the parser of every subcommand and the argument types.

A usage error does not exit from inside argparse: :class:`Parser` raises
:class:`UsageError`, and :func:`trueheart_core.cli.main` reports it (with the usage on
stderr, and also as a JSON object on stdout under ``--json``) and returns status 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime
from typing import NoReturn, TextIO

import trueheart_core
from trueheart_core import stores
from trueheart_core.cli import claims, commands, demo, portable, serve_mcp
from trueheart_core.cli.common import names_no_file
from trueheart_core.cli.scopes import ScopeSyntaxError, parse_scope
from trueheart_core.domain import validation
from trueheart_core.domain.model import Scope
from trueheart_core.domain.search.model import MAX_BUDGET_TOKENS
from trueheart_core.errors import ValidationError
from trueheart_core.service.trueheart import MAX_SYNC_BATCH

__all__ = ["Parser", "UsageError", "build_parser"]

Command = Callable[[argparse.Namespace, TextIO], int]

# Not %-formatted by argparse (an epilog is only when it holds "%(prog)"), so written
# as displayed.
SCOPE_SYNTAX = (
    "Scopes are written tenant/owner/subject; inside a part, write '/' as %2F and '%' as %25."
)


class UsageError(Exception):
    """A command line argparse refused; ``parser`` is the (sub)command's parser."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message


class Parser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` that raises :class:`UsageError` instead of
    printing and exiting; subcommand parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)


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


def _whole(text: str) -> int:
    """A whole number written in ASCII digits (``int`` would also take other scripts'
    digits, and underscores)."""
    digits = text.strip()
    digits = digits[1:] if digits[:1] in ("+", "-") else digits
    if not digits.isascii() or not digits.isdigit():
        raise argparse.ArgumentTypeError("must be a whole number")
    return int(text)


def _limit(text: str) -> int:
    value = _whole(text)
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError("must be from 1 through 100")
    return value


def _budget(text: str) -> int:
    """A token budget, in the range a search takes."""
    value = _whole(text)
    if not 1 <= value <= MAX_BUDGET_TOKENS:
        raise argparse.ArgumentTypeError(f"must be from 1 through {MAX_BUDGET_TOKENS}")
    return value


def _name(text: str) -> str:
    """A memory or event ID, tenant, owner or kind, as the library takes an ID
    (non-blank, at most 128 characters): refused here, like a scope's parts, as a usage
    error."""
    try:
        return validation.text("name", text)
    except ValidationError as error:
        raise argparse.ArgumentTypeError(str(error).partition(": ")[2]) from None


def _batch(text: str) -> int:
    value = _whole(text)
    if not 1 <= value <= MAX_SYNC_BATCH:
        raise argparse.ArgumentTypeError(f"must be from 1 through {MAX_SYNC_BATCH}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a number of seconds") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError("must be from 0 through 3600 seconds")
    return value


IN_MEMORY = ":memory:"


def _file(text: str) -> str:
    """The path of a database file. SQLite reads the name ``:memory:`` as a store in
    memory, which the library can open but which is gone when the command ends: what a
    command wrote there would be lost, and a read would find an empty store."""
    if text == IN_MEMORY:
        raise argparse.ArgumentTypeError(
            "must be the path of a file, not :memory: (./:memory: names a file of that name)"
        )
    return text


def _new_file(text: str) -> str:
    """The path of a file a command creates (``demo``'s and ``import``'s new store,
    ``backup``'s copy): as :func:`_file`, and ending with a file name. An empty path, or
    one that ends in ``/``, ``.`` or ``..``, names no file (or a directory), which the
    command would find out only when it came to create the file, after its work."""
    _file(text)
    why = names_no_file(text)
    if why is not None:
        raise argparse.ArgumentTypeError(f"must be the path of a file, {why}")
    return text


def _store(text: str) -> str:
    """A database path (not ``:memory:``, see :func:`_file`), or a PostgreSQL URL
    without a password (a password given on a command line shows in process listings
    and shell history: libpq reads it from ``PGPASSWORD`` or a password file instead)."""
    _file(text)
    if stores.is_server_url(text):
        try:
            held = stores.holds_password(text)
        except ValueError:
            raise argparse.ArgumentTypeError("must be a valid PostgreSQL URL") from None
        if held:
            raise argparse.ArgumentTypeError(
                "must not hold a password: set PGPASSWORD or use a password file"
            )
    return text


def _new_store(text: str) -> str:
    """The store a command may create (``import``, ``mcp --create``): a PostgreSQL URL
    as :func:`_store` takes it, or the path of a new file (see :func:`_new_file`)."""
    _store(text)
    if not stores.is_server_url(text):
        _new_file(text)
    return text


def _store_options(store: Callable[[str], str]) -> Parser:
    """The options every command on a store shares, ``DB`` taken by ``store``."""
    options = Parser(add_help=False)
    options.add_argument(
        "db",
        metavar="DB",
        type=store,
        help="path of the database file, or a postgresql:// URL (?schema=NAME)",
    )
    options.add_argument("--json", action="store_true", help="print one JSON document")
    options.add_argument(
        "--busy-timeout",
        type=_seconds,
        default=5.0,
        metavar="SECONDS",
        help="how long to wait for another writer (default 5)",
    )
    return options


def build_parser() -> Parser:
    """The argument parser of every subcommand."""
    parser = Parser(
        prog="trueheart",
        description="Operate a TrueHeart Core store: statistics, verification, reads, "
        "ingest, governance, expiry, erasure, index rebuilds, semantic projection, backups, "
        "export and import, and an MCP server.",
        epilog=SCOPE_SYNTAX,
    )
    parser.add_argument(
        "--version", action="version", version=f"trueheart {trueheart_core.__version__}"
    )
    subs = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = _store_options(_store)
    creating = _store_options(_new_store)  # a command that may create the store
    confirm = Parser(add_help=False)
    confirm.add_argument(
        "-y", "--yes", action="store_true", help="do not ask for confirmation on a terminal"
    )

    def sub(
        name: str,
        run: Command,
        text: str,
        *,
        scope: str = "",
        asks: bool = False,
        creates: bool = False,
    ) -> argparse.ArgumentParser:
        parents = [creating if creates else common]
        if asks:
            parents.append(confirm)
        epilog = SCOPE_SYNTAX if scope else None
        p = subs.add_parser(name, parents=parents, help=text, description=text, epilog=epilog)
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
    p = sub("scopes", commands.scopes, "the scopes that hold events or memories")
    p.add_argument(
        "--tenant", type=_name, metavar="TENANT", help="only this tenant ID (not escaped)"
    )
    p.add_argument("--owner", type=_name, metavar="OWNER", help="only this owner ID (not escaped)")
    p = sub("audit", commands.audit, "newest audit records of a scope", scope="required")
    p.add_argument("--limit", type=_limit, default=20, help="1 to 100 (default 20)")
    p = sub("recall", commands.recall, "recall the memories of a scope", scope="required")
    p.add_argument("--as-of", type=_instant, help="ISO 8601 time (default: now)")
    p.add_argument("--limit", type=_limit, default=20, help="1 to 100 (default 20)")
    p.add_argument(
        "--kind", type=_name, action="append", default=[], help="only this kind (repeatable)"
    )
    p = sub("claims", claims.claims, "one page of the claims of a scope", scope="required")
    p.add_argument("--subject", help="only claims about this subject")
    p.add_argument("--predicate", help="only claims with this predicate")
    p.add_argument("--as-of", type=_instant, metavar="TIME", help="valid time (default: now)")
    p.add_argument("--known-at", type=_instant, metavar="TIME", help="default: --as-of")
    p.add_argument(
        "--limit",
        type=claims.page_limit,
        default=claims.DEFAULT_LIMIT,
        help="1 to 1000 (default 100)",
    )
    p.add_argument("--cursor", help="the cursor a previous page printed")
    p = sub("search", commands.search, "search the memories of a scope", scope="required")
    p.add_argument("text", metavar="TEXT", help="what to search for")
    p.add_argument("--as-of", type=_instant, help="ISO 8601 time (default: now)")
    p.add_argument("--limit", type=_limit, default=20, help="1 to 100 (default 20)")
    p.add_argument("--budget", type=_budget, default=512, help="token budget (default 512)")
    p.add_argument(
        "--kind", type=_name, action="append", default=[], help="only this kind (repeatable)"
    )
    p = sub("list", commands.list_memories, "one page of the memories of a scope", scope="required")
    p.add_argument(
        "--status", choices=("active", "sealed"), help="only this status (default: both)"
    )
    p.add_argument(
        "--kind", type=_name, action="append", default=[], help="only this kind (repeatable)"
    )
    p.add_argument("--limit", type=_limit, default=100, help="1 to 100 (default 100)")
    p.add_argument("--descending", action="store_true", help="from the greatest memory ID")
    p.add_argument("--cursor", help="the cursor a previous page printed")
    p = sub("show", commands.show, "one memory, or one event receipt", scope="required")
    p.add_argument("id", metavar="ID", type=_name, help="memory ID (event ID with --event)")
    p.add_argument("--event", action="store_true", help="show an event receipt")
    p = sub("forget", commands.forget, "forget one memory", scope="required", asks=True)
    p.add_argument("memory_id", metavar="MEMORY_ID", type=_name)
    p.add_argument("--at", type=_instant, metavar="TIME", help="when (default: now)")
    p.add_argument("--reason", default="command line request", help="not stored")
    for name, run, what in (
        ("seal", commands.seal, "seal one memory (kept, no longer recalled or searched)"),
        ("restore", commands.restore, "restore one sealed memory"),
    ):
        p = sub(name, run, what, scope="required")
        p.add_argument("memory_id", metavar="MEMORY_ID", type=_name)
        p.add_argument("--at", type=_instant, metavar="TIME", help="when (default: now)")
        p.add_argument("--reason", default="command line request", help="not stored")
    p = sub(
        "delete-event",
        commands.delete_event,
        "delete one event and every memory derived from it",
        scope="required",
        asks=True,
    )
    p.add_argument("event_id", metavar="EVENT_ID", type=_name)
    p.add_argument("--at", type=_instant, metavar="TIME", help="when (default: now)")
    p.add_argument("--reason", default="command line request", help="not stored")
    p = sub("expire", commands.expire, "remove the raw bodies whose retention ended")
    p.add_argument(
        "--at", type=_instant, metavar="TIME", help="expire what is due by then (default: now)"
    )
    p = sub(
        "erase-subject", commands.erase_subject, "erase a whole scope", scope="required", asks=True
    )
    p.add_argument("--at", type=_instant, metavar="TIME", help="when (default: now)")
    p.add_argument("--dry-run", action="store_true", help="report only, change nothing")
    p.add_argument(
        "--no-rewrite",
        dest="rewrite",
        action="store_false",
        help="do not rewrite storage (PostgreSQL: removed rows wait for compact; "
        "SQLite erases in place either way)",
    )
    sub("rebuild", commands.rebuild, "rebuild every derived index")
    sub("compact", commands.compact, "reclaim what was erased: rewrite the store afresh")
    sub(
        "semantic-status",
        commands.semantic_status,
        "how far the memories are embedded, by scope",
        scope="optional",
    )
    p = sub(
        "semantic-sync",
        commands.semantic_sync,
        "embed the missing and stale memories, by scope",
        scope="optional",
    )
    p.add_argument(
        "--embedder",
        required=True,
        metavar="MODULE:ATTR",
        help="the embedder, or a class or function making one without arguments",
    )
    p.add_argument(
        "--batch", type=_batch, default=64, metavar="N", help="1 to 4096 per call (default 64)"
    )
    p = sub("ingest", commands.ingest, "ingest events and memories from JSON Lines")
    p.add_argument("file", metavar="FILE", help="a JSON Lines file, or - for stdin")
    p.epilog = (
        'Each line is one JSON object, {"type": "event", ...} or {"type": "memory", ...}; '
        "docs/cli.md lists the fields. Every line is checked before anything is written."
    )
    p = sub("backup", commands.backup, "copy the store to a new file")
    p.add_argument(
        "target", metavar="TARGET", type=_new_file, help="path of the copy (must not exist)"
    )
    portable.add_parsers(sub)
    text = "create a demo store and walk through its lifecycle"
    p = subs.add_parser("demo", help=text, description=text)
    p.add_argument(
        "path", metavar="PATH", type=_new_file, help="path of the new store (must not exist)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--at", type=_instant, metavar="TIME", help="the demo's clock (default: now)")
    p.set_defaults(run=demo.run)
    _mcp(subs)
    return parser


def _mcp(subs: argparse._SubParsersAction[Parser]) -> None:
    """``mcp``: its options are its own (``--store`` instead of ``DB``, no ``--json``:
    over stdio, stdout carries the protocol)."""
    text = "serve the memory of one scope to MCP clients (needs the mcp extra)"
    p = subs.add_parser("mcp", help=text, description=text, epilog=SCOPE_SYNTAX)
    p.add_argument(
        "--store",
        dest="db",
        required=True,
        metavar="PATH",
        type=_new_store,  # with --create, a new store
        help="path of the database file, or a postgresql:// URL (?schema=NAME)",
    )
    p.add_argument(
        "--scope",
        type=_scope,
        required=True,
        metavar="T/O/S",
        help="the exact scope tenant/owner/subject every tool reads and writes",
    )
    access = p.add_mutually_exclusive_group()
    access.add_argument(
        "--read-only",
        action="store_true",
        help="offer only the reading tools, and open the store read-only",
    )
    access.add_argument(
        "--create", action="store_true", help="create the store when no file is at PATH"
    )
    p.add_argument(
        "--max-trust",
        choices=tuple(serve_mcp.TRUST_LEVELS),
        default="observed",
        help="the highest trust a stored memory may have (default observed)",
    )
    defaults = serve_mcp.DEFAULT_RETENTION
    for flag, value, what in (
        ("--raw-ttl", defaults.raw_ttl, "how long a stored source event keeps its body"),
        ("--clear-for", defaults.clear_for, "how long a stored memory stays clear"),
        ("--recall-for", defaults.recall_for, "how long a stored memory can be recalled"),
    ):
        p.add_argument(
            flag,
            type=serve_mcp.duration,
            metavar="DURATION",
            help=f"{what}, such as 30d or 12h (default {value.days}d)",
        )
    p.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default), or streamable HTTP on a loopback address",
    )
    p.add_argument(
        "--host",
        choices=serve_mcp.HOSTS,
        help=f"with --transport http: the loopback address to bind (default {serve_mcp.HOSTS[0]})",
    )
    p.add_argument(
        "--port",
        type=serve_mcp.port,
        help=f"with --transport http: the TCP port, 0 for any free one (default "
        f"{serve_mcp.DEFAULT_PORT})",
    )
    p.add_argument(
        "--busy-timeout",
        type=_seconds,
        default=5.0,
        metavar="SECONDS",
        help="how long a call waits for another writer (default 5)",
    )
    p.set_defaults(run=serve_mcp.run)
