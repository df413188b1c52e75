"""Lifecycle: context managers, close(), read-only and busy stores, DTO round trips."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import sqlite3
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from conformance_builders import NOW, SCOPE, assert_not_chained, command, event, memory, msg

import trueheart_core
from trueheart_core import (
    AuditRecord,
    EntityType,
    GovernanceAction,
    GovernanceResult,
    IntegrityProblem,
    IntegrityReport,
    RawEventDraft,
    RecallQuery,
    RepositoryBusy,
    RepositoryCorruption,
    RepositoryReadOnly,
    RetentionPolicy,
    SQLiteRepository,
    TrueHeart,
    ValidationError,
)

CLOSED = msg("repository: is closed")

OPERATIONS: dict[str, Callable[[TrueHeart], Any]] = {
    "ingest_event": lambda s: s.ingest_event(event("evt-new")),
    "ingest_events": lambda s: s.ingest_events([event("evt-new")]),
    "materialize_once": lambda s: s.materialize_once(memory("mem-new")),
    "recall": lambda s: s.recall(RecallQuery(SCOPE, NOW)),
    "govern": lambda s: s.govern(command(GovernanceAction.SEAL)),
    "expire_raw_content": lambda s: s.expire_raw_content(as_of=NOW),
    "audit": lambda s: s.audit(SCOPE),
    "verify_integrity": lambda s: s.verify_integrity(),
}


def test_version() -> None:
    assert trueheart_core.__version__ == "0.5.0"
    assert trueheart_core.__all__[-1] == "__version__"


def test_all_is_sorted_superset_of_0_1_2() -> None:
    names = list(trueheart_core.__all__)
    old = {
        "AuditRecord", "EntityDeleted", "EntityNotFound", "EntityType", "GovernanceAction",
        "GovernanceCommand", "GovernanceResult", "IdempotencyConflict", "InvalidTransition",
        "MemoryDraft", "MemoryRecord", "MemoryStatus", "RawEventDraft", "RawEventReceipt",
        "RecallItem", "RecallQuery", "RepositoryBusy", "RepositoryCorruption",
        "RetentionPolicy", "SQLiteRepository", "Scope", "ScopeMismatch", "SourceRef",
        "TrueHeart", "TrueHeartError", "TrustEscalation", "TrustLevel", "ValidationError",
    }  # fmt: skip
    assert old <= set(names)
    assert names[:-1] == sorted(names[:-1])
    assert names[-1] == "__version__"


# --------------------------------------------------------------------------- close and contexts


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_every_operation_on_a_closed_repository(repository: SQLiteRepository, name: str) -> None:
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_event(event())
    service.materialize_once(memory())
    repository.close()
    with pytest.raises(ValidationError, match=CLOSED):
        OPERATIONS[name](service)


def test_close_is_idempotent(repository: SQLiteRepository) -> None:
    service = TrueHeart(repository, clock=lambda: NOW)
    service.close()
    service.close()
    repository.close()
    with pytest.raises(ValidationError, match=CLOSED):
        service.audit(SCOPE)


def test_repository_context_manager(db_path: Path) -> None:
    with SQLiteRepository(db_path) as repo:
        assert isinstance(repo, SQLiteRepository)
        service = TrueHeart(repo, clock=lambda: NOW)
        service.ingest_event(event())
    with pytest.raises(ValidationError, match=CLOSED):
        service.audit(SCOPE)


def test_service_context_manager_closes_the_repository(db_path: Path) -> None:
    repo = SQLiteRepository(db_path)
    with TrueHeart(repo, clock=lambda: NOW) as service:
        assert isinstance(service, TrueHeart)
        service.ingest_event(event())
    with pytest.raises(ValidationError, match=CLOSED):
        TrueHeart(repo, clock=lambda: NOW).audit(SCOPE)


def test_context_manager_closes_on_error(db_path: Path) -> None:
    with pytest.raises(RuntimeError), SQLiteRepository(db_path) as repo:
        raise RuntimeError("boom")
    with pytest.raises(ValidationError, match=CLOSED):
        TrueHeart(repo, clock=lambda: NOW).audit(SCOPE)


def test_file_store_persists_across_reopen(db_path: Path) -> None:
    with SQLiteRepository(db_path) as repo:
        service = TrueHeart(repo, clock=lambda: NOW)
        receipt = service.ingest_event(event())
        record = service.materialize_once(memory())
        audit = service.audit(SCOPE)
    with SQLiteRepository(str(db_path)) as repo:
        service = TrueHeart(repo, clock=lambda: NOW + timedelta(days=1))
        assert service.ingest_event(event()) == receipt
        assert service.materialize_once(memory()) == record
        assert service.audit(SCOPE) == audit
        assert service.verify_integrity().ok


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


# --------------------------------------------------------------------------- DTO round trips

METADATA = {"list": [1, [2, {"deep": [True, None]}]], "obj": {"f": 1.5, "s": "text"}}


def _service_dtos(service: TrueHeart) -> list[Any]:
    receipt = service.ingest_event(event(metadata=METADATA, source_metadata=METADATA))
    record = service.materialize_once(memory(metadata=METADATA))
    (item,) = service.recall(RecallQuery(SCOPE, NOW))
    result = service.govern(command(GovernanceAction.SEAL))
    audit = service.audit(SCOPE)
    report = service.verify_integrity()
    return [receipt, receipt.source, record, item, result, *audit, report]


def _draft_dtos() -> list[Any]:
    draft = event(metadata=METADATA, source_metadata=METADATA)
    return [
        SCOPE,
        draft.retention,
        draft.source,
        draft,
        memory(metadata=METADATA),
        memory(),
        event(),
        RecallQuery(SCOPE, NOW, 5, ("fact", "fact")),
        command(GovernanceAction.DELETE, "evt-1", entity_type=EntityType.RAW_EVENT),
        GovernanceResult(command(GovernanceAction.SEAL), ("mem-1",)),
        AuditRecord("a-1", SCOPE, "ingest", EntityType.RAW_EVENT, "evt-1", NOW, "r", METADATA),
        IntegrityReport((), 0),
        IntegrityReport((IntegrityProblem("memory", "mem-1", SCOPE, "digest_mismatch"),), 3),
        IntegrityProblem("raw_event", "evt-1", None, "digest_mismatch"),
    ]


def _check_round_trips(value: Any) -> None:
    assert pickle.loads(pickle.dumps(value)) == value
    assert copy.deepcopy(value) == value
    assert copy.copy(value) == value
    if dataclasses.is_dataclass(value):
        assert dataclasses.replace(value) == value
        if hasattr(value, "metadata"):
            rebuilt = dataclasses.replace(value, metadata=value.metadata)
            assert rebuilt == value
            unpickled = pickle.loads(pickle.dumps(value))
            assert isinstance(unpickled.metadata, MappingProxyType)
            with pytest.raises(TypeError):
                unpickled.metadata["new"] = 1


@pytest.mark.parametrize("index", range(len(_draft_dtos())))
def test_draft_dtos_round_trip(index: int) -> None:
    _check_round_trips(_draft_dtos()[index])


def test_service_dtos_round_trip(service: TrueHeart) -> None:
    values = _service_dtos(service)
    assert len(values) == 9
    for value in values:
        _check_round_trips(value)


def test_unpickled_metadata_is_deeply_frozen() -> None:
    draft = pickle.loads(pickle.dumps(memory(metadata=METADATA)))
    assert isinstance(draft.metadata["obj"], MappingProxyType)
    assert isinstance(draft.metadata["list"], tuple)
    assert draft.metadata["list"][1][1]["deep"] == (True, None)


def test_receipt_metadata_feeds_a_replay_draft(service: TrueHeart) -> None:
    receipt = service.ingest_event(event(metadata=METADATA, source_metadata=METADATA))
    draft = RawEventDraft(
        receipt.event_id,
        receipt.scope,
        receipt.source,
        "synthetic message",
        RetentionPolicy(timedelta(days=7), receipt.clear_for, receipt.recall_for),
        receipt.metadata,
    )
    assert service.ingest_event(draft) == receipt


def test_record_metadata_feeds_a_replay_draft(service: TrueHeart) -> None:
    service.ingest_event(event())
    record = service.materialize_once(memory(metadata=METADATA))
    replay = dataclasses.replace(memory(), metadata=record.metadata)
    assert service.materialize_once(replay) == record
    assert service.materialize_once(pickle.loads(pickle.dumps(replay))) == record
    assert service.materialize_once(copy.deepcopy(replay)) == record


def test_replace_still_validates() -> None:
    with pytest.raises(ValidationError, match=msg("memory_id: must be a non-blank string")):
        dataclasses.replace(memory(), memory_id=" ")
    with pytest.raises(ValidationError, match=msg("metadata: must contain only JSON values")):
        dataclasses.replace(memory(), metadata={"s": {1, 2}})


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


def test_one_repository_shared_between_threads(db_path: Path) -> None:
    import threading

    errors: list[BaseException] = []
    with SQLiteRepository(db_path) as repo:
        service = TrueHeart(repo, clock=lambda: NOW)

        def worker(worker_id: int) -> None:
            try:
                for index in range(15):
                    service.ingest_event(event(f"evt-{worker_id}-{index}"))
                    service.recall(RecallQuery(SCOPE, NOW))
            except BaseException as error:  # pragma: no cover - reported below
                errors.append(error)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert errors == []
        assert len(service.audit(SCOPE, limit=100)) == 60
        assert service.verify_integrity().ok


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


TYPE_CHECKS: dict[str, tuple[Callable[[TrueHeart], Any], str]] = {
    "ingest_event": (lambda s: s.ingest_event("x"), "draft: must be a RawEventDraft"),
    "ingest_events": (
        lambda s: s.ingest_events("x"),
        "drafts: must be a list or tuple of RawEventDraft",
    ),
    "materialize_once": (lambda s: s.materialize_once("x"), "draft: must be a MemoryDraft"),
    "recall": (lambda s: s.recall("x"), "query: must be a RecallQuery"),
    "govern": (lambda s: s.govern("x"), "command: must be a GovernanceCommand"),
    "audit-scope": (lambda s: s.audit("x"), "scope: must be a Scope"),
    "audit-limit": (lambda s: s.audit(SCOPE, limit=0), "limit: must be from 1 through 100"),
    "verify_integrity": (lambda s: s.verify_integrity("x"), "scope: must be a Scope"),
    "expire_raw_content": (
        lambda s: s.expire_raw_content(as_of="x"),
        "as_of: must be timezone-aware",
    ),
}


@pytest.mark.parametrize("name", sorted(TYPE_CHECKS))
def test_argument_checks_run_before_database_access(
    repository: SQLiteRepository, name: str
) -> None:
    service = TrueHeart(repository, clock=lambda: NOW)
    repository.close()
    call, message = TYPE_CHECKS[name]
    with pytest.raises(ValidationError, match=msg(message)):
        call(service)


def test_memory_repository_shared_between_threads() -> None:
    import threading

    errors: list[BaseException] = []
    with SQLiteRepository(":memory:") as repo:
        service = TrueHeart(repo, clock=lambda: NOW)
        service.ingest_event(event())

        def worker(worker_id: int) -> None:
            try:
                for index in range(10):
                    service.materialize_once(memory(f"mem-{worker_id}-{index}"))
                    service.recall(RecallQuery(SCOPE, NOW, 100))
                    service.audit(SCOPE)
            except BaseException as error:  # pragma: no cover - reported below
                errors.append(error)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert errors == []
        assert len(service.recall(RecallQuery(SCOPE, NOW, 100))) == 40
        assert service.verify_integrity().ok
