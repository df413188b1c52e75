"""Vector rows edited behind the library's back (with sqlite3): verify_integrity reports a
tampered vector, one that disagrees with its memory and a sketch that is not its
vector's (rebuilding the indexes rewrites it); a vector of other content is stale and
re-projected; any edit of a vector row moves its scope's generation; a vector that no
rewrite repairs (damaged bytes, another scope's) is removed by rebuilding the indexes
and computed again by ``sync_semantic``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conformance_builders import NOW, OTHER_SCOPE, SCOPE, CountingClock, materialize_all
from semantic_builders import ConceptEmbedder, rebuild_recomputes_vector
from sqlite_builders import tamper

from trueheart_core import Scope, SearchQuery, SQLiteRepository, TrueHeart
from trueheart_core.domain.semantic.sketch import sketch_of
from trueheart_core.service.records import scope_key


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


def _sketch_columns(db_path: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(
            "SELECT vector, sketch, sketch_scale, sketch_error FROM vectors WHERE erased IS NOT 1 "
            "ORDER BY vid"
        ).fetchall()
    finally:
        conn.close()


FOUR = {"mem-1": "concise answers", "mem-2": "tea", "mem-3": "dark night", "mem-4": "rain"}


def test_every_stored_vector_has_the_sketch_it_gives(
    db_path: Path, repository: SQLiteRepository
) -> None:
    materialize_all(semantic(repository), FOUR)
    rows = _sketch_columns(db_path)
    assert len(rows) == 4
    assert [tuple(row[1:]) for row in rows] == [sketch_of(row[0]) for row in rows]  # type: ignore[arg-type]


def test_verify_reports_a_sketch_that_is_not_its_vectors(
    db_path: Path, repository: SQLiteRepository
) -> None:
    service = semantic(repository)
    materialize_all(service, FOUR)
    assert service.verify_integrity().problems == ()
    sketch = _sketch_columns(db_path)[0][1]
    assert isinstance(sketch, bytes)
    flipped = bytes([sketch[0] ^ 1]) + sketch[1:]
    assert tamper(db_path, "UPDATE vectors SET sketch = ? WHERE vid = 1", [flipped]) == 1
    assert tamper(db_path, "UPDATE vectors SET sketch_error = 0.0 WHERE vid = 2") == 1
    assert tamper(db_path, "UPDATE vectors SET sketch_scale = NULL WHERE vid = 3") == 1
    problems = service.verify_integrity().problems
    assert [(p.entity_type, p.entity_id, p.code) for p in problems] == [
        ("vector", memory_id, "vector_sketch_mismatch") for memory_id in ("mem-1", "mem-2", "mem-3")
    ]
    report = service.rebuild_indexes()
    assert report.vector_sketches_rebuilt == 3 and report.changed
    assert service.verify_integrity().ok
    assert service.rebuild_indexes().vector_sketches_rebuilt == 0


def test_a_vector_without_a_sketch_is_no_problem_and_gets_one_on_rebuild(
    db_path: Path, repository: SQLiteRepository
) -> None:
    # All three columns empty: a vector stored before sketches existed.
    service = semantic(repository)
    materialize_all(service, FOUR)
    tamper(db_path, "UPDATE vectors SET sketch = NULL, sketch_scale = NULL, sketch_error = NULL")
    assert service.verify_integrity().ok
    assert service.rebuild_indexes().vector_sketches_rebuilt == 4
    rows = _sketch_columns(db_path)
    assert [tuple(row[1:]) for row in rows] == [sketch_of(row[0]) for row in rows]  # type: ignore[arg-type]


def _generation(repository: SQLiteRepository) -> int:
    with repository.unit_of_work("search", write=False) as uow:
        assert uow.vectors is not None
        return uow.vectors.generation(scope_key(SCOPE))


def test_any_change_of_a_vector_row_moves_its_scopes_generation(
    db_path: Path, repository: SQLiteRepository
) -> None:
    materialize_all(semantic(repository), FOUR)
    seen = [_generation(repository)]
    for sql in (
        "UPDATE vectors SET sketch = NULL WHERE vid = 1",
        "UPDATE vectors SET vector = vector WHERE vid = 2",
        "DELETE FROM vectors WHERE vid = 3",
        "UPDATE vectors SET active = 0",
    ):
        tamper(db_path, sql)
        seen.append(_generation(repository))
    assert seen == sorted(set(seen)) and len(seen) == 5
    unchanged = _generation(repository)
    tamper(db_path, "UPDATE memories SET kind = kind")
    assert _generation(repository) == unchanged


def _hits(service: TrueHeart, scope: Scope, text: str) -> list[str]:
    capsule = service.search(SearchQuery(scope, text, NOW, semantic=True))
    return [item.memory.memory_id for item in capsule.items]


def _first_vector_changed(
    db_path: Path, repository: SQLiteRepository, change: str
) -> tuple[TrueHeart, list[str]]:
    """Two memories with vectors, then ``change`` made to the first vector's row behind
    the library's back: the service, and what a search found before the change."""
    service = semantic(repository)
    materialize_all(service, {"mem-1": "concise answers", "mem-2": "tea"})
    expected = _hits(service, SCOPE, "concise answers")
    assert tamper(db_path, f"UPDATE vectors SET {change} WHERE vid = 1") == 1
    return service, expected


