"""DTO validation: field order, text, datetime, content, trust, retention and metadata rules."""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from decimal import Decimal
from types import MappingProxyType
from typing import Any

import pytest
from conformance_builders import NOW, SCOPE, assert_not_chained, msg, source
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core import (
    ArtifactClass,
    AuditRecord,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    GovernanceResult,
    MemoryDraft,
    MemoryRecord,
    MemoryStatus,
    RawEventDraft,
    RawEventReceipt,
    RecallItem,
    RecallQuery,
    RetentionPolicy,
    Scope,
    SourceRef,
    TrustLevel,
    ValidationError,
)
from trueheart_core.domain.model import assembled

HASH = "5f241eec5564d5a9b1aa6adf128bdbbdb5529ad99af91e7cd2ded2107e5ea3e2"
FINGERPRINT = "32aacaea73115a16e76aefc3f38acc4fce896e0456d0dd29adb08120f5c17858"


def _valid_kwargs() -> dict[str, dict[str, Any]]:
    retention = RetentionPolicy(timedelta(days=7), timedelta(days=30), timedelta(days=90))
    record_kwargs: dict[str, Any] = {
        "memory_id": "mem-1",
        "scope": SCOPE,
        "content": "derived synthetic memory",
        "source_event_ids": ("evt-1", "evt-2"),
        "dependency_fingerprint": FINGERPRINT,
        "kind": "fact",
        "trust": TrustLevel.OBSERVED,
        "created_at": NOW,
        "clear_until": NOW + timedelta(days=30),
        "recall_until": NOW + timedelta(days=90),
        "status": MemoryStatus.ACTIVE,
        "metadata": {},
    }
    command = GovernanceCommand(
        SCOPE, GovernanceAction.SEAL, EntityType.MEMORY, "mem-1", NOW, "synthetic request"
    )
    return {
        "Scope": {"tenant_id": "tenant", "owner_id": "owner", "subject_id": "subject"},
        "RetentionPolicy": {
            "raw_ttl": timedelta(days=7),
            "clear_for": timedelta(days=30),
            "recall_for": timedelta(days=90),
        },
        "SourceRef": {
            "source_id": "source-1",
            "source_type": "synthetic",
            "occurred_at": NOW,
            "trust": TrustLevel.OBSERVED,
            "metadata": {},
        },
        "RawEventDraft": {
            "event_id": "evt-1",
            "scope": SCOPE,
            "source": source(),
            "content": "synthetic message",
            "retention": retention,
            "metadata": {},
        },
        "MemoryDraft": {
            "memory_id": "mem-1",
            "scope": SCOPE,
            "content": "derived synthetic memory",
            "source_event_ids": ("evt-1",),
            "kind": "fact",
            "trust": TrustLevel.OBSERVED,
            "created_at": NOW,
            "metadata": {},
        },
        "RecallQuery": {"scope": SCOPE, "as_of": NOW, "limit": 20, "kinds": ()},
        "GovernanceCommand": {
            "scope": SCOPE,
            "action": GovernanceAction.SEAL,
            "entity_type": EntityType.MEMORY,
            "entity_id": "mem-1",
            "occurred_at": NOW,
            "reason": "synthetic request",
        },
        "RawEventReceipt": {
            "event_id": "evt-1",
            "scope": SCOPE,
            "source": source(),
            "content_hash": HASH,
            "ingested_at": NOW,
            "raw_expires_at": NOW + timedelta(days=7),
            "clear_for": timedelta(days=30),
            "recall_for": timedelta(days=90),
            "content_available": True,
            "metadata": {},
        },
        "MemoryRecord": record_kwargs,
        "RecallItem": {"memory": MemoryRecord(**record_kwargs), "clarity": 1.0},
        "GovernanceResult": {
            "command": command,
            "affected_ids": ("mem-1",),
            "removed": (ArtifactClass.MEMORY,),
        },
        "AuditRecord": {
            "audit_id": "audit-1",
            "scope": SCOPE,
            "action": "ingest",
            "entity_type": EntityType.RAW_EVENT,
            "entity_id": "evt-1",
            "occurred_at": NOW,
            "reason": "event ingested",
            "metadata": {},
        },
    }


CLASSES: dict[str, type[Any]] = {
    "Scope": Scope,
    "RetentionPolicy": RetentionPolicy,
    "SourceRef": SourceRef,
    "RawEventDraft": RawEventDraft,
    "MemoryDraft": MemoryDraft,
    "RecallQuery": RecallQuery,
    "GovernanceCommand": GovernanceCommand,
    "RawEventReceipt": RawEventReceipt,
    "MemoryRecord": MemoryRecord,
    "RecallItem": RecallItem,
    "GovernanceResult": GovernanceResult,
    "AuditRecord": AuditRecord,
}


def build(name: str, **overrides: Any) -> Any:
    kwargs = _valid_kwargs()[name]
    kwargs.update(overrides)
    return CLASSES[name](**kwargs)


def expect(message: str) -> Any:
    return pytest.raises(ValidationError, match=msg(message))


# --------------------------------------------------------------------------- field order

