"""Writes shared by the lifecycle operations: ingesting an event, materialising a
memory, and the audit row every change carries.

Service-layer functions over one unit of work; the caller opens it and commits.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Mapping
from datetime import datetime

from trueheart_core.domain import policy
from trueheart_core.domain.model import (
    EntityType,
    MemoryDraft,
    MemoryRecord,
    MemoryStatus,
    RawEventDraft,
    RawEventReceipt,
    Scope,
    assembled,
)
from trueheart_core.errors import EntityDeleted, IdempotencyConflict
from trueheart_core.ports import EventRow, MemoryRow, UnitOfWork
from trueheart_core.service import loading, records
from trueheart_core.service import search as searching
from trueheart_core.service.records import RowInvalid, scope_key

_IDS_PER_DRAW = 64
_AUDIT_IDS: deque[str] = deque()
"""Audit IDs drawn ahead, taken one by one (``popleft`` is atomic between threads)."""
os.register_at_fork(after_in_child=_AUDIT_IDS.clear)  # a child draws IDs of its own


def new_audit_id() -> str:
    """A random version-4 UUID as 32 lowercase hex digits (``uuid.uuid4().hex``), made
    from 16 random bytes without building a ``UUID`` object. The bytes of
    :data:`_IDS_PER_DRAW` IDs are read from the system's random source at once: one
    read per write would cost a system call each."""
    try:
        return _AUDIT_IDS.popleft()
    except IndexError:
        pass
    raw = bytearray(os.urandom(16 * _IDS_PER_DRAW))
    ids = []
    for start in range(0, len(raw), 16):
        raw[start + 6] = (raw[start + 6] & 0x0F) | 0x40  # version 4
        raw[start + 8] = (raw[start + 8] & 0x3F) | 0x80  # RFC 4122 variant
        ids.append(raw[start : start + 16].hex())
    _AUDIT_IDS.extend(ids[1:])
    return ids[0]


def prepare_event(draft: RawEventDraft, now: datetime) -> RawEventReceipt:
    """The receipt of a new event ingested at ``now`` (a time the clock's check passed).
    Every value is the validated draft's, ``now`` or computed from them by the rules,
    so the receipt is assembled without checking them again."""
    expires_at = policy.raw_expires_at(draft)
    return assembled(
        RawEventReceipt,
        draft.event_id,
        draft.scope,
        draft.source,
        policy.content_hash(draft.content),
        now,
        expires_at,
        draft.retention.clear_for,
        draft.retention.recall_for,
        True,
        draft.metadata,
    )


def ingest(
    uow: UnitOfWork, draft: RawEventDraft, receipt: RawEventReceipt, *, alone: bool = False
) -> RawEventReceipt:
    """Store one event (see ``TrueHeart.ingest_event``). ``alone``: this is the unit's
    only change, and the caller commits it as soon as this returns."""
    body = records.body_row(draft.scope, draft.event_id, draft.content)
    audit_row = records.audit_row(
        new_audit_id(),
        draft.scope,
        "ingest",
        EntityType.RAW_EVENT,
        draft.event_id,
        receipt.ingested_at,
        policy.AUDIT_REASONS["ingest"],
    )
    # A new ID (no receipt and no tombstone of any type in the scope) is stored at once;
    # anything else is looked at below: a replay, or a tombstone that may block it.
    row = records.event_row(receipt)
    if uow.events.insert_if_new(row, body, audit_row, committing=alone):
        return receipt
    key = scope_key(draft.scope)
    if loading.blocking_tombstones(uow.tombstones.get(key, draft.event_id), EntityType.RAW_EVENT):
        raise EntityDeleted(draft.event_id)
    existing = uow.events.get(key, (draft.event_id,)).get(draft.event_id)
    if existing is not None:
        stored = loading.receipt(existing, draft.scope, "invalid raw event record")
        if not policy.receipt_matches(stored, draft, receipt.content_hash, receipt.raw_expires_at):
            raise IdempotencyConflict(draft.event_id)
        return stored
    uow.audit.insert(audit_row)
    uow.events.insert(row, body)
    return receipt


def audit(
    uow: UnitOfWork,
    scope: Scope,
    action: str,
    entity_type: EntityType,
    entity_id: str,
    occurred_at: datetime,
) -> None:
    uow.audit.insert(
        records.audit_row(
            new_audit_id(),
            scope,
            action,
            entity_type,
            entity_id,
            occurred_at,
            policy.AUDIT_REASONS[action],
        )
    )


def replayed_memory(
    uow: UnitOfWork, row: MemoryRow, scope: Scope, read: Mapping[str, EventRow]
) -> MemoryRecord:
    """A stored memory for replay comparison: its edges (snapshots included) must verify
    and each edge's source must still exist. ``read`` holds receipts of this scope the
    caller has already read in this unit (a replay names the same sources): only the
    others are read."""
    edges = uow.memories.edges(row.scope, (row.memory_id,))
    record = loading.memory(row, edges, scope, "invalid memory record")  # edge digests included
    for edge in edges:
        try:
            records.edge_snapshots(edge)
        except RowInvalid:
            loading.corrupt("invalid memory record")
    unread = [event_id for event_id in record.source_event_ids if event_id not in read]
    present = len(record.source_event_ids) - len(unread)
    if unread:
        present += len(uow.events.get(row.scope, unread))
    if present != len(record.source_event_ids):
        loading.corrupt("invalid memory record")
    return record


def materialize(uow: UnitOfWork, draft: MemoryDraft) -> MemoryRecord:
    """Store a host-derived memory with lineage, exactly once (see
    ``TrueHeart.materialize_once`` for the order of checks); an identical replay returns
    the stored record."""
    scope = draft.scope
    fingerprint = policy.dependency_fingerprint(scope, draft.kind, draft.source_event_ids)
    key = scope_key(scope)
    # Everything the checks below read, read at once (on a server, in one round trip).
    by_id, by_fingerprint, existing, found = uow.memories.before_insert(
        key, draft.memory_id, fingerprint, draft.source_event_ids
    )
    if loading.blocking_tombstones(by_id, EntityType.MEMORY):
        raise EntityDeleted(draft.memory_id)
    if existing is not None:
        stored = replayed_memory(uow, existing, scope, found)
        if not policy.memory_matches(stored, draft, fingerprint):
            raise IdempotencyConflict(draft.memory_id)
        return stored
    if loading.blocking_tombstones(by_fingerprint, EntityType.MEMORY):
        raise EntityDeleted(draft.memory_id)
    sources: list[RawEventReceipt] = []
    for event_id in draft.source_event_ids:
        row = found.get(event_id)
        if row is None:
            loading.diagnose(uow, key, EntityType.RAW_EVENT, event_id)
        sources.append(loading.source_receipt(uow, row, scope, "invalid raw event record"))
    policy.check_trust_ceiling(draft.memory_id, draft.trust, (s.source.trust for s in sources))
    clear_until, recall_until = policy.deadlines(
        draft.created_at,
        (s.clear_for for s in sources),
        (s.recall_for for s in sources),
    )
    # Every value comes from the validated draft, or from the checked sources by the
    # rules above: the record is not checked again.
    record = assembled(
        MemoryRecord,
        draft.memory_id,
        scope,
        draft.content,
        tuple(sorted(draft.source_event_ids)),
        fingerprint,
        draft.kind,
        draft.trust,
        draft.created_at,
        clear_until,
        recall_until,
        MemoryStatus.ACTIVE,
        draft.metadata,
    )
    edges = [
        records.edge_row(scope, draft.memory_id, s)
        for s in sorted(sources, key=lambda s: s.event_id)
    ]
    searching.ensure_index(uow)
    written = records.memory_row(record)
    uow.memories.insert(written, edges)
    uow.search.index(searching.doc_row(written))
    audit(uow, scope, "materialize", EntityType.MEMORY, draft.memory_id, draft.created_at)
    return record
