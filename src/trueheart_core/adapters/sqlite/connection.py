"""SQLite connections: opening and configuring them, reading a file's catalog, creating a
store, checkpoints, and error translation (the checks of the files themselves are in
:mod:`files`).

:func:`translate` is the one place where driver errors become library errors.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import time
import uuid
from traceback import clear_frames
from types import TracebackType
from urllib.parse import quote

from trueheart_core.adapters.sql.failures import MALFORMED, forget
from trueheart_core.adapters.sqlite import schema
from trueheart_core.adapters.sqlite.files import (
    ORPHANS,
    SIDE_FILE,
    SIDE_SUFFIXES,
    Stamp,
    directory_writable,
    file_stamp,
    has_side_files,
    orphans,
    side_file_of_another,
)
from trueheart_core.errors import (
    RepositoryBusy,
    RepositoryCorruption,
    RepositoryFull,
    RepositoryReadOnly,
    TrueHeartError,
    ValidationError,
)

SQLITE_PERM = 3
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_READONLY = 8
SQLITE_FULL = 13
# In WAL mode a connection that cannot get a stable snapshot of the shared-memory index
# after many attempts (other connections checkpoint and reset the log under it) gives
# up with SQLITE_PROTOCOL: contention, not damage, and nothing was done.
SQLITE_PROTOCOL = 15
# The shared-memory file could not be grown to map the WAL's index: no room on its disk
# (an extended I/O error code, reported instead of SQLITE_FULL).
SQLITE_IOERR_SHMSIZE = 10 | (19 << 8)
_CONTENTION = (SQLITE_BUSY, SQLITE_LOCKED, SQLITE_PROTOCOL)


_MALFORMED = MALFORMED


class translate:  # noqa: N801 - used as a function: ``with translate(diagnostic):``
    """Turn any driver error raised in the block into a library error, without chaining.

    The one place where driver errors become library errors (see :func:`translated`).
    Only the fixed diagnostic is kept: SQLite's own message never reaches the caller,
    and the driver's exception, left as the ``__context__`` Python always records, is
    stripped of its arguments, traceback and chain first, so no body survives in it.
    (A class rather than a generator-based context manager: every unit of work enters
    one, and a class makes no generator to enter and leave.)

    Whatever the error, the finished frames it passed through lose their local
    variables (``traceback.clear_frames``): a cursor one of them holds, part-way through
    its rows, keeps its statement active on the connection, and an active statement
    makes the checkpoint of the next erasing call fail as if another connection held
    the store, for as long as the caller keeps the error (or until the garbage
    collector breaks the cycle of a frame and the error raised in it). Those locals can
    hold a body too.
    """

    __slots__ = ("_diagnostic",)

    def __init__(self, diagnostic: str) -> None:
        self._diagnostic = diagnostic

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if error is None:
            return
        clear_frames(traceback)
        if isinstance(error, TrueHeartError):
            return
        if isinstance(error, sqlite3.Error):
            failure = translated(error, self._diagnostic)
            forget(error)
            raise failure from None
        if isinstance(error, _MALFORMED):
            forget(error)
            raise RepositoryCorruption(self._diagnostic) from None


def translated(error: BaseException, diagnostic: str) -> TrueHeartError:
    """The library error for a driver error; total over every exception.

    Lock contention (``SQLITE_BUSY``, ``SQLITE_LOCKED``, and ``SQLITE_PROTOCOL``, which
    WAL mode returns when other connections keep resetting the log) is
    ``RepositoryBusy``; a full disk or database (``SQLITE_FULL``, and
    ``SQLITE_IOERR_SHMSIZE``: no room to grow the shared-memory file) is ``RepositoryFull``;
    a file or medium that refuses writes (``SQLITE_READONLY``, ``SQLITE_PERM``) is
    ``RepositoryReadOnly``; every other error, and anything that is not a driver error
    (a malformed row), is ``RepositoryCorruption``.
    """
    code = getattr(error, "sqlite_errorcode", None) if isinstance(error, sqlite3.Error) else None
    primary = code & 0xFF if isinstance(code, int) else None
    if primary in _CONTENTION:
        return RepositoryBusy(diagnostic)
    if primary == SQLITE_FULL or code == SQLITE_IOERR_SHMSIZE:
        return RepositoryFull(diagnostic)
    if primary in (SQLITE_READONLY, SQLITE_PERM):
        return RepositoryReadOnly(diagnostic)
    return RepositoryCorruption(diagnostic)


def changed(cursor: sqlite3.Cursor, rows: int) -> None:
    """Check that a statement changed exactly ``rows`` rows. A different count means an
    index and its table disagree (a damaged store): ``RepositoryCorruption``, which rolls
    the whole unit of work back, instead of a call that reports what it did not do."""
    if cursor.rowcount != rows:
        raise RepositoryCorruption("stored rows and their indexes disagree")


def connect(
    target: str, *, busy_timeout: float, read_only: bool, immutable: bool = False
) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) shared across threads.

    ``immutable`` (read-only only) reads the file without locks or side files: for a
    store in a directory nobody may create its WAL in, where no writer can exist.
    """
    if read_only:
        mode = "ro&immutable=1" if immutable else "ro"
        uri = f"file:{quote(os.path.abspath(target))}?mode={mode}"
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