FIELD_ORDER = {
    "Scope": ["tenant_id", "owner_id", "subject_id"],
    "RetentionPolicy": ["raw_ttl", "clear_for", "recall_for"],
    "SourceRef": ["source_id", "source_type", "occurred_at", "trust", "metadata"],
    "RawEventDraft": ["event_id", "scope", "source", "content", "retention", "metadata"],
    "MemoryDraft": [
        "memory_id",
        "scope",
        "content",
        "source_event_ids",
        "kind",
        "trust",
        "created_at",
        "metadata",
    ],
    "RecallQuery": ["scope", "as_of", "limit", "kinds"],
    "GovernanceCommand": [
        "scope",
        "action",
        "entity_type",
        "entity_id",
        "occurred_at",
        "reason",
    ],
    "RawEventReceipt": [
        "event_id",
        "scope",
        "source",
        "content_hash",
        "ingested_at",
        "raw_expires_at",
        "clear_for",
        "recall_for",
        "content_available",
        "metadata",
    ],
    "MemoryRecord": [
        "memory_id",
        "scope",
        "content",
        "source_event_ids",
        "dependency_fingerprint",
        "kind",
        "trust",
        "created_at",
        "clear_until",
        "recall_until",
        "status",
        "metadata",
    ],
    "RecallItem": ["memory", "clarity"],
    "GovernanceResult": ["command", "affected_ids", "removed"],
    "AuditRecord": [
        "audit_id",
        "scope",
        "action",
        "entity_type",
        "entity_id",
        "occurred_at",
        "reason",
        "metadata",
    ],
}


@pytest.mark.parametrize("name", sorted(FIELD_ORDER))
def test_dto_fields_are_in_documented_order(name: str) -> None:
    assert [f.name for f in dataclasses.fields(CLASSES[name])] == FIELD_ORDER[name]


@pytest.mark.parametrize("name", sorted(FIELD_ORDER))
def test_dto_accepts_positional_arguments(name: str) -> None:
    kwargs = _valid_kwargs()[name]
    positional = [kwargs[field] for field in FIELD_ORDER[name]]
    assert CLASSES[name](*positional) == CLASSES[name](**kwargs)


@pytest.mark.parametrize("name", sorted(FIELD_ORDER))
def test_dto_is_frozen_with_slots(name: str) -> None:
    value = build(name)
    first = FIELD_ORDER[name][0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, first, getattr(value, first))
    assert not hasattr(value, "__dict__")
    assert "__slots__" in vars(CLASSES[name])


@pytest.mark.parametrize("name", ["Scope", "RecallQuery", "GovernanceCommand"])
def test_metadata_free_dtos_are_hashable(name: str) -> None:
    assert hash(build(name)) == hash(build(name))
    assert len({build(name), build(name)}) == 1


def test_receipt_has_no_content_and_no_raw_ttl() -> None:
    names = {f.name for f in dataclasses.fields(RawEventReceipt)}
    assert "content" not in names
    assert "raw_ttl" not in names


@pytest.mark.parametrize("name", ["RawEventReceipt", "MemoryRecord", "AuditRecord"])
def test_record_metadata_has_no_default(name: str) -> None:
    kwargs = _valid_kwargs()[name]
    del kwargs["metadata"]
    with pytest.raises(TypeError):
        CLASSES[name](**kwargs)


@pytest.mark.parametrize("name", ["SourceRef", "RawEventDraft", "MemoryDraft"])
def test_draft_metadata_defaults_to_empty_object(name: str) -> None:
    kwargs = _valid_kwargs()[name]
    del kwargs["metadata"]
    value = CLASSES[name](**kwargs)
    assert value.metadata == {}
    assert isinstance(value.metadata, MappingProxyType)


def test_recall_query_defaults() -> None:
    query = RecallQuery(SCOPE, NOW)
    assert query.limit == 20
    assert query.kinds == ()


