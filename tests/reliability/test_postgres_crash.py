"""Crashes on PostgreSQL: a client killed inside a transaction, and the server killed
under a writing client.

* A client process (``multiprocessing`` with ``spawn``) killed with SIGKILL while its
  long batch ingest is open on the server: none of the batch is visible afterwards, what
  it committed before is intact, the store verifies clean, and another client writes on
  (the very IDs of the lost batch included).
* The server stopped at once (``pg_ctl stop -m immediate``: no shutdown checkpoint, the
  restart runs crash recovery) while a thread writes through a repository: every call
  fails with a library error (``RepositoryUnavailable`` or ``RepositoryBusy``), never a
  driver's exception; after the restart every committed write is there, the store
  verifies clean, and the same repository object writes again. This test runs on a
  throwaway cluster of its own, never on the shared one.
"""

from __future__ import annotations

import multiprocessing
import random
import signal
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from trueheart_core import (
    EntityNotFound,
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RepositoryBusy,
    RetentionPolicy,
    Scope,
    SourceRef,
    TrueHeart,
    TrustLevel,
)

psycopg = pytest.importorskip("psycopg")

CHILD_NOW = datetime(2020, 1, 1, tzinfo=UTC)
PARENT_NOW = datetime(2030, 6, 1, tzinfo=UTC)
SCHEMA = "trueheart"
SCOPE = Scope("tenant", "owner", "crash")
SPAWN = multiprocessing.get_context("spawn")
BATCH = 4000  # events in the batch that is killed: seconds of work inside one transaction
BEFORE = 20  # events the child commits before its batch
ROUNDS = 3


def event_draft(event_id: str) -> RawEventDraft:
    return RawEventDraft(
        event_id,
        SCOPE,
        SourceRef("src", "crash", CHILD_NOW, TrustLevel.CONFIRMED, {"event": event_id}),
        "body of " + event_id + " " + "x" * 500,
        RetentionPolicy(timedelta(hours=1), timedelta(days=10), timedelta(days=20)),
        {"list": [1, 2, event_id]},
    )


def with_application_name(url: str, name: str) -> str:
    """The URL with ``application_name`` set, to find its sessions in pg_stat_activity."""
    parts = urlsplit(url)
    query = (parts.query + "&" if parts.query else "") + f"application_name={name}"
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def batch_child(url: str, prefix: str, ready: Any) -> None:
    """Commit ``BEFORE`` events, then ingest a batch of ``BATCH`` in one transaction
    (killed by the parent while that transaction is open)."""
    from trueheart_core import PostgresRepository

    with TrueHeart(PostgresRepository(url, max_connections=1), clock=lambda: CHILD_NOW) as th:
        for k in range(BEFORE):
            th.ingest_event(event_draft(f"{prefix}-before-{k}"))
        th.materialize_once(
            MemoryDraft(
                f"{prefix}-memory",
                SCOPE,
                "memory",
                (f"{prefix}-before-0",),
                "fact",
                TrustLevel.OBSERVED,
                CHILD_NOW,
            )
        )
        ready.set()
        th.ingest_events([event_draft(f"{prefix}-batch-{k}") for k in range(BATCH)])
    # Reaching this line means the kill came too late: the parent fails the round.


