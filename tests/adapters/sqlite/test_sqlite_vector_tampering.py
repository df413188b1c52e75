"""Vector rows edited behind the library's back (with sqlite3): verify_integrity reports a
tampered vector and one that disagrees with its memory, and a vector of other content is
stale and re-projected."""

from __future__ import annotations

from pathlib import Path

import pytest
from conformance_builders import SCOPE, CountingClock, materialize_all
from semantic_builders import ConceptEmbedder
from sqlite_builders import tamper

from trueheart_core import SQLiteRepository, TrueHeart


def semantic(repository: SQLiteRepository) -> TrueHeart:
    return TrueHeart(repository, clock=CountingClock(), embedder=ConceptEmbedder())


def test_verify_reports_a_tampered_vector(db_path: Path, repository: SQLiteRepository) -> None:
    service = semantic(repository)
    materialize_all(service, {"mem-1": "concise answers", "mem-2": "tea"})
    assert service.verify_integrity().problems == ()
    assert tamper(db_path, "UPDATE vectors SET vector = zeroblob(24) WHERE vid = 1") == 1
    (problem,) = service.verify_integrity().problems
    assert (problem.entity_type, problem.entity_id, problem.code) == (
        "vector",
        "mem-1",
        "digest_mismatch",
    )


def test_a_vector_of_other_content_is_stale(db_path: Path, repository: SQLiteRepository) -> None:
    service = semantic(repository)
    materialize_all(service, {"mem-1": "concise answers"})
    assert tamper(db_path, "UPDATE vectors SET content_hash = ?", ["0" * 64]) == 1
    status = service.semantic_status(SCOPE)
    assert status.stale_memory_ids == ("mem-1",) and status.indexed == 0
    assert service.sync_semantic(SCOPE).complete


@pytest.mark.parametrize(
    ("sql", "memory_id"),
    [
        ("UPDATE vectors SET active = 0 WHERE memory_id = 'mem-1'", "mem-1"),
        ("UPDATE vectors SET recall_until = recall_until + 1 WHERE memory_id = 'mem-2'", "mem-2"),
        ("UPDATE vectors SET kind = 'other' WHERE memory_id = 'mem-1'", "mem-1"),
    ],
)
def test_verify_reports_a_vector_that_disagrees_with_its_memory(
    db_path: Path, repository: SQLiteRepository, sql: str, memory_id: str
) -> None:
    service = semantic(repository)
    materialize_all(service, {"mem-1": "concise answers", "mem-2": "tea"})
    assert tamper(db_path, sql) == 1
    (problem,) = service.verify_integrity().problems
    assert (problem.entity_type, problem.entity_id, problem.code) == (
        "vector",
        memory_id,
        "vector_disagrees_with_memory",
    )
