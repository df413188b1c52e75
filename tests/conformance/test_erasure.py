"""Erasure reaches the file: removed bodies leave the database file, its WAL and journal."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from conformance_builders import (
    NOW,
    SCOPE,
    command,
    event,
    file_db_or_skip,
    memory,
    store_bytes,
)

from trueheart_core import (
    EntityType,
    GovernanceAction,
    RepositoryBusy,
    SQLiteRepository,
    TrueHeart,
)

RAW_BODY = "erasure-raw-body-qx7v3k9p-" + "R" * 40
MEMORY_BODY = "erasure-memory-body-mz4w8t2n-" + "M" * 40
KEEP_BODY = "erasure-kept-body-hy6d1c5f-" + "K" * 40


def _present(path: Path, text: str) -> bool:
    return text.encode("utf-8") in store_bytes(path)


def test_expiry_erases_raw_body(service: TrueHeart, tmp_path: Path) -> None:
    path = file_db_or_skip(tmp_path)
    service.ingest_event(event("evt-1", content=RAW_BODY, raw_ttl=timedelta(days=1)))
    service.ingest_event(event("evt-2", content=KEEP_BODY, raw_ttl=timedelta(days=9)))
    assert _present(path, RAW_BODY)
    assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 1
    assert not _present(path, RAW_BODY)
    assert _present(path, KEEP_BODY)


def test_raw_delete_erases_event_and_dependent_memory_bodies(
    service: TrueHeart, tmp_path: Path
) -> None:
    path = file_db_or_skip(tmp_path)
    receipt = service.ingest_event(event("evt-1", content=RAW_BODY))
    service.ingest_event(event("evt-2", content=KEEP_BODY))
    service.materialize_once(memory("mem-1", ("evt-1", "evt-2"), content=MEMORY_BODY))
    assert _present(path, receipt.content_hash)
    assert _present(path, RAW_BODY)
    assert _present(path, MEMORY_BODY)
    result = service.govern(
        command(GovernanceAction.DELETE, "evt-1", entity_type=EntityType.RAW_EVENT)
    )
    assert result.affected_ids == ("evt-1", "mem-1")
    assert not _present(path, RAW_BODY)
    assert not _present(path, MEMORY_BODY)
    assert _present(path, KEEP_BODY)
    # the receipt went too, and with it the content hash derived from the body
    assert not _present(path, receipt.content_hash)


@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_memory_forget_and_delete_erase_memory_body(
    service: TrueHeart, tmp_path: Path, action: GovernanceAction
) -> None:
    path = file_db_or_skip(tmp_path)
    service.ingest_event(event("evt-1", content=RAW_BODY))
    service.materialize_once(memory("mem-1", content=MEMORY_BODY))
    service.materialize_once(memory("mem-2", content=KEEP_BODY))
    assert _present(path, MEMORY_BODY)
    service.govern(command(action, "mem-1"))
    assert not _present(path, MEMORY_BODY)
    # forgetting a memory never touches its source event nor sibling memories
    assert _present(path, RAW_BODY)
    assert _present(path, KEEP_BODY)


def test_sealed_memory_body_is_erased_on_forget(service: TrueHeart, tmp_path: Path) -> None:
    path = file_db_or_skip(tmp_path)
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-1", content=MEMORY_BODY))
    service.govern(command(GovernanceAction.SEAL, "mem-1"))
    assert _present(path, MEMORY_BODY)
    service.govern(command(GovernanceAction.FORGET, "mem-1"))
    assert not _present(path, MEMORY_BODY)


def test_erasure_survives_close_and_reopen(
    repository: SQLiteRepository, service: TrueHeart, tmp_path: Path
) -> None:
    path = file_db_or_skip(tmp_path)
    service.ingest_event(event("evt-1", content=RAW_BODY, raw_ttl=timedelta(days=1)))
    service.materialize_once(memory("mem-1", content=MEMORY_BODY))
    service.expire_raw_content(as_of=NOW + timedelta(days=1))
    service.govern(command(GovernanceAction.FORGET, "mem-1"))
    repository.close()
    assert not _present(path, RAW_BODY)
    assert not _present(path, MEMORY_BODY)
    with SQLiteRepository(path) as reopened:
        again = TrueHeart(reopened, clock=lambda: NOW)
        assert [r.action for r in again.audit(SCOPE)][:2] == ["expire", "forget"]
    assert not _present(path, RAW_BODY)
    assert not _present(path, MEMORY_BODY)


def test_many_bodies_are_all_erased(service: TrueHeart, tmp_path: Path) -> None:
    path = file_db_or_skip(tmp_path)
    bodies = [f"erasure-bulk-{index:03d}-" + "B" * 300 for index in range(40)]
    for index, body in enumerate(bodies):
        service.ingest_event(event(f"evt-{index}", content=body, raw_ttl=timedelta(days=1)))
    assert all(_present(path, body) for body in bodies)
    assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 40
    data = store_bytes(path)
    assert not [body for body in bodies if body.encode() in data]


def _pinned_reader(path: Path) -> sqlite3.Connection:
    """A foreign connection holding a read snapshot, which blocks WAL checkpoints."""
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM memories").fetchone()
    return reader


@pytest.mark.parametrize("operation", ["forget", "expire"])
def test_erasure_blocked_by_a_reader_is_busy_before_work_or_complete(
    db_path: Path, operation: str
) -> None:
    """Either the call returns with the body gone, or it raises RepositoryBusy with the
    operation's diagnostic having done nothing, so that a retry is safe and erases."""
    with SQLiteRepository(db_path, busy_timeout=0.2) as repo:
        service = TrueHeart(repo, clock=lambda: NOW)
        service.ingest_event(event("evt-1", content=RAW_BODY, raw_ttl=timedelta(days=1)))
        service.materialize_once(memory("mem-1", content=MEMORY_BODY))
        body = MEMORY_BODY if operation == "forget" else RAW_BODY
        diagnostic = (
            "governance transaction failed"
            if operation == "forget"
            else "raw content expiry failed"
        )

        def run() -> object:
            if operation == "forget":
                return service.govern(command(GovernanceAction.FORGET, "mem-1"))
            return service.expire_raw_content(as_of=NOW + timedelta(days=1))

        reader = _pinned_reader(db_path)
        try:
            try:
                outcome = run()
            except RepositoryBusy as error:
                assert str(error) == f"repository busy: {diagnostic}"
                # nothing was done: the audit trail and the memory are unchanged
                assert [r.action for r in service.audit(SCOPE)] == ["materialize", "ingest"]
                outcome = None
            else:
                assert not _present(db_path, body)
        finally:
            reader.close()
        if outcome is None:
            run()
            assert not _present(db_path, body)