# Each field's invalid value and the message it must produce. Fixing the fields one at a
# time proves that the first invalid field (in declaration order) wins.
INVALID: dict[str, list[tuple[str, Any, str]]] = {
    "Scope": [
        ("tenant_id", "", "tenant_id: must be a non-blank string"),
        ("owner_id", " ", "owner_id: must be a non-blank string"),
        ("subject_id", None, "subject_id: must be a non-blank string"),
    ],
    "RetentionPolicy": [
        ("raw_ttl", timedelta(0), "raw_ttl: must be positive"),
        ("clear_for", timedelta(seconds=-1), "clear_for: must be positive"),
        ("recall_for", 5, "recall_for: must be positive"),
    ],
    "SourceRef": [
        ("source_id", "", "source_id: must be a non-blank string"),
        ("source_type", "\t", "source_type: must be a non-blank string"),
        ("occurred_at", datetime(2026, 8, 13), "occurred_at: must be timezone-aware"),
        ("trust", 1, "trust: must be a TrustLevel"),
        ("metadata", [], "metadata: must be a JSON object"),
    ],
    "RawEventDraft": [
        ("event_id", "", "event_id: must be a non-blank string"),
        ("scope", "tenant", "scope: must be a Scope"),
        ("source", "source", "source: must be a SourceRef"),
        ("content", "", "content: must be non-empty UTF-8 text"),
        ("retention", timedelta(days=1), "retention: must be a RetentionPolicy"),
        ("metadata", None, "metadata: must be a JSON object"),
    ],
    "MemoryDraft": [
        ("memory_id", "", "memory_id: must be a non-blank string"),
        ("scope", None, "scope: must be a Scope"),
        ("content", b"bytes", "content: must be non-empty UTF-8 text"),
        ("source_event_ids", [], "source_event_ids: must be a non-empty tuple"),
        ("kind", "", "kind: must be a non-blank string"),
        ("trust", "observed", "trust: must be a TrustLevel"),
        ("created_at", "2026-08-13", "created_at: must be timezone-aware"),
        ("metadata", "{}", "metadata: must be a JSON object"),
    ],
    "RecallQuery": [
        ("scope", ("tenant", "owner", "subject"), "scope: must be a Scope"),
        ("as_of", datetime(2026, 8, 13), "as_of: must be timezone-aware"),
        ("limit", 0, "limit: must be from 1 through 100"),
        ("kinds", ["fact"], "kinds: must be a tuple"),
    ],
    "GovernanceCommand": [
        ("scope", None, "scope: must be a Scope"),
        ("action", "seal", "action: must be a GovernanceAction"),
        ("entity_type", "memory", "entity_type: must be an EntityType"),
        ("entity_id", "", "entity_id: must be a non-blank string"),
        ("occurred_at", datetime(2026, 8, 13), "occurred_at: must be timezone-aware"),
        ("reason", "  ", "reason: must be a non-blank string"),
    ],
    "RawEventReceipt": [
        ("event_id", "", "event_id: must be a non-blank string"),
        ("scope", None, "scope: must be a Scope"),
        ("source", None, "source: must be a SourceRef"),
        ("content_hash", "", "content_hash: must be a non-blank string"),
        ("ingested_at", datetime(2026, 8, 13), "ingested_at: must be timezone-aware"),
        ("raw_expires_at", datetime(2026, 8, 20), "raw_expires_at: must be timezone-aware"),
        ("clear_for", timedelta(0), "clear_for: must be positive"),
        ("recall_for", timedelta(0), "recall_for: must be positive"),
        ("content_available", 1, "content_available: must be a bool"),
        ("metadata", [], "metadata: must be a JSON object"),
    ],
    "MemoryRecord": [
        ("memory_id", "", "memory_id: must be a non-blank string"),
        ("scope", None, "scope: must be a Scope"),
        ("content", "", "content: must be non-empty UTF-8 text"),
        ("source_event_ids", (), "source_event_ids: must be a non-empty tuple"),
        ("dependency_fingerprint", "", "dependency_fingerprint: must be a non-blank string"),
        ("kind", "", "kind: must be a non-blank string"),
        ("trust", 2, "trust: must be a TrustLevel"),
        ("created_at", datetime(2026, 8, 13), "created_at: must be timezone-aware"),
        ("clear_until", datetime(2026, 9, 13), "clear_until: must be timezone-aware"),
        ("recall_until", datetime(2026, 11, 13), "recall_until: must be timezone-aware"),
        ("status", "active", "status: must be a MemoryStatus"),
        ("metadata", [], "metadata: must be a JSON object"),
    ],
    "RecallItem": [
        ("memory", None, "memory: must be a MemoryRecord"),
        ("clarity", 1, "clarity: must be a finite float"),
    ],
    "GovernanceResult": [
        ("command", None, "command: must be a GovernanceCommand"),
        ("affected_ids", ("",), "affected_ids: must be a non-blank string"),
        ("removed", ("memory",), "removed: must be a tuple of ArtifactClass"),
    ],
    "AuditRecord": [
        ("audit_id", "", "audit_id: must be a non-blank string"),
        ("scope", None, "scope: must be a Scope"),
        ("action", "", "action: must be a non-blank string"),
        ("entity_type", "raw_event", "entity_type: must be an EntityType"),
        ("entity_id", "", "entity_id: must be a non-blank string"),
        ("occurred_at", datetime(2026, 8, 13), "occurred_at: must be timezone-aware"),
        ("reason", "", "reason: must be a non-blank string"),
        ("metadata", [], "metadata: must be a JSON object"),
    ],
}


def test_every_dto_has_an_invalid_case_for_every_field() -> None:
    for name, cases in INVALID.items():
        assert [field for field, _, _ in cases] == FIELD_ORDER[name], name


@pytest.mark.parametrize("name", sorted(INVALID))
def test_first_invalid_field_wins(name: str) -> None:
    kwargs = _valid_kwargs()[name]
    broken = dict(kwargs)
    for field, value, _ in INVALID[name]:
        broken[field] = value
    for field, _, message in INVALID[name]:
        with expect(message):
            CLASSES[name](**broken)
        broken[field] = kwargs[field]
    CLASSES[name](**broken)


# --------------------------------------------------------------------------- text fields

TEXT_FIELDS = [
    ("Scope", "tenant_id"),
    ("Scope", "owner_id"),
    ("Scope", "subject_id"),
    ("SourceRef", "source_id"),
    ("SourceRef", "source_type"),
    ("RawEventDraft", "event_id"),
    ("MemoryDraft", "memory_id"),
    ("MemoryDraft", "kind"),
    ("GovernanceCommand", "entity_id"),
    ("GovernanceCommand", "reason"),
    ("RawEventReceipt", "event_id"),
    ("RawEventReceipt", "content_hash"),
    ("MemoryRecord", "memory_id"),
    ("MemoryRecord", "dependency_fingerprint"),
    ("MemoryRecord", "kind"),
    ("AuditRecord", "audit_id"),
    ("AuditRecord", "action"),
    ("AuditRecord", "entity_id"),
    ("AuditRecord", "reason"),
]

TUPLE_TEXT_FIELDS = [
    ("MemoryDraft", "source_event_ids"),
    ("MemoryRecord", "source_event_ids"),
    ("RecallQuery", "kinds"),
    ("GovernanceResult", "affected_ids"),
]


