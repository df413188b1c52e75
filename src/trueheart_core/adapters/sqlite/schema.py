"""The SQLite schema: its version, the migrations that reach it (their statements are in
``migrations``) and the checks of a file's catalog against it."""

from __future__ import annotations

import contextlib
import functools
import sqlite3

from trueheart_core.adapters.sqlite import migrations
from trueheart_core.errors import RepositoryCorruption

APPLICATION_ID = 0x54485243  # "THRC" in the database header: marks our files
SCHEMA_VERSION = 9


Definition = tuple[str, str, str, str | None]
"""A schema object as ``sqlite_master`` stores it: ``(type, name, table, sql)``."""

# SQLite keeps its own bookkeeping tables under these names (``ANALYZE`` statistics, the
# AUTOINCREMENT counters): they hold no data of ours and are not compared.
_BOOKKEEPING = ("sqlite_stat", "sqlite_sequence")


@functools.cache
def definitions(version: int) -> frozenset[Definition]:
    """Every schema object of ``version`` exactly as SQLite stores it, read from a
    throwaway in-memory database built by the same migrations (so the text is SQLite's
    own rendering, whatever its version). Computed once per process and version."""
    conn = sqlite3.connect(":memory:")
    migrations.with_functions(conn)
    try:
        for step in range(1, version + 1):
            for statement in migrations.MIGRATIONS[step]:
                conn.execute(statement)
        return frozenset(_stored(conn))
    finally:
        conn.close()


def object_names(version: int) -> frozenset[tuple[str, str]]:
    """``(type, name)`` of the objects of ``version`` that the schema creates by name."""
    return frozenset(
        (kind, name) for kind, name, _, _ in definitions(version) if not name.startswith("sqlite_")
    )


def _stored(conn: sqlite3.Connection) -> list[Definition]:
    return [
        (kind, name, table, sql)
        for kind, name, table, sql in conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master"
        )
        if not name.startswith(_BOOKKEEPING)
    ]


def migrate(conn: sqlite3.Connection, from_version: int) -> None:
    """Apply every migration after ``from_version`` (inside the caller's transaction)."""
    migrations.with_functions(conn)
    for version in range(from_version + 1, SCHEMA_VERSION + 1):
        for statement in migrations.MIGRATIONS[version]:
            conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def check_known_version(version: object) -> int:
    """A version this code can read or upgrade; fail closed otherwise."""
    if type(version) is not int or version < 1:
        raise RepositoryCorruption("invalid schema version")
    if version > SCHEMA_VERSION:
        raise RepositoryCorruption("unsupported schema version")
    return version


def check_version(version: object) -> None:
    """Fail closed unless ``version`` is the version this code reads and writes."""
    if check_known_version(version) < SCHEMA_VERSION:
        raise RepositoryCorruption("invalid schema version")


def check_catalog(conn: sqlite3.Connection) -> int:
    """Our application ID, a known version, and a catalog that is exactly the one that
    version's migrations build: every table, index and trigger present with the very
    definition this code expects (a changed byte of a stored definition is damage, not a
    variant), nothing foreign, and each b-tree rooted on a page of its own inside the
    file. Returns the version (older ones are upgraded by :func:`migrate`).

    Read in one transaction (the caller's, or one of its own): read statement by
    statement, the version could be read before another process's upgrade committed
    and the catalog after it, which would look like damage."""
    if conn.in_transaction:
        return _check_catalog(conn)
    conn.execute("BEGIN")
    try:
        version = _check_catalog(conn)
    except BaseException:
        # What failed is what the caller is told of, not a rollback of a transaction
        # that failure may have ended.
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        raise
    conn.execute("ROLLBACK")
    return version


def _check_catalog(conn: sqlite3.Connection) -> int:
    (application_id,) = conn.execute("PRAGMA application_id").fetchone()
    if application_id != APPLICATION_ID:
        raise RepositoryCorruption("invalid schema catalog")
    (found,) = conn.execute("PRAGMA user_version").fetchone()
    version = check_known_version(found)
    expected = definitions(version)
    present = set(_stored(conn))
    if present != expected:
        names = {(kind, name) for kind, name, _, _ in present}
        if not names >= {(kind, name) for kind, name, _, _ in expected}:
            raise RepositoryCorruption("incomplete schema")
        raise RepositoryCorruption("invalid schema catalog")
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    roots = [
        root for (root,) in conn.execute("SELECT rootpage FROM sqlite_master WHERE rootpage != 0")
    ]
    if len(set(roots)) != len(roots) or not all(
        type(root) is int and 2 <= root <= pages for root in roots
    ):
        raise RepositoryCorruption("invalid schema catalog")
    return version
