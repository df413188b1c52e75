"""Threads sharing one SQLite repository: its calls run one at a time, and a call waits
for another thread's call at most ``busy_timeout``, then raises ``RepositoryBusy`` before
any work, as a write does for another connection's writer; so a host callback that
blocks, or that waits for a call of its own on another thread, never makes the store
wait without end."""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import io
import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conformance_builders import after_write_unit

from trueheart_core import (
    HashingEmbedder,
    MemoryDraft,
    RawEventDraft,
    RepositoryBusy,
    RetentionPolicy,
    Scope,
    SemanticProjectionError,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrueHeartError,
    TrustLevel,
    ValidationError,
)

SCOPE = Scope("acme", "agent", "user-1")
NOW = datetime(2026, 3, 1, tzinfo=UTC)
RETENTION = RetentionPolicy(timedelta(days=1), timedelta(days=1), timedelta(days=2))
BUSY = 0.2
HANG = 30.0  # far beyond BUSY: a thread still running then is taken for a hang


def _event(event_id: str) -> RawEventDraft:
    return RawEventDraft(
        event_id,
        SCOPE,
        SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED),
        "I drink green tea.",
        RETENTION,
    )


@contextlib.contextmanager
def _held_by_another_thread(repository: SQLiteRepository) -> Iterator[None]:
    """Another thread inside a unit of work of ``repository`` (so holding its lock) for
    as long as the block runs."""
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with repository.unit_of_work("read", write=False):
            inside.set()
            release.wait(HANG)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert inside.wait(HANG)
        yield
    finally:
        release.set()
        holder.join(HANG)
        assert not holder.is_alive()


@pytest.fixture(params=["file", "memory"])
def repository(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SQLiteRepository]:
    target = str(tmp_path / "store.db") if request.param == "file" else ":memory:"
    repo = SQLiteRepository(target, busy_timeout=BUSY)
    try:
        yield repo
    finally:
        repo.close()


