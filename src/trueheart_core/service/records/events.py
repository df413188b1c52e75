"""Raw events: the receipt's row and digest, its body row, and the receipt rebuilt from
a verified row."""

from __future__ import annotations

from dataclasses import replace

from trueheart_core.domain.model import (
    RawEventReceipt,
    Scope,
    SourceRef,
)
from trueheart_core.domain.policy import sha256_hex
from trueheart_core.domain.validation import canonical_json
from trueheart_core.errors import ValidationError
from trueheart_core.ports import (
    BodyRow,
    EventRow,
)
from trueheart_core.service.records.codecs import (
    EVENT_ACTIVE,
    EVENT_EXPIRED,
    RowInvalid,
    _check,
    _digest,
    _json,
    _signed,
    _trust,
    duration_text,
    from_us,
    parse_duration,
    scope_key,
    scope_of,
    to_us,
)


def _event_fields(r: EventRow) -> tuple[object, ...]:
    return (
        r.event_id,
        r.source_id,
        r.source_type,
        r.source_occurred_at,
        r.trust,
        r.source_metadata,
        r.content_hash,
        r.ingested_at,
        r.raw_expires_at,
        r.clear_for,
        r.recall_for,
        r.status,
        r.metadata,
    )


def event_digest(row: EventRow) -> str:
    """Digest of a receipt row (every field but the digest and ``has_body``)."""
    return _digest("raw_event", row.scope, *_event_fields(row))


def event_row(receipt: RawEventReceipt) -> EventRow:
    """The stored form of a new receipt (status ``active``, body present), with its digest."""
    source = receipt.source
    row = EventRow(
        scope=scope_key(receipt.scope),
        event_id=receipt.event_id,
        source_id=source.source_id,
        source_type=source.source_type,
        source_occurred_at=to_us(source.occurred_at),
        trust=int(source.trust),
        source_metadata=canonical_json(source.metadata),
        content_hash=receipt.content_hash,
        ingested_at=to_us(receipt.ingested_at),
        raw_expires_at=to_us(receipt.raw_expires_at),
        clear_for=duration_text(receipt.clear_for),
        recall_for=duration_text(receipt.recall_for),
        status=EVENT_ACTIVE,
        metadata=canonical_json(receipt.metadata),
        digest="",
        has_body=True,
    )
    return _signed(row, event_digest(row))


def with_event_status(row: EventRow, status: str) -> EventRow:
    """The same receipt row with another status and a fresh digest."""
    changed = replace(row, status=status, has_body=status == EVENT_ACTIVE)
    return _signed(changed, event_digest(changed))


def receipt_from_row(row: EventRow, known: Scope | None = None) -> RawEventReceipt:
    """Verify a receipt row (digest, status/body consistency) and rebuild the receipt."""
    _check(row.digest, event_digest(row))
    if row.status not in (EVENT_ACTIVE, EVENT_EXPIRED):
        raise RowInvalid("invalid_row")
    if (row.status == EVENT_ACTIVE) != row.has_body:
        raise RowInvalid("body_status_mismatch")
    try:
        scope = scope_of(row.scope, known)
        source = SourceRef(
            row.source_id,
            row.source_type,
            from_us(row.source_occurred_at),
            _trust(row.trust),
            _json(row.source_metadata),
        )
        return RawEventReceipt(
            row.event_id,
            scope,
            source,
            row.content_hash,
            from_us(row.ingested_at),
            from_us(row.raw_expires_at),
            parse_duration(row.clear_for),
            parse_duration(row.recall_for),
            row.status == EVENT_ACTIVE,
            _json(row.metadata),
        )
    except (ValidationError, TypeError):
        raise RowInvalid("invalid_row") from None


def body_row(scope: Scope, event_id: str, content: str) -> BodyRow:
    """The stored form of a raw body, with its digest."""
    key = scope_key(scope)
    return BodyRow(key, event_id, content, _digest("raw_body", key, event_id, content))


def check_body(row: BodyRow, content_hash: str | None) -> None:
    """Verify a body row's digest and, when given, its receipt's content hash."""
    _check(row.digest, _digest("raw_body", row.scope, row.event_id, row.content))
    if content_hash is not None and (
        not isinstance(row.content, str) or sha256_hex(row.content) != content_hash
    ):
        raise RowInvalid("content_hash_mismatch")
