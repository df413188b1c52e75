"""expire_raw_content: inclusive boundary, counts, idempotence, audit and replays."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from typing import Any

import pytest
from conformance_builders import NOW, OTHER_SCOPE, SCOPE, event, memory, msg

from trueheart_core import (
    EntityType,
    IdempotencyConflict,
    RecallQuery,
    ScopeMismatch,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Repository

DAY = timedelta(days=1)


def test_nothing_to_expire_returns_zero(service: TrueHeart) -> None:
    assert service.expire_raw_content(as_of=NOW) == 0
    service.ingest_event(event(raw_ttl=DAY))
    assert service.expire_raw_content(as_of=NOW) == 0
    assert [r.action for r in service.audit(SCOPE)] == ["ingest"]


def test_expiry_boundary_is_inclusive(service: TrueHeart) -> None:
    receipt = service.ingest_event(event(raw_ttl=DAY))
    assert receipt.raw_expires_at == NOW + DAY
    assert service.expire_raw_content(as_of=NOW + DAY - timedelta(microseconds=1)) == 0
    assert service.ingest_event(event(raw_ttl=DAY)).content_available is True
    assert service.expire_raw_content(as_of=NOW + DAY) == 1
    assert service.ingest_event(event(raw_ttl=DAY)).content_available is False


def test_second_run_returns_zero_and_writes_no_audit(service: TrueHeart) -> None:
    service.ingest_event(event(raw_ttl=DAY))
    assert service.expire_raw_content(as_of=NOW + DAY) == 1
    after_first = service.audit(SCOPE)
    assert service.expire_raw_content(as_of=NOW + DAY) == 0
    assert service.expire_raw_content(as_of=NOW + 100 * DAY) == 0
    assert service.audit(SCOPE) == after_first


def test_counts_only_newly_expired_bodies(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1", raw_ttl=DAY))
    service.ingest_event(event("evt-3", raw_ttl=3 * DAY))
    service.ingest_event(event("evt-3b", raw_ttl=3 * DAY))
    service.ingest_event(event("evt-9", raw_ttl=9 * DAY))
    assert service.expire_raw_content(as_of=NOW + DAY) == 1
    assert service.expire_raw_content(as_of=NOW + 3 * DAY) == 2
    assert service.expire_raw_content(as_of=NOW + 5 * DAY) == 0
    assert service.expire_raw_content(as_of=NOW + 9 * DAY) == 1


def test_expiry_writes_audit_rows_in_each_event_scope(service: TrueHeart) -> None:
    service.ingest_event(event("evt-a", raw_ttl=DAY))
    service.ingest_event(event("evt-b", raw_ttl=DAY, scope=OTHER_SCOPE))
    as_of = NOW + 2 * DAY
    assert service.expire_raw_content(as_of=as_of) == 2
    for scope, event_id in ((SCOPE, "evt-a"), (OTHER_SCOPE, "evt-b")):
        records = service.audit(scope)
        assert [r.action for r in records] == ["expire", "ingest"]
        top = records[0]
        assert top.scope == scope
        assert top.entity_type is EntityType.RAW_EVENT
        assert top.entity_id == event_id
        assert top.occurred_at == as_of
        assert top.occurred_at.tzinfo is UTC
        assert top.reason == "raw content expired"
        assert top.metadata == {}


def test_replay_after_expiry_reports_content_unavailable(service: TrueHeart) -> None:
    first = service.ingest_event(event(raw_ttl=DAY, metadata={"k": [1]}))
    service.expire_raw_content(as_of=NOW + DAY)
    replay = service.ingest_event(event(raw_ttl=DAY, metadata={"k": [1]}))
    assert replay.content_available is False
    assert replay.content_hash == first.content_hash
    assert replay.ingested_at == first.ingested_at
    assert replay.raw_expires_at == first.raw_expires_at
    assert replay.metadata == first.metadata
    assert replay.source == first.source
    # the receipt still guards its identity
    with pytest.raises(IdempotencyConflict, match=msg("idempotency conflict: evt-1")):
        service.ingest_event(event(raw_ttl=DAY, content="another body"))


def test_derived_memories_survive_expiry(service: TrueHeart) -> None:
    service.ingest_event(event(raw_ttl=DAY))
    record = service.materialize_once(memory())
    assert service.expire_raw_content(as_of=NOW + DAY) == 1
    (item,) = service.recall(RecallQuery(SCOPE, NOW + 2 * DAY))
    assert item.memory == record
    assert service.materialize_once(memory()) == record
    assert service.materialize_once(memory("mem-2")).source_event_ids == ("evt-1",)


def test_as_of_in_another_zone_is_normalised(service: TrueHeart) -> None:
    service.ingest_event(event(raw_ttl=DAY))
    local = (NOW + DAY).astimezone(timezone(timedelta(hours=-3)))
    assert service.expire_raw_content(as_of=local) == 1
    assert service.audit(SCOPE)[0].occurred_at == NOW + DAY


@pytest.mark.parametrize(
    "as_of",
    [datetime(2026, 8, 20, 12), date(2026, 8, 20), "2026-08-20T12:00:00Z", None],
    ids=["naive", "date", "str", "none"],
)
def test_as_of_must_be_timezone_aware(service: TrueHeart, as_of: Any) -> None:
    service.ingest_event(event(raw_ttl=DAY))
    with pytest.raises(ValidationError, match=msg("as_of: must be timezone-aware")):
        service.expire_raw_content(as_of=as_of)
    assert service.ingest_event(event(raw_ttl=DAY)).content_available is True


class _DividingOffset(tzinfo):
    """A broken ``tzinfo``: reading its offset raises ``ZeroDivisionError``."""

    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return timedelta(hours=1 // 0)

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None


@pytest.mark.parametrize(
    "as_of",
    [
        datetime.max.replace(tzinfo=timezone(-timedelta(hours=23, minutes=59))),
        datetime(2026, 8, 20, tzinfo=_DividingOffset()),
    ],
    ids=["extreme", "broken-tzinfo"],
)
def test_as_of_must_be_representable(service: TrueHeart, as_of: datetime) -> None:
    with pytest.raises(ValidationError, match=msg("as_of: must be a representable datetime")):
        service.expire_raw_content(as_of=as_of)


def test_as_of_is_validated_before_the_database(repository: Repository) -> None:
    service = TrueHeart(repository, clock=lambda: NOW)
    repository.close()
    with pytest.raises(ValidationError, match=msg("as_of: must be timezone-aware")):
        service.expire_raw_content(as_of=datetime(2026, 8, 20))


def test_as_of_is_keyword_only(service: TrueHeart) -> None:
    with pytest.raises(TypeError):
        service.expire_raw_content(NOW)  # type: ignore[misc]


def test_expired_receipt_still_drives_the_scope_diagnosis(
    service: TrueHeart,
) -> None:
    service.ingest_event(event(raw_ttl=DAY))
    service.expire_raw_content(as_of=NOW + DAY)
    # the receipt is still there: a memory on it is accepted, other scopes still mismatch
    with pytest.raises(ScopeMismatch, match=msg("scope mismatch: evt-1")):
        service.materialize_once(memory(scope=OTHER_SCOPE))


def test_many_due_bodies_expire_in_one_call_across_scopes(service: TrueHeart) -> None:
    due = [event(f"due-{i:04d}", raw_ttl=DAY) for i in range(1100)]
    due += [event(f"other-{i:04d}", scope=OTHER_SCOPE, raw_ttl=DAY) for i in range(150)]
    later = [event(f"later-{i:04d}", raw_ttl=DAY * 3) for i in range(20)]
    service.ingest_events(due + later)
    assert service.expire_raw_content(as_of=NOW + DAY) == 1250
    assert service.expire_raw_content(as_of=NOW + DAY) == 0
    replays = service.ingest_events(due + later)
    assert [r.content_available for r in replays] == [False] * 1250 + [True] * 20
    assert [r.action for r in service.audit(OTHER_SCOPE, limit=100)] == ["expire"] * 100
    assert service.verify_integrity().ok


def test_bodies_due_at_one_instant_expire_in_event_id_order(service: TrueHeart) -> None:
    # Ingested one by one in no order, so where the rows lie says nothing of their IDs.
    ids = ["evt-b", "evt-\u00e9", "evt-Z", "evt-10", "evt-a", "evt-9", "evt-\U0001f600", "evt-"]
    for event_id in ids:
        service.ingest_event(event(event_id, raw_ttl=DAY))
    service.ingest_events([event(event_id, scope=OTHER_SCOPE, raw_ttl=DAY) for event_id in ids])
    assert service.expire_raw_content(as_of=NOW + DAY) == 2 * len(ids)
    for scope in (SCOPE, OTHER_SCOPE):
        expired = [r.entity_id for r in service.audit(scope) if r.action == "expire"]
        # Newest first: the last written first, so the reverse of code-point order.
        assert expired == sorted(ids, reverse=True)


def _expiry_peak(repository: Repository, due: int) -> int:
    """The peak of Python's allocations while ``due`` bodies expire in one call."""
    import tracemalloc

    service = TrueHeart(repository, clock=lambda: NOW)
    drafts = [event(f"evt-{n:05d}", raw_ttl=timedelta(hours=1)) for n in range(due)]
    for start in range(0, due, 500):
        service.ingest_events(drafts[start : start + 500])
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        assert service.expire_raw_content(as_of=NOW + timedelta(hours=2)) == due
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_of_an_expiry_does_not_grow_with_the_bodies_due(
    fresh_repository: Any,
) -> None:
    # Four times the bodies: the expiry works in chunks and keeps no key of every body
    # it expired for the whole call (keeping them cost about 300 bytes a body, over
    # 1.3 MB more here). A first expiry pays for one-off allocations, and anything else
    # allocating at the same time only adds to a peak, so the larger peak is the
    # smaller of two runs, and the allowance is a third of what keeping the keys cost.
    _expiry_peak(fresh_repository(), 100)
    small = _expiry_peak(fresh_repository(), 1_500)
    large = min(_expiry_peak(fresh_repository(), 6_000) for _ in range(2))
    assert large - small < 100 * (6_000 - 1_500), (small, large)