NO_SHARED_MEMORY = (
    "has a WAL file but no shared-memory file beside it, and this process may not "
    "create one there: open it once as a user who may write its directory"
)


def inspect_catalog(path: str, *, busy_timeout: float) -> int:
    """Refuse a file of ours whose catalog is incomplete or foreign, without writing;
    return its schema version. A lock held on the file is waited for up to
    ``busy_timeout`` seconds, as every call waits."""
    # A store in use (or left by a crash) has a WAL that may hold pages the main file
    # lacks: read it like any reader. Otherwise read the main file as immutable, which
    # creates no -wal or -shm file next to a file that may be refused.
    if (
        os.path.lexists(f"{path}-wal")
        and not os.path.lexists(f"{path}-shm")
        and not directory_writable(path)
    ):
        # SQLite reads a WAL through the shared-memory index it builds beside it; where
        # this process cannot create that file, the store cannot be read (it is sound).
        raise ValidationError("path", NO_SHARED_MEMORY)
    if has_side_files(path):
        return _read_catalog(path, "ro", busy_timeout)
    before = _stamp(path)
    try:
        return _read_catalog(path, "ro&immutable=1", busy_timeout)
    except RepositoryCorruption:
        # Read without locks, the file may have been written meanwhile by another
        # process (the first writable open of an older store upgrades it): what was
        # read is no proof of damage. Read again as any reader, under SQLite's locks.
        if _stamp(path) == before:
            raise
    return _read_catalog(path, "ro", busy_timeout)


def _read_catalog(path: str, mode: str, busy_timeout: float) -> int:
    uri = f"file:{quote(os.path.abspath(path))}?mode={mode}"
    with translate("schema initialization failed"):
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=busy_timeout)
        try:
            return schema.check_catalog(conn)
        finally:
            conn.close()


def _stamp(path: str) -> Stamp | None:
    """:func:`file_stamp`, or None when the file is gone."""
    try:
        return file_stamp(path)
    except OSError:
        return None


