"""Damage that only a write behind the library's back makes, on PostgreSQL: stored IDs
that are not UTF-8, and a scope's row lost. Every read fails closed with
``RepositoryCorruption`` (never a Python error of the adapter's own), and
``verify_integrity`` reports the damage instead of failing, as on SQLite; a damaged
vector is removed by rebuilding the indexes and computed again by ``sync_semantic``."""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from conformance_builders import NOW, SCOPE, event, memory
from semantic_builders import rebuild_recomputes_vector

from trueheart_core import (
    HashingEmbedder,
    PostgresRepository,
    RecallQuery,
    RepositoryCorruption,
    SearchQuery,
    TrueHeart,
)

NOT_UTF8 = [
    "UPDATE memories SET memory_id = '\\xff'::bytea",
    "UPDATE memories SET memory_id = '\\x6d656d2d31ff'::bytea",  # mem-1 and a stray byte
    "UPDATE lineage SET event_id = '\\xff'::bytea",
]


def _stored(repository: PostgresRepository) -> TrueHeart:
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-1"))
    return service


@pytest.mark.parametrize("damage", NOT_UTF8)
def test_a_stored_id_that_is_not_utf8_fails_closed_and_is_reported(
    repository: PostgresRepository, pg: Any, damage: str
) -> None:
    service = _stored(repository)
    pg.execute(damage)
    reads: list[Callable[[], object]] = [
        lambda: service.recall(RecallQuery(SCOPE, NOW + timedelta(seconds=1))),
        lambda: service.list_memories(SCOPE),
        lambda: service.export_store(io.StringIO()),
    ]
    for read in reads:
        with pytest.raises(RepositoryCorruption):
            read()
    report = service.verify_integrity()
    assert not report.ok
    assert {p.entity_type for p in report.problems} <= {"memory", "lineage", "search_index"}


def test_a_scope_row_lost_or_damaged_is_reported_by_the_whole_store_check(
    repository: PostgresRepository, pg: Any
) -> None:
    service = _stored(repository)
    assert service.verify_integrity().ok
    pg.execute("UPDATE scopes SET tenant_id = '\\xff'::bytea")
    report = service.verify_integrity()
    assert [(p.entity_type, p.code) for p in report.problems] == [
        ("storage", "storage_check_failed")
    ]
    pg.execute("DELETE FROM scopes")
    report = service.verify_integrity()
    assert [(p.entity_type, p.code) for p in report.problems] == [
        ("storage", "storage_check_failed")
    ]


@pytest.mark.parametrize(
    "change",
    [
        "vector = decode(repeat('00', length(vector)), 'hex')",
        "vector = substring(vector from 1 for 8)",
        "space_id = space_id + 7",
    ],
)
def test_a_damaged_vector_is_removed_by_rebuild_and_computed_again_by_sync(
    repository: PostgresRepository, pg: Any, change: str
) -> None:
    service = TrueHeart(repository, clock=lambda: NOW, embedder=HashingEmbedder())
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-1", content="concise answers"))
    service.materialize_once(memory("mem-2", content="green tea"))
    damaged = pg.execute(f"UPDATE vectors SET {change} WHERE memory_id = 'mem-1'::bytea")
    assert damaged.rowcount == 1
    assert [p.entity_id for p in service.verify_integrity().problems] == ["mem-1"]
    rebuild_recomputes_vector(service, "mem-1")
    found = service.search(SearchQuery(SCOPE, "concise answers", NOW, semantic=True))
    assert found.items and found.items[0].memory.memory_id == "mem-1"