def writing_backends(url: str, application: str) -> list[int]:
    """The server processes of the application's sessions inside a transaction that has
    written (it holds a transaction ID)."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s "
            "AND backend_xid IS NOT NULL",
            (application,),
        ).fetchall()
    return [int(row[0]) for row in rows]


def sessions_of(url: str, application: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (application,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def stored_ids(url: str, like: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            f"SELECT count(*) FROM {SCHEMA}.raw_events WHERE event_id LIKE %s", (like.encode(),)
        ).fetchone()
        audit = conn.execute(
            f"SELECT count(*) FROM {SCHEMA}.audit WHERE entity_id LIKE %s", (like.encode(),)
        ).fetchone()
    assert row is not None and audit is not None
    return int(row[0]) + int(audit[0])


@pytest.fixture
def pg_url(postgres_cluster: Any) -> Iterator[str]:
    url: str = postgres_cluster.create_database()
    yield url
    postgres_cluster.drop_database(url)


@pytest.mark.slow
def test_client_killed_inside_a_batch_leaves_nothing_of_it(pg_url: str) -> None:
    from trueheart_core import PostgresRepository

    rng = random.Random(random.SystemRandom().randrange(1 << 30))
    TrueHeart(PostgresRepository(pg_url), clock=lambda: PARENT_NOW).close()
    for round_no in range(ROUNDS):
        prefix = f"r{round_no}"
        application = f"trueheart-crash-{round_no}"
        ready = SPAWN.Event()
        child = SPAWN.Process(
            target=batch_child, args=(with_application_name(pg_url, application), prefix, ready)
        )
        child.start()
        try:
            assert ready.wait(timeout=60), "the child never committed its first writes"
            deadline = time.monotonic() + 60
            while not writing_backends(pg_url, application):
                assert child.is_alive(), f"the child ended before the kill ({child.exitcode})"
                assert time.monotonic() < deadline, "the child's batch never began writing"
                time.sleep(0.005)
            # Somewhere inside the batch's transaction.
            time.sleep(rng.uniform(0.0, 0.3))
            assert writing_backends(pg_url, application), "the batch ended before the kill"
            child.kill()
            child.join(timeout=30)
        finally:
            if child.is_alive():
                child.kill()
                child.join(timeout=30)
        assert child.exitcode == -signal.SIGKILL
        # The server notices the lost client and rolls its transaction back.
        deadline = time.monotonic() + 30
        while sessions_of(pg_url, application):
            assert time.monotonic() < deadline, "the dead client's session lingers"
            time.sleep(0.02)

        assert stored_ids(pg_url, f"{prefix}-batch-%") == 0, "part of the batch was stored"
        with TrueHeart(PostgresRepository(pg_url), clock=lambda: PARENT_NOW) as service:
            assert service.verify_integrity().ok
            for k in range(BEFORE):
                receipt = service.get_receipt(SCOPE, f"{prefix}-before-{k}")
                assert receipt.ingested_at == CHILD_NOW
                assert receipt.content_available
            assert service.get_memory(SCOPE, f"{prefix}-memory").content == "memory"
            for k in (0, BATCH // 2, BATCH - 1):
                with pytest.raises(EntityNotFound):
                    service.get_receipt(SCOPE, f"{prefix}-batch-{k}")
            # Another client continues, with the lost batch's IDs too.
            receipts = service.ingest_events(
                [event_draft(f"{prefix}-batch-{k}") for k in range(50)]
            )
            assert {r.ingested_at for r in receipts} == {PARENT_NOW}
            service.materialize_once(
                MemoryDraft(
                    f"{prefix}-after",
                    SCOPE,
                    "after",
                    (f"{prefix}-batch-0",),
                    "fact",
                    TrustLevel.OBSERVED,
                    PARENT_NOW,
                )
            )
            assert service.verify_integrity().ok


class Writer(threading.Thread):
    """Ingests numbered events (and a memory every tenth) through one service until
    told to stop, recording what committed, and every exception with the phase its call
    began in and the time it was raised."""

    def __init__(self, service: TrueHeart) -> None:
        super().__init__(daemon=True)
        self.service = service
        self.phase = "up"
        self.committed: list[str] = []
        self.memories: list[str] = []
        self.errors: list[tuple[str, float, BaseException]] = []
        self.successes_by_phase: dict[str, int] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            event_id = f"w-{i}"
            phase = self.phase
            try:
                self.service.ingest_event(event_draft(event_id))
                self.committed.append(event_id)
                if i % 10 == 0:
                    memory_id = f"wm-{i}"
                    self.service.materialize_once(
                        MemoryDraft(
                            memory_id,
                            SCOPE,
                            "memory " + memory_id,
                            (event_id,),
                            "fact",
                            TrustLevel.OBSERVED,
                            CHILD_NOW,
                        )
                    )
                    self.memories.append(memory_id)
                self.successes_by_phase[phase] = self.successes_by_phase.get(phase, 0) + 1
            except BaseException as exc:
                self.errors.append((phase, time.monotonic(), exc))
                time.sleep(0.02)
            i += 1


@pytest.mark.slow
def test_server_killed_under_a_writer(own_cluster: Any) -> None:
    from trueheart_core import PostgresRepository, RepositoryUnavailable

    url = own_cluster.create_database()
    repository = PostgresRepository(url, max_connections=3, connect_timeout=2.0)
    service = TrueHeart(repository, clock=lambda: CHILD_NOW)
    writer = Writer(service)
    writer.start()
    try:
        deadline = time.monotonic() + 60
        while len(writer.committed) < 100:
            assert writer.is_alive() and time.monotonic() < deadline, writer.errors
            time.sleep(0.01)
        assert writer.errors == []
        writer.phase = "killing"
        kill_started = time.monotonic()
        own_cluster.kill_server()
        writer.phase = "down"
        down_since = len(writer.errors)
        deadline = time.monotonic() + 30
        while len(writer.errors) < down_since + 3:
            assert time.monotonic() < deadline, "writes neither failed nor returned"
            time.sleep(0.01)
        # A read while the server is down fails alike, every time: the pool holds no
        # connection, so the server is unreachable, not busy.
        for _ in range(2):
            with pytest.raises(RepositoryUnavailable):
                service.recall(RecallQuery(SCOPE, CHILD_NOW))
        writer.phase = "restarting"
        own_cluster.start_server()
        writer.phase = "restarted"
        deadline = time.monotonic() + 60
        while writer.successes_by_phase.get("restarted", 0) < 20:
            assert time.monotonic() < deadline, (
                f"the repository did not write again after the restart: {writer.errors[-3:]}"
            )
            time.sleep(0.01)
        writer.phase = "steady"
        while writer.successes_by_phase.get("steady", 0) < 20:
            assert time.monotonic() < deadline, writer.errors[-3:]
            time.sleep(0.01)
    finally:
        writer.stop.set()
        writer.join(timeout=60)
    assert not writer.is_alive()

    # Only the library's errors, and only those the contract names for a lost server.
    assert writer.errors, "killing the server under a writer failed no call"
    for phase, raised_at, error in writer.errors:
        assert isinstance(error, RepositoryUnavailable | RepositoryBusy), (phase, repr(error))
        if phase == "down":
            assert isinstance(error, RepositoryUnavailable), repr(error)
        assert not isinstance(error, psycopg.Error)
        # Nothing failed before the kill, and once the repository wrote again after the
        # restart, it kept writing.
        assert raised_at >= kill_started, (phase, repr(error))
        assert phase != "steady", repr(error)

    try:
        assert service.verify_integrity().ok
        # Every write that returned is there after crash recovery.
        for event_id in writer.committed:
            assert service.get_receipt(SCOPE, event_id).ingested_at == CHILD_NOW, event_id
        for memory_id in writer.memories:
            assert service.get_memory(SCOPE, memory_id).content == "memory " + memory_id
        # And the same repository object writes and reads again.
        service.ingest_event(event_draft("after-restart"))
        recalled = service.recall(RecallQuery(SCOPE, CHILD_NOW, limit=100))
        assert len(writer.memories) < 100
        recalled_ids = {item.memory.memory_id for item in recalled}
        assert recalled_ids >= set(writer.memories)
        # Besides, at most the one whose commit was in flight when the server died.
        assert len(recalled_ids - set(writer.memories)) <= 1
        with TrueHeart(PostgresRepository(url), clock=lambda: PARENT_NOW) as fresh:
            assert fresh.verify_integrity().ok
            assert fresh.get_receipt(SCOPE, "after-restart").ingested_at == CHILD_NOW
    finally:
        service.close()
