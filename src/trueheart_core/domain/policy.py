"""Lifecycle policy as plain functions: hashes, fingerprints, clarity, deadlines, trust
ceiling, idempotency comparison and audit rules. Pure: no I/O, no storage types."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from trueheart_core.domain.model import (
    EntityType,
    MemoryDraft,
    MemoryRecord,
    RawEventDraft,
    RawEventReceipt,
    Scope,
    TrustLevel,
)
from trueheart_core.domain.validation import canonical_json
from trueheart_core.errors import TrustEscalation, ValidationError

CLARITY_ROUNDING_SHIFT = 54
"""A fade ratio ``x/y`` with ``x = y - d`` rounds to exactly 1.0 iff ``d <= y >> 54``."""

EXACT_FLOAT_SPAN = 1 << 53
"""Integers below this convert to double exactly, so a fade ratio of microsecond spans
below it divides in double precision to exactly Python's correctly rounded result."""

AUDIT_REASONS: Mapping[str, str] = {
    "ingest": "event ingested",
    "materialize": "memory materialized",
    "expire": "raw content expired",
    "seal": "governance requested",
    "restore": "governance requested",
    "forget": "governance requested",
    "delete": "governance requested",
    "erase_subject": "subject erasure requested",
}
"""The fixed reason of every audit action (the caller's reason is never persisted)."""

AUDIT_ENTITY_TYPES: Mapping[str, frozenset[str]] = {
    "ingest": frozenset({EntityType.RAW_EVENT.value}),
    "expire": frozenset({EntityType.RAW_EVENT.value}),
    "materialize": frozenset({EntityType.MEMORY.value}),
    "seal": frozenset({EntityType.MEMORY.value}),
    "restore": frozenset({EntityType.MEMORY.value}),
    "forget": frozenset({EntityType.MEMORY.value}),
    "delete": frozenset({EntityType.MEMORY.value, EntityType.RAW_EVENT.value}),
    # One summary row per subject erasure, naming the scope's subject.
    "erase_subject": frozenset({EntityType.SUBJECT.value}),
}
"""Which entity types each audit action may name."""

GOVERNANCE_REASON = "governance requested"


