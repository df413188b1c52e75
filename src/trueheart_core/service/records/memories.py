"""Memories and their lineage edges: rows, digests, status changes, and the records
rebuilt from verified rows."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import fields
from datetime import timedelta

from trueheart_core.domain.model import (
    MemoryRecord,
    MemoryStatus,
    RawEventReceipt,
    Scope,
    TrustLevel,
)
from trueheart_core.domain.validation import canonical_json
from trueheart_core.errors import ValidationError
from trueheart_core.ports import (
    EdgeRow,
    MemoryRow,
)
from trueheart_core.service.records.codecs import (
    _STATUSES,
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
