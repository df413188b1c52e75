"""Every statement on the hot path of a public operation is served by an index.

White-box test of the SQLite adapter: it records the SQL that each public operation
executes (with bound values) and asks SQLite for its query plan. A full table scan or a
sort of a whole result would make the cost grow with the store instead of the answer.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RetentionPolicy,
    Scope,
    ScopeMismatch,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

NOW = datetime(2026, 8, 13, 12, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "subject")
OTHER = Scope("tenant", "owner", "other-subject")
RETENTION = RetentionPolicy(timedelta(days=1), timedelta(days=2), timedelta(days=4))


def _event(event_id: str, scope: Scope = SCOPE) -> RawEventDraft:
    source = SourceRef("src", "chat", NOW, TrustLevel.CONFIRMED)
    return RawEventDraft(event_id, scope, source, f"body of {event_id}", RETENTION)


def _memory(memory_id: str, sources: tuple[str, ...], kind: str = "fact") -> MemoryDraft:
    return MemoryDraft(memory_id, SCOPE, "memory body", sources, kind, TrustLevel.OBSERVED, NOW)


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[TrueHeart, list[str]]]:
    repository = SQLiteRepository(tmp_path / "store.db")
    service = TrueHeart(repository, clock=lambda: NOW)
    for index in range(30):
        service.ingest_event(_event(f"e{index}"))
        service.materialize_once(_memory(f"m{index}", (f"e{index}",)))
    statements: list[str] = []
    repository._conn.set_trace_callback(statements.append)  # type: ignore[union-attr]
    try:
        yield service, statements
    finally:
        repository.close()


def _plans(path: Path, statements: list[str]) -> list[tuple[str, str]]:
    raw = sqlite3.connect(path)
    try:
        plans = []
        for statement in statements:
            head = statement.split(None, 1)[0].upper()
            if head not in ("SELECT", "UPDATE", "DELETE"):
                continue
            for row in raw.execute(f"EXPLAIN QUERY PLAN {statement}"):
                plans.append((statement, str(row[3])))
        return plans
    finally:
        raw.close()


def _assert_indexed(path: Path, statements: list[str]) -> None:
    plans = _plans(path, statements)
    assert plans, "no statement was recorded"
    for statement, detail in plans:
        if "json_each" in detail:
            continue
        assert not detail.startswith("SCAN"), (statement, detail)
        if "ORDER BY CAST(" in statement:
            # Ranking fading memories by their fade ratio: a top-`limit` sorter over an
            # index range (documented in docs/performance.md), never over the table.
            continue
        assert "TEMP B-TREE" not in detail, (statement, detail)


def _recall_fading(service: TrueHeart) -> None:
    service.recall(RecallQuery(SCOPE, NOW + timedelta(days=3), limit=5, kinds=("fact",)))


OPERATIONS: dict[str, Callable[[TrueHeart], object]] = {
    "ingest": lambda s: s.ingest_event(_event("new")),
    "ingest replay": lambda s: s.ingest_event(_event("e1")),
    "ingest batch": lambda s: s.ingest_events([_event("b1"), _event("b2", OTHER)]),
    "materialize": lambda s: s.materialize_once(_memory("new-m", ("e1", "e2"))),
    "materialize replay": lambda s: s.materialize_once(_memory("m1", ("e1",))),
    "recall": lambda s: s.recall(RecallQuery(SCOPE, NOW, limit=5)),
    "recall with kinds": lambda s: s.recall(RecallQuery(SCOPE, NOW, kinds=("fact", "x"))),
    "recall fading": _recall_fading,
    "seal": lambda s: s.govern(
        GovernanceCommand(SCOPE, GovernanceAction.SEAL, EntityType.MEMORY, "m3", NOW, "r")
    ),
    "forget": lambda s: s.govern(
        GovernanceCommand(SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, "m4", NOW, "r")
    ),
    "delete event": lambda s: s.govern(
        GovernanceCommand(SCOPE, GovernanceAction.DELETE, EntityType.RAW_EVENT, "e5", NOW, "r")
    ),
    "expire": lambda s: s.expire_raw_content(as_of=NOW + timedelta(days=1)),
    "audit": lambda s: s.audit(SCOPE, limit=10),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_operation_uses_indexes_only(
    operation: str, traced: tuple[TrueHeart, list[str]], tmp_path: Path
) -> None:
    service, statements = traced
    OPERATIONS[operation](service)
    _assert_indexed(tmp_path / "store.db", statements)


def test_cross_scope_diagnosis_uses_indexes_only(
    traced: tuple[TrueHeart, list[str]], tmp_path: Path
) -> None:
    service, statements = traced
    with pytest.raises(ScopeMismatch):
        service.govern(
            GovernanceCommand(OTHER, GovernanceAction.DELETE, EntityType.RAW_EVENT, "e1", NOW, "r")
        )
    with pytest.raises(ScopeMismatch):
        service.govern(
            GovernanceCommand(OTHER, GovernanceAction.SEAL, EntityType.MEMORY, "m1", NOW, "r")
        )
    _assert_indexed(tmp_path / "store.db", statements)
