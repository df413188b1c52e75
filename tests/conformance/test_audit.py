"""audit: argument checks, per-action rows, ordering and limits."""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

import pytest
from conformance_builders import NOW, OTHER_SCOPE, SCOPE, CountingClock, command, event, memory, msg

from trueheart_core import (
    AuditRecord,
    EntityType,
    GovernanceAction,
    RecallQuery,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Repository


def test_empty_scope_has_no_audit(service: TrueHeart) -> None:
    assert service.audit(SCOPE) == ()


@pytest.mark.parametrize(
    "scope",
    [None, "tenant", ("tenant", "owner", "subject"), RecallQuery(SCOPE, NOW)],
    ids=["none", "str", "tuple", "query"],
)
def test_audit_scope_must_be_a_scope(service: TrueHeart, scope: Any) -> None:
    with pytest.raises(ValidationError, match=msg("scope: must be a Scope")):
        service.audit(scope)


@pytest.mark.parametrize("limit", [0, -1, 101, True, False, 1.0, "5", None])
def test_audit_limit_bounds(service: TrueHeart, limit: Any) -> None:
    with pytest.raises(ValidationError, match=msg("limit: must be from 1 through 100")):
        service.audit(SCOPE, limit=limit)


def test_audit_scope_is_checked_before_limit(service: TrueHeart) -> None:
    with pytest.raises(ValidationError, match=msg("scope: must be a Scope")):
        service.audit("scope", limit=0)  # type: ignore[arg-type]


def test_audit_limit_is_keyword_only(service: TrueHeart) -> None:
    with pytest.raises(TypeError):
        service.audit(SCOPE, 5)  # type: ignore[misc]


def test_full_lifecycle_rows_and_fields(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1", raw_ttl=timedelta(days=1)))
    service.materialize_once(memory("mem-1", created_at=NOW + timedelta(hours=1)))
    service.govern(command(GovernanceAction.SEAL, occurred_at=NOW + timedelta(hours=2)))
    service.govern(command(GovernanceAction.RESTORE, occurred_at=NOW + timedelta(hours=3)))
    service.govern(command(GovernanceAction.FORGET, occurred_at=NOW + timedelta(hours=4)))
    service.expire_raw_content(as_of=NOW + timedelta(hours=24))
    service.govern(
        command(
            GovernanceAction.DELETE,
            "evt-1",
            entity_type=EntityType.RAW_EVENT,
            occurred_at=NOW + timedelta(hours=30),
        )
    )
    records = service.audit(SCOPE)
    assert all(isinstance(r, AuditRecord) for r in records)
    assert [(r.action, r.entity_type, r.entity_id, r.occurred_at, r.reason) for r in records] == [
        (
            "delete",
            EntityType.RAW_EVENT,
            "evt-1",
            NOW + timedelta(hours=30),
            "governance requested",
        ),
        ("expire", EntityType.RAW_EVENT, "evt-1", NOW + timedelta(hours=24), "raw content expired"),
        ("forget", EntityType.MEMORY, "mem-1", NOW + timedelta(hours=4), "governance requested"),
        ("restore", EntityType.MEMORY, "mem-1", NOW + timedelta(hours=3), "governance requested"),
        ("seal", EntityType.MEMORY, "mem-1", NOW + timedelta(hours=2), "governance requested"),
        (
            "materialize",
            EntityType.MEMORY,
            "mem-1",
            NOW + timedelta(hours=1),
            "memory materialized",
        ),
        ("ingest", EntityType.RAW_EVENT, "evt-1", NOW, "event ingested"),
    ]
    for record in records:
        assert record.scope == SCOPE
        assert record.metadata == {}
        assert record.occurred_at.tzinfo is UTC
    ids = [r.audit_id for r in records]
    assert len(set(ids)) == len(ids)
    assert all(isinstance(audit_id, str) and audit_id.strip() for audit_id in ids)


def test_audit_orders_by_claimed_time_first(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.materialize_once(memory("mem-future", created_at=NOW + timedelta(days=10)))
    service.materialize_once(memory("mem-past", created_at=NOW - timedelta(days=10)))
    service.govern(
        command(GovernanceAction.SEAL, "mem-future", occurred_at=NOW - timedelta(days=20))
    )
    assert [(r.action, r.entity_id) for r in service.audit(SCOPE)] == [
        ("materialize", "mem-future"),
        ("ingest", "evt-1"),
        ("materialize", "mem-past"),
        ("seal", "mem-future"),
    ]


def test_same_time_rows_are_newest_write_first(service: TrueHeart) -> None:
    for index in range(6):
        service.ingest_event(event(f"evt-{index}"))
    # ids written later come first, whatever their string order
    assert [r.entity_id for r in service.audit(SCOPE)] == [f"evt-{i}" for i in range(5, -1, -1)]


def test_same_time_tie_break_survives_mixed_actions(service: TrueHeart) -> None:
    service.ingest_event(event("b-event"))
    service.materialize_once(memory("a-memory", ("b-event",)))
    service.ingest_event(event("a-event"))
    service.govern(command(GovernanceAction.SEAL, "a-memory"))
    assert [(r.action, r.entity_id) for r in service.audit(SCOPE)] == [
        ("seal", "a-memory"),
        ("ingest", "a-event"),
        ("materialize", "a-memory"),
        ("ingest", "b-event"),
    ]


def test_audit_limit_returns_the_newest_rows(repository: Repository) -> None:
    clock = CountingClock()
    service = TrueHeart(repository, clock=clock)
    for index in range(105):
        clock.now = NOW + timedelta(seconds=index)
        service.ingest_event(event(f"evt-{index:03d}"))
    default = service.audit(SCOPE)
    assert len(default) == 100
    assert [r.entity_id for r in default] == [f"evt-{i:03d}" for i in range(104, 4, -1)]
    assert [r.entity_id for r in service.audit(SCOPE, limit=1)] == ["evt-104"]
    assert [r.entity_id for r in service.audit(SCOPE, limit=3)] == ["evt-104", "evt-103", "evt-102"]
    assert service.audit(SCOPE, limit=100) == default


def test_audit_is_repeatable(service: TrueHeart) -> None:
    for index in range(4):
        service.ingest_event(event(f"evt-{index}"))
    assert service.audit(SCOPE) == service.audit(SCOPE)
    assert service.audit(SCOPE, limit=2) == service.audit(SCOPE)[:2]


def test_audit_is_scoped(service: TrueHeart) -> None:
    service.ingest_event(event("evt-here"))
    service.ingest_event(event("evt-there", scope=OTHER_SCOPE))
    assert [r.entity_id for r in service.audit(SCOPE)] == ["evt-here"]
    assert [r.entity_id for r in service.audit(OTHER_SCOPE)] == ["evt-there"]


def test_replays_and_reads_write_no_audit(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.materialize_once(memory())
    before = service.audit(SCOPE)
    service.ingest_event(event())
    service.materialize_once(memory())
    service.recall(RecallQuery(SCOPE, NOW))
    service.audit(SCOPE)
    service.verify_integrity()
    service.verify_integrity(SCOPE)
    assert service.audit(SCOPE) == before