def _text_params() -> list[tuple[str, str, Callable[[str], Any]]]:
    params: list[tuple[str, str, Callable[[str], Any]]] = [
        (name, field, lambda text: text) for name, field in TEXT_FIELDS
    ]
    params += [(name, field, lambda text: (text,)) for name, field in TUPLE_TEXT_FIELDS]
    return params


TEXT_PARAMS = _text_params()
TEXT_IDS = [f"{name}.{field}" for name, field, _ in TEXT_PARAMS]


@pytest.mark.parametrize(("name", "field", "wrap"), TEXT_PARAMS, ids=TEXT_IDS)
@pytest.mark.parametrize("blank", ["", " ", "\t\n", "\u3000", None, 7, b"id"])
def test_text_must_be_non_blank_string(
    name: str, field: str, wrap: Callable[[str], Any], blank: Any
) -> None:
    with expect(f"{field}: must be a non-blank string"):
        build(name, **{field: wrap(blank)})


@pytest.mark.parametrize(("name", "field", "wrap"), TEXT_PARAMS, ids=TEXT_IDS)
def test_text_is_limited_to_128_code_points(
    name: str, field: str, wrap: Callable[[str], Any]
) -> None:
    # 128 code points are accepted even when they need four UTF-8 bytes each.
    at_limit = build(name, **{field: wrap("\U0001f600" * 128)})
    assert getattr(at_limit, field) == wrap("\U0001f600" * 128)
    build(name, **{field: wrap("x" * 128)})
    with expect(f"{field}: must be at most 128 characters"):
        build(name, **{field: wrap("x" * 129)})


@pytest.mark.parametrize(("name", "field", "wrap"), TEXT_PARAMS, ids=TEXT_IDS)
@pytest.mark.parametrize("text", ["\ud800", "id-\udfff", "a\ud83d"])
def test_text_with_lone_surrogate_must_be_valid_utf8(
    name: str, field: str, wrap: Callable[[str], Any], text: str
) -> None:
    with expect(f"{field}: must be valid UTF-8"):
        build(name, **{field: wrap(text)})


def test_text_is_not_trimmed_or_normalised() -> None:
    assert Scope(" tenant", "owner", "subject") != Scope("tenant", "owner", "subject")
    assert Scope(" tenant", "owner", "subject").tenant_id == " tenant"
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert Scope(composed, "o", "s") != Scope(decomposed, "o", "s")


# --------------------------------------------------------------------------- datetimes

DATETIME_FIELDS = [
    ("SourceRef", "occurred_at"),
    ("MemoryDraft", "created_at"),
    ("RecallQuery", "as_of"),
    ("GovernanceCommand", "occurred_at"),
    ("RawEventReceipt", "ingested_at"),
    ("RawEventReceipt", "raw_expires_at"),
    ("MemoryRecord", "created_at"),
    ("MemoryRecord", "clear_until"),
    ("MemoryRecord", "recall_until"),
    ("AuditRecord", "occurred_at"),
]
DATETIME_IDS = [f"{name}.{field}" for name, field in DATETIME_FIELDS]


