"""ingest_events: one all-or-nothing transaction with the per-event rules of ingest_event."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conformance_builders import NOW, OTHER_SCOPE, SCOPE, CountingClock, command, event, memory, msg

from trueheart_core import (
    EntityDeleted,
    EntityType,
    GovernanceAction,
    IdempotencyConflict,
    RawEventReceipt,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Repository


def _audit_ids(service: TrueHeart, scope: Any = SCOPE) -> list[str]:
    return [r.entity_id for r in service.audit(scope)]


@pytest.mark.parametrize("empty", [[], ()], ids=["list", "tuple"])
def test_empty_batch_returns_empty_tuple(service: TrueHeart, empty: Any) -> None:
    assert service.ingest_events(empty) == ()
    assert service.audit(SCOPE) == ()


@pytest.mark.parametrize(
    "drafts",
    [None, event(), "evt-1", {"evt-1": event()}, {"evt-1"}, iter([event()]), 3],
    ids=["none", "draft", "str", "dict", "set", "iterator", "int"],
)
def test_batch_must_be_a_list_or_tuple(service: TrueHeart, drafts: Any) -> None:
    with pytest.raises(
        ValidationError, match=msg("drafts: must be a list or tuple of RawEventDraft")
    ):
        service.ingest_events(drafts)
    assert service.audit(SCOPE) == ()


@pytest.mark.parametrize(
    "intruder", [None, "evt-2", memory(), {"event_id": "evt-2"}], ids=["none", "str", "mem", "dict"]
)
def test_batch_entries_must_be_drafts(service: TrueHeart, intruder: Any) -> None:
    with pytest.raises(ValidationError, match=msg("drafts: must contain only RawEventDraft")):
        service.ingest_events([event("evt-1"), intruder])
    assert service.audit(SCOPE) == ()


def test_batch_returns_receipts_in_order(service: TrueHeart) -> None:
    drafts = (
        event("evt-b"),
        event("evt-a", content="other body"),
        event("evt-c", scope=OTHER_SCOPE),
    )
    receipts = service.ingest_events(drafts)
    assert isinstance(receipts, tuple)
    assert all(isinstance(r, RawEventReceipt) for r in receipts)
    assert [r.event_id for r in receipts] == ["evt-b", "evt-a", "evt-c"]
    assert [r.scope for r in receipts] == [SCOPE, SCOPE, OTHER_SCOPE]
    assert all(r.content_available and r.ingested_at == NOW for r in receipts)
    # identical to what single ingests replay afterwards
    for draft, receipt in zip(drafts, receipts, strict=True):
        assert service.ingest_event(draft) == receipt
    assert _audit_ids(service) == ["evt-a", "evt-b"]
    assert _audit_ids(service, OTHER_SCOPE) == ["evt-c"]
    assert all(r.reason == "event ingested" for r in service.audit(SCOPE))


def test_batch_calls_the_clock_once(repository: Repository) -> None:
    clock = CountingClock()
    service = TrueHeart(repository, clock=clock)
    service.ingest_events([event(f"evt-{index}") for index in range(5)])
    assert clock.calls == 1


def test_batch_is_all_or_nothing_on_conflict(service: TrueHeart) -> None:
    service.ingest_event(event("evt-existing"))
    with pytest.raises(IdempotencyConflict, match=msg("idempotency conflict: evt-existing")):
        service.ingest_events(
            [event("evt-new"), event("evt-existing", content="different"), event("evt-later")]
        )
    assert _audit_ids(service) == ["evt-existing"]
    # evt-new was not stored: a different draft under that id is accepted as new
    assert service.ingest_event(event("evt-new", content="fresh")).content_available


def test_batch_is_all_or_nothing_on_tombstone(service: TrueHeart) -> None:
    service.ingest_event(event("evt-gone"))
    service.govern(command(GovernanceAction.DELETE, "evt-gone", entity_type=EntityType.RAW_EVENT))
    before = service.audit(SCOPE)
    with pytest.raises(EntityDeleted, match=msg("entity deleted: evt-gone")):
        service.ingest_events([event("evt-new"), event("evt-gone")])
    assert service.audit(SCOPE) == before


def test_batch_is_all_or_nothing_on_overflow(service: TrueHeart) -> None:
    late = datetime(9999, 12, 31, tzinfo=UTC)
    with pytest.raises(
        ValidationError, match=msg("raw_expires_at: must be a representable datetime")
    ):
        service.ingest_events([event("evt-ok"), event("evt-late", occurred_at=late)])
    assert service.audit(SCOPE) == ()


def test_repeated_identical_entry_is_a_replay(service: TrueHeart) -> None:
    receipts = service.ingest_events([event("evt-1"), event("evt-2"), event("evt-1")])
    assert receipts[0] == receipts[2]
    assert [r.event_id for r in receipts] == ["evt-1", "evt-2", "evt-1"]
    assert _audit_ids(service) == ["evt-2", "evt-1"]


def test_repeated_identical_entry_uses_canonical_comparison(service: TrueHeart) -> None:
    with pytest.raises(IdempotencyConflict, match=msg("idempotency conflict: evt-1")):
        service.ingest_events([event(metadata={"v": 1}), event(metadata={"v": True})])
    assert service.audit(SCOPE) == ()


def test_repeated_different_entry_conflicts_and_writes_nothing(service: TrueHeart) -> None:
    with pytest.raises(IdempotencyConflict, match=msg("idempotency conflict: evt-1")):
        service.ingest_events([event("evt-1"), event("evt-2"), event("evt-1", content="x")])
    assert service.audit(SCOPE) == ()


def test_batch_replays_stored_events(repository: Repository) -> None:
    clock = CountingClock()
    service = TrueHeart(repository, clock=clock)
    first = service.ingest_event(event("evt-1"))
    clock.now = NOW + timedelta(hours=1)
    receipts = service.ingest_events([event("evt-1"), event("evt-2")])
    assert receipts[0] == first
    assert receipts[0].ingested_at == NOW
    assert receipts[1].ingested_at == NOW + timedelta(hours=1)
    assert _audit_ids(service) == ["evt-2", "evt-1"]


def test_batch_with_naive_clock(repository: Repository) -> None:
    service = TrueHeart(repository, clock=lambda: datetime(2026, 8, 13))
    with pytest.raises(ValidationError, match=msg("clock: must be timezone-aware")):
        service.ingest_events([event()])


def test_batch_same_id_in_two_scopes_is_two_events(service: TrueHeart) -> None:
    receipts = service.ingest_events([event(), event(scope=OTHER_SCOPE, content="other")])
    assert receipts[0].content_hash != receipts[1].content_hash
    assert _audit_ids(service) == ["evt-1"]
    assert _audit_ids(service, OTHER_SCOPE) == ["evt-1"]
