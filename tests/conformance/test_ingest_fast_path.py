"""The events role's ``insert_if_new``: the one-statement ingest of a new ID, and the
cases it leaves to the service (a receipt or a tombstone of the ID in the scope)."""

from __future__ import annotations

from conformance_builders import NOW, OTHER_SCOPE, SCOPE, command, event, memory

from trueheart_core import EntityType, GovernanceAction, TrueHeart
from trueheart_core.domain.model import RawEventDraft
from trueheart_core.ports import AuditRow, BodyRow, EventRow, Repository
from trueheart_core.service import records, writing


def _rows(draft: RawEventDraft) -> tuple[EventRow, BodyRow, AuditRow]:
    receipt = writing.prepare_event(draft, NOW)
    audit = records.audit_row(
        writing.new_audit_id(),
        draft.scope,
        "ingest",
        EntityType.RAW_EVENT,
        draft.event_id,
        NOW,
        "event ingested",
    )
    return (
        records.event_row(receipt),
        records.body_row(draft.scope, draft.event_id, draft.content),
        audit,
    )


def _insert(repository: Repository, draft: RawEventDraft) -> bool:
    with repository.unit_of_work("ingest", write=True) as uow:
        stored = uow.events.insert_if_new(*_rows(draft))
        uow.commit()
    return stored


def test_a_new_id_is_stored_with_its_body_and_audit_row(repository: Repository) -> None:
    assert _insert(repository, event("evt-new")) is True
    service = TrueHeart(repository, clock=lambda: NOW)
    receipt = service.get_receipt(SCOPE, "evt-new")
    assert receipt.content_available is True
    assert [(r.action, r.entity_id) for r in service.audit(SCOPE)] == [("ingest", "evt-new")]
    assert service.verify_integrity().ok


def test_a_stored_id_is_left_alone(repository: Repository) -> None:
    assert _insert(repository, event("evt-1")) is True
    assert _insert(repository, event("evt-1", content="another body")) is False
    service = TrueHeart(repository, clock=lambda: NOW)
    assert len(service.audit(SCOPE)) == 1
    assert service.stats(SCOPE).events == 1
    # the same ID in another scope is a new event there
    assert _insert(repository, event("evt-1", scope=OTHER_SCOPE)) is True


def test_a_tombstone_of_any_type_leaves_the_decision_to_the_service(
    repository: Repository,
) -> None:
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_event(event("src"))
    service.materialize_once(memory("gone", sources=("src",)))
    service.govern(command(GovernanceAction.FORGET, "gone"))
    audited = len(service.audit(SCOPE, limit=100))
    # a memory tombstone does not block an event ID, but the fast path declines it ...
    assert _insert(repository, event("gone")) is False
    assert len(service.audit(SCOPE, limit=100)) == audited
    # ... and the service stores it the slow way
    assert service.ingest_event(event("gone")).event_id == "gone"
    assert len(service.audit(SCOPE, limit=100)) == audited + 1
