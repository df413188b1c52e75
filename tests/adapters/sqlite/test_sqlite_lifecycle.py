"""The SQLite repository's own lifecycle: its context manager, the paths it opens, a
read-only open that leaves the file unchanged, a second writer holding the lock, and
files that are no store of this library."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from conformance_builders import NOW, SCOPE, assert_not_chained, command, event, memory, msg

from trueheart_core import (
    GovernanceAction,
    RecallQuery,
    RepositoryBusy,
    RepositoryCorruption,
    RepositoryReadOnly,
    SQLiteRepository,
    TrueHeart,
    ValidationError,
)

CLOSED = msg("repository: is closed")


def test_repository_context_manager(db_path: Path) -> None:
    with SQLiteRepository(db_path) as repo:
        assert isinstance(repo, SQLiteRepository)
        service = TrueHeart(repo, clock=lambda: NOW)
        service.ingest_event(event())
    with pytest.raises(ValidationError, match=CLOSED):
        service.audit(SCOPE)


def test_context_manager_closes_on_error(db_path: Path) -> None:
    with pytest.raises(RuntimeError), SQLiteRepository(db_path) as repo:
        raise RuntimeError("boom")
    with pytest.raises(ValidationError, match=CLOSED):
        TrueHeart(repo, clock=lambda: NOW).audit(SCOPE)


def test_memory_stores_are_independent_and_live_as_long_as_the_object() -> None:
    with SQLiteRepository(":memory:") as first, SQLiteRepository(":memory:") as second:
        one = TrueHeart(first, clock=lambda: NOW)
        two = TrueHeart(second, clock=lambda: NOW)
        one.ingest_event(event())
        one.materialize_once(memory())
        assert len(one.recall(RecallQuery(SCOPE, NOW))) == 1
        assert two.recall(RecallQuery(SCOPE, NOW)) == ()
        assert two.audit(SCOPE) == ()


# --------------------------------------------------------------------------- opening


def test_path_must_not_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=msg("path: must not be a directory")):
        SQLiteRepository(tmp_path)


@pytest.mark.parametrize("path", [None, 3, b"store.db", ["store.db"]])
def test_path_must_be_str_or_pathlike(path: Any) -> None:
    with pytest.raises(ValidationError, match=msg("path: must be a str or os.PathLike")):
        SQLiteRepository(path)


def test_read_only_requires_an_existing_file(db_path: Path) -> None:
    with pytest.raises(ValidationError, match=msg("path: must name an existing database file")):
        SQLiteRepository(db_path, read_only=True)
    assert not db_path.exists()


def test_read_only_store_reads_but_refuses_writes(db_path: Path) -> None:
    with SQLiteRepository(db_path) as repo:
        service = TrueHeart(repo, clock=lambda: NOW)
        service.ingest_event(event(raw_ttl=timedelta(days=1)))
        service.materialize_once(memory())
        audit = service.audit(SCOPE)
    before = db_path.read_bytes()
    with SQLiteRepository(db_path, read_only=True) as repo:
        service = TrueHeart(repo, clock=lambda: NOW)
        assert len(service.recall(RecallQuery(SCOPE, NOW))) == 1
        assert service.audit(SCOPE) == audit
        assert service.verify_integrity().ok
        writes: list[tuple[Callable[[], Any], str]] = [
            (lambda: service.ingest_event(event("evt-2")), "event ingest failed"),
            (lambda: service.materialize_once(memory("mem-2")), "memory materialization failed"),
            (
                lambda: service.govern(command(GovernanceAction.SEAL)),
                "governance transaction failed",
            ),
            (
                lambda: service.expire_raw_content(as_of=NOW + timedelta(days=2)),
                "raw content expiry failed",
            ),
        ]
        for write, diagnostic in writes:
            with pytest.raises(
                RepositoryReadOnly, match=msg(f"repository read-only: {diagnostic}")
            ):
                write()
        assert service.audit(SCOPE) == audit
    assert db_path.read_bytes() == before


def test_write_contention_raises_exactly_repository_busy(db_path: Path) -> None:
    with SQLiteRepository(db_path) as setup:
        TrueHeart(setup, clock=lambda: NOW).ingest_event(event())
    blocker = sqlite3.connect(db_path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with SQLiteRepository(db_path, busy_timeout=0.2) as repo:
            service = TrueHeart(repo, clock=lambda: NOW)
            with pytest.raises(RepositoryBusy) as info:
                service.ingest_event(event("evt-2"))
            assert type(info.value) is RepositoryBusy
            assert not isinstance(info.value, RepositoryCorruption)
            assert str(info.value) == "repository busy: event ingest failed"
            assert_not_chained(info.value)
            blocker.execute("ROLLBACK")
            # nothing was done, so a retry succeeds
            assert service.ingest_event(event("evt-2")).event_id == "evt-2"
    finally:
        blocker.close()


BUSY_WRITES: dict[str, tuple[Callable[[TrueHeart], Any], str]] = {
    "ingest_event": (lambda s: s.ingest_event(event("evt-2")), "event ingest failed"),
    "ingest_events": (lambda s: s.ingest_events([event("evt-2")]), "event ingest failed"),
    "materialize_once": (
        lambda s: s.materialize_once(memory("mem-2")),
        "memory materialization failed",
    ),
    "govern": (lambda s: s.govern(command(GovernanceAction.SEAL)), "governance transaction failed"),
    "expire_raw_content": (
        lambda s: s.expire_raw_content(as_of=NOW + timedelta(days=30)),
        "raw content expiry failed",
    ),
}


@pytest.mark.parametrize("name", sorted(BUSY_WRITES))
def test_every_write_reports_busy_and_reads_still_work(db_path: Path, name: str) -> None:
    with SQLiteRepository(db_path) as setup:
        service = TrueHeart(setup, clock=lambda: NOW)
        service.ingest_event(event())
        service.materialize_once(memory())
        audit = service.audit(SCOPE)
    blocker = sqlite3.connect(db_path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with SQLiteRepository(db_path, busy_timeout=0.1) as repo:
            service = TrueHeart(repo, clock=lambda: NOW)
            write, diagnostic = BUSY_WRITES[name]
            with pytest.raises(RepositoryBusy, match=msg(f"repository busy: {diagnostic}")) as info:
                write(service)
            assert type(info.value) is RepositoryBusy
            # WAL readers are not blocked by the writer
            assert service.audit(SCOPE) == audit
            assert len(service.recall(RecallQuery(SCOPE, NOW))) == 1
            blocker.execute("ROLLBACK")
            write(service)
    finally:
        blocker.close()


@pytest.mark.parametrize(
    "content",
    [b"", b"\x00\x01\x02 random bytes " * 40, b"just a text file\n"],
    ids=["empty", "random", "text"],
)
def test_non_database_files_fail_closed_and_stay_unchanged(db_path: Path, content: bytes) -> None:
    db_path.write_bytes(content)
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid schema catalog")
    ):
        SQLiteRepository(db_path)
    assert db_path.read_bytes() == content
    assert not Path(f"{db_path}-wal").exists()
    assert not Path(f"{db_path}-shm").exists()


def test_foreign_sqlite_database_fails_closed(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.commit()
    conn.close()
    before = db_path.read_bytes()
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid schema catalog")
    ):
        SQLiteRepository(db_path)
    assert db_path.read_bytes() == before
    assert not Path(f"{db_path}-wal").exists()
