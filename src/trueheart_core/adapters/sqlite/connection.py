"""Opening SQLite files safely, connection settings, checkpoints and error translation.

:func:`translate` is the one place where driver errors become library errors.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from trueheart_core.adapters.sqlite import schema
from trueheart_core.errors import (
    RepositoryBusy,
    RepositoryCorruption,
    TrueHeartError,
    ValidationError,
)

SQLITE_BUSY = 5
SQLITE_LOCKED = 6
# In WAL mode a connection that cannot get a stable snapshot of the shared-memory index
# after many attempts (other connections checkpoint and reset the log under it) gives
# up with SQLITE_PROTOCOL: contention, not damage, and nothing was done.
SQLITE_PROTOCOL = 15
_CONTENTION = (SQLITE_BUSY, SQLITE_LOCKED, SQLITE_PROTOCOL)
_HEADER_MAGIC = b"SQLite format 3\x00"
_HEADER_SIZE = 100


@contextlib.contextmanager
def translate(diagnostic: str) -> Iterator[None]:
    """Turn any driver error raised in the block into a library error, without chaining.

    Lock contention (``SQLITE_BUSY``, ``SQLITE_LOCKED``, and ``SQLITE_PROTOCOL``, which
    WAL mode returns when other connections keep resetting the log) becomes
    ``RepositoryBusy``; every other driver error becomes ``RepositoryCorruption``. Only
    the fixed diagnostic is kept: SQLite's own message never reaches the caller.
    """
    try:
        yield
    except TrueHeartError:
        raise
    except sqlite3.Error as error:
        raise translated(error, diagnostic) from None


def translated(error: sqlite3.Error, diagnostic: str) -> TrueHeartError:
    """The library error for a driver error (total over every ``sqlite3.Error``)."""
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in _CONTENTION:
        return RepositoryBusy(diagnostic)
    return RepositoryCorruption(diagnostic)


def normalise_path(path: object) -> str:
    """The database path as text, or ``":memory:"``."""
    if isinstance(path, Path | os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise ValidationError("path", "must be a str or os.PathLike")
    if "\x00" in path:
        raise ValidationError("path", "must be a str or os.PathLike")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("path", "must be valid UTF-8") from None
    return path


def inspect_file(path: str) -> None:
    """Refuse, by reading the header only, any file that is not a database of ours.

    Runs before SQLite touches the file, so a foreign, damaged or newer file is never
    modified (not even switched to WAL) and no side files are created next to it.
    """
    try:
        with open(path, "rb") as handle:
            header = handle.read(_HEADER_SIZE)
        # A checkpoint (here after a crash, or live in another process) writes page 1
        # before the pages that extend the file, and empties the WAL only when done: a
        # main file shorter than its header is damage only when the WAL is empty, and
        # the size is read last so that a finished checkpoint is seen whole.
        wal_in_use = _has_wal(path)
        size = os.path.getsize(path)
    except OSError:
        raise RepositoryCorruption("schema initialization failed") from None
    if len(header) < _HEADER_SIZE or not header.startswith(_HEADER_MAGIC):
        raise RepositoryCorruption("invalid schema catalog")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    page_count = int.from_bytes(header[28:32], "big")
    header_count_valid = header[24:28] == header[92:96]
    if header_count_valid and page_count and size < page_count * page_size and not wal_in_use:
        raise RepositoryCorruption("truncated database file")
    if int.from_bytes(header[68:72], "big") != schema.APPLICATION_ID:
        raise RepositoryCorruption("invalid schema catalog")
    version = int.from_bytes(header[60:64], "big", signed=True)
    if version > schema.SCHEMA_VERSION:
        raise RepositoryCorruption("unsupported schema version")
    if version < 1:
        raise RepositoryCorruption("invalid schema version")


def _has_wal(path: str) -> bool:
    try:
        return os.path.getsize(f"{path}-wal") > 0
    except OSError:
        return False


def connect(target: str, *, busy_timeout: float, read_only: bool) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) shared across threads."""
    if read_only:
        uri = f"file:{quote(os.path.abspath(target))}?mode=ro"
        conn = sqlite3.connect(
            uri, uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA query_only = ON")
        return conn
    return sqlite3.connect(
        target, timeout=busy_timeout, isolation_level=None, check_same_thread=False
    )


CACHE_KIB = 65_536
"""The page cache of each connection, in KiB (64 MiB; SQLite's default is 2 MiB)."""


def configure(conn: sqlite3.Connection, *, file_backed: bool, read_only: bool) -> None:
    """Durability and erasure settings; fail closed if a required capability is missing."""
    conn.execute("PRAGMA trusted_schema = OFF")
    # A page cache that holds a scope's vectors (1 KiB each at 256 dimensions) lets a
    # semantic scan read memory instead of the operating system's cache. SQLite fills it
    # only as pages are read, so a small store never uses it all.
    conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    if conn.execute("SELECT json_valid('{}')").fetchone() != (1,):
        raise RepositoryCorruption("SQLite JSON support unavailable")
    if read_only:
        return
    # Deleted content is overwritten with zeros instead of lingering in free space.
    conn.execute("PRAGMA secure_delete = ON")
    if conn.execute("PRAGMA secure_delete").fetchone() != (1,):
        raise RepositoryCorruption("secure delete unavailable")
    if file_backed:
        (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if str(mode).lower() != "wal":
            raise RepositoryCorruption("WAL mode unavailable")
        conn.execute("PRAGMA synchronous = FULL")


def inspect_catalog(path: str) -> int:
    """Refuse a file of ours whose catalog is incomplete or foreign, without writing;
    return its schema version."""
    # A store in use (or left by a crash) has a WAL that may hold pages the main file
    # lacks: read it like any reader. Otherwise read the main file as immutable, which
    # creates no -wal or -shm file next to a file that may be refused.
    in_use = os.path.exists(f"{path}-wal") or os.path.exists(f"{path}-shm")
    mode = "ro" if in_use else "ro&immutable=1"
    uri = f"file:{quote(os.path.abspath(path))}?mode={mode}"
    with translate("schema initialization failed"):
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        try:
            return schema.check_catalog(conn)
        finally:
            conn.close()


def create_file(path: str, *, busy_timeout: float) -> None:
    """Create a new, fully initialised database at ``path`` atomically.

    The schema is built in a temporary file beside the target and then hard-linked into
    place, so another process never sees a half-initialised (or empty) database. If
    someone else created the file first, theirs is kept. The file is readable and
    writable by its owner only; SQLite gives its WAL and shared-memory files the same
    permissions.
    """
    directory = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.init")
    try:
        os.close(os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        with translate("schema initialization failed"):
            conn = sqlite3.connect(temporary, timeout=busy_timeout, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("BEGIN IMMEDIATE")
                schema.migrate(conn, 0)
                conn.execute("COMMIT")
            finally:
                conn.close()
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    except OSError:
        raise RepositoryCorruption("schema initialization failed") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def checkpoint_truncate(conn: sqlite3.Connection) -> bool:
    """Copy the WAL into the database and truncate it to zero bytes. True on success."""
    row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return row is not None and row[0] == 0


def rewrite(conn: sqlite3.Connection) -> bool:
    """Rewrite the whole database into fresh pages (``VACUUM``, outside any transaction).

    Deleting many rows makes SQLite merge b-tree pages, and a page it rebuilds keeps, in
    its unused area, stale copies of cells that were on it; ``secure_delete`` zeroes
    only the deleted cells. Fresh pages hold only live cells. False when another
    connection holds the write lock beyond the busy timeout, or the rewrite cannot be
    done now (no room for the copy, an I/O error): it is retried later. A damaged
    database raises.
    """
    try:
        conn.execute("VACUUM")
    except sqlite3.OperationalError:
        return False
    return True
