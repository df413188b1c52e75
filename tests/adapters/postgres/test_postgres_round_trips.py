"""How a PostgreSQL unit of work talks to the server: statements whose result is not
read yet wait and travel with the next read or with ``COMMIT``, in one pipeline.

A queued statement's error is the library error its SQLSTATE maps to, raised by the
round trip that carries it, and the unit leaves nothing; a row-count check made by a
queued statement fails the unit before anything commits; a writer that waits for a
scope's lock sees, in the statement after the lock, what the writer before it
committed; a prepared statement the session lost makes the call run again; and the
round trips of the common calls are the documented ones, counted by a proxy between
the repository and the server (``round_trips.py``).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg", reason="needs the postgres extra (psycopg)")

from round_trips import RoundTripCounter  # noqa: E402

import postgres_configuration  # noqa: E402
from trueheart_core import (  # noqa: E402
    EntityDeleted,
    EntityType,
    GovernanceAction,
    IdempotencyConflict,
    PostgresRepository,
    RecallQuery,
    RepositoryConflict,
    RepositoryCorruption,
    TrueHeart,
)
from trueheart_core.adapters.postgres import connection as connection_module  # noqa: E402
from trueheart_core.domain.policy import GOVERNANCE_REASON  # noqa: E402
from trueheart_core.ports import AuditRow, EventRow, MemoryRow, SearchDocRow  # noqa: E402
from trueheart_core.service import records, writing  # noqa: E402

_CONFORMANCE = str(Path(__file__).resolve().parents[2] / "conformance")
if _CONFORMANCE not in sys.path:
    sys.path.insert(0, _CONFORMANCE)

from conformance_builders import (  # noqa: E402
    NOW,
    OTHER_SCOPE,
    SCOPE,
    command,
    event,
    memory,
    msg,
)

KEY = records.scope_key(SCOPE)
OTHER_KEY = records.scope_key(OTHER_SCOPE)


def _audit(audit_id: str) -> AuditRow:
    return records.audit_row(
        audit_id, SCOPE, "ingest", EntityType.RAW_EVENT, "evt-x", NOW, "synthetic reason"
    )


def _receipt() -> EventRow:
    return records.event_row(writing.prepare_event(event("evt-x"), NOW))


def _nothing_stored(repository: PostgresRepository) -> bool:
    with repository.unit_of_work("read", write=False) as uow:
        return (
            uow.audit.recent(KEY, 10) == []
            and uow.tombstones.get(KEY, "evt-x") == []
            and uow.events.get(KEY, ["evt-x"]) == {}
        )


def test_a_queued_insert_that_fails_fails_the_commit_and_leaves_nothing(
    repository: PostgresRepository,
) -> None:
    committed = False
    with (
        pytest.raises(RepositoryConflict, match=msg("repository busy: event ingest failed")),
        repository.unit_of_work("ingest", write=True) as uow,
    ):
        uow.tombstones.insert(
            records.tombstone_row(
                SCOPE, EntityType.RAW_EVENT, "evt-x", None, NOW, GOVERNANCE_REASON
            )
        )
        uow.audit.insert(_audit("audit-1"))
        uow.events.insert(_receipt(), None)
        uow.events.insert(_receipt(), None)  # the same key: the server refuses it
        uow.commit()
        committed = True
    assert not committed
    assert _nothing_stored(repository)


def test_a_queued_insert_that_fails_fails_the_next_read(repository: PostgresRepository) -> None:
    read = False
    with (
        pytest.raises(RepositoryConflict) as caught,
        repository.unit_of_work("ingest", write=True) as uow,
    ):
        uow.audit.insert(_audit("audit-1"))
        uow.events.insert(_receipt(), None)
        uow.events.insert(_receipt(), None)
        uow.tombstones.get(KEY, "evt-x")
        read = True
    assert not read
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert _nothing_stored(repository)
    # The connection is usable again: the unit was rolled back.
    with repository.unit_of_work("ingest", write=True) as uow:
        uow.audit.insert(_audit("audit-2"))
        uow.commit()
    with repository.unit_of_work("read", write=False) as uow:
        assert [row.audit_id for row in uow.audit.recent(KEY, 10)] == ["audit-2"]


def test_a_queued_row_count_check_fails_the_unit_before_anything_commits(
    repository: PostgresRepository,
) -> None:
    missing = MemoryRow(KEY, "mem-missing", "c", "f" * 64, "fact", 1, 1, 2, 3, "sealed", "{}", "d")
    with (
        pytest.raises(
            RepositoryCorruption,
            match=msg("repository corruption: stored rows and their indexes disagree"),
        ),
        repository.unit_of_work("govern", write=True) as uow,
    ):
        uow.audit.insert(_audit("audit-1"))
        uow.memories.update(missing)  # no such row: it changes none
        uow.audit.insert(_audit("audit-2"))
        uow.commit()
    assert _nothing_stored(repository)


def test_a_search_entry_without_its_memory_fails_the_unit_before_anything_commits(
    repository: PostgresRepository,
) -> None:
    entry = SearchDocRow(KEY, "mem-missing", 1, 1, 2, 3, 1, "fact", ((7, 1),))
    with (
        pytest.raises(
            RepositoryCorruption, match=msg("repository corruption: invalid search index")
        ),
        repository.unit_of_work("materialize", write=True) as uow,
    ):
        uow.audit.insert(_audit("audit-1"))
        uow.search.index(entry)
        uow.commit()
    assert _nothing_stored(repository)
    with repository.unit_of_work("read", write=False) as uow:
        assert uow.search.statistics(KEY) == (0, 0)


def _lock_waiters(pg: Any) -> int:
    row = pg.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()
    return int(row[0])


def test_a_writer_that_waits_for_the_scope_sees_the_tombstone_committed_before_it(
    repository: PostgresRepository, pg: Any
) -> None:
    """The scope's lock and the ingest's insert travel in one pipeline; the insert's
    statement takes its snapshot after the lock is granted, so it sees the tombstone the
    lock's previous holder committed, and the deleted event is not stored again. (Were
    the lock taken inside the insert's statement, its snapshot would miss the
    tombstone.)"""
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_event(event("evt-first"))  # the scope's row is there: no insert of it
    outcome: list[BaseException | None] = []

    def ingest() -> None:
        try:
            service.ingest_event(event("evt-x"))
        except BaseException as error:  # reported to the test below
            outcome.append(error)
        else:
            outcome.append(None)

    with repository.unit_of_work("govern", write=True) as uow:
        uow.tombstones.insert(
            records.tombstone_row(
                SCOPE, EntityType.RAW_EVENT, "evt-x", None, NOW, GOVERNANCE_REASON
            )
        )
        assert [t.entity_id for t in uow.tombstones.get(KEY, "evt-x")] == ["evt-x"]
        writer = threading.Thread(target=ingest)
        writer.start()
        deadline = time.monotonic() + 60
        while _lock_waiters(pg) == 0:
            assert time.monotonic() < deadline, "the ingest never waited for the scope"
            time.sleep(0.01)
        uow.commit()
    writer.join(timeout=60)
    assert len(outcome) == 1 and isinstance(outcome[0], EntityDeleted)
    with repository.unit_of_work("read", write=False) as uow:
        assert uow.events.get(KEY, ["evt-x"]) == {}


def test_an_ingest_that_commits_with_its_insert_leaves_a_store_of_another_version_alone(
    repository: PostgresRepository, pg: Any
) -> None:
    """An ingest sends ``COMMIT`` with its insert, before the unit's own check of the
    stored version has seen the answer: the insert checks the version itself, so a
    store that another process moved to a later version while this repository was
    open gets nothing, and the call fails as every other unit does."""
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_event(event("evt-first"))
    pg.execute("UPDATE meta SET schema_version = schema_version + 1")
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: unsupported schema version")
    ):
        service.ingest_event(event("evt-later"))
    rows = pg.execute("SELECT convert_from(event_id, 'UTF8') FROM raw_events").fetchall()
    assert rows == [("evt-first",)]
    audited = pg.execute("SELECT count(*) FROM audit").fetchone()
    assert audited == (1,)


def test_an_ingest_whose_pipeline_fails_leaves_nothing_of_it(
    repository: PostgresRepository, pg: Any
) -> None:
    """A new event's ingest runs as one pipeline without ``BEGIN``: the server's implicit
    transaction of the pipeline holds the scope's row, the receipt and the body it wrote
    before a later statement failed, and rolls them all back."""
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_event(event("evt-first"))  # the store's first unit, on another scope
    # A body left without its receipt in a scope never written: the ingest's insert of
    # the body fails after its inserts of the scope's row and of the receipt ran.
    pg.execute(
        "INSERT INTO raw_bodies (tenant_id, owner_id, subject_id, event_id, content, digest) "
        "VALUES (%s, %s, %s, %s, %s, %s)",
        (*(part.encode() for part in OTHER_KEY), b"evt-x", b"stray", "0" * 64),
    )
    with pytest.raises(RepositoryConflict):
        service.ingest_event(event("evt-x", scope=OTHER_SCOPE))
    left = pg.execute(
        "SELECT (SELECT count(*) FROM scopes WHERE subject_id = %s), "
        "(SELECT count(*) FROM raw_events WHERE subject_id = %s), "
        "(SELECT count(*) FROM audit WHERE subject_id = %s)",
        (OTHER_KEY[2].encode(),) * 3,
    ).fetchone()
    assert left == (0, 0, 0)
    assert not pg.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND state LIKE 'idle in transaction%%' AND pid <> pg_backend_pid()"
    ).fetchone()[0]


def test_a_pipeline_without_begin_runs_at_read_committed(pg: Any, pg_schema: str) -> None:
    """The implicit transaction of a new event's pipeline takes the session's default
    isolation, which every pooled connection sets to ``READ COMMITTED`` when it opens,
    whatever the database's own default."""
    database = pg.execute("SELECT current_database()").fetchone()[0]
    pg.execute(f'ALTER DATABASE "{database}" SET default_transaction_isolation = serializable')
    try:
        url = postgres_configuration.database_url()
        with psycopg.connect(url, autocommit=True) as plain:  # the control: a new session
            shown = plain.execute("SHOW default_transaction_isolation").fetchone()
        assert shown == ("serializable",)
        repository = PostgresRepository(url, schema=pg_schema, max_connections=1)
        try:
            with repository.unit_of_work("read", write=False) as uow:
                row = uow.session.one("SELECT current_setting('default_transaction_isolation')")
        finally:
            repository.close()
    finally:
        pg.execute(f'ALTER DATABASE "{database}" RESET default_transaction_isolation')
    assert row == ("read committed",)