def test_a_call_waits_for_another_threads_call_at_most_the_busy_timeout(
    repository: SQLiteRepository, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_event(_event("evt-0"))
    with _held_by_another_thread(repository):
        with pytest.raises(RepositoryBusy) as raised:
            service.ingest_event(_event("evt-1"))
        assert str(raised.value) == "repository busy: event ingest failed"
        with caplog.at_level(logging.WARNING, logger="trueheart_core.busy"):
            with pytest.raises(RepositoryBusy):
                service.stats(SCOPE)
            with pytest.raises(RepositoryBusy):
                service.backup(str(tmp_path / "backup.db"))
        assert not (tmp_path / "backup.db").exists()
        # Each refusal is logged, as a unit of work's is.
        assert [r.getMessage() for r in caplog.records if r.name == "trueheart_core.busy"] == [
            "ingest refused, repository busy: event ingest failed",
            "stats refused, repository busy: statistics read failed",
            "backup refused, repository busy: backup failed",
        ]
        # The sizes of 0.5.0 do not wait: they read the files alone.
        sizes = repository.file_sizes()
        if (tmp_path / "store.db").exists():
            assert sizes is not None and sizes[0] == (tmp_path / "store.db").stat().st_size
        else:
            assert sizes is None
    # Nothing was done: the retry stores the event, once.
    assert service.ingest_event(_event("evt-1")).event_id == "evt-1"
    assert service.stats(SCOPE).events == 2


def test_a_callback_waiting_for_a_call_on_another_thread_does_not_hang(
    repository: SQLiteRepository,
) -> None:
    """A writer of ``export_store`` (a host callback inside the export's reading
    transaction) that hands a call of the same store to a worker thread and waits for
    it: the worker's call gives up after ``busy_timeout`` instead of both waiting for
    ever, and the callback's error leaves the export as it was raised."""
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_event(_event("evt-0"))
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    class Relay(io.StringIO):
        def write(self, text: str) -> int:
            pool.submit(service.stats, SCOPE).result(timeout=HANG)
            return super().write(text)

    outcome: list[BaseException | None] = []

    def export() -> None:
        try:
            service.export_store(Relay())
        except BaseException as error:  # what the export raised is checked below
            outcome.append(error)
        else:
            outcome.append(None)

    exporter = threading.Thread(target=export)
    exporter.start()
    exporter.join(HANG)
    pool.shutdown(wait=True)
    assert not exporter.is_alive()
    assert len(outcome) == 1
    assert isinstance(outcome[0], RepositoryBusy)
    assert isinstance(outcome[0], TrueHeartError)
    # The store goes on: the export's transaction ended and the lock was given back.
    assert service.stats(SCOPE).events == 1


def test_a_callbacks_call_on_its_own_thread_is_still_refused_at_once(
    repository: SQLiteRepository,
) -> None:
    """The thread inside a call takes the lock at once (it holds it): its callback's call
    is refused as re-entrant, not made to wait for itself."""
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_event(_event("evt-0"))
    refused: list[Exception] = []

    class Reentrant(io.StringIO):
        def write(self, text: str) -> int:
            try:
                service.stats(SCOPE)
            except TrueHeartError as error:
                refused.append(error)
            return super().write(text)

    service.export_store(Reentrant())
    assert refused
    assert all(not isinstance(error, RepositoryBusy) for error in refused)
    assert "already in a call on this thread" in str(refused[0])


def test_vectors_that_could_not_be_stored_name_the_stores_error_as_the_cause(
    tmp_path: Path,
) -> None:
    """Between a write's commit and the storing of its vectors, another connection takes
    the write lock and keeps it past ``busy_timeout``: the write stays stored, and the
    ``SemanticProjectionError`` has the store's ``RepositoryBusy`` as its cause."""
    path = tmp_path / "store.db"
    holders: list[sqlite3.Connection] = []

    class LockingEmbedder(HashingEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
            holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            holders.append(holder)
            holder.execute("BEGIN IMMEDIATE")  # no transaction of the store's is open now
            return list(super().embed_documents(texts))

    with SQLiteRepository(path, busy_timeout=BUSY) as repository:
        service = TrueHeart(
            repository, clock=lambda: NOW, embedder=LockingEmbedder(32), auto_index=True
        )
        service.ingest_event(_event("evt-0"))
        try:
            with pytest.raises(SemanticProjectionError) as raised:
                service.materialize_once(
                    MemoryDraft(
                        "mem-1",
                        SCOPE,
                        "Drinks green tea.",
                        ("evt-0",),
                        "habit",
                        TrustLevel.OBSERVED,
                        NOW,
                    )
                )
        finally:
            for holder in holders:
                holder.close()  # its transaction rolls back
        assert raised.value.evidence_committed is True
        assert "the vectors could not be stored" in str(raised.value)
        assert isinstance(raised.value.__cause__, RepositoryBusy)
        assert service.get_memory(SCOPE, "mem-1").memory_id == "mem-1"
        assert service.semantic_status(SCOPE).missing_memory_ids == ("mem-1",)


def test_close_waits_for_another_threads_call_at_most_the_busy_timeout(
    repository: SQLiteRepository,
) -> None:
    """``close()`` while another thread's call is held up: ``RepositoryBusy`` after
    ``busy_timeout``, nothing closed; once the call has finished, it closes."""
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_event(_event("evt-0"))
    with _held_by_another_thread(repository):
        with pytest.raises(RepositoryBusy) as raised:
            repository.close()
        assert str(raised.value) == (
            "repository busy: a call of another thread is still running; nothing was closed"
        )
    assert service.stats(SCOPE).events == 1  # still open
    repository.close()
    with pytest.raises(ValidationError):
        service.stats(SCOPE)


def test_an_erasure_whose_count_cannot_begin_still_returns_its_receipt(
    repository: SQLiteRepository,
) -> None:
    """Another thread takes the repository as soon as the erasure's transaction has
    ended and keeps it past ``busy_timeout``: the erasure is committed, so the call
    returns its receipt (the IDs erased), with ``remaining`` and ``verified`` ``None``
    (not counted), instead of raising after the fact."""
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_event(_event("evt-0"))
    service.materialize_once(
        MemoryDraft(
            "mem-1", SCOPE, "Drinks green tea.", ("evt-0",), "habit", TrustLevel.OBSERVED, NOW
        )
    )
    with contextlib.ExitStack() as holding:
        hold = functools.partial(holding.enter_context, _held_by_another_thread(repository))
        with after_write_unit("erase", hold) as done:
            receipt = service.erase_subject(SCOPE, occurred_at=NOW)
    assert len(done) == 1
    assert (receipt.event_ids, receipt.memory_ids) == (("evt-0",), ("mem-1",))
    assert receipt.remaining is None
    assert receipt.verified is None
    assert receipt.dry_run is False
    after = service.stats(SCOPE)
    assert (after.events, after.memories) == (0, 0)