class _NoOffset(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return None

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None

    def tzname(self, dt: datetime | None) -> str | None:
        return None


class _HostileError(Exception):
    pass


class _Interrupt(BaseException):
    """Not an ``Exception``: an interruption, which no check may swallow."""


class _RaisingOffset(tzinfo):
    def __init__(self, error: type[BaseException]) -> None:
        self.error = error

    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        raise self.error("hostile tzinfo")

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None

    def tzname(self, dt: datetime | None) -> str | None:
        return "hostile"


@pytest.mark.parametrize(("name", "field"), DATETIME_FIELDS, ids=DATETIME_IDS)
@pytest.mark.parametrize(
    "value",
    [
        datetime(2026, 8, 13, 12),
        datetime(2026, 8, 13, 12, tzinfo=_NoOffset()),
        date(2026, 8, 13),
        "2026-08-13T12:00:00+00:00",
        NOW.timestamp(),
        None,
    ],
    ids=["naive", "none-offset", "date", "string", "float", "none"],
)
def test_datetime_must_be_timezone_aware(name: str, field: str, value: Any) -> None:
    with expect(f"{field}: must be timezone-aware"):
        build(name, **{field: value})


@pytest.mark.parametrize(("name", "field"), DATETIME_FIELDS, ids=DATETIME_IDS)
def test_datetime_is_normalised_to_utc(name: str, field: str) -> None:
    plus_two = timezone(timedelta(hours=2))
    local = datetime(2026, 9, 1, 14, 30, tzinfo=plus_two)
    overrides: dict[str, Any] = {field: local}
    if name == "MemoryRecord":
        # keep clear_until <= recall_until whatever field is replaced
        overrides = {
            "created_at": local,
            "clear_until": local,
            "recall_until": local + timedelta(days=1),
        }
        overrides[field] = local
    value = build(name, **overrides)
    stored = getattr(value, field)
    assert stored == local
    assert stored.tzinfo is UTC
    assert stored.hour == 12


@pytest.mark.parametrize(("name", "field"), DATETIME_FIELDS, ids=DATETIME_IDS)
@pytest.mark.parametrize(
    "value",
    [
        datetime.max.replace(tzinfo=timezone(-timedelta(hours=23, minutes=59))),
        datetime.min.replace(tzinfo=timezone(timedelta(hours=23, minutes=59))),
        datetime(2026, 8, 13, tzinfo=_RaisingOffset(RuntimeError)),
        datetime(2026, 8, 13, tzinfo=_RaisingOffset(ValueError)),
        datetime(2026, 8, 13, tzinfo=_RaisingOffset(OverflowError)),
        datetime(2026, 8, 13, tzinfo=_RaisingOffset(OSError)),
        datetime(2026, 8, 13, tzinfo=_RaisingOffset(TypeError)),
        datetime(2026, 8, 13, tzinfo=_RaisingOffset(ZeroDivisionError)),
        datetime(2026, 8, 13, tzinfo=_RaisingOffset(ArithmeticError)),
        datetime(2026, 8, 13, tzinfo=_RaisingOffset(KeyError)),
        datetime(2026, 8, 13, tzinfo=_RaisingOffset(AttributeError)),
        datetime(2026, 8, 13, tzinfo=_RaisingOffset(_HostileError)),
    ],
    ids=[
        "max-minus",
        "min-plus",
        "runtime",
        "value",
        "overflow",
        "os",
        "type",
        "zero-division",
        "arithmetic",
        "key",
        "attribute",
        "any-exception",
    ],
)
def test_datetime_must_be_representable(name: str, field: str, value: datetime) -> None:
    with expect(f"{field}: must be a representable datetime") as info:
        build(name, **{field: value})
    assert_not_chained(info.value)


def test_an_interruption_in_a_tzinfo_escapes_unchanged() -> None:
    with pytest.raises(_Interrupt):
        source(occurred_at=datetime(2026, 8, 13, tzinfo=_RaisingOffset(_Interrupt)))


# --------------------------------------------------------------------------- content

CONTENT_FIELDS = [
    ("RawEventDraft", "content"),
    ("MemoryDraft", "content"),
    ("MemoryRecord", "content"),
]
CONTENT_IDS = [f"{name}.{field}" for name, field in CONTENT_FIELDS]


@pytest.mark.parametrize(("name", "field"), CONTENT_FIELDS, ids=CONTENT_IDS)
@pytest.mark.parametrize("value", ["", None, b"text", 42, ["text"]])
def test_content_must_be_non_empty_text(name: str, field: str, value: Any) -> None:
    with expect("content: must be non-empty UTF-8 text"):
        build(name, **{field: value})


@pytest.mark.parametrize(("name", "field"), CONTENT_FIELDS, ids=CONTENT_IDS)
def test_whitespace_only_content_is_accepted(name: str, field: str) -> None:
    assert build(name, **{field: " \n\t "}).content == " \n\t "


@pytest.mark.parametrize(("name", "field"), CONTENT_FIELDS, ids=CONTENT_IDS)
@pytest.mark.parametrize("value", ["\ud800", "secret body \udc00 here"])
def test_content_must_be_valid_utf8(name: str, field: str, value: str) -> None:
    with expect("content: must be valid UTF-8") as info:
        build(name, **{field: value})
    assert "secret" not in str(info.value)
    assert_not_chained(info.value)


@pytest.mark.parametrize(("name", "field"), CONTENT_FIELDS, ids=CONTENT_IDS)
def test_content_is_limited_to_256_kib_of_utf8(name: str, field: str) -> None:
    assert len(build(name, **{field: "a" * 262_144}).content) == 262_144
    # two-byte characters: the limit counts encoded bytes, not code points
    assert len(build(name, **{field: "\u00e9" * 131_072}).content) == 131_072
    with expect("content: must be at most 256 KiB UTF-8"):
        build(name, **{field: "a" * 262_145})
    with expect("content: must be at most 256 KiB UTF-8"):
        build(name, **{field: "\u00e9" * 131_072 + "a"})


# --------------------------------------------------------------------------- trust and retention

TRUST_FIELDS = [("SourceRef", "trust"), ("MemoryDraft", "trust"), ("MemoryRecord", "trust")]


@pytest.mark.parametrize(("name", "field"), TRUST_FIELDS, ids=[n for n, _ in TRUST_FIELDS])
@pytest.mark.parametrize("value", [0, 1, 2, True, "OBSERVED", None, MemoryStatus.ACTIVE])
def test_trust_must_be_a_trust_level(name: str, field: str, value: Any) -> None:
    with expect("trust: must be a TrustLevel"):
        build(name, **{field: value})


@pytest.mark.parametrize("field", ["raw_ttl", "clear_for", "recall_for"])
@pytest.mark.parametrize(
    "value", [timedelta(0), timedelta(microseconds=-1), -timedelta(days=1), 1, 1.0, None, "1d"]
)
def test_retention_durations_must_be_positive(field: str, value: Any) -> None:
    with expect(f"{field}: must be positive"):
        build("RetentionPolicy", **{field: value})


def test_retention_recall_must_be_at_least_clear() -> None:
    with expect("recall_for: must be at least clear_for"):
        RetentionPolicy(
            timedelta(days=1), timedelta(days=2), timedelta(days=2) - timedelta(microseconds=1)
        )
    equal = RetentionPolicy(timedelta(days=1), timedelta(days=2), timedelta(days=2))
    assert equal.clear_for == equal.recall_for
    tiny = RetentionPolicy(timedelta(microseconds=1), timedelta(microseconds=1), timedelta(1))
    assert tiny.raw_ttl == timedelta(microseconds=1)


def test_receipt_recall_for_must_be_at_least_clear_for() -> None:
    with expect("recall_for: must be at least clear_for"):
        build("RawEventReceipt", clear_for=timedelta(days=3), recall_for=timedelta(days=2))
    assert build("RawEventReceipt", clear_for=timedelta(days=2), recall_for=timedelta(days=2))


# --------------------------------------------------------------------------- per-DTO specifics


@pytest.mark.parametrize(
    "name", ["RawEventDraft", "MemoryDraft", "RawEventReceipt", "MemoryRecord"]
)
@pytest.mark.parametrize("value", ["tenant", ("tenant", "owner", "subject"), None, {}])
def test_scope_field_must_be_a_scope(name: str, value: Any) -> None:
    with expect("scope: must be a Scope"):
        build(name, scope=value)


@pytest.mark.parametrize("name", ["MemoryDraft", "MemoryRecord"])
@pytest.mark.parametrize("value", [[], ["evt-1"], (), "evt-1", None, {"evt-1"}])
def test_source_event_ids_must_be_a_non_empty_tuple(name: str, value: Any) -> None:
    with expect("source_event_ids: must be a non-empty tuple"):
        build(name, source_event_ids=value)


@pytest.mark.parametrize("name", ["MemoryDraft", "MemoryRecord"])
def test_source_event_ids_must_not_contain_duplicates(name: str) -> None:
    with expect("source_event_ids: must not contain duplicates"):
        build(name, source_event_ids=("evt-1", "evt-2", "evt-1"))


def test_source_event_ids_distinguish_untrimmed_values() -> None:
    draft = build("MemoryDraft", source_event_ids=("evt-1", " evt-1"))
    assert draft.source_event_ids == ("evt-1", " evt-1")


def test_source_event_ids_have_no_count_limit() -> None:
    ids = tuple(f"evt-{index}" for index in range(2_000))
    assert build("MemoryDraft", source_event_ids=ids).source_event_ids == ids


@pytest.mark.parametrize("limit", [0, -1, 101, True, False, 1.0, 20.0, "20", None])
def test_recall_query_limit_bounds(limit: Any) -> None:
    with expect("limit: must be from 1 through 100"):
        build("RecallQuery", limit=limit)


@pytest.mark.parametrize("limit", [1, 2, 99, 100])
def test_recall_query_limit_accepted(limit: int) -> None:
    assert build("RecallQuery", limit=limit).limit == limit


@pytest.mark.parametrize("kinds", [["fact"], "fact", None, {"fact"}])
def test_recall_query_kinds_must_be_a_tuple(kinds: Any) -> None:
    with expect("kinds: must be a tuple"):
        build("RecallQuery", kinds=kinds)


def test_recall_query_kinds_allow_duplicates_and_many_entries() -> None:
    assert build("RecallQuery", kinds=("fact", "fact")).kinds == ("fact", "fact")
    many = tuple(f"kind-{index}" for index in range(500))
    assert build("RecallQuery", kinds=many).kinds == many


@pytest.mark.parametrize("action", ["seal", "delete", 0, None, EntityType.MEMORY])
def test_command_action_must_be_an_enum_member(action: Any) -> None:
    with expect("action: must be a GovernanceAction"):
        build("GovernanceCommand", action=action)


@pytest.mark.parametrize("name", ["GovernanceCommand", "AuditRecord"])
@pytest.mark.parametrize("entity_type", ["memory", "raw_event", None, GovernanceAction.SEAL])
def test_entity_type_must_be_an_enum_member(name: str, entity_type: Any) -> None:
    with expect("entity_type: must be an EntityType"):
        build(name, entity_type=entity_type)


@pytest.mark.parametrize("value", [1, 0, "true", None])
def test_receipt_content_available_must_be_a_real_bool(value: Any) -> None:
    with expect("content_available: must be a bool"):
        build("RawEventReceipt", content_available=value)


def test_receipt_content_hash_is_text_not_hex_checked() -> None:
    assert build("RawEventReceipt", content_hash="not-hex").content_hash == "not-hex"


def test_record_recall_until_must_not_precede_clear_until() -> None:
    with expect("recall_until: must not precede clear_until"):
        build(
            "MemoryRecord",
            clear_until=NOW + timedelta(days=2),
            recall_until=NOW + timedelta(days=2) - timedelta(microseconds=1),
        )
    equal = build("MemoryRecord", clear_until=NOW, recall_until=NOW)
    assert equal.clear_until == equal.recall_until
    # created_at after clear_until is not checked
    late = build("MemoryRecord", created_at=NOW + timedelta(days=400))
    assert late.created_at > late.clear_until


@pytest.mark.parametrize("status", ["active", "sealed", None, GovernanceAction.SEAL])
def test_record_status_must_be_a_memory_status(status: Any) -> None:
    with expect("status: must be a MemoryStatus"):
        build("MemoryRecord", status=status)


@pytest.mark.parametrize(
    "clarity", [1, 0, True, float("nan"), float("inf"), float("-inf"), "1.0", None, Decimal(1)]
)
def test_recall_item_clarity_must_be_a_finite_float(clarity: Any) -> None:
    with expect("clarity: must be a finite float"):
        build("RecallItem", clarity=clarity)


@pytest.mark.parametrize("clarity", [0.0, 0.5, 1.0, 1.5, -0.25])
def test_recall_item_clarity_range_is_not_checked(clarity: float) -> None:
    assert build("RecallItem", clarity=clarity).clarity == clarity


def test_recall_item_memory_must_be_a_record() -> None:
    with expect("memory: must be a MemoryRecord"):
        build("RecallItem", memory=build("MemoryDraft"))


def test_governance_result_type_checks() -> None:
    with expect("command: must be a GovernanceCommand"):
        build("GovernanceResult", command=build("Scope"))
    # same rule text as RecallQuery.kinds
    with expect("affected_ids: must be a tuple"):
        build("GovernanceResult", affected_ids=["mem-1"])
    assert build("GovernanceResult", affected_ids=()).affected_ids == ()


def test_governance_result_removed_defaults_to_nothing_and_is_ordered() -> None:
    command = build("GovernanceCommand")
    assert GovernanceResult(command, ("mem-1",)).removed == ()
    shuffled = (ArtifactClass.SEARCH_ENTRY, ArtifactClass.MEMORY, ArtifactClass.LINEAGE_EDGE)
    assert build("GovernanceResult", removed=shuffled).removed == (
        ArtifactClass.MEMORY,
        ArtifactClass.LINEAGE_EDGE,
        ArtifactClass.SEARCH_ENTRY,
    )
    with expect("removed: must be a tuple of ArtifactClass"):
        build("GovernanceResult", removed=[ArtifactClass.MEMORY])
    with expect("removed: must not contain duplicates"):
        build("GovernanceResult", removed=(ArtifactClass.MEMORY, ArtifactClass.MEMORY))


def test_governance_command_refuses_the_subject_entity_type() -> None:
    with expect("entity_type: must be raw_event or memory"):
        build("GovernanceCommand", entity_type=EntityType.SUBJECT)


def test_audit_record_action_is_any_text() -> None:
    assert build("AuditRecord", action="anything goes").action == "anything goes"


# --------------------------------------------------------------------------- metadata

METADATA_OWNERS = [
    "SourceRef",
    "RawEventDraft",
    "MemoryDraft",
    "RawEventReceipt",
    "MemoryRecord",
    "AuditRecord",
]


def _nested_dicts(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def _dict_of_nested_lists(levels: int) -> dict[str, Any]:
    inner: list[Any] = []
    for _ in range(levels - 2):
        inner = [inner]
    return {"a": inner}


@pytest.mark.parametrize("name", METADATA_OWNERS)
@pytest.mark.parametrize("value", [[], (), None, "{}", 1, MappingProxyType({}).keys()])
def test_metadata_top_level_must_be_an_object(name: str, value: Any) -> None:
    with expect("metadata: must be a JSON object"):
        build(name, metadata=value)


@pytest.mark.parametrize("name", METADATA_OWNERS)
def test_metadata_is_frozen_recursively(name: str) -> None:
    original = {"list": [1, [2, {"x": None}]], "obj": {"flag": True, "text": "v"}}
    value = build(name, metadata=original)
    metadata = value.metadata
    assert isinstance(metadata, MappingProxyType)
    assert metadata == {"list": (1, (2, {"x": None})), "obj": {"flag": True, "text": "v"}}
    assert isinstance(metadata["list"], tuple)
    assert isinstance(metadata["list"][1], tuple)
    assert isinstance(metadata["list"][1][1], MappingProxyType)
    assert isinstance(metadata["obj"], MappingProxyType)
    with pytest.raises(TypeError):
        metadata["new"] = 1  # type: ignore[index]
    original["obj"]["flag"] = False
    original["list"].append(3)
    original["added"] = 1
    assert metadata == {"list": (1, (2, {"x": None})), "obj": {"flag": True, "text": "v"}}


def test_metadata_scalars_keep_their_types() -> None:
    metadata = build(
        "SourceRef", metadata={"t": True, "f": False, "i": 1, "x": 1.0, "n": None, "s": "s"}
    ).metadata
    assert [type(metadata[k]) for k in ("t", "f", "i", "x", "n", "s")] == [
        bool,
        bool,
        int,
        float,
        type(None),
        str,
    ]


def test_metadata_accepts_tuples_and_mapping_proxies_as_input() -> None:
    from_tuple = build(
        "RawEventDraft", metadata={"a": (1, (2, 3)), "m": MappingProxyType({"k": 1})}
    )
    from_list = build("RawEventDraft", metadata={"a": [1, [2, 3]], "m": {"k": 1}})
    assert from_tuple == from_list
    assert MappingProxyType({"a": 1}) == {"a": 1}
    assert build("MemoryDraft", metadata=MappingProxyType({"a": [1]})).metadata == {"a": (1,)}


@pytest.mark.parametrize("name", ["SourceRef", "MemoryDraft"])
def test_metadata_integer_bound_is_4096_bits(name: str) -> None:
    assert build(name, metadata={"n": 1 << 4095}).metadata["n"] == 1 << 4095
    assert build(name, metadata={"n": -(1 << 4095)}).metadata["n"] == -(1 << 4095)
    for too_big in (1 << 4096, -(1 << 4096), [1, 1 << 5000]):
        with expect("metadata: must contain bounded integers"):
            build(name, metadata={"n": too_big})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), [1.0, float("nan")]])