def test_a_replay_after_the_committed_insert_is_read_in_a_transaction_of_its_own(
    repository: PostgresRepository, pg: Any
) -> None:
    """When the insert that travels with ``COMMIT`` finds the ID taken, the unit goes on
    in a new transaction, under the scope's lock again: an identical replay returns the
    stored receipt, a changed one conflicts, and a deleted ID stays deleted; none of
    them writes a row."""
    service = TrueHeart(repository, clock=lambda: NOW)
    stored = service.ingest_event(event("evt-1"))
    assert service.ingest_event(event("evt-1")) == stored
    changed = event("evt-1", content="another body")
    with pytest.raises(IdempotencyConflict):
        service.ingest_event(changed)
    service.govern(command(GovernanceAction.DELETE, "evt-1", entity_type=EntityType.RAW_EVENT))
    with pytest.raises(EntityDeleted):
        service.ingest_event(event("evt-1"))
    counts = pg.execute(
        "SELECT (SELECT count(*) FROM raw_events), (SELECT count(*) FROM audit)"
    ).fetchone()
    assert counts == (0, 2)  # the receipt went with the delete; its audit rows stay
    assert not pg.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND state LIKE 'idle in transaction%%' AND pid <> pg_backend_pid()"
    ).fetchone()[0]


def test_statements_a_session_lost_are_prepared_again_and_the_call_runs_again(
    pg_schema: str,
) -> None:
    repository = PostgresRepository(
        postgres_configuration.database_url(), schema=pg_schema, max_connections=1
    )
    service = TrueHeart(repository, clock=lambda: NOW)
    try:
        for index in range(3):  # each statement of an ingest is now prepared
            service.ingest_event(event(f"evt-{index}"))
        with repository.unit_of_work("read", write=False) as uow:
            uow.session.execute("DEALLOCATE ALL")
        receipt = service.ingest_event(event("evt-after"))
        assert receipt.event_id == "evt-after"
        with repository.unit_of_work("read", write=False) as uow:
            assert sorted(uow.events.get(KEY, ["evt-0", "evt-after"])) == ["evt-0", "evt-after"]
            ingests = [row for row in uow.audit.recent(KEY, 10) if row.entity_id == "evt-after"]
            assert len(ingests) == 1
    finally:
        repository.close()


