"""The rare erasure fallback: a reader that starts *during* an erasing call.

White-box test of the SQLite adapter. A foreign connection opens a read transaction at
the moment the erasing transaction commits (from the connection's trace hook), so the
checkpoint after the commit cannot complete. The call must say so instead of returning as
if the bytes were gone, and the next call on the repository must finish the scrub.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from trueheart_core import (
    EntityDeleted,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RepositoryBusy,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
    ValidationError,
)

NOW = datetime(2026, 8, 13, 12, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "subject")
SECRET = "fallback-secret-memory-body-7d1f"


def _bytes(path: Path) -> bytes:
    wal = Path(f"{path}-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def _a_store_with_the_secret(path: Path) -> tuple[SQLiteRepository, TrueHeart]:
    """A store at ``path`` holding one event and the memory ``m1`` whose content is the
    secret, with a short busy timeout."""
    repository = SQLiteRepository(path, busy_timeout=0.2)
    service = TrueHeart(repository, clock=lambda: NOW)
    retention = RetentionPolicy(timedelta(days=1), timedelta(days=2), timedelta(days=4))
    source = SourceRef("s", "t", NOW, TrustLevel.OBSERVED)
    service.ingest_event(RawEventDraft("e1", SCOPE, source, "event body", retention))
    service.materialize_once(
        MemoryDraft("m1", SCOPE, SECRET, ("e1",), "fact", TrustLevel.OBSERVED, NOW)
    )
    return repository, service


def test_a_reader_arriving_at_commit_delays_the_scrub_until_the_next_call(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.db"
    repository, service = _a_store_with_the_secret(path)
    assert SECRET.encode() in _bytes(path)

    readers: list[sqlite3.Connection] = []

    def pin_a_snapshot_at_commit(statement: str) -> None:
        if statement == "COMMIT" and not readers:
            reader = sqlite3.connect(path, isolation_level=None)
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM memories").fetchone()
            readers.append(reader)

    connection = repository._conn  # the adapter's connection, for the trace hook only
    assert connection is not None
    connection.set_trace_callback(pin_a_snapshot_at_commit)
    forget = GovernanceCommand(
        SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, "m1", NOW, "user request"
    )
    try:
        with pytest.raises(RepositoryBusy) as caught:
            service.govern(forget)
        assert str(caught.value) == "repository busy: erasure checkpoint incomplete"
        assert readers, "the reader was not started"
        # The change itself is committed: reads no longer see the memory.
        assert service.recall(RecallQuery(SCOPE, NOW)) == ()
        assert [r.action for r in service.audit(SCOPE, limit=1)] == ["forget"]
        # The bytes wait for the scrub ...
        assert SECRET.encode() in _bytes(path)
        # ... and while the snapshot stays pinned, another erasing call does nothing at all.
        with pytest.raises(RepositoryBusy) as again:
            service.govern(forget)
        assert str(again.value) == "repository busy: governance transaction failed"
    finally:
        connection.set_trace_callback(None)
        for reader in readers:
            reader.close()
    # The reader has finished: the next call scrubs first, then finds the tombstone.
    with pytest.raises(EntityDeleted):
        service.govern(forget)
    assert SECRET.encode() not in _bytes(path)
    assert Path(f"{path}-wal").stat().st_size == 0
    repository.close()


def test_close_never_drops_a_scrub_a_reader_still_holds_up(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    repository, service = _a_store_with_the_secret(path)
    service.close()  # the file alone holds the memory; its log is gone
    repository = SQLiteRepository(path, busy_timeout=0.2)
    service = TrueHeart(repository, clock=lambda: NOW)
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        # A reader of the file alone is seen only once the change has committed.
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM memories").fetchone()
        forget = GovernanceCommand(
            SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, "m1", NOW, "user request"
        )
        with pytest.raises(RepositoryBusy, match=r"erasure checkpoint incomplete$"):
            service.govern(forget)
        for _ in range(2):
            with pytest.raises(RepositoryBusy) as caught:
                service.close()
            assert str(caught.value) == "repository busy: erasure checkpoint incomplete"
            assert SECRET.encode() in _bytes(path)
        # Nothing was closed: the repository still answers.
        assert service.recall(RecallQuery(SCOPE, NOW)) == ()
    finally:
        reader.close()
    service.close()  # the reader is gone: the scrub runs, then the connection closes
    assert SECRET.encode() not in _bytes(path)
    service.close()  # idempotent
    with pytest.raises(ValidationError, match="repository: is closed"):
        service.recall(RecallQuery(SCOPE, NOW))


def test_a_reader_that_began_before_an_erasing_call(tmp_path: Path) -> None:
    """Before the work, the check sees a reader whose snapshot holds frames of the WAL;
    a reader of an empty WAL is found only after the commit (as the docs say)."""
    import sqlite3

    from trueheart_core import (
        EntityDeleted,
        EntityType,
        GovernanceAction,
        GovernanceCommand,
        MemoryDraft,
        RawEventDraft,
        RepositoryBusy,
        RetentionPolicy,
        Scope,
        SourceRef,
        SQLiteRepository,
        TrueHeart,
        TrustLevel,
    )

    now = datetime(2026, 8, 13, 12, tzinfo=UTC)
    scope = Scope("t", "o", "s")
    path = tmp_path / "store.db"
    retention = RetentionPolicy(timedelta(days=1), timedelta(days=2), timedelta(days=3))
    source = SourceRef("c", "chat", now, TrustLevel.OBSERVED)
    with TrueHeart(SQLiteRepository(path), clock=lambda: now) as service:
        for index in range(3):
            service.ingest_event(RawEventDraft(f"e{index}", scope, source, "body", retention))
            service.materialize_once(
                MemoryDraft(
                    f"m{index}", scope, "a note", (f"e{index}",), "n", TrustLevel.OBSERVED, now
                )
            )
    service = TrueHeart(SQLiteRepository(path, busy_timeout=0.2), clock=lambda: now)

    def forget(memory_id: str) -> object:
        return service.govern(
            GovernanceCommand(
                scope, GovernanceAction.FORGET, EntityType.MEMORY, memory_id, now, "r"
            )
        )

    reader = sqlite3.connect(path, isolation_level=None)
    try:
        # The WAL holds frames: the reader pins them and the call does nothing.
        service.ingest_event(RawEventDraft("e-new", scope, source, "body", retention))
        assert Path(f"{path}-wal").stat().st_size > 0
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM memories").fetchone()
        with pytest.raises(RepositoryBusy, match=r"governance transaction failed$"):
            forget("m1")
        reader.execute("COMMIT")
        assert service.get_memory(scope, "m1").memory_id == "m1"
        # Scrubbed by a call without readers: the WAL is empty, and a reader of the file
        # alone holds nothing up before the work; the change commits, the scrub waits.
        forget("m0")
        assert Path(f"{path}-wal").stat().st_size == 0
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM memories").fetchone()
        with pytest.raises(RepositoryBusy, match=r"erasure checkpoint incomplete$"):
            forget("m2")
        reader.execute("COMMIT")
        with pytest.raises(EntityDeleted):
            service.get_memory(scope, "m2")  # committed; this call scrubbed first
        assert Path(f"{path}-wal").stat().st_size == 0
    finally:
        reader.close()
        service.close()
