"""The canonical stored form of every entity and its row digest.

Converting a DTO to a row computes the row's digest: the SHA-256 of the canonical JSON of
a table tag and every stored field (scope included). Converting a row back recomputes the
digest before anything else and then rebuilds the DTO through its validating constructor,
so a tampered body, metadata value, date, trust, status or ID never reaches a caller.
Pure functions; failures raise :class:`RowInvalid`, which the service turns into
``RepositoryCorruption`` with the diagnostic of the operation at hand.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from trueheart_core.domain.claims import ClaimRecord, ExtractionRecord, claim_text
from trueheart_core.domain.extraction.model import ClaimProvenance, ExtractionDiagnostic
from trueheart_core.domain.model import (
    AuditRecord,
    EntityType,
    MemoryRecord,
    MemoryStatus,
    RawEventReceipt,
    Scope,
    SourceRef,
    TrustLevel,
)
from trueheart_core.domain.policy import GOVERNANCE_REASON, sha256_hex
from trueheart_core.domain.validation import EMPTY_METADATA, canonical_json
from trueheart_core.domain.validation import metadata as freeze_metadata
from trueheart_core.errors import ValidationError
from trueheart_core.ports import (
    AuditRow,
    BodyRow,
    ClaimRow,
    EdgeRow,
    EventRow,
    ExtractionRow,
    MemoryRow,
    ScopeKey,
    TombstoneRow,
    VectorRow,
)

_Row = TypeVar("_Row", EventRow, MemoryRow)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ONE_US = timedelta(microseconds=1)
EVENT_ACTIVE = "active"
EVENT_EXPIRED = "expired"


class RowInvalid(Exception):
    """A stored row failed its digest or its validation. ``code`` names the problem."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


# --- primitive codecs -------------------------------------------------------------------


def to_us(value: datetime) -> int:
    """Integer microseconds since the Unix epoch of an aware datetime."""
    return (value - EPOCH) // ONE_US


def from_us(value: object) -> datetime:
    """The UTC datetime of stored microseconds."""
    if type(value) is not int:
        raise RowInvalid("invalid_row")
    try:
        return EPOCH + timedelta(microseconds=value)
    except OverflowError:
        raise RowInvalid("invalid_row") from None


