"""Lifecycle: close(), the service as a context manager, reopening and read-only opens,
threads, DTO round trips."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import threading
from collections.abc import Callable
from datetime import timedelta
from types import MappingProxyType
from typing import Any

import pytest
from conformance_builders import NOW, SCOPE, command, event, memory, msg

from trueheart_core import (
    AuditRecord,
    EntityType,
    GovernanceAction,
    GovernanceResult,
    IntegrityProblem,
    IntegrityReport,
    RawEventDraft,
    RecallQuery,
    RepositoryReadOnly,
    RetentionPolicy,
    SearchQuery,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Capability, Repository

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


# --------------------------------------------------------------------------- close and contexts


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_every_operation_on_a_closed_repository(repository: Repository, name: str) -> None:
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_event(event())
    service.materialize_once(memory())
    repository.close()
    with pytest.raises(ValidationError, match=CLOSED):
        OPERATIONS[name](service)


def test_close_is_idempotent(repository: Repository) -> None:
    service = TrueHeart(repository, clock=lambda: NOW)
    service.close()
    service.close()
    repository.close()
    with pytest.raises(ValidationError, match=CLOSED):
        service.audit(SCOPE)


def test_service_context_manager_closes_the_repository(repository: Repository) -> None:
    with TrueHeart(repository, clock=lambda: NOW) as service:
        assert isinstance(service, TrueHeart)
        service.ingest_event(event())
    with pytest.raises(ValidationError, match=CLOSED):
        TrueHeart(repository, clock=lambda: NOW).audit(SCOPE)


def test_service_context_manager_closes_the_repository_on_error(repository: Repository) -> None:
    with pytest.raises(RuntimeError, match=r"^boom$"), TrueHeart(repository, clock=lambda: NOW):
        raise RuntimeError("boom")
    with pytest.raises(ValidationError, match=CLOSED):
        TrueHeart(repository, clock=lambda: NOW).audit(SCOPE)


def test_store_persists_across_reopen(
    repository: Repository, reopen: Callable[..., Repository]
) -> None:
    service = TrueHeart(repository, clock=lambda: NOW)
    receipt = service.ingest_event(event())
    record = service.materialize_once(memory())
    audit = service.audit(SCOPE)
    repository.close()
    service = TrueHeart(reopen(), clock=lambda: NOW + timedelta(days=1))
    assert service.ingest_event(event()) == receipt
    assert service.materialize_once(memory()) == record
    assert service.audit(SCOPE) == audit
    assert service.verify_integrity().ok


def test_stores_on_different_targets_are_independent(
    repository: Repository, fresh_repository: Callable[[], Repository]
) -> None:
    one = TrueHeart(repository, clock=lambda: NOW)
    two = TrueHeart(fresh_repository(), clock=lambda: NOW)
    one.ingest_event(event())
    one.materialize_once(memory())
    assert len(one.recall(RecallQuery(SCOPE, NOW))) == 1
    assert two.recall(RecallQuery(SCOPE, NOW)) == ()
    assert two.audit(SCOPE) == ()


# --------------------------------------------------------------------------- read-only opens


@pytest.mark.requires(Capability.READ_ONLY_OPEN)
def test_read_only_store_reads_but_refuses_writes(
    repository: Repository, reopen: Callable[..., Repository]
) -> None:
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_event(event(raw_ttl=timedelta(days=1)))
    service.materialize_once(memory())
    audit = service.audit(SCOPE)
    stats = service.stats()
    repository.close()
    service = TrueHeart(reopen(read_only=True), clock=lambda: NOW)
    assert len(service.recall(RecallQuery(SCOPE, NOW))) == 1
    assert service.audit(SCOPE) == audit
    assert service.verify_integrity().ok
    writes: list[tuple[Callable[[], Any], str]] = [
        (lambda: service.ingest_event(event("evt-2")), "event ingest failed"),
        (lambda: service.materialize_once(memory("mem-2")), "memory materialization failed"),
        (lambda: service.govern(command(GovernanceAction.SEAL)), "governance transaction failed"),
        (
            lambda: service.expire_raw_content(as_of=NOW + timedelta(days=2)),
            "raw content expiry failed",
        ),
    ]
    for write, diagnostic in writes:
        with pytest.raises(RepositoryReadOnly, match=msg(f"repository read-only: {diagnostic}")):
            write()
    assert service.audit(SCOPE) == audit
    writable = TrueHeart(reopen(), clock=lambda: NOW)
    assert (writable.stats().events, writable.stats().memories) == (stats.events, stats.memories)
    assert writable.audit(SCOPE) == audit


@pytest.mark.requires(Capability.READ_ONLY_OPEN)
def test_a_read_only_store_without_memories_can_be_searched(
    repository: Repository, reopen: Callable[..., Repository]
) -> None:
    # A new store, and one of events only, have no search index built yet: with nothing
    # to index, a search answers without building it (which a read-only open could not).
    query = SearchQuery(SCOPE, "tea", NOW)
    repository.close()
    with TrueHeart(reopen(read_only=True), clock=lambda: NOW) as reader:
        assert reader.search(query).items == ()
    with TrueHeart(reopen(), clock=lambda: NOW) as writer:
        writer.ingest_event(event(content="green tea"))
    with TrueHeart(reopen(read_only=True), clock=lambda: NOW) as reader:
        assert reader.search(query).items == ()
        assert reader.verify_integrity().ok
    with TrueHeart(reopen(), clock=lambda: NOW) as writer:
        writer.materialize_once(memory(content="green tea"))
    with TrueHeart(reopen(read_only=True), clock=lambda: NOW) as reader:
        assert [item.memory.memory_id for item in reader.search(query).items] == ["mem-1"]


# --------------------------------------------------------------------------- threads


def _run_threads(worker: Callable[[int], None], count: int = 4) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(worker_id: int) -> None:
        try:
            worker(worker_id)
        except BaseException as error:  # pragma: no cover - reported by the caller
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    return errors


def test_one_repository_shared_between_threads_for_ingest(repository: Repository) -> None:
    service = TrueHeart(repository, clock=lambda: NOW)

    def worker(worker_id: int) -> None:
        for index in range(15):
            service.ingest_event(event(f"evt-{worker_id}-{index}"))
            service.recall(RecallQuery(SCOPE, NOW))

    assert _run_threads(worker) == []
    assert len(service.audit(SCOPE, limit=100)) == 60
    assert service.verify_integrity().ok


def test_one_repository_shared_between_threads_for_materialize(repository: Repository) -> None:
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_event(event())

    def worker(worker_id: int) -> None:
        for index in range(10):
            service.materialize_once(memory(f"mem-{worker_id}-{index}"))
            service.recall(RecallQuery(SCOPE, NOW, 100))
            service.audit(SCOPE)

    assert _run_threads(worker) == []
    assert len(service.recall(RecallQuery(SCOPE, NOW, 100))) == 40
    assert service.verify_integrity().ok


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
def test_argument_checks_run_before_database_access(repository: Repository, name: str) -> None:
    service = TrueHeart(repository, clock=lambda: NOW)
    repository.close()
    call, message = TYPE_CHECKS[name]
    with pytest.raises(ValidationError, match=msg(message)):
        call(service)
