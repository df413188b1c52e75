"""Helpers of the SQLite adapter tests: the bytes of a store's files, and statements run
behind the library's back."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trueheart_core.adapters.sqlite.buffer import drain
from trueheart_core.adapters.sqlite.migrations import MIGRATIONS
from trueheart_core.adapters.sqlite.pending import PendingIndex
from trueheart_core.adapters.sqlite.schema import APPLICATION_ID
from trueheart_core.adapters.sqlite.session import Session


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


def merge_pending(conn: sqlite3.Connection) -> None:
    """Merge every scope's pending search rows into the merged tables, with the
    adapter's own merge (run here on a connection of the test's)."""
    pending = PendingIndex(Session(conn, {}))
    for (sid,) in conn.execute("SELECT DISTINCT scope_id FROM search_pending").fetchall():
        pending.merge(sid)


def _behind_the_library(path: Path, step: Callable[[sqlite3.Connection], object]) -> None:
    """Run ``step`` on a connection of the test's own, in one transaction."""
    conn = sqlite3.connect(path, timeout=5.0)
    try:
        with conn:
            step(conn)
    finally:
        conn.close()


def drain_buffer_of(path: Path) -> None:
    """Move the write buffer's rows into their clustered tables, with the adapter's own
    statements, behind the library's back."""
    _behind_the_library(path, drain)


def merge_pending_of(path: Path) -> None:
    """:func:`merge_pending` behind the library's back, in one transaction."""
    _behind_the_library(path, merge_pending)


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


_V6_COPIES = (
    # (table, columns of the version 6 table, what to select from the current store)
    ("scopes", "scope_id, tenant_id, owner_id, subject_id", "SELECT * FROM old.scopes"),
    (
        "raw_events",
        "rid, scope_id, event_id, source_id, source_type, source_occurred_at, trust, "
        "source_metadata, content_hash, ingested_at, raw_expires_at, clear_for, recall_for, "
        "status, metadata, digest",
        "SELECT rid, scope_id, event_id, source_id, source_type, source_occurred_at, trust, "
        "source_metadata, content_hash, ingested_at, raw_expires_at, clear_for, recall_for, "
        "CASE status WHEN 0 THEN 'active' WHEN 1 THEN 'expired' ELSE status END, metadata, "
        "digest FROM old.raw_events WHERE erased IS NOT 1 ORDER BY rid",
    ),
    (
        "raw_bodies",
        "scope_id, event_id, content, digest",
        "SELECT b.scope_id, e.event_id, b.content, b.digest FROM old.raw_bodies b "
        "JOIN old.raw_events e ON e.rid = b.rid WHERE b.erased IS NOT 1 ORDER BY b.rid",
    ),
    (
        "memories",
        "rid, scope_id, memory_id, content, dependency_fingerprint, kind, trust, created_at, "
        "clear_until, recall_until, status, metadata, digest",
        "SELECT rid, scope_id, memory_id, content, dependency_fingerprint, kind, trust, "
        "created_at, clear_until, recall_until, status, metadata, digest FROM old.memories "
        "WHERE erased IS NOT 1 ORDER BY rid",
    ),
    (
        "lineage",
        "scope_id, memory_id, event_id, trust, clear_for, recall_for, digest",
        "SELECT scope_id, memory_id, event_id, trust, clear_for, recall_for, digest "
        "FROM old.lineage",
    ),
    (
        "tombstones",
        "seq, scope_id, entity_type, entity_id, fingerprint, deleted_at, reason, digest",
        "SELECT * FROM old.tombstones ORDER BY seq",
    ),
    (
        "audit",
        "scope_id, audit_id, action, entity_type, entity_id, occurred_at, reason, metadata, digest",
        "SELECT scope_id, audit_id, action, entity_type, entity_id, occurred_at, reason, "
        "metadata, digest FROM old.audit ORDER BY scope_id, occurred_at, seq",
    ),
    (
        "claims",
        "rid, scope_id, claim_id, subject, predicate, value, valid_from, valid_to, confidence, "
        "authority, supersedes, digest, subject_key, predicate_key",
        "SELECT rid, scope_id, claim_id, subject, predicate, value, valid_from, valid_to, "
        "confidence, authority, supersedes, digest, key_int(subject_key), "
        "key_int(predicate_key) FROM old.claims WHERE erased IS NOT 1 ORDER BY rid",
    ),
    (
        "extractions",
        "rid, scope_id, event_id, extractor, claim_ids, spans, diagnostics, digest",
        "SELECT * FROM old.extractions ORDER BY rid",
    ),
    (
        "semantic_spaces",
        "space_id, identity, dimensions, normalized",
        "SELECT * FROM old.semantic_spaces",
    ),
    (
        "vectors",
        "vid, doc, scope_id, space_id, active, created_at, memory_id, clear_until, "
        "recall_until, trust, kind, content_hash, vector, digest, sketch, sketch_scale, "
        "sketch_error",
        "SELECT vid, doc, scope_id, space_id, active, created_at, memory_id, clear_until, "
        "recall_until, trust, kind, content_hash, vector, digest, sketch, sketch_scale, "
        "sketch_error FROM old.vectors WHERE erased IS NOT 1 ORDER BY vid",
    ),
)


def downgrade_to_6(path: Path) -> None:
    """Turn a current file into a file that version 6 would have written with the same
    live rows: built by the migrations of versions 1 to 6, the rows copied into it, and
    its search index left to be built on first use (as version 6 itself would leave an
    index of other rules)."""
    built = path.with_name(f"{path.stem}-v6.db")
    conn = sqlite3.connect(built, isolation_level=None)
    try:
        conn.create_function(
            "key_int",
            1,
            lambda v: int.from_bytes(v, "big", signed=True) if isinstance(v, bytes) else v,
            deterministic=True,
        )
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN")
        for step in range(1, 7):
            for statement in MIGRATIONS[step]:
                conn.execute(statement)
        conn.execute(f"ATTACH DATABASE '{path}' AS old")
        for table, columns, select in _V6_COPIES:
            conn.execute(f"INSERT INTO {table} ({columns}) {select}")
        conn.execute("DELETE FROM vector_generations")
        conn.execute("INSERT INTO vector_generations SELECT * FROM old.vector_generations")
        conn.execute("UPDATE search_meta SET tokenizer = ''")
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("PRAGMA user_version = 6")
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE old")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")
    finally:
        conn.close()
    for side in ("", "-wal", "-shm"):
        Path(f"{path}{side}").unlink(missing_ok=True)
    built.rename(path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
    finally:
        conn.close()