def test_metadata_floats_must_be_finite(value: Any) -> None:
    with expect("metadata: must contain finite JSON values"):
        build("RawEventDraft", metadata={"v": value})


@pytest.mark.parametrize(
    "value",
    [{1, 2}, frozenset(), object(), b"bytes", bytearray(b"x"), Decimal("1.5"), NOW, 1j, len],
    ids=[
        "set",
        "frozenset",
        "object",
        "bytes",
        "bytearray",
        "decimal",
        "datetime",
        "complex",
        "fn",
    ],
)
def test_metadata_rejects_non_json_values(value: Any) -> None:
    with expect("metadata: must contain only JSON values"):
        build("RawEventDraft", metadata={"v": value})
    with expect("metadata: must contain only JSON values"):
        build("MemoryDraft", metadata={"v": [value]})


@pytest.mark.parametrize(
    "metadata", [{1: "x"}, {"a": {2: "x"}}, {None: 1}, {("a",): 1}, {"a": [{b"k": 1}]}]
)
def test_metadata_keys_must_be_strings(metadata: Any) -> None:
    with expect("metadata: must have string keys"):
        build("SourceRef", metadata=metadata)


@pytest.mark.parametrize("name", ["SourceRef", "RawEventDraft", "AuditRecord"])
def test_metadata_depth_limit_is_64_levels(name: str) -> None:
    assert build(name, metadata=_nested_dicts(64)).metadata is not None
    assert build(name, metadata=_dict_of_nested_lists(64)).metadata is not None
    with expect("metadata: must be at most 64 levels deep"):
        build(name, metadata=_nested_dicts(65))
    with expect("metadata: must be at most 64 levels deep"):
        build(name, metadata=_dict_of_nested_lists(65))