@pytest.mark.parametrize(
    "change",
    [
        "vector = zeroblob(length(vector))",  # the size its space gives, other bytes
        "vector = substr(vector, 1, 8)",  # too short: the scan cannot read it
        "vector = CAST(vector AS TEXT)",
        "sketch = CAST(sketch AS TEXT)",
        "digest = CAST(x'ff' AS TEXT)",  # text that is no UTF-8
        "content_hash = CAST(x'ff' AS TEXT)",
        "space_id = space_id + 7",  # no such space
    ],
)
def test_a_damaged_vector_is_removed_by_rebuild_and_computed_again_by_sync(
    db_path: Path, repository: SQLiteRepository, change: str
) -> None:
    service, expected = _first_vector_changed(db_path, repository, change)
    assert [p.entity_id for p in service.verify_integrity().problems] == ["mem-1"]
    rebuild_recomputes_vector(service, "mem-1")
    assert _hits(service, SCOPE, "concise answers") == expected


def test_a_vector_moved_to_another_scope_is_removed_by_rebuild(
    db_path: Path, repository: SQLiteRepository
) -> None:
    service = semantic(repository)
    materialize_all(service, {"mem-1": "concise answers"})
    materialize_all(service, {"mem-2": "tea"}, scope=OTHER_SCOPE)
    other = "(SELECT scope_id FROM vectors WHERE vid = 2)"
    assert tamper(db_path, f"UPDATE vectors SET scope_id = {other} WHERE vid = 1") == 1
    assert not service.verify_integrity().ok
    report = service.rebuild_indexes()
    assert report.vectors_without_memory_removed == 1 and report.changed
    assert service.verify_integrity().ok
    assert service.stats(OTHER_SCOPE).vectors == 1
    assert service.semantic_status(SCOPE).missing_memory_ids == ("mem-1",)
    assert service.sync_semantic(SCOPE).complete
    assert _hits(service, SCOPE, "concise answers") == ["mem-1"]
    assert _hits(service, OTHER_SCOPE, "tea") == ["mem-2"]


@pytest.mark.parametrize("column", ["memory_id", "kind"])
def test_a_copy_that_is_no_utf8_is_rewritten_from_its_memory(
    db_path: Path, repository: SQLiteRepository, column: str
) -> None:
    service, expected = _first_vector_changed(
        db_path, repository, f"{column} = CAST(x'ff' AS TEXT)"
    )
    (problem,) = service.verify_integrity().problems
    assert (problem.entity_id, problem.code) == ("mem-1", "vector_disagrees_with_memory")
    report = service.rebuild_indexes()
    assert (report.vector_copies_repaired, report.damaged_vectors_removed) == (1, 0)
    assert service.verify_integrity().ok
    assert service.semantic_status(SCOPE).complete
    assert _hits(service, SCOPE, "concise answers") == expected
