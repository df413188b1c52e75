"""Erasure against a foreign reader that pins the WAL: the call either finishes with the
bytes gone from the file and its WAL, or raises ``RepositoryBusy`` having done nothing;
and two repositories erasing in one file at once."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest
from conformance_builders import NOW, SCOPE, command, event, memory
from sqlite_builders import pinned_reader, store_bytes

from trueheart_core import GovernanceAction, RepositoryBusy, Scope, SQLiteRepository, TrueHeart

RAW_BODY = "erasure-raw-body-qx7v3k9p-" + "R" * 40
MEMORY_BODY = "erasure-memory-body-mz4w8t2n-" + "M" * 40


def _present(path: Path, text: str) -> bool:
    return text.encode("utf-8") in store_bytes(path)


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

        reader = pinned_reader(db_path)
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


def test_two_repositories_erasing_at_once_wait_for_each_other(db_path: Path) -> None:
    """Each erasing call checkpoints the WAL before and after its change; SQLite turns a
    checkpoint away at once while another connection runs one, and that is waited out
    within the busy timeout like any other contention: no call fails, and nothing of
    what was forgotten stays in the files."""
    scopes = [Scope("acme", "agent", f"user-{n}") for n in range(2)]
    count = 60
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as setup:
        for scope in scopes:
            setup.ingest_events(
                [event(f"evt-{i}", scope=scope, content=f"{RAW_BODY}-{i}") for i in range(count)]
            )
            for i in range(count):
                setup.materialize_once(
                    memory(f"mem-{i}", (f"evt-{i}",), scope=scope, content=f"{MEMORY_BODY}-{i}")
                )
    failures: list[BaseException] = []

    def forget_all(scope: Scope) -> None:
        with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as service:
            for i in range(count):
                try:
                    service.govern(command(GovernanceAction.FORGET, f"mem-{i}", scope=scope))
                except RepositoryBusy as error:
                    failures.append(error)

    workers = [threading.Thread(target=forget_all, args=(scope,)) for scope in scopes]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert failures == []
    with TrueHeart(SQLiteRepository(db_path, read_only=True)) as service:
        assert service.stats().memories == 0
    assert not _present(db_path, MEMORY_BODY)