def duration_text(value: timedelta) -> str:
    """Stored form of a duration: decimal text of integer microseconds (may exceed int64)."""
    return str(value // ONE_US)


def parse_duration(value: object) -> timedelta:
    """The duration of stored decimal microseconds."""
    if not isinstance(value, str) or not value.isascii() or not value.isdigit():
        raise RowInvalid("invalid_row")
    try:
        return timedelta(microseconds=int(value))
    except (OverflowError, ValueError):
        raise RowInvalid("invalid_row") from None


def scope_key(scope: Scope) -> ScopeKey:
    """The stored form of a scope."""
    return (scope.tenant_id, scope.owner_id, scope.subject_id)


def scope_of(key: ScopeKey, known: Scope | None = None) -> Scope:
    """The validated Scope of a stored key (``known`` is reused when it matches)."""
    if known is not None and scope_key(known) == key:
        return known
    try:
        return Scope(*key)
    except (ValidationError, TypeError):
        raise RowInvalid("invalid_row") from None


def _json(text: object) -> Any:
    if text == "{}":
        return EMPTY_METADATA
    if not isinstance(text, str):
        raise RowInvalid("invalid_row")
    try:
        value = json.loads(text)
    except ValueError:
        raise RowInvalid("invalid_row") from None
    if canonical_json(value) != text:
        raise RowInvalid("invalid_row")
    return freeze_metadata(value)


def _digest(tag: str, scope: ScopeKey, *fields: object) -> str:
    try:
        return sha256_hex(canonical_json([tag, list(scope), *fields]))
    except (TypeError, ValueError, UnicodeEncodeError):
        return ""


def _signed(row: _Row, digest: str) -> _Row:
    """A row just built here, with its digest set (it has not escaped yet, so setting a
    field of the frozen row is cheaper than copying it)."""
    object.__setattr__(row, "digest", digest)
    return row


def _check(row_digest: object, expected: str) -> None:
    if not expected or row_digest != expected:
        raise RowInvalid("digest_mismatch")


_TRUST_LEVELS = {int(level): level for level in TrustLevel}
_STATUSES = {status.value: status for status in MemoryStatus}


def _trust(value: object) -> TrustLevel:
    level = _TRUST_LEVELS.get(value) if type(value) is int else None
    if level is None:
        raise RowInvalid("invalid_row")
    return level


# --- raw events ---------------------------------------------------------------------------


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


# --- memories and lineage -----------------------------------------------------------------


def _memory_digest(row: MemoryRow, source_ids: Sequence[str]) -> str:
    return _digest(
        "memory",
        row.scope,
        row.memory_id,
        row.content,
        list(source_ids),
        row.dependency_fingerprint,
        row.kind,
        row.trust,
        row.created_at,
        row.clear_until,
        row.recall_until,
        row.status,
        row.metadata,
    )


def memory_row(record: MemoryRecord) -> MemoryRow:
    """The stored form of a memory (without edges), with a digest covering its sources."""
    row = MemoryRow(
        scope=scope_key(record.scope),
        memory_id=record.memory_id,
        content=record.content,
        dependency_fingerprint=record.dependency_fingerprint,
        kind=record.kind,
        trust=int(record.trust),
        created_at=to_us(record.created_at),
        clear_until=to_us(record.clear_until),
        recall_until=to_us(record.recall_until),
        status=record.status.value,
        metadata=canonical_json(record.metadata),
        digest="",
    )
    return _with_memory_digest(row, record.source_event_ids)


def with_memory_status(
    row: MemoryRow, status: MemoryStatus, source_ids: Sequence[str]
) -> MemoryRow:
    """The same memory row with another status and a fresh digest."""
    values = list(_MEMORY_VALUES(row))  # one C call, where ``replace`` inspects the class
    values[_STATUS_AT] = status.value
    values[_DIGEST_AT] = ""
    return _with_memory_digest(MemoryRow(*values), source_ids)


_MEMORY_FIELDS = tuple(f.name for f in fields(MemoryRow))
_MEMORY_VALUES = operator.attrgetter(*_MEMORY_FIELDS)
_STATUS_AT = _MEMORY_FIELDS.index("status")
_DIGEST_AT = _MEMORY_FIELDS.index("digest")


def _with_memory_digest(row: MemoryRow, source_ids: Sequence[str]) -> MemoryRow:
    return _signed(row, _memory_digest(row, sorted(source_ids)))


def check_entry_columns(row: MemoryRow) -> None:
    """The columns a search entry copies from a memory row hold their stored types:
    text for the content and kind, integers for the trust and the three times. A
    restore indexes a row whose digest it verified without rebuilding the record."""
    if type(row.content) is not str or type(row.kind) is not str:
        raise RowInvalid("invalid_row")
    for value in (row.trust, row.created_at, row.clear_until, row.recall_until):
        if type(value) is not int:
            raise RowInvalid("invalid_row")


def verify_memory_row(
    row: MemoryRow, edges: Sequence[EdgeRow], *, edges_verified: bool = False
) -> list[str]:
    """Verify a memory row's digest, which covers its source IDs, and the digest of each
    of its lineage edges (unless the caller has just verified these very rows,
    ``edges_verified``); returns the sorted source IDs. The values themselves are not
    checked: a status change needs only to know that the row is as it was written."""
    ids: list[str] = []
    for edge in edges:
        if not edges_verified:
            _check(edge.digest, _edge_digest(edge))
        if edge.memory_id != row.memory_id or edge.scope != row.scope:
            raise RowInvalid("invalid_row")
        ids.append(edge.event_id)
    ids.sort()
    _check(row.digest, _memory_digest(row, ids))
    return ids


def memory_from_row(
    row: MemoryRow,
    edges: Sequence[EdgeRow],
    known: Scope | None = None,
    *,
    edges_verified: bool = False,
) -> MemoryRecord:
    """Verify a memory row (see :func:`verify_memory_row`) and rebuild the record, whose
    values are checked as every record's are."""
    ids = verify_memory_row(row, edges, edges_verified=edges_verified)
    status = _STATUSES.get(row.status) if isinstance(row.status, str) else None
    if status is None:
        raise RowInvalid("invalid_row")
    try:
        return MemoryRecord(
            row.memory_id,
            scope_of(row.scope, known),
            row.content,
            tuple(ids),
            row.dependency_fingerprint,
            row.kind,
            _trust(row.trust),
            from_us(row.created_at),
            from_us(row.clear_until),
            from_us(row.recall_until),
            status,
            _json(row.metadata),
        )
    except (ValidationError, TypeError):
        raise RowInvalid("invalid_row") from None


def edge_row(scope: Scope, memory_id: str, source: RawEventReceipt) -> EdgeRow:
    """A lineage edge snapshotting the source's current trust and retention windows."""
    key = scope_key(scope)
    trust, clear_for, recall_for = (
        int(source.source.trust),
        duration_text(source.clear_for),
        duration_text(source.recall_for),
    )
    digest = _digest("lineage", key, memory_id, source.event_id, trust, clear_for, recall_for)
    return EdgeRow(key, memory_id, source.event_id, trust, clear_for, recall_for, digest)


def _edge_digest(edge: EdgeRow) -> str:
    return _digest(
        "lineage",
        edge.scope,
        edge.memory_id,
        edge.event_id,
        edge.trust,
        edge.clear_for,
        edge.recall_for,
    )


def check_edge(edge: EdgeRow) -> tuple[TrustLevel, timedelta, timedelta]:
    """Verify an edge's digest and decode its snapshots (trust, clear_for, recall_for)."""
    _check(edge.digest, _edge_digest(edge))
    return edge_snapshots(edge)


def edge_snapshots(edge: EdgeRow) -> tuple[TrustLevel, timedelta, timedelta]:
    """Decode the snapshots of an edge whose digest was already verified."""
    clear_for, recall_for = parse_duration(edge.clear_for), parse_duration(edge.recall_for)
    if not timedelta(0) < clear_for <= recall_for:
        raise RowInvalid("invalid_row")
    return _trust(edge.trust), clear_for, recall_for


# --- tombstones and audit -----------------------------------------------------------------


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


# --- claims and extractions -------------------------------------------------------------


def _optional_us(value: datetime | None) -> int | None:
    return None if value is None else to_us(value)


def _claim_digest(row: ClaimRow) -> str:
    return _digest(
        "claim",
        row.scope,
        row.claim_id,
        row.subject,
        row.predicate,
        row.value,
        row.valid_from,
        row.valid_to,
        row.confidence,
        row.authority,
        row.supersedes,
    )


def claim_row(record: ClaimRecord) -> ClaimRow:
    """The stored form of a claim's fields, with its digest."""
    row = ClaimRow(
        scope_key(record.scope),
        record.claim_id,
        record.subject,
        record.predicate,
        record.value,
        _optional_us(record.valid_from),
        _optional_us(record.valid_to),
        record.confidence,
        record.authority,
        record.supersedes,
        "",
    )
    return replace(row, digest=_claim_digest(row))


def claim_from_row(row: ClaimRow, memory: MemoryRecord) -> ClaimRecord:
    """Verify a claim row and rebuild the record around its (verified) memory, whose
    content must be the claim's canonical text."""
    _check(row.digest, _claim_digest(row))
    if row.claim_id != memory.memory_id or row.scope != scope_key(memory.scope):
        raise RowInvalid("invalid_row")
    if type(row.confidence) is not float:
        raise RowInvalid("invalid_row")
    try:
        record = ClaimRecord(
            row.claim_id,
            row.subject,
            row.predicate,
            row.value,
            None if row.valid_from is None else from_us(row.valid_from),
            None if row.valid_to is None else from_us(row.valid_to),
            row.confidence,
            row.authority,
            row.supersedes,
            memory,
        )
    except (ValidationError, TypeError):
        raise RowInvalid("invalid_row") from None
    if memory.content != claim_text(record.subject, record.predicate, record.value):
        raise RowInvalid("claim_text_mismatch")
    return record


def extraction_row(record: ExtractionRecord) -> ExtractionRow:
    """The stored form of an extraction record, with its digest."""
    row = ExtractionRow(
        scope_key(record.scope),
        record.event_id,
        record.extractor,
        canonical_json(list(record.claim_ids)),
        canonical_json([[s.start, s.end] for s in record.spans]),
        canonical_json([[d.code, d.start, d.end] for d in record.diagnostics]),
        "",
    )
    return replace(row, digest=_extraction_digest(row))


def _extraction_digest(row: ExtractionRow) -> str:
    return _digest(
        "extraction",
        row.scope,
        row.event_id,
        row.extractor,
        row.claim_ids,
        row.spans,
        row.diagnostics,
    )


def extraction_from_row(row: ExtractionRow, known: Scope | None = None) -> ExtractionRecord:
    """Verify an extraction row and rebuild the record."""
    _check(row.digest, _extraction_digest(row))
    try:
        ids = json.loads(row.claim_ids)
        spans = json.loads(row.spans)
        diagnostics = json.loads(row.diagnostics)
        return ExtractionRecord(
            row.event_id,
            scope_of(row.scope, known),
            row.extractor,
            tuple(ids),
            tuple(ClaimProvenance(start, end) for start, end in spans),
            tuple(ExtractionDiagnostic(code, start, end) for code, start, end in diagnostics),
        )
    except (ValidationError, TypeError, ValueError):
        raise RowInvalid("invalid_row") from None


def vector_digest(row: VectorRow, identity: str, dimensions: int, normalized: bool) -> str:
    """The digest of a vector row: its memory, space (by identity, dimensions and
    normalisation, so a row cannot move to another space unnoticed), content hash and
    vector bytes."""
    if not isinstance(row.vector, bytes):
        return ""
    return _digest(
        "vector",
        row.scope,
        row.memory_id,
        identity,
        dimensions,
        normalized,
        row.content_hash,
        row.vector.hex(),
    )
