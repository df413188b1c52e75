"""``trueheart mcp``: serve the memory of one scope over the Model Context Protocol.

The scope, the trust ceiling and the retention of what is stored are fixed here, when
the server starts; no tool argument can change them. The MCP SDK (the ``mcp`` extra) is
imported only when the command runs, never by ``trueheart --help`` or the other commands.
The service is ``TrueHeart`` with its defaults: no embedder, so search is lexical.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime, timedelta
from typing import TextIO

from trueheart_core import stores
from trueheart_core.cli.common import ClosedStream, open_store, progress
from trueheart_core.cli.failures import CommandFailure, DatabaseMissing
from trueheart_core.cli.scopes import format_scope
from trueheart_core.domain.model import RetentionPolicy, TrustLevel
from trueheart_core.integrations.mcp_server.tools import DEFAULT_RETENTION, MemoryTools
from trueheart_core.service.trueheart import TrueHeart

__all__ = [
    "DEFAULT_PORT",
    "DEFAULT_RETENTION",
    "HOSTS",
    "TRUST_LEVELS",
    "ExtraMissing",
    "OptionConflict",
    "duration",
    "port",
    "run",
]

HOSTS = ("127.0.0.1", "::1", "localhost")
DEFAULT_PORT = 8000
TRUST_LEVELS = {level.name.lower(): level for level in TrustLevel}
_DURATION = re.compile(r"([1-9][0-9]{0,8})([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
INSTALL = "pip install 'trueheart-core[mcp]'"


class ExtraMissing(CommandFailure):
    """The MCP SDK is not installed (exit status 1)."""

    def __init__(self) -> None:
        super().__init__(f"the MCP server needs the mcp extra: {INSTALL}")


class OptionConflict(CommandFailure):
    """Options that do not go together (exit status 2, as a usage error)."""

    status = 2


def duration(text: str) -> timedelta:
    """A duration written as a whole number and a unit: ``30d``, ``12h``, ``90m``,
    ``45s``."""
    match = _DURATION.fullmatch(text)
    if match is None:
        raise argparse.ArgumentTypeError(
            "must be a whole number and a unit s, m, h or d, such as 30d"
        )
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def port(text: str) -> int:
    """A TCP port, 0 (any free port) through 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a whole number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be from 0 through 65535")
    return value


def _retention(args: argparse.Namespace) -> RetentionPolicy:
    """The retention of the options, refused (a usage error) when a deadline it gives
    from now on would fall after the year 9999, which no store can hold, or when
    ``--recall-for`` is shorter than ``--clear-for``."""
    durations = {
        "raw_ttl": args.raw_ttl or DEFAULT_RETENTION.raw_ttl,
        "clear_for": args.clear_for or DEFAULT_RETENTION.clear_for,
        "recall_for": args.recall_for or DEFAULT_RETENTION.recall_for,
    }
    room = datetime.max.replace(tzinfo=UTC) - datetime.now(UTC)
    for field, value in durations.items():
        if value >= room:
            option = "--" + field.replace("_", "-")
            raise OptionConflict(f"{option}: must end before the year 10000")
    if durations["recall_for"] < durations["clear_for"]:
        raise OptionConflict("--recall-for: must be at least --clear-for")
    return RetentionPolicy(**durations)


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Serve until the client goes away (stdio) or the process is stopped (HTTP)."""
    http = args.transport == "http"
    if not http and (args.host is not None or args.port is not None):
        raise OptionConflict("--host and --port need --transport http")
    retention = _retention(args)
    if not args.create and not stores.store_exists(args.db):
        raise DatabaseMissing(stores.redacted(args.db))
    try:  # the SDK, only now: --help and the other commands never import it
        from trueheart_core.integrations.mcp_server import server as wire  # noqa: PLC0415
    except ImportError:
        raise ExtraMissing from None
    repository = open_store(args.db, busy_timeout=args.busy_timeout, read_only=args.read_only)
    with TrueHeart(repository) as service:
        tools = MemoryTools(
            service,
            args.scope,
            read_only=args.read_only,
            max_trust=TRUST_LEVELS[args.max_trust],
            retention=retention,
        )
        mode = "read-only" if args.read_only else f"read-write, trust at most {args.max_trust}"
        about = f"serving the memory of {format_scope(args.scope)} in {args.db} ({mode})"
        server = wire.build_server(tools)
        if not http:
            # A stream the process started without: said plainly, before the SDK's task
            # group would wrap its error.
            for stream in (sys.stdin, sys.stdout):
                if isinstance(stream, ClosedStream):
                    raise stream.error()
            progress(f"{about} over stdio")
            wire.serve_stdio(server)
            return 0
        wire.serve_http(
            server,
            args.host or HOSTS[0],
            DEFAULT_PORT if args.port is None else args.port,
            ready=lambda url: progress(f"{about} at {url}"),
        )
    return 0
