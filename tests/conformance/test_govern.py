"""govern: state machine, raw deletion cascade, diagnosis, tombstones and audit."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    command,
    event,
    found_in_storage,
    memory,
    msg,
)

from trueheart_core import (
    EntityDeleted,
    EntityNotFound,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    GovernanceResult,
    InvalidTransition,
    MemoryStatus,
    RecallQuery,
    ScopeMismatch,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Capability, Repository

SEAL, RESTORE, FORGET, DELETE = (
    GovernanceAction.SEAL,
    GovernanceAction.RESTORE,
    GovernanceAction.FORGET,
    GovernanceAction.DELETE,
)
RAW = EntityType.RAW_EVENT


def _recalled(service: TrueHeart, scope: Any = SCOPE) -> list[str]:
    return [i.memory.memory_id for i in service.recall(RecallQuery(scope, NOW, 100))]


def _setup(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.materialize_once(memory())


# --------------------------------------------------------------------------- service checks


@pytest.mark.parametrize(
    "argument",
    [None, "seal", SCOPE, memory()],
    ids=["none", "str", "scope", "memory-draft"],
)
def test_govern_type_checks_its_argument(service: TrueHeart, argument: Any) -> None:
    with pytest.raises(ValidationError, match=msg("command: must be a GovernanceCommand")):
        service.govern(argument)


@pytest.mark.parametrize("action", [SEAL, RESTORE, FORGET])
def test_raw_events_only_support_delete(service: TrueHeart, action: GovernanceAction) -> None:
    service.ingest_event(event())
    with pytest.raises(ValidationError, match=msg("action: is not supported for raw events")):
        service.govern(command(action, "evt-1", entity_type=RAW))
    # checked before any lookup: a missing event gives the same error
    with pytest.raises(ValidationError, match=msg("action: is not supported for raw events")):
        service.govern(command(action, "evt-missing", entity_type=RAW))
    assert [r.action for r in service.audit(SCOPE)] == ["ingest"]


@pytest.mark.parametrize("action", [SEAL, RESTORE, FORGET])
def test_raw_action_check_runs_before_database_access(
    repository: Repository, action: GovernanceAction
) -> None:
    service = TrueHeart(repository, clock=lambda: NOW)
    repository.close()
    with pytest.raises(ValidationError, match=msg("action: is not supported for raw events")):
        service.govern(command(action, "evt-1", entity_type=RAW))
    with pytest.raises(ValidationError, match=msg("command: must be a GovernanceCommand")):
        service.govern("not a command")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- state machine


def test_seal_and_restore_round_trip(service: TrueHeart) -> None:
    _setup(service)
    seal = command(SEAL, reason="hide for now")
    result = service.govern(seal)
    assert isinstance(result, GovernanceResult)
    assert result.command is seal
    assert result.affected_ids == ("mem-1",)
    assert service.materialize_once(memory()).status is MemoryStatus.SEALED
    assert _recalled(service) == []
    restore = command(RESTORE)
    result = service.govern(restore)
    assert result.command is restore
    assert result.affected_ids == ("mem-1",)
    assert service.materialize_once(memory()).status is MemoryStatus.ACTIVE
    assert _recalled(service) == ["mem-1"]


def test_invalid_transitions(service: TrueHeart) -> None:
    _setup(service)
    with pytest.raises(InvalidTransition, match=msg("invalid transition: mem-1")):
        service.govern(command(RESTORE))
    service.govern(command(SEAL))
    with pytest.raises(InvalidTransition, match=msg("invalid transition: mem-1")):
        service.govern(command(SEAL))
    # failed commands write no audit rows
    assert [r.action for r in service.audit(SCOPE)] == ["seal", "materialize", "ingest"]


def test_time_does_not_matter_for_seal_and_restore(service: TrueHeart) -> None:
    _setup(service)
    long_after = NOW + timedelta(days=3650)
    assert service.govern(command(SEAL, occurred_at=long_after)).affected_ids == ("mem-1",)
    before = NOW - timedelta(days=3650)
    assert service.govern(command(RESTORE, occurred_at=before)).affected_ids == ("mem-1",)


@pytest.mark.parametrize("action", [FORGET, DELETE])
@pytest.mark.parametrize("sealed", [False, True])
def test_forget_and_delete_remove_memory_from_any_status(
    service: TrueHeart, action: GovernanceAction, sealed: bool
) -> None:
    service.ingest_event(event())
    service.materialize_once(memory("mem-1"))
    service.materialize_once(memory("mem-2"))
    if sealed:
        service.govern(command(SEAL))
    result = service.govern(command(action))
    assert result.affected_ids == ("mem-1",)
    assert _recalled(service) == ["mem-2"]
    for follow_up in (SEAL, RESTORE, FORGET, DELETE):
        with pytest.raises(EntityDeleted, match=msg("entity deleted: mem-1")):
            service.govern(command(follow_up))
    with pytest.raises(EntityDeleted, match=msg("entity deleted: mem-1")):
        service.materialize_once(memory("mem-1"))


@pytest.mark.parametrize("action", [FORGET, DELETE])
def test_forget_never_touches_source_events(service: TrueHeart, action: GovernanceAction) -> None:
    receipt = service.ingest_event(event())
    service.materialize_once(memory())
    service.govern(command(action))
    assert service.ingest_event(event()) == receipt
    assert service.ingest_event(event()).content_available is True
    assert service.expire_raw_content(as_of=NOW + timedelta(days=7)) == 1


# --------------------------------------------------------------------------- diagnosis (memory)


def test_missing_memory_is_not_found(service: TrueHeart) -> None:
    with pytest.raises(EntityNotFound, match=msg("entity not found: mem-1")):
        service.govern(command(SEAL))


def test_memory_in_other_scope_is_a_scope_mismatch(service: TrueHeart) -> None:
    service.ingest_event(event(scope=OTHER_SCOPE))
    service.materialize_once(memory(scope=OTHER_SCOPE))
    for action in (SEAL, RESTORE, FORGET, DELETE):
        with pytest.raises(ScopeMismatch, match=msg("scope mismatch: mem-1")):
            service.govern(command(action))
    assert _recalled(service, OTHER_SCOPE) == ["mem-1"]


def test_memory_tombstone_in_other_scope_is_a_scope_mismatch(service: TrueHeart) -> None:
    service.ingest_event(event(scope=OTHER_SCOPE))
    service.materialize_once(memory(scope=OTHER_SCOPE))
    service.govern(command(FORGET, scope=OTHER_SCOPE))
    with pytest.raises(ScopeMismatch, match=msg("scope mismatch: mem-1")):
        service.govern(command(SEAL))


def test_exact_scope_tombstone_wins_over_live_row_elsewhere(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.ingest_event(event(scope=OTHER_SCOPE))
    service.materialize_once(memory())
    service.materialize_once(memory(scope=OTHER_SCOPE))
    service.govern(command(FORGET))
    with pytest.raises(EntityDeleted, match=msg("entity deleted: mem-1")):
        service.govern(command(SEAL))


def test_raw_rows_and_raw_tombstones_do_not_diagnose_memories(service: TrueHeart) -> None:
    service.ingest_event(event("shared"))
    service.ingest_event(event("gone"))
    service.ingest_event(event("gone-elsewhere", scope=OTHER_SCOPE))
    service.govern(command(DELETE, "gone", entity_type=RAW))
    service.govern(command(DELETE, "gone-elsewhere", entity_type=RAW, scope=OTHER_SCOPE))
    for entity_id in ("shared", "gone", "gone-elsewhere"):
        with pytest.raises(EntityNotFound, match=msg(f"entity not found: {entity_id}")):
            service.govern(command(SEAL, entity_id))


# --------------------------------------------------------------------------- diagnosis (raw)


def test_raw_delete_diagnosis(service: TrueHeart) -> None:
    service.ingest_event(event("evt-elsewhere", scope=OTHER_SCOPE))
    service.ingest_event(event("evt-gone-elsewhere", scope=OTHER_SCOPE))
    service.govern(command(DELETE, "evt-gone-elsewhere", entity_type=RAW, scope=OTHER_SCOPE))
    service.ingest_event(event("evt-gone"))
    service.govern(command(DELETE, "evt-gone", entity_type=RAW))
    service.ingest_event(event("evt-base"))
    service.materialize_once(memory("mem-live", ("evt-base",)))
    service.materialize_once(memory("mem-forgotten", ("evt-base",), kind="other"))
    service.govern(command(FORGET, "mem-forgotten"))
    cases: list[tuple[str, type[Exception], str]] = [
        ("evt-missing", EntityNotFound, "entity not found: evt-missing"),
        ("evt-elsewhere", ScopeMismatch, "scope mismatch: evt-elsewhere"),
        ("evt-gone-elsewhere", ScopeMismatch, "scope mismatch: evt-gone-elsewhere"),
        ("evt-gone", EntityDeleted, "entity deleted: evt-gone"),
        ("mem-live", EntityNotFound, "entity not found: mem-live"),
        ("mem-forgotten", EntityNotFound, "entity not found: mem-forgotten"),
    ]
    for entity_id, error, message in cases:
        with pytest.raises(error, match=msg(message)):
            service.govern(command(DELETE, entity_id, entity_type=RAW))


# --------------------------------------------------------------------------- raw cascade


def test_raw_delete_cascades_to_dependent_memories(service: TrueHeart) -> None:
    service.ingest_event(event("evt-target"))
    service.ingest_event(event("evt-other"))
    service.materialize_once(memory("mem-a", ("evt-target",)))
    service.materialize_once(memory("mem-b", ("evt-other", "evt-target")))
    service.materialize_once(memory("mem-c", ("evt-other",)))
    service.govern(command(SEAL, "mem-b"))
    delete = command(DELETE, "evt-target", entity_type=RAW)
    result = service.govern(delete)
    assert result.command is delete
    assert result.affected_ids == ("evt-target", "mem-a", "mem-b")
    assert _recalled(service) == ["mem-c"]
    # the other source and its unrelated memory are untouched
    assert service.ingest_event(event("evt-other")).content_available is True
    assert service.materialize_once(memory("mem-c", ("evt-other",))).memory_id == "mem-c"
    # non-resurrection of every removed id and fingerprint
    with pytest.raises(EntityDeleted, match=msg("entity deleted: evt-target")):
        service.ingest_event(event("evt-target"))
    for memory_id in ("mem-a", "mem-b"):
        with pytest.raises(EntityDeleted, match=msg(f"entity deleted: {memory_id}")):
            service.govern(command(RESTORE, memory_id))
    with pytest.raises(EntityDeleted, match=msg("entity deleted: mem-new")):
        service.materialize_once(memory("mem-new", ("evt-target", "evt-other")))
    with pytest.raises(EntityDeleted, match=msg("entity deleted: evt-target")):
        service.materialize_once(memory("mem-new", ("evt-target",), kind="new-kind"))


def test_raw_delete_affected_ids_are_sorted_as_strings(service: TrueHeart) -> None:
    service.ingest_event(event("zz"))
    service.materialize_once(memory("m-1", ("zz",)))
    service.materialize_once(memory("0-first", ("zz",)))
    result = service.govern(command(DELETE, "zz", entity_type=RAW))
    assert result.affected_ids == ("0-first", "m-1", "zz")


def test_raw_delete_without_dependents(service: TrueHeart) -> None:
    service.ingest_event(event())
    result = service.govern(command(DELETE, "evt-1", entity_type=RAW))
    assert result.affected_ids == ("evt-1",)


def test_raw_delete_after_expiry(service: TrueHeart) -> None:
    service.ingest_event(event(raw_ttl=timedelta(days=1)))
    service.materialize_once(memory())
    assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 1
    result = service.govern(command(DELETE, "evt-1", entity_type=RAW))
    assert result.affected_ids == ("evt-1", "mem-1")
    assert _recalled(service) == []


def test_raw_delete_is_scoped(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.ingest_event(event(scope=OTHER_SCOPE))
    service.materialize_once(memory())
    service.materialize_once(memory(scope=OTHER_SCOPE))
    service.govern(command(DELETE, "evt-1", entity_type=RAW))
    assert _recalled(service) == []
    assert _recalled(service, OTHER_SCOPE) == ["mem-1"]
    assert service.ingest_event(event(scope=OTHER_SCOPE)).content_available is True


# --------------------------------------------------------------------------- audit


@pytest.mark.parametrize("action", [SEAL, FORGET, DELETE])
def test_govern_writes_one_audit_row(service: TrueHeart, action: GovernanceAction) -> None:
    _setup(service)
    when = NOW + timedelta(hours=3)
    service.govern(command(action, occurred_at=when, reason="caller supplied reason"))
    top = service.audit(SCOPE)[0]
    assert len(service.audit(SCOPE)) == 3
    assert top.action == action.value
    assert top.entity_type is EntityType.MEMORY
    assert top.entity_id == "mem-1"
    assert top.occurred_at == when
    assert top.reason == "governance requested"
    assert top.metadata == {}


def test_restore_audit_row(service: TrueHeart) -> None:
    _setup(service)
    service.govern(command(SEAL, occurred_at=NOW + timedelta(hours=1)))
    service.govern(command(RESTORE, occurred_at=NOW + timedelta(hours=2)))
    top = service.audit(SCOPE)[0]
    assert (top.action, top.entity_id, top.reason) == ("restore", "mem-1", "governance requested")
    assert top.occurred_at == NOW + timedelta(hours=2)


def test_raw_delete_audits_only_the_event(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.materialize_once(memory("mem-a"))
    service.materialize_once(memory("mem-b"))
    when = NOW + timedelta(days=1)
    service.govern(command(DELETE, "evt-1", entity_type=RAW, occurred_at=when))
    records = service.audit(SCOPE)
    assert [(r.action, r.entity_id) for r in records] == [
        ("delete", "evt-1"),
        ("materialize", "mem-b"),
        ("materialize", "mem-a"),
        ("ingest", "evt-1"),
    ]
    assert records[0].entity_type is EntityType.RAW_EVENT
    assert records[0].occurred_at == when
    assert records[0].reason == "governance requested"


def test_failed_governance_writes_nothing(service: TrueHeart) -> None:
    _setup(service)
    before = service.audit(SCOPE)
    for failing in (
        command(RESTORE),
        command(SEAL, "mem-missing"),
        command(DELETE, "evt-missing", entity_type=RAW),
    ):
        with pytest.raises((InvalidTransition, EntityNotFound)):
            service.govern(failing)
    assert service.audit(SCOPE) == before


@pytest.mark.requires(Capability.FORENSICS)
def test_caller_reason_is_never_persisted(repository: Repository, service: TrueHeart) -> None:
    reason = "caller-reason-7b1e9d"
    _setup(service)
    service.govern(command(SEAL, reason=reason))
    service.govern(command(FORGET, reason=reason))
    assert all(r.reason != reason for r in service.audit(SCOPE))
    # the tombstone of the forgotten memory is stored, the caller's reason is not
    assert found_in_storage(repository, [reason, "mem-1"]) == ["mem-1"]


def test_command_result_keeps_the_same_command(service: TrueHeart) -> None:
    _setup(service)
    cmd = GovernanceCommand(SCOPE, SEAL, EntityType.MEMORY, "mem-1", NOW, "r")
    assert service.govern(cmd).command is cmd


def test_governance_works_after_source_expiry(service: TrueHeart) -> None:
    service.ingest_event(event(raw_ttl=timedelta(days=1)))
    service.materialize_once(memory())
    assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 1
    assert service.govern(command(SEAL)).affected_ids == ("mem-1",)
    assert service.govern(command(RESTORE)).affected_ids == ("mem-1",)
    assert service.govern(command(FORGET)).affected_ids == ("mem-1",)


@pytest.mark.parametrize("source_id", ["a\x00", "a\x00b", "\x00x"])
def test_a_memory_of_a_source_whose_id_holds_a_nul_is_governed(
    service: TrueHeart, source_id: str
) -> None:
    """IDs may hold any character: a NUL in a source's ID (which SQLite's JSON functions
    cut a string at) changes nothing about governing the memories derived from it."""
    service.ingest_events([event(source_id), event("evt-2")])
    service.materialize_once(memory("mem-1", (source_id,)))
    service.materialize_once(memory("mem-2", (source_id, "evt-2")))
    for action in (GovernanceAction.SEAL, GovernanceAction.RESTORE):
        for memory_id in ("mem-1", "mem-2"):
            assert service.govern(command(action, memory_id)).affected_ids == (memory_id,)
    service.govern(command(GovernanceAction.FORGET, "mem-1"))
    service.govern(command(GovernanceAction.DELETE, "mem-2"))
    for memory_id in ("mem-1", "mem-2"):
        with pytest.raises(EntityDeleted):
            service.get_memory(SCOPE, memory_id)
    assert service.derived_memories(SCOPE, source_id) == ()
    assert service.verify_integrity().ok
