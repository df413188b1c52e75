"""Opening a SQLite store: the file's checks before SQLite touches it, its creation, the
connection, and the upgrade of a store an older version wrote (see ``SQLiteRepository``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass

from trueheart_core import logs
from trueheart_core.adapters.sql.failures import DIAGNOSTICS, forget
from trueheart_core.adapters.sqlite import connection as conn_mod
from trueheart_core.adapters.sqlite import files, handles, schema
from trueheart_core.errors import RepositoryFull, RepositoryReadOnly, ValidationError

UPGRADE_NEEDS_WRITE = "schema upgrade needs a writable store"


@dataclass(frozen=True)
class Opened:
    """An open store: its connection; the path of its file with every symbolic link
    resolved (None in memory); the hold on its file's descriptor (None in memory); what
    the file was when opened, if it is read as an immutable snapshot (else None); and
    whether it is open for reading only."""

    conn: sqlite3.Connection
    path: str | None
    handle: handles.Handle | None
    snapshot: files.Stamp | None
    read_only: bool


def open_store(target: str, *, busy_timeout: float, read_only: bool) -> Opened:
    """Open the store at ``target`` (an absolute path, or ``":memory:"``), creating a
    file that does not exist yet. Files that are not TrueHeart databases, or that a
    newer version wrote, are refused before SQLite opens them. On failure nothing of it
    stays open (the descriptor's hold is given back after the connection closed)."""
    if target == ":memory:":
        if read_only:
            raise ValidationError("read_only", "requires a database file")
        return Opened(_connect(target, busy_timeout, False, False), None, None, None, False)
    exists = files.check_target(target)
    if not exists and read_only:
        raise ValidationError("path", "must name an existing database file")
    # SQLite resolves symbolic links and keeps the WAL and shared-memory files beside
    # the file itself: every check of side files, directory and file here looks there.
    real = os.path.realpath(target)
    if real != target:
        exists = files.check_target(real)
        target = real
    if not exists:
        files.make_directories(target)
        conn_mod.create_file(target, busy_timeout=busy_timeout)
    handle = files.inspect_file(target)
    try:
        version = conn_mod.inspect_catalog(target, busy_timeout=busy_timeout)
        read_only = read_only or not files.writable(target)
        if read_only and version < schema.SCHEMA_VERSION:
            # Refused before SQLite opens it, so nothing is created next to the file.
            raise RepositoryReadOnly(UPGRADE_NEEDS_WRITE)
        # Where no writer can exist (nobody may create the WAL: a read-only directory or
        # medium; or the file has no write permission for anyone), a file without side
        # files is read as it stands. A file another user may write is read like any
        # store in use, with side files beside it.
        immutable = (
            read_only
            and not files.has_side_files(target)
            and (not files.directory_writable(target) or files.unwritable_file(target))
        )
        snapshot = files.file_stamp(target) if immutable else None
        conn = _connect(target, busy_timeout, read_only, immutable)
    except BaseException:
        handle.release()
        raise
    return Opened(conn, target, handle, snapshot, read_only)


def _connect(
    target: str, busy_timeout: float, read_only: bool, immutable: bool
) -> sqlite3.Connection:
    file_backed = target != ":memory:"
    with conn_mod.translate(DIAGNOSTICS["open"]):
        conn = conn_mod.connect(
            target, busy_timeout=busy_timeout, read_only=read_only, immutable=immutable
        )
        try:
            conn_mod.configure(conn, file_backed=file_backed, read_only=read_only)
            if file_backed:
                _upgrade(conn, schema.check_catalog(conn), read_only)
            else:
                conn.execute("BEGIN IMMEDIATE")
                schema.migrate(conn, 0)
                conn.execute("COMMIT")
        except BaseException:
            conn.close()
            raise
    return conn


def _upgrade(conn: sqlite3.Connection, version: int, read_only: bool) -> None:
    """Bring a store written by an older version up to this schema, atomically."""
    if version == schema.SCHEMA_VERSION:
        return
    if read_only:
        raise RepositoryReadOnly(UPGRADE_NEEDS_WRITE)
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Another process may have upgraded it since the catalog was read.
        version = schema.check_catalog(conn)
        if version < schema.SCHEMA_VERSION:
            schema.migrate(conn, version)
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    if version < schema.SCHEMA_VERSION:
        logs.STORE.info("schema upgraded from version %d to %d", version, schema.SCHEMA_VERSION)
        # The old tables' pages are zeroed in the WAL's new frames; their earlier frames
        # go with the log. They hold nothing erased (erasure before version 7 rewrote the
        # file), so when the disk has no room to copy the log into the file, the upgrade,
        # committed, stands, and a later checkpoint copies it.
        try:
            conn_mod.checkpoint_truncate(conn)
        except sqlite3.Error as error:
            if not isinstance(conn_mod.translated(error, ""), RepositoryFull):
                raise
            forget(error)
            logs.STORE.warning("schema upgraded, its log not copied yet: no room")