@pytest.fixture
def counted(
    pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[TrueHeart, RoundTripCounter]]:
    """A service whose one pooled connection goes through a round-trip counter. The
    pool's check of a connection idle for a while (one empty round trip) is left out:
    the connection counts as just used."""
    monkeypatch.setattr(connection_module, "_RECENT", 24 * 3600.0)
    counter = RoundTripCounter(postgres_configuration.database_url())
    repository = PostgresRepository(counter.url(), schema=pg_schema, max_connections=1)
    service = TrueHeart(repository, clock=lambda: NOW)
    try:
        yield service, counter
    finally:
        service.close()
        counter.close()


def _round_trips(counter: RoundTripCounter, call: Any) -> int:
    counter.reset()
    call()
    return counter.round_trips


def test_the_round_trips_of_the_common_writes(counted: tuple[TrueHeart, RoundTripCounter]) -> None:
    service, counter = counted
    service.ingest_event(event("evt-0"))  # the scope is written, and the index is built
    service.materialize_once(memory("mem-0", ("evt-0",)))
    later = NOW + timedelta(hours=1)
    # A new event: the locks and the insert (which checks the version) in one
    # pipeline, the server's implicit transaction; the store's and the scope's locks
    # are taken by one statement.
    assert _round_trips(counter, lambda: service.ingest_event(event("evt-1"))) == 1
    assert counter.statements == 2
    # A replay: the insert finds the receipt (and commits nothing); a new transaction
    # reads the tombstones, then the receipt; COMMIT.
    assert _round_trips(counter, lambda: service.ingest_event(event("evt-1"))) == 4
    # A batch: one insert per event, each read before the next; then COMMIT.
    batch = [event(f"evt-batch-{index}") for index in range(10)]
    assert _round_trips(counter, lambda: service.ingest_events(batch)) == 11
    # One round trip of three reads (the tombstones of its ID and fingerprint, the memory,
    # its sources), then the memory, its lineage, its search entry and its audit row with
    # COMMIT.
    assert _round_trips(counter, lambda: service.materialize_once(memory("mem-1"))) == 2
    # One look-up (the memory with its edges and their sources' receipts); the status
    # update, the vector flag and the search entry's removal, which returns what it
    # removed; the audit row with COMMIT.
    seal = command(GovernanceAction.SEAL, "mem-1", occurred_at=later)
    assert _round_trips(counter, lambda: service.govern(seal)) == 3
    restore = command(GovernanceAction.RESTORE, "mem-1", occurred_at=later)
    assert _round_trips(counter, lambda: service.govern(restore)) == 2
    # A read-only call: its start travels with its first read; ROLLBACK ends it.
    assert len(service.recall(RecallQuery(SCOPE, later))) == 2
    assert _round_trips(counter, lambda: service.recall(RecallQuery(SCOPE, later))) == 4
