"""Opening a store by its target: the one place that names a concrete adapter for the
command line and the evicortex face.

A target is a SQLite path (``"memory.db"``, ``":memory:"``) or a PostgreSQL URL
(``"postgresql://user@host:5432/db"``, also ``postgres://``). A URL may carry the
library's own ``schema`` query parameter (``...?schema=agents``), the name of the schema
that holds the store (default ``trueheart``); it is taken off before the URL reaches
libpq. Everything else in the URL is libpq's.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from trueheart_core.adapters.sqlite import SQLiteRepository, files
from trueheart_core.adapters.sqlite import connection as sqlite_connection
from trueheart_core.errors import ValidationError
from trueheart_core.ports import Repository

_SCHEMES = ("postgresql://", "postgres://")
DEFAULT_SCHEMA = "trueheart"


def _needs_extra() -> ValidationError:
    return ValidationError(
        "url", "needs the postgres extra: pip install 'trueheart-core[postgres]'"
    )


def is_server_url(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL server rather than a SQLite file."""
    return isinstance(target, str) and target.startswith(_SCHEMES)


def server_target(url: str) -> tuple[str, str]:
    """``(conninfo, schema)`` of a PostgreSQL URL: the URL without the ``schema``
    parameter, and the schema it names (default ``trueheart``). Every other parameter
    reaches libpq exactly as written (decoding and encoding it again would turn a
    ``%20`` into a ``+``, which libpq does not read as a space). A URL that cannot be
    parsed (an unclosed IPv6 bracket) is ``ValidationError``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ValidationError("url", "must be a PostgreSQL URL") from None
    fields = [
        (
            field,
            [value for key, value in parse_qsl(field, keep_blank_values=True) if key == "schema"],
        )
        for field in (parts.query.split("&") if parts.query else [])
    ]
    named = [value for _, values in fields for value in values]
    if len(named) > 1:
        raise ValidationError("url", "must name at most one schema")
    rest = "&".join(field for field, values in fields if not values)
    conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment))
    return conninfo, named[0] if named else DEFAULT_SCHEMA


_SECRET_PARAMETERS = frozenset({"password", "sslpassword"})
"""libpq's URL parameters that hold a secret."""


def holds_password(url: str) -> bool:
    """Whether a PostgreSQL URL holds a secret: a password after the user name, or a
    ``password`` or ``sslpassword`` parameter (``ValueError`` for a malformed URL)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    return parts.password is not None or any(key in _SECRET_PARAMETERS for key, _ in query)


def redacted(target: str) -> str:
    """``target`` fit to print: a URL with ``***`` for its password and the values of
    its secret parameters."""
    if not is_server_url(target):
        return target
    try:
        if not holds_password(target):
            return target
    except ValueError:  # nothing of a malformed URL is shown
        return f"{target.partition('://')[0]}://..."
    parts = urlsplit(target)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username or ''}:***@{netloc.rpartition('@')[2]}"
    query = urlencode(
        [
            (key, "***" if key in _SECRET_PARAMETERS else value)
            for key, value in parse_qsl(parts.query, keep_blank_values=True)
        ],
        safe="*",
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def store_exists(target: str) -> bool:
    """Whether a store is at ``target`` (a file, or a schema with our tables on the
    server); a server that cannot be reached raises ``RepositoryUnavailable``."""
    if is_server_url(target):
        try:
            from trueheart_core.adapters.postgres import schema_exists  # noqa: PLC0415
        except ImportError:
            raise _needs_extra() from None
        conninfo, schema = server_target(target)
        return schema_exists(conninfo, schema)
    return target == ":memory:" or os.path.exists(target)


def orphaned_side_files(target: str) -> str | None:
    """For a SQLite path where no database is: the rule a new store there breaks when a
    WAL, shared-memory or journal file of a removed database lies at it (SQLite would
    take its pages for the new database's), else ``None``."""
    if is_server_url(target) or target == ":memory:":
        return None
    return files.ORPHANS if files.orphans(os.path.abspath(target)) else None


def side_file_of_another(path: str) -> str | None:
    """For the path of a new file: the rule it breaks when it is the WAL, journal or
    shared-memory path of an existing file (``w.db-wal`` beside ``w.db``; SQLite would
    take the new file for that database's log and remove it), else ``None``. The same
    rule as a backup's target follows."""
    if is_server_url(path) or path == ":memory:":
        return None
    return files.SIDE_FILE if files.side_file_of_another(path) else None


NEW_STORE_PATH_BYTES = files.NEW_STORE_PATH_BYTES
"""The longest absolute path, in bytes, at which a new SQLite store can be created."""


def settle_file(path: str, *, busy_timeout: float) -> None:
    """Make the closed SQLite store at ``path`` whole in its database file, its WAL
    copied into it (see ``adapters.sqlite.connection.settle``): before the file alone
    is linked or copied elsewhere. ``RepositoryFull`` when there is no room for it."""
    sqlite_connection.settle(path, busy_timeout=busy_timeout)


def open_repository(
    target: str | os.PathLike[str], *, read_only: bool = False, busy_timeout: float = 5.0
) -> Repository:
    """A repository on ``target``: a :class:`PostgresRepository` for a URL (with
    ``busy_timeout`` as its lock timeout), else a :class:`SQLiteRepository`."""
    if isinstance(target, str) and is_server_url(target):
        try:
            from trueheart_core.adapters.postgres import PostgresRepository  # noqa: PLC0415
        except ImportError:
            raise _needs_extra() from None
        conninfo, schema = server_target(target)
        return PostgresRepository(
            conninfo, schema=schema, read_only=read_only, lock_timeout=max(busy_timeout, 0.001)
        )
    return SQLiteRepository(target, busy_timeout=busy_timeout, read_only=read_only)