def create_file(path: str, *, busy_timeout: float) -> None:
    """Create a new, fully initialised database at ``path`` atomically.

    The schema is built in a temporary file beside the target and then hard-linked into
    place, so another process never sees a half-initialised (or empty) database. If
    someone else created the file first, theirs is kept. The file is readable and
    writable by its owner only; SQLite gives its WAL and shared-memory files the same
    permissions.

    A WAL, shared-memory or journal file at the path with no database beside it (left
    by a database that was removed after its process was killed) is refused: SQLite
    would take its pages for the new database's. So is a path that is the WAL,
    shared-memory or journal path of an existing file (``w.db-wal`` beside ``w.db``):
    SQLite would take the new store for that database's log and remove it. A failed
    creation removes its temporary file and that file's side files.
    """
    if side_file_of_another(path):
        raise ValidationError("path", SIDE_FILE)
    directory = os.path.dirname(os.path.abspath(path))
    name = f".{os.path.basename(path)}.{uuid.uuid4().hex[:16]}.init"
    temporary = os.path.join(directory, name)
    try:
        os.close(os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        with translate("schema initialization failed"):
            conn = sqlite3.connect(temporary, timeout=busy_timeout, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("BEGIN IMMEDIATE")
                schema.migrate(conn, 0)
                conn.execute("COMMIT")
                # The schema must be in the file itself before it is linked into place:
                # the temporary name's WAL is not the path's (and is removed below).
                busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                if busy or frames != copied:
                    raise RepositoryFull("no room to create the store")
            finally:
                conn.close()
        if orphans(path):
            raise ValidationError("path", ORPHANS)
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    except OSError as error:
        raise _creation_error(error, directory) from None
    finally:
        for leftover in (temporary, *(temporary + suffix for suffix in SIDE_SUFFIXES)):
            with contextlib.suppress(OSError):
                os.unlink(leftover)


def settle(path: str, *, busy_timeout: float) -> None:
    """Copy what the WAL of the closed store at ``path`` holds into the database file
    itself, so that the file alone is the whole store (to be linked or copied where its
    side files do not follow). SQLite copies the WAL when the last connection closes,
    but says nothing when that fails (a disk with room for the log and not for the
    file): the file then lacks what the log holds. Raises ``RepositoryFull`` when there
    is no room for the copy, and ``RepositoryBusy`` when another connection holds the
    log beyond ``busy_timeout``."""
    with translate("the store's log could not be copied into its file"):
        conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
        try:
            # A checkpoint that reports no reader in its way copied the whole log (then
            # emptied it); a disk without room for the copy fails it with SQLITE_FULL.
            if not checkpoint_truncate(conn):
                raise RepositoryBusy("the store's log could not be copied into its file")
        finally:
            conn.close()


def _creation_error(error: OSError, directory: str) -> TrueHeartError:
    if error.errno == errno.ENOSPC:
        return RepositoryFull("no room to create the store")
    if error.errno == errno.EROFS or (
        error.errno in (errno.EACCES, errno.EPERM) and not os.access(directory, os.W_OK)
    ):
        return RepositoryReadOnly("the store's directory is read-only")
    if error.errno in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
        # A new store is built beside its path and hard-linked into place.
        return ValidationError("path", "must be on a file system that supports hard links")
    return ValidationError("path", "a store cannot be created there")


_CHECKPOINT_PAUSES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05)
"""Seconds between attempts at a checkpoint another connection turned away."""


def checkpoint_truncate(conn: sqlite3.Connection) -> bool:
    """Copy the WAL into the database and truncate it to zero bytes. True on success;
    False when other connections hold it up beyond the connection's busy timeout.

    SQLite waits up to the busy timeout for readers of the WAL to finish, but turns a
    checkpoint away at once while another connection runs one of its own (two
    processes erasing at the same time): that is tried again, the busy timeout cut to
    what is left of it, until the timeout has passed in all."""
    (timeout_ms,) = conn.execute("PRAGMA busy_timeout").fetchone()
    deadline = time.monotonic() + timeout_ms / 1000
    attempt = 0
    try:
        while True:
            row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if row is not None and row[0] == 0:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(_CHECKPOINT_PAUSES[min(attempt, len(_CHECKPOINT_PAUSES) - 1)], left))
            attempt += 1
            conn.execute(
                f"PRAGMA busy_timeout = {max(1, int((deadline - time.monotonic()) * 1000))}"
            )
    finally:
        if attempt:
            conn.execute(f"PRAGMA busy_timeout = {int(timeout_ms)}")


def rewrite(conn: sqlite3.Connection) -> bool:
    """Rewrite the whole database into fresh pages (``VACUUM``, outside any transaction).

    Deleting many rows makes SQLite merge b-tree pages, and a page it rebuilds keeps, in
    its unused area, stale copies of cells that were on it; ``secure_delete`` zeroes
    only the deleted cells. Fresh pages hold only live cells. False when another
    connection holds the write lock beyond the busy timeout (it is retried later);
    ``RepositoryFull`` when the disk has no room for the copy; any other failure is
    translated by the caller.
    """
    try:
        conn.execute("VACUUM")
    except sqlite3.OperationalError as error:
        failure = translated(error, "rewrite needs free disk space")
        if isinstance(failure, RepositoryBusy):
            return False
        if not isinstance(failure, RepositoryFull):
            raise
        forget(error)
    else:
        return True
    raise failure
