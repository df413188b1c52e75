"""ingest_event: receipts, hashes, idempotent replays, tombstones and audit rows."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    CountingClock,
    assert_not_chained,
    command,
    event,
    memory,
    msg,
    source,
)

from trueheart_core import (
    EntityDeleted,
    EntityType,
    GovernanceAction,
    IdempotencyConflict,
    ProviderError,
    RawEventDraft,
    RawEventReceipt,
    RetentionPolicy,
    TrueHeart,
    TrustLevel,
    ValidationError,
)
from trueheart_core.ports import Repository


def test_new_event_returns_a_complete_receipt(service: TrueHeart) -> None:
    draft = event(metadata={"topic": "greeting", "tags": ["a", "b"]})
    receipt = service.ingest_event(draft)
    assert isinstance(receipt, RawEventReceipt)
    assert receipt.event_id == "evt-1"
    assert receipt.scope == SCOPE
    assert receipt.source == draft.source
    assert receipt.content_hash == hashlib.sha256(b"synthetic message").hexdigest()
    assert receipt.ingested_at == NOW
    assert receipt.ingested_at.tzinfo is UTC
    assert receipt.raw_expires_at == NOW + timedelta(days=7)
    assert receipt.clear_for == timedelta(days=30)
    assert receipt.recall_for == timedelta(days=90)
    assert receipt.content_available is True
    assert receipt.metadata == {"topic": "greeting", "tags": ("a", "b")}
    assert isinstance(receipt.metadata, MappingProxyType)


def test_content_hash_is_lowercase_sha256_of_utf8(service: TrueHeart) -> None:
    receipt = service.ingest_event(event())
    assert receipt.content_hash.startswith("5f241eec")
    assert receipt.content_hash.endswith("e5ea3e2")
    assert len(receipt.content_hash) == 64
    assert receipt.content_hash == receipt.content_hash.lower()
    unicode_body = "caf\u00e9 \U0001f600"
    other = service.ingest_event(event("evt-2", content=unicode_body))
    assert other.content_hash == hashlib.sha256(unicode_body.encode("utf-8")).hexdigest()


def test_raw_expiry_counts_from_source_occurrence_not_ingest(service: TrueHeart) -> None:
    occurred = NOW - timedelta(days=3)
    receipt = service.ingest_event(event(occurred_at=occurred, raw_ttl=timedelta(days=1)))
    assert receipt.raw_expires_at == occurred + timedelta(days=1)
    assert receipt.ingested_at == NOW


def test_source_and_metadata_types_round_trip(service: TrueHeart) -> None:
    metadata = {"t": True, "i": 1, "f": 1.0, "n": None, "big": 1 << 4095, "o": {"x": [1.5]}}
    draft = event(metadata=metadata, source_metadata={"origin": "unit", "rank": 2})
    receipt = service.ingest_event(draft)
    replay = service.ingest_event(draft)
    for value in (receipt, replay):
        assert [type(value.metadata[k]) for k in ("t", "i", "f", "n", "big")] == [
            bool,
            int,
            float,
            type(None),
            int,
        ]
        assert value.metadata["big"] == 1 << 4095
        assert value.metadata["o"] == {"x": (1.5,)}
        assert value.source.metadata == {"origin": "unit", "rank": 2}
        assert value.source.trust is TrustLevel.OBSERVED


def test_ingest_writes_one_audit_row(service: TrueHeart) -> None:
    service.ingest_event(event())
    (record,) = service.audit(SCOPE)
    assert record.action == "ingest"
    assert record.entity_type is EntityType.RAW_EVENT
    assert record.entity_id == "evt-1"
    assert record.occurred_at == NOW
    assert record.reason == "event ingested"
    assert record.metadata == {}
    assert record.scope == SCOPE


def test_ingest_audit_uses_the_service_clock(repository: Repository) -> None:
    clock = CountingClock(datetime(2030, 1, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=5))))
    service = TrueHeart(repository, clock=clock)
    receipt = service.ingest_event(event())
    assert receipt.ingested_at == datetime(2030, 1, 1, 22, 4, 5, 6, tzinfo=UTC)
    assert receipt.ingested_at.tzinfo is UTC
    (record,) = service.audit(SCOPE)
    assert record.occurred_at == receipt.ingested_at


def test_identical_replay_returns_stored_receipt_without_audit(
    repository: Repository,
) -> None:
    clock = CountingClock()
    service = TrueHeart(repository, clock=clock)
    first = service.ingest_event(event(metadata={"a": [1, 2]}))
    clock.now = NOW + timedelta(hours=5)
    second = service.ingest_event(event(metadata={"a": (1, 2)}))
    assert second == first
    assert second.ingested_at == NOW
    assert clock.calls == 2  # the clock is called on replays too
    assert len(service.audit(SCOPE)) == 1


def test_replay_with_equivalent_times_in_other_zones_is_identical(service: TrueHeart) -> None:
    first = service.ingest_event(event())
    shifted = NOW.astimezone(timezone(timedelta(hours=-7)))
    assert service.ingest_event(event(occurred_at=shifted)) == first


CONFLICTS: dict[str, dict[str, Any]] = {
    "source_id": {"source_id": "source-2"},
    "source_type": {"source_type": "other"},
    "occurred_at": {"occurred_at": NOW + timedelta(microseconds=1)},
    "trust": {"trust": TrustLevel.CONFIRMED},
    "source_metadata": {"source_metadata": {"k": "v"}},
    "content": {"content": "synthetic message!"},
    "raw_ttl": {"raw_ttl": timedelta(days=8)},
    "clear_for": {"clear_for": timedelta(days=31)},
    "recall_for": {"recall_for": timedelta(days=91)},
    "metadata": {"metadata": {"k": "v"}},
}


@pytest.mark.parametrize("field", sorted(CONFLICTS))
def test_replay_with_any_difference_conflicts(service: TrueHeart, field: str) -> None:
    first = service.ingest_event(event())
    with pytest.raises(IdempotencyConflict, match=msg("idempotency conflict: evt-1")):
        service.ingest_event(event(**CONFLICTS[field]))
    assert len(service.audit(SCOPE)) == 1
    assert service.ingest_event(event()) == first


@pytest.mark.parametrize(
    ("stored", "replayed"),
    [
        (True, 1),
        (1, True),
        (1, 1.0),
        (1.0, 1),
        (True, 1.0),
        (False, 0),
        ([1], [1.0]),
        ({"n": 0}, {"n": False}),
        (None, False),
        ("1", 1),
    ],
)
@pytest.mark.parametrize("where", ["metadata", "source_metadata"])
def test_replay_compares_metadata_canonically(
    service: TrueHeart, stored: Any, replayed: Any, where: str
) -> None:
    service.ingest_event(event(**{where: {"v": stored}}))
    with pytest.raises(IdempotencyConflict, match=msg("idempotency conflict: evt-1")):
        service.ingest_event(event(**{where: {"v": replayed}}))
    assert service.ingest_event(event(**{where: {"v": stored}})).event_id == "evt-1"


def test_replay_ignores_metadata_key_order(service: TrueHeart) -> None:
    first = service.ingest_event(event(metadata={"a": 1, "b": 2}))
    assert service.ingest_event(event(metadata={"b": 2, "a": 1})) == first


def test_same_event_id_in_other_scope_is_independent(service: TrueHeart) -> None:
    first = service.ingest_event(event())
    other = service.ingest_event(event(scope=OTHER_SCOPE, content="different body"))
    assert other.scope == OTHER_SCOPE
    assert other.content_hash != first.content_hash
    assert len(service.audit(SCOPE)) == 1
    assert len(service.audit(OTHER_SCOPE)) == 1


def test_deleted_event_id_cannot_be_reingested(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.govern(command(GovernanceAction.DELETE, "evt-1", entity_type=EntityType.RAW_EVENT))
    for draft in (event(), event(content="a brand new body")):
        with pytest.raises(EntityDeleted, match=msg("entity deleted: evt-1")):
            service.ingest_event(draft)
    # the tombstone does not block other scopes
    assert service.ingest_event(event(scope=OTHER_SCOPE)).scope == OTHER_SCOPE


def test_memory_tombstone_does_not_block_event_id(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.materialize_once(memory("shared-id"))
    service.govern(command(GovernanceAction.FORGET, "shared-id"))
    receipt = service.ingest_event(event("shared-id"))
    assert receipt.event_id == "shared-id"
    assert receipt.content_available is True


def test_naive_clock_is_rejected_before_any_write(repository: Repository) -> None:
    service = TrueHeart(repository, clock=lambda: datetime(2026, 8, 13, 12))
    with pytest.raises(ValidationError, match=msg("clock: must be timezone-aware")):
        service.ingest_event(event())
    assert TrueHeart(repository, clock=lambda: NOW).audit(SCOPE) == ()


def test_a_clock_that_raises_is_a_provider_error_before_any_write(repository: Repository) -> None:
    failure = ValueError("the host's clock broke")

    def broken() -> datetime:
        raise failure

    service = TrueHeart(repository, clock=broken)
    with pytest.raises(ProviderError, match=msg("provider error: the clock failed")) as info:
        service.ingest_event(event())
    assert info.value.__cause__ is failure
    with pytest.raises(ProviderError, match=msg("provider error: the clock failed")):
        service.ingest_events([event()])
    assert TrueHeart(repository, clock=lambda: NOW).audit(SCOPE) == ()


def test_unrepresentable_raw_expiry_is_rejected_without_write(service: TrueHeart) -> None:
    late = datetime(9999, 12, 31, tzinfo=UTC)
    draft = event(occurred_at=late, raw_ttl=timedelta(days=2))
    with pytest.raises(
        ValidationError, match=msg("raw_expires_at: must be a representable datetime")
    ) as info:
        service.ingest_event(draft)
    assert_not_chained(info.value)
    assert service.audit(SCOPE) == ()
    # the same id is still free
    assert service.ingest_event(event()).event_id == "evt-1"


@pytest.mark.parametrize(
    "argument",
    [
        None,
        "evt-1",
        {"event_id": "evt-1"},
        memory(),
        source(),
        RetentionPolicy(timedelta(1), timedelta(1), timedelta(1)),
    ],
    ids=["none", "str", "dict", "memory-draft", "source", "retention"],
)
def test_ingest_event_type_checks_its_argument(service: TrueHeart, argument: Any) -> None:
    with pytest.raises(ValidationError, match=msg("draft: must be a RawEventDraft")):
        service.ingest_event(argument)
    assert service.audit(SCOPE) == ()


def test_receipt_metadata_can_feed_a_new_draft(service: TrueHeart) -> None:
    first = service.ingest_event(event(metadata={"list": [1, [2]], "obj": {"k": [True]}}))
    draft = RawEventDraft(
        "evt-1",
        SCOPE,
        first.source,
        "synthetic message",
        RetentionPolicy(timedelta(days=7), first.clear_for, first.recall_for),
        first.metadata,
    )
    assert service.ingest_event(draft) == first


def test_default_clock_is_now_in_utc(repository: Repository) -> None:
    service = TrueHeart(repository)
    before = datetime.now(UTC)
    receipt = service.ingest_event(event())
    after = datetime.now(UTC)
    assert before <= receipt.ingested_at <= after
    assert receipt.ingested_at.tzinfo is UTC


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("2026-08-13T12:00:00Z", "must be timezone-aware"),
        (None, "must be timezone-aware"),
        (
            datetime.max.replace(tzinfo=timezone(-timedelta(hours=23, minutes=59))),
            "must be a representable datetime",
        ),
    ],
    ids=["str", "none", "overflow"],
)
def test_clock_values_are_validated(repository: Repository, value: Any, rule: str) -> None:
    service = TrueHeart(repository, clock=lambda: value)
    with pytest.raises(ValidationError, match=msg(f"clock: {rule}")):
        service.ingest_event(event())
    with pytest.raises(ValidationError, match=msg(f"clock: {rule}")):
        service.ingest_events([event()])
    assert TrueHeart(repository, clock=lambda: NOW).audit(SCOPE) == ()


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": [1.5, True, None]}
    for _ in range(levels - 2):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    "metadata",
    [
        {"k": "x" * 16_376},
        {"k": "\u00e9" * 8_188},
        _deep(64),
        {"n": 1 << 4095, "m": -(1 << 4095)},
        {"\u00e9": {"\U0001f600": ["\x00", "\n", '"', "\\"]}},
    ],
    ids=["16KiB-ascii", "16KiB-two-byte", "64-levels", "4096-bit", "odd-text"],
)
def test_metadata_at_the_limits_round_trips_through_storage(
    service: TrueHeart, metadata: dict[str, Any]
) -> None:
    first = service.ingest_event(event(metadata=metadata, source_metadata=metadata))
    assert first.metadata == _frozen_equal(metadata)
    replay = service.ingest_event(event(metadata=metadata, source_metadata=metadata))
    assert replay == first
    assert replay.source.metadata == first.metadata
    record = service.materialize_once(memory(metadata=metadata))
    assert service.materialize_once(memory(metadata=metadata)) == record
    assert service.verify_integrity().ok


def _frozen_equal(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _frozen_equal(item) for key, item in value.items()}
    if isinstance(value, list):
        return tuple(_frozen_equal(item) for item in value)
    return value


def test_raw_expiry_overflow_is_checked_before_replay_and_tombstones(service: TrueHeart) -> None:
    late = datetime(9999, 12, 31, tzinfo=UTC)
    service.ingest_event(event("evt-1"))
    service.ingest_event(event("evt-gone"))
    service.govern(command(GovernanceAction.DELETE, "evt-gone", entity_type=EntityType.RAW_EVENT))
    for event_id in ("evt-1", "evt-gone"):
        with pytest.raises(
            ValidationError, match=msg("raw_expires_at: must be a representable datetime")
        ):
            service.ingest_event(event(event_id, occurred_at=late))