def test_metadata_depth_counts_tuple_input_levels() -> None:
    inner: Any = ()
    for _ in range(63):
        inner = (inner,)
    with expect("metadata: must be at most 64 levels deep"):
        build("MemoryDraft", metadata={"a": inner})


def test_metadata_cycles_are_rejected_without_recursion_error() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with pytest.raises(ValidationError, match=r"^metadata: "):
        build("SourceRef", metadata=cyclic)


@pytest.mark.parametrize("name", ["SourceRef", "MemoryRecord"])
def test_metadata_size_limit_is_16_kib_inclusive(name: str) -> None:
    # canonical text is {"k":"..."}: 8 bytes of structure plus the string
    exact = build(name, metadata={"k": "x" * 16_376})
    assert len(exact.metadata["k"]) == 16_376
    with expect("metadata: must serialize to at most 16 KiB"):
        build(name, metadata={"k": "x" * 16_377})


def test_metadata_size_counts_utf8_bytes_of_canonical_json() -> None:
    # ensure_ascii=False: each e-acute is two bytes, not a six-byte escape
    assert build("SourceRef", metadata={"k": "\u00e9" * 8_188}).metadata["k"] == "\u00e9" * 8_188
    with expect("metadata: must serialize to at most 16 KiB"):
        build("SourceRef", metadata={"k": "\u00e9" * 8_188 + "x"})
    # compact separators: {"a":1,"b":"..."} is 14 bytes of structure plus the string
    assert build("SourceRef", metadata={"b": "y" * 16_370, "a": 1})
    with expect("metadata: must serialize to at most 16 KiB"):
        build("SourceRef", metadata={"b": "y" * 16_371, "a": 1})


