"""Per-scope statistics and verification read a scope, and subject erasure removes it,
through indexes of the scope; what erasure checks it reads from the tables.

White-box test of the SQLite adapter: it records the SQL that ``stats(scope)``,
``verify_integrity(scope)`` and ``erase_subject`` execute and asks SQLite for the plans.
No table that holds rows of scopes is read whole by them, but for erasure's plan, its
check that nothing of the scope is left and its receipt's counts, which read the tables
themselves on purpose (``NOT INDEXED``), so that a damaged index cannot hide a row.
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
from trueheart_core.adapters.sqlite.operations import BODY_COLUMNS

NOW = datetime(2026, 8, 13, 12, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "subject")
OTHER = Scope("tenant", "owner", "other")
RETENTION = RetentionPolicy(timedelta(days=1), timedelta(days=2), timedelta(days=4))
# Registries that hold one row per semantic space, whatever the number of scopes.
REGISTRIES = {"semantic_spaces", "search_meta"}
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


def test_erasure_deletes_through_the_scope_indexes_and_checks_the_tables(
    traced: tuple[TrueHeart, list[str]], tmp_path: Path
) -> None:
    service, statements = traced
    service.erase_subject(SCOPE, occurred_at=NOW)
    deletes = [s for s in statements if s.lstrip().upper().startswith("DELETE")]
    assert len(deletes) >= 12
    assert _scanned_tables(tmp_path / "store.db", deletes) == set()
    checks = [s for s in statements if "NOT INDEXED" in s]
    checked = _scanned_tables(tmp_path / "store.db", checks)
    assert {"memories", "claims", "vectors", "search_terms", "raw_events"} <= checked


def test_erasure_without_a_rewrite_reads_only_the_scope(
    traced: tuple[TrueHeart, list[str]], tmp_path: Path
) -> None:
    service, statements = traced
    receipt = service.erase_subject(SCOPE, occurred_at=NOW, rewrite=False)
    assert receipt.erased.memory == 21 and receipt.remaining is not None
    assert not [s for s in statements if "NOT INDEXED" in s]
    assert len([s for s in statements if s.lstrip().upper().startswith("UPDATE")]) >= 7
    assert _scanned_tables(tmp_path / "store.db", statements) <= REGISTRIES
    assert service.recall(RecallQuery(OTHER, NOW, 50)) != ()


def test_the_blanked_columns_are_every_column_no_index_holds(tmp_path: Path) -> None:
    # An erasure without a rewrite overwrites these in place; a column added to a scoped
    # table must be added there (or be held by an index, which holds no body).
    with TrueHeart(SQLiteRepository(tmp_path / "store.db"), clock=lambda: NOW):
        pass
    conn = sqlite3.connect(tmp_path / "store.db")
    try:
        for table, blanked in BODY_COLUMNS.items():
            columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            # the receipts' status decides their expiry index's rows (a partial index)
            indexed = {"scope_id", "status"} | {
                row[1] for row in conn.execute(f"PRAGMA table_info({table})") if row[5]
            }
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?", (table,)
            ).fetchall():
                indexed |= {row[2] for row in conn.execute(f"PRAGMA index_info({name})")}
            assert set(blanked) == columns - indexed, table
    finally:
        conn.close()
