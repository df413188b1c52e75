"""Helpers of the SQLite adapter tests: the bytes of a store's files, and statements run
behind the library's back."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def store_bytes(path: Path) -> bytes:
    """The bytes of the database file and of its write-ahead log and journal, if any."""
    data = b""
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-journal")):
        if candidate.exists():
            data += candidate.read_bytes()
    return data


def tamper(path: Path, sql: str, params: Sequence[Any] = ()) -> int:
    """Run one statement behind the library's back; returns the number of changed rows."""
    conn = sqlite3.connect(path, timeout=5.0)
    try:
        with conn:
            cursor = conn.execute(sql, tuple(params))
            changed = cursor.rowcount
    finally:
        conn.close()
    return changed


PENDING_PAIRS = (
    "SELECT x.doc AS doc, j.value ->> 0 AS term_id, j.value ->> 1 AS tf "
    "FROM search_pending x, json_each(x.postings) j"
)
"""The pending search postings as rows ``(doc, term_id, tf)``."""


def merge_pending(conn: sqlite3.Connection) -> None:
    """Move every pending search posting into the term-keyed postings and its terms'
    document frequencies, as the merge the adapter runs at the pending bound does."""
    conn.execute(
        "INSERT INTO search_postings (term_id, doc, tf) "
        f"SELECT term_id, doc, tf FROM ({PENDING_PAIRS})"
    )
    conn.execute(
        f"UPDATE search_terms SET df = df + (SELECT COUNT(*) FROM ({PENDING_PAIRS}) p "
        "WHERE p.term_id = search_terms.term_id)"
    )
    conn.execute("DELETE FROM search_pending")


def merge_pending_of(path: Path) -> None:
    """:func:`merge_pending` behind the library's back, in one transaction."""
    conn = sqlite3.connect(path, timeout=5.0)
    try:
        with conn:
            merge_pending(conn)
    finally:
        conn.close()


def pinned_reader(path: Path) -> sqlite3.Connection:
    """A foreign connection holding a read snapshot, which blocks WAL checkpoints."""
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM memories").fetchone()
    return reader


def micros(moment: datetime) -> int:
    """Microseconds since the epoch, as stored by the SQLite adapter."""
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