@pytest.mark.parametrize("metadata", [{"k": "\ud800"}, {"\udc00": 1}, {"a": ["ok", "\ud83d"]}])
def test_metadata_text_must_be_valid_utf8(metadata: Any) -> None:
    with expect("metadata: must be valid UTF-8") as info:
        build("RawEventDraft", metadata=metadata)
    assert_not_chained(info.value)


def test_metadata_equality_is_dataclass_equality() -> None:
    assert build("SourceRef", metadata={"a": [1]}) == build("SourceRef", metadata={"a": (1,)})
    assert build("SourceRef", metadata={"a": 1}) != build("SourceRef", metadata={"a": 2})


_VALID_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=128
).filter(lambda text: text.strip() != "")


@settings(max_examples=60, deadline=None)
@given(tenant=_VALID_TEXT, kind=_VALID_TEXT)
def test_any_non_blank_text_up_to_128_is_kept_verbatim(tenant: str, kind: str) -> None:
    scope = Scope(tenant, "owner", "subject")
    assert scope.tenant_id == tenant
    draft = build("MemoryDraft", scope=scope, kind=kind)
    assert draft.kind == kind


def test_a_record_assembled_from_checked_values_is_the_one_its_constructor_builds() -> None:
    # ``assembled`` skips the checks for values that passed them already (a new memory's
    # record, from its validated draft); the record is the same in every respect.
    checked = build("MemoryRecord", metadata={"tags": ["a", "b"], "n": 1})
    built = assembled(
        MemoryRecord, *(getattr(checked, f.name) for f in dataclasses.fields(checked))
    )
    assert type(built) is MemoryRecord
    assert built == checked
    assert pickle.loads(pickle.dumps(built)) == checked
    sealed = dataclasses.replace(built, status=MemoryStatus.SEALED)
    assert sealed == dataclasses.replace(checked, status=MemoryStatus.SEALED)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.content = "other"  # type: ignore[misc]


def test_an_assembled_record_takes_every_value() -> None:
    values = [getattr(build("MemoryRecord"), f.name) for f in dataclasses.fields(MemoryRecord)]
    with pytest.raises(TypeError):
        assembled(MemoryRecord, *values[:-1])
    with pytest.raises(TypeError):
        assembled(MemoryRecord, *values, "one too many")
