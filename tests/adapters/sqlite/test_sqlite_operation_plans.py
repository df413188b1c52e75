"""Per-scope statistics and verification read a scope, and subject erasure erases it,
through indexes of the scope.

White-box test of the SQLite adapter: it records the SQL that ``stats(scope)``,
``verify_integrity(scope)`` and ``erase_subject`` execute and asks SQLite for the plans.
No table that holds rows of scopes is read whole by them.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from trueheart_core import (
    ClaimDraft,
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.adapters.sqlite.claims import CLAIM_TEXT
from trueheart_core.adapters.sqlite.events import BODY_TEXT, RECEIPT_TEXT
from trueheart_core.adapters.sqlite.memories import MEMORY_TEXT
from trueheart_core.adapters.sqlite.vectors import VECTOR_TEXT

NOW = datetime(2026, 8, 13, 12, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "subject")
OTHER = Scope("tenant", "owner", "other")
RETENTION = RetentionPolicy(timedelta(days=1), timedelta(days=2), timedelta(days=4))
# Registries that hold one row per semantic space (or one row), whatever the number of
# scopes; and the write buffer, which holds fewer than ``BUFFER_BOUND`` rows.
REGISTRIES = {"semantic_spaces", "search_meta", "store_state", "write_buffer"}
_SCAN = re.compile(r"^SCAN (?:TABLE )?(\w+)")
_ALIAS = re.compile(r"\bFROM\s+(\w+)\s+(\w+)\b", re.I)


def _event(event_id: str, scope: Scope) -> RawEventDraft:
    source = SourceRef("src", "chat", NOW, TrustLevel.CONFIRMED)
    return RawEventDraft(event_id, scope, source, f"body of {event_id}", RETENTION)


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[TrueHeart, list[str]]]:
    repository = SQLiteRepository(tmp_path / "store.db")
    service = TrueHeart(repository, clock=lambda: NOW)
    for scope in (SCOPE, OTHER):
        for index in range(20):
            service.ingest_event(_event(f"e{index}", scope))
            service.materialize_once(
                MemoryDraft(
                    f"m{index}",
                    scope,
                    f"words {index}",
                    (f"e{index}",),
                    "fact",
                    TrustLevel.OBSERVED,
                    NOW,
                )
            )
        service.materialize_claim(
            ClaimDraft("c1", scope, "user:a", "likes", "tea", ("e1",), TrustLevel.OBSERVED, NOW)
        )
    statements: list[str] = []
    repository._conn.set_trace_callback(statements.append)  # type: ignore[union-attr]
    try:
        yield service, statements
    finally:
        repository.close()


def _scanned_tables(path: Path, statements: list[str]) -> set[str]:
    raw = sqlite3.connect(path)
    scanned = set()
    # Scans of tables only: not of a subquery's result, a CTE or a table-valued function.
    tables = {
        name for (name,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    try:
        for statement in statements:
            if statement.split(None, 1)[0].upper() not in ("SELECT", "DELETE", "WITH"):
                continue
            aliases = {alias: table for table, alias in _ALIAS.findall(statement)}
            for row in raw.execute(f"EXPLAIN QUERY PLAN {statement}"):
                match = _SCAN.match(str(row[3]))
                if match is not None:
                    name = aliases.get(match.group(1), match.group(1))
                    if name in tables:
                        scanned.add(name)
    finally:
        raw.close()
    return scanned


def test_scope_statistics_use_the_scope_indexes(
    traced: tuple[TrueHeart, list[str]], tmp_path: Path
) -> None:
    service, statements = traced
    service.stats(SCOPE)
    assert _scanned_tables(tmp_path / "store.db", statements) <= REGISTRIES
    statements.clear()
    service.stats()
    # the check sees scans: a count of the whole store reads the tables
    assert "raw_events" in _scanned_tables(tmp_path / "store.db", statements)


def test_scope_verification_uses_the_scope_indexes(
    traced: tuple[TrueHeart, list[str]], tmp_path: Path
) -> None:
    service, statements = traced
    assert service.verify_integrity(SCOPE).ok
    assert _scanned_tables(tmp_path / "store.db", statements) <= REGISTRIES
    statements.clear()
    service.verify_integrity()
    assert {"raw_events", "memories"} <= _scanned_tables(tmp_path / "store.db", statements)


@pytest.mark.parametrize("rewrite", [True, False])
def test_erasure_reads_and_writes_only_the_scope(
    traced: tuple[TrueHeart, list[str]], tmp_path: Path, rewrite: bool
) -> None:
    service, statements = traced
    receipt = service.erase_subject(SCOPE, occurred_at=NOW, rewrite=rewrite)
    assert receipt.erased.memory == 21 and receipt.remaining is not None
    assert receipt.remaining.total == 0
    assert not [s for s in statements if "NOT INDEXED" in s]
    changes = [s for s in statements if s.lstrip().upper().startswith(("UPDATE", "DELETE"))]
    updated = {s.split()[1] for s in changes if s.lstrip().upper().startswith("UPDATE")}
    assert updated >= set(ERASED_IN_PLACE)
    assert _scanned_tables(tmp_path / "store.db", statements) <= REGISTRIES
    assert _scanned_tables(tmp_path / "store.db", changes) <= {"write_buffer"}
    assert service.recall(RecallQuery(OTHER, NOW, 50)) != ()


# The columns of each kept table that an erasure leaves as they are: IDs (which stay in
# tombstones too), numbers, and what places the row. Every other column holds text or
# bytes of the host's and is overwritten in place; a new column must be put in one of
# the two sets.
KEPT_COLUMNS = {
    "raw_events": {
        "rid",
        "scope_id",
        "event_id",
        "source_occurred_at",
        "trust",
        "ingested_at",
        "raw_expires_at",
        "status",
        "erased",
    },
    "raw_bodies": {"rid", "scope_id", "erased"},
    "memories": {
        "rid",
        "scope_id",
        "memory_id",
        "trust",
        "created_at",
        "clear_until",
        "recall_until",
        "status",
        "erased",
    },
    "claims": {
        "rid",
        "scope_id",
        "claim_id",
        "valid_from",
        "valid_to",
        "confidence",
        "subject_key",
        "predicate_key",
        "erased",
    },
    "vectors": {
        "vid",
        "doc",
        "scope_id",
        "space_id",
        "active",
        "created_at",
        "clear_until",
        "recall_until",
        "trust",
        "sketch_scale",
        "sketch_error",
        "erased",
    },
    "search_terms": {"term_id", "scope_id", "erased"},
}
ERASED_IN_PLACE = {
    "raw_events": set(RECEIPT_TEXT),
    "raw_bodies": set(BODY_TEXT),
    "memories": set(MEMORY_TEXT),
    "claims": set(CLAIM_TEXT),
    "vectors": set(VECTOR_TEXT),
    "search_terms": {"term"},
}


def test_every_column_of_a_kept_table_is_erased_in_place_or_kept_on_purpose(
    tmp_path: Path,
) -> None:
    with TrueHeart(SQLiteRepository(tmp_path / "store.db"), clock=lambda: NOW):
        pass
    conn = sqlite3.connect(tmp_path / "store.db")
    try:
        for table, erased in ERASED_IN_PLACE.items():
            columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            assert erased | KEPT_COLUMNS[table] == columns, table
            assert not erased & KEPT_COLUMNS[table], table
            # An index that holds a column an erasure overwrites leaves erased rows out.
            for name, sql in conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?",
                (table,),
            ).fetchall():
                held = {row[2] for row in conn.execute(f"PRAGMA index_info({name})")}
                assert not held & erased or "erased IS NOT 1" in str(sql), (table, name)
    finally:
        conn.close()