def sha256_hex(text: str) -> str:
    """Lowercase hex SHA-256 of the UTF-8 bytes of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash(content: str) -> str:
    """The ``content_hash`` of a raw body."""
    return sha256_hex(content)


_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def is_sha256_hex(value: object) -> bool:
    """Whether ``value`` is exactly 64 lowercase hex characters."""
    return isinstance(value, str) and _SHA256_HEX.fullmatch(value) is not None


def fingerprint_text(scope: Scope, kind: str, source_event_ids: Iterable[str]) -> str:
    """The canonical JSON that the dependency fingerprint hashes."""
    return canonical_json(
        {
            "kind": kind,
            "scope": {
                "owner_id": scope.owner_id,
                "subject_id": scope.subject_id,
                "tenant_id": scope.tenant_id,
            },
            "source_event_ids": sorted(source_event_ids),
        }
    )


def dependency_fingerprint(scope: Scope, kind: str, source_event_ids: Iterable[str]) -> str:
    """SHA-256 of (scope, kind, sorted source IDs): independent of content, trust and time."""
    return sha256_hex(fingerprint_text(scope, kind, source_event_ids))


def raw_expires_at(draft: RawEventDraft) -> datetime:
    """When the raw body becomes eligible for expiry."""
    try:
        return draft.source.occurred_at + draft.retention.raw_ttl
    except OverflowError:
        raise ValidationError("raw_expires_at", "must be a representable datetime") from None


def check_trust_ceiling(memory_id: str, trust: TrustLevel, source_trusts: Iterable[int]) -> None:
    """A memory may not claim more trust than its least-trusted source."""
    if trust > min(source_trusts):
        raise TrustEscalation(memory_id)


def deadlines(
    created_at: datetime, clear_fors: Iterable[timedelta], recall_fors: Iterable[timedelta]
) -> tuple[datetime, datetime]:
    """``clear_until`` and ``recall_until``: creation plus the shortest windows of the sources.

    The two minima are taken independently and may come from different sources.
    """
    try:
        return created_at + min(clear_fors), created_at + min(recall_fors)
    except OverflowError:
        raise ValidationError("created_at", "retention deadline must be representable") from None


def clarity_us(as_of: int, clear_until: int, recall_until: int) -> float:
    """Clarity from integer microseconds: 1.0 through ``clear_until``, then a linear fade.

    Integer true division is correctly rounded, exactly like ``timedelta / timedelta``.
    """
    if as_of <= clear_until:
        return 1.0
    return (recall_until - as_of) / (recall_until - clear_until)


def fully_clear(clear_until: int, recall_until: int, as_of: int, rounding_shift: int) -> bool:
    """Whether clarity at ``as_of`` is exactly 1.0, from integer microseconds, without
    a division: ``clear_until + ((recall_until - clear_until) >> rounding_shift) >= as_of``.

    With ``rounding_shift = CLARITY_ROUNDING_SHIFT`` it holds exactly when
    :func:`clarity_us` returns 1.0 for a memory still recallable at ``as_of``: through
    ``clear_until``, and a few microseconds later for a fade so long that the float
    ratio rounds to 1.0. Recall evaluates it in SQL to walk an index
    (``adapters.sql.expressions.fully_clear``); the shift is a parameter so that the
    adapter evaluates the condition without deciding it."""
    return clear_until + ((recall_until - clear_until) >> rounding_shift) >= as_of


def clarity(as_of: datetime, clear_until: datetime, recall_until: datetime) -> float:
    """Clarity of a memory at ``as_of`` (the 0.1 definition)."""
    if as_of <= clear_until:
        return 1.0
    return (recall_until - as_of) / (recall_until - clear_until)


def receipt_matches(
    receipt: RawEventReceipt, draft: RawEventDraft, hash_: str, expires_at: datetime
) -> bool:
    """Idempotent replay check: every compared field equal, metadata canonically equal."""
    stored, given = receipt.source, draft.source
    return (
        receipt.scope == draft.scope
        and stored.source_id == given.source_id
        and stored.source_type == given.source_type
        and stored.occurred_at == given.occurred_at
        and stored.trust is given.trust
        and same_json(stored.metadata, given.metadata)
        and receipt.content_hash == hash_
        and receipt.raw_expires_at == expires_at
        and receipt.clear_for == draft.retention.clear_for
        and receipt.recall_for == draft.retention.recall_for
        and same_json(receipt.metadata, draft.metadata)
    )


def memory_matches(record: MemoryRecord, draft: MemoryDraft, fingerprint: str) -> bool:
    """Idempotent replay check for ``materialize_once`` (status is not compared)."""
    return (
        record.memory_id == draft.memory_id
        and record.scope == draft.scope
        and record.content == draft.content
        and record.source_event_ids == tuple(sorted(draft.source_event_ids))
        and record.dependency_fingerprint == fingerprint
        and record.kind == draft.kind
        and record.trust is draft.trust
        and record.created_at == draft.created_at
        and same_json(record.metadata, draft.metadata)
    )


def same_json(left: Mapping[str, Any], right: Mapping[str, Any]) -> bool:
    """Canonical comparison: ``True``, ``1`` and ``1.0`` are three different values."""
    return canonical_json(left) == canonical_json(right)


def audit_row_allowed(action: object, entity_type: object, reason: object) -> bool:
    """Whether an audit row follows the policy: known action, allowed type, fixed reason."""
    if not isinstance(action, str):
        return False
    allowed = AUDIT_ENTITY_TYPES.get(action)
    return allowed is not None and entity_type in allowed and reason == AUDIT_REASONS[action]
