"""Erasure reaches the vectors in the SQLite file: after a forget, a delete, the delete
of the memory's raw event, the forget of a claim or a subject erasure, no 16-byte aligned
chunk of a removed vector or of its sketch is left in the database file or its WAL, and
the vectors table keeps one row per remaining memory and no orphan, counted with plain
sqlite3.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conformance_builders import NOW, SCOPE, command, event, memory
from semantic_builders import (
    BUDGET,
    CHUNK,
    DENSE_DIMS,
    FILLERS,
    SECRET,
    SECRET_CLAIM,
    SECRET_CONTENT,
    SURVIVOR,
    build_erasure_scope,
    dense_blob,
    dense_chunks,
    open_dense,
)
from sqlite_builders import store_bytes

from trueheart_core import (
    ArtifactClass,
    EntityType,
    GovernanceAction,
    MemoryCapsule,
    Scope,
    SearchQuery,
    SignalSource,
    SQLiteRepository,
    TrueHeart,
)
from trueheart_core.domain.semantic.sketch import sketch_of


def _present_chunks(data: bytes, content: str) -> list[int]:
    """The positions (in the vector) of the aligned chunks of ``content``'s vector that
    occur in ``data``."""
    return [i for i, chunk in enumerate(dense_chunks(content)) if chunk in data]


def _sketch(content: str) -> bytes:
    """The sketch bytes stored with ``content``'s vector."""
    found = sketch_of(dense_blob(content))
    assert found is not None
    return found[0]


def _present_sketch_chunks(data: bytes, content: str) -> list[int]:
    """The positions of the aligned chunks of ``content``'s sketch that occur in
    ``data``."""
    sketch = _sketch(content)
    chunks = [sketch[start : start + CHUNK] for start in range(0, len(sketch), CHUNK)]
    return [i for i, chunk in enumerate(chunks) if chunk in data]


