"""The rows governance writes: tombstones (checked against every rule a stored
tombstone obeys) and audit rows."""

from __future__ import annotations

from datetime import datetime

from trueheart_core.domain.model import (
    AuditRecord,
    EntityType,
    Scope,
)
from trueheart_core.domain.policy import GOVERNANCE_REASON
from trueheart_core.domain.validation import EMPTY_METADATA
from trueheart_core.errors import ValidationError
from trueheart_core.ports import (
    AuditRow,
    TombstoneRow,
)
from trueheart_core.service.records.codecs import (
    RowInvalid,
    _check,
    _digest,
    from_us,
    scope_key,
    scope_of,
    to_us,
)


def tombstone_row(
    scope: Scope,
    entity_type: EntityType,
    entity_id: str,
    fingerprint: str | None,
    deleted_at: datetime,
    reason: str,
) -> TombstoneRow:
    """A tombstone with its digest."""
    key = scope_key(scope)
    when = to_us(deleted_at)
    digest = _digest("tombstone", key, entity_type.value, entity_id, fingerprint, when, reason)
    return TombstoneRow(key, entity_type.value, entity_id, fingerprint, when, reason, digest)


def check_tombstone(row: TombstoneRow) -> EntityType:
    """Verify a tombstone's digest and every rule a stored tombstone obeys; returns its
    entity type.

    A recomputed digest proves nothing about the values (digests use no key), so the
    values are checked too, as reads, exports, imports and ``verify_integrity`` all
    need them: a valid scope; the entity type of a raw event or a memory; a time; the
    fixed reason every tombstone is written with (the caller's reason is never
    stored); the entity ID as text; no fingerprint for a raw event, and text for a
    memory. The ID and the fingerprint are checked as text only, not against the ID
    rules or the form of a fingerprint: ``erase_subject`` tombstones a damaged row's
    stored ID and fingerprint as they are (it is not blocked by the damage of what it
    erases), and a store that holds such a tombstone must still verify and export.
    """
    _check(
        row.digest,
        _digest(
            "tombstone",
            row.scope,
            row.entity_type,
            row.entity_id,
            row.fingerprint,
            row.deleted_at,
            row.reason,
        ),
    )
    try:
        entity_type = EntityType(row.entity_type)
    except ValueError:
        raise RowInvalid("invalid_row") from None
    if entity_type is EntityType.SUBJECT:
        raise RowInvalid("invalid_row")  # tombstones name raw events and memories only
    scope_of(row.scope)
    from_us(row.deleted_at)
    if type(row.reason) is not str or row.reason != GOVERNANCE_REASON:
        raise RowInvalid("invalid_row")
    if type(row.entity_id) is not str:
        raise RowInvalid("invalid_row")
    if entity_type is EntityType.RAW_EVENT:
        if row.fingerprint is not None:
            raise RowInvalid("invalid_row")
    elif type(row.fingerprint) is not str:
        raise RowInvalid("invalid_row")
    return entity_type


def audit_row(
    audit_id: str,
    scope: Scope,
    action: str,
    entity_type: EntityType,
    entity_id: str,
    occurred_at: datetime,
    reason: str,
) -> AuditRow:
    """An audit row (metadata always ``{}``) with its digest."""
    key = scope_key(scope)
    when = to_us(occurred_at)
    digest = _digest(
        "audit", key, audit_id, action, entity_type.value, entity_id, when, reason, "{}"
    )
    return AuditRow(audit_id, key, action, entity_type.value, entity_id, when, reason, "{}", digest)


def audit_from_row(row: AuditRow, known: Scope | None = None) -> AuditRecord:
    """Verify an audit row's digest and rebuild the record (policy checked by the caller)."""
    _check(
        row.digest,
        _digest(
            "audit",
            row.scope,
            row.audit_id,
            row.action,
            row.entity_type,
            row.entity_id,
            row.occurred_at,
            row.reason,
            row.metadata,
        ),
    )
    if row.metadata != "{}":
        raise RowInvalid("invalid_row")
    try:
        entity_type = EntityType(row.entity_type)
    except ValueError:
        raise RowInvalid("invalid_row") from None
    try:
        return AuditRecord(
            row.audit_id,
            scope_of(row.scope, known),
            row.action,
            entity_type,
            row.entity_id,
            from_us(row.occurred_at),
            row.reason,
            EMPTY_METADATA,
        )
    except (ValidationError, TypeError):
        raise RowInvalid("invalid_row") from None