def _assert_held(path: Path, *contents: str) -> None:
    data = store_bytes(path)
    for content in contents:
        assert dense_blob(content) in data
        assert _present_chunks(data, content) == list(range(4 * DENSE_DIMS // CHUNK))
        assert _sketch(content) in data
        assert _present_sketch_chunks(data, content) == list(range(DENSE_DIMS // CHUNK))


def _assert_erased(path: Path, *contents: str) -> None:
    data = store_bytes(path)
    for content in contents:
        assert _present_chunks(data, content) == []
        assert _present_sketch_chunks(data, content) == []


def _semantic_signal(capsule: MemoryCapsule, memory_id: str) -> float | None:
    """The cosine similarity the semantic ranking gave ``memory_id`` in a search."""
    for entry in capsule.trace:
        if entry.memory_id == memory_id:
            for signal in entry.signals:
                if signal.source is SignalSource.SEMANTIC:
                    return signal.score
    return None


def _assert_survivors_searchable(service: TrueHeart, contents: dict[str, str]) -> None:
    found = service.search(SearchQuery(SCOPE, contents[SURVIVOR], NOW, budget_tokens=BUDGET))
    assert found.semantic is not None
    assert _semantic_signal(found, SURVIVOR) == pytest.approx(1.0, abs=1e-6)


def _assert_rows_after_close(service: TrueHeart, path: Path, survivors: int, *removed: str) -> None:
    service.close()
    raw = sqlite3.connect(path)
    try:
        # Erased rows stay, overwritten, until the file is compacted: live ones count.
        ((vectors,),) = raw.execute("SELECT count(*) FROM vectors WHERE erased IS NOT 1").fetchall()
        ((memories,),) = raw.execute(
            "SELECT count(*) FROM memories WHERE erased IS NOT 1"
        ).fetchall()
        ((orphans,),) = raw.execute(
            "SELECT count(*) FROM vectors v LEFT JOIN memories m ON m.rid = v.doc "
            "AND m.erased IS NOT 1 WHERE v.erased IS NOT 1 AND m.rid IS NULL"
        ).fetchall()
        left = [
            content
            for content in removed
            if raw.execute(
                "SELECT count(*) FROM vectors WHERE vector = ?", (dense_blob(content),)
            ).fetchone()
            != (0,)
        ]
    finally:
        raw.close()
    assert (vectors, memories, orphans, left) == (survivors, survivors, 0, [])


@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_forget_and_delete_erase_the_memory_vector(
    repository: SQLiteRepository, db_path: Path, action: GovernanceAction
) -> None:
    service, _ = open_dense(repository)
    contents = build_erasure_scope(service)
    _assert_held(db_path, SECRET_CONTENT, contents[SURVIVOR], contents[SECRET_CLAIM])
    service.govern(command(action, SECRET))
    _assert_erased(db_path, SECRET_CONTENT)
    _assert_held(db_path, contents[SURVIVOR], contents[SECRET_CLAIM])
    _assert_survivors_searchable(service, contents)
    assert (
        _semantic_signal(
            service.search(SearchQuery(SCOPE, SECRET_CONTENT, NOW, budget_tokens=BUDGET)), SECRET
        )
        is None
    )
    status = service.semantic_status(SCOPE)
    assert (status.memories, status.indexed, status.complete) == (FILLERS + 1, FILLERS + 1, True)
    assert service.verify_integrity().ok
    _assert_rows_after_close(service, db_path, FILLERS + 1, SECRET_CONTENT)


def test_raw_event_delete_erases_the_vectors_of_its_memories_and_claims(
    repository: SQLiteRepository, db_path: Path
) -> None:
    service, _ = open_dense(repository)
    contents = build_erasure_scope(service)
    _assert_held(db_path, SECRET_CONTENT, contents[SECRET_CLAIM])
    result = service.govern(
        command(GovernanceAction.DELETE, "evt-secret", entity_type=EntityType.RAW_EVENT)
    )
    assert result.affected_ids == (SECRET_CLAIM, "evt-secret", SECRET)
    _assert_erased(db_path, SECRET_CONTENT, contents[SECRET_CLAIM])
    _assert_held(db_path, contents[SURVIVOR])
    _assert_survivors_searchable(service, contents)
    assert service.semantic_status(SCOPE).indexed == FILLERS
    assert service.verify_integrity().ok
    _assert_rows_after_close(service, db_path, FILLERS, SECRET_CONTENT, contents[SECRET_CLAIM])


@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_forgetting_a_claim_erases_its_vector(
    repository: SQLiteRepository, db_path: Path, action: GovernanceAction
) -> None:
    service, _ = open_dense(repository)
    contents = build_erasure_scope(service)
    _assert_held(db_path, contents[SECRET_CLAIM], SECRET_CONTENT)
    service.govern(command(action, SECRET_CLAIM))
    _assert_erased(db_path, contents[SECRET_CLAIM])
    # the claim's source event and its sibling memory keep theirs
    _assert_held(db_path, SECRET_CONTENT, contents[SURVIVOR])
    _assert_survivors_searchable(service, contents)
    status = service.semantic_status(SCOPE)
    assert (status.memories, status.indexed) == (FILLERS + 1, FILLERS + 1)
    assert service.verify_integrity().ok
    _assert_rows_after_close(service, db_path, FILLERS + 1, contents[SECRET_CLAIM])


def test_a_sealed_memory_keeps_its_vector_until_it_is_forgotten(
    repository: SQLiteRepository, db_path: Path
) -> None:
    service, _ = open_dense(repository)
    contents = build_erasure_scope(service)
    service.govern(command(GovernanceAction.SEAL, SECRET))
    # an erasing call on another memory checkpoints the log: the sealed vector stays
    service.govern(command(GovernanceAction.FORGET, f"mem-{FILLERS - 1:03d}"))
    _assert_held(db_path, SECRET_CONTENT)
    service.govern(command(GovernanceAction.FORGET, SECRET))
    _assert_erased(db_path, SECRET_CONTENT)
    _assert_held(db_path, contents[SURVIVOR])
    assert service.verify_integrity().ok
    _assert_rows_after_close(service, db_path, FILLERS, SECRET_CONTENT)


def test_subject_erasure_takes_every_vector_of_the_scope(
    repository: SQLiteRepository, db_path: Path
) -> None:
    service, _ = open_dense(repository)
    contents = build_erasure_scope(service)
    other = Scope(SCOPE.tenant_id, SCOPE.owner_id, "someone-else")
    service.ingest_event(event("evt-other", scope=other))
    service.materialize_once(
        memory("mem-other", ("evt-other",), scope=other, content="another subject entirely")
    )
    _assert_held(db_path, *contents.values(), "another subject entirely")
    plan = service.erase_subject(SCOPE, occurred_at=NOW, dry_run=True)
    assert plan.erased[ArtifactClass.VECTOR] == FILLERS + 2
    receipt = service.erase_subject(SCOPE, occurred_at=NOW)
    assert receipt.erased[ArtifactClass.VECTOR] == FILLERS + 2
    assert receipt.remaining is not None and receipt.remaining[ArtifactClass.VECTOR] == 0
    assert receipt.verified
    _assert_erased(db_path, *contents.values())
    _assert_held(db_path, "another subject entirely")
    status = service.semantic_status(SCOPE)
    assert (status.memories, status.indexed) == (0, 0)
    assert service.semantic_status(other).complete
    assert service.verify_integrity().problems == ()
