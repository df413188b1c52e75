"""The TrueHeart lifecycle service: one public operation is one unit of work.

The service validates arguments, applies the lifecycle policy (``policy``), converts
between DTOs and stored rows (``records``), and orchestrates primitive reads and writes
on the repository port. It never sees SQL.
"""

from __future__ import annotations

import heapq
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import NoReturn

from trueheart_core import integrity, policy, records
from trueheart_core import validation as v
from trueheart_core.domain import (
    AuditRecord,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    GovernanceResult,
    IntegrityReport,
    MemoryDraft,
    MemoryRecord,
    MemoryStatus,
    RawEventDraft,
    RawEventReceipt,
    RecallItem,
    RecallQuery,
    Scope,
    TrustLevel,
)
from trueheart_core.errors import (
    EntityDeleted,
    EntityNotFound,
    IdempotencyConflict,
    InvalidTransition,
    RepositoryCorruption,
    ScopeMismatch,
    ValidationError,
)
from trueheart_core.ports import (
    EdgeRow,
    EventRow,
    MemoryRow,
    Repository,
    ScopeKey,
    TombstoneRow,
    UnitOfWork,
)
from trueheart_core.records import RowInvalid, scope_key

__all__ = ["TrueHeart"]


_EXPIRY_CHUNK = 500


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _new_audit_id() -> str:
    return uuid.uuid4().hex


def _corrupt(diagnostic: str) -> NoReturn:
    raise RepositoryCorruption(diagnostic) from None


class TrueHeart:
    """Governed long-term memory over a repository.

    ``clock`` supplies ingest time (called once per ``ingest_event`` call, replays
    included, and once per ``ingest_events`` batch); it must return aware datetimes.
    Closing the service (or leaving its ``with`` block) closes the repository.
    """

    def __init__(self, repository: Repository, *, clock: Callable[[], datetime] = _utc_now) -> None:
        if not callable(getattr(repository, "unit_of_work", None)) or not callable(
            getattr(repository, "close", None)
        ):
            raise ValidationError("repository", "must be a Repository")
        if not callable(clock):
            raise ValidationError("clock", "must be callable")
        self._repository = repository
        self._clock = clock

    # --- lifecycle of the service object ---------------------------------------------------

    def close(self) -> None:
        """Close the underlying repository (idempotent)."""
        self._repository.close()

    def __enter__(self) -> TrueHeart:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- ingest ----------------------------------------------------------------------------

    def _now(self) -> datetime:
        return v.utc("clock", self._clock())

    def ingest_event(self, draft: RawEventDraft) -> RawEventReceipt:
        """Record a source event: its body-free receipt, its body and one audit row.

        An identical replay returns the stored receipt (``content_available`` is False if
        the body has expired since); a different one raises ``IdempotencyConflict``. A
        deleted event ID raises ``EntityDeleted`` in that scope forever.
        """
        if not isinstance(draft, RawEventDraft):
            raise ValidationError("draft", "must be a RawEventDraft")
        now = self._now()
        prepared = _prepare_event(draft, now)
        with self._repository.unit_of_work("ingest", write=True) as uow:
            receipt = _ingest(uow, draft, prepared)
            uow.commit()
        return receipt

    def ingest_events(self, drafts: Sequence[RawEventDraft]) -> tuple[RawEventReceipt, ...]:
        """Ingest many events in one transaction, all or nothing, with the rules of
        :meth:`ingest_event`. The clock is read once for the batch. A repeated scope and
        event ID within the batch is a replay of its first occurrence."""
        if not isinstance(drafts, list | tuple):
            raise ValidationError("drafts", "must be a list or tuple of RawEventDraft")
        if not all(isinstance(draft, RawEventDraft) for draft in drafts):
            raise ValidationError("drafts", "must contain only RawEventDraft")
        if not drafts:
            return ()
        now = self._now()
        prepared = [_prepare_event(draft, now) for draft in drafts]
        with self._repository.unit_of_work("ingest", write=True) as uow:
            receipts = tuple(
                _ingest(uow, draft, ready) for draft, ready in zip(drafts, prepared, strict=True)
            )
            uow.commit()
        return receipts

    # --- materialize -----------------------------------------------------------------------

    def materialize_once(self, draft: MemoryDraft) -> MemoryRecord:
        """Store a host-derived memory with lineage to its source events, exactly once.

        Checks, in order: a tombstone of this memory ID; an identical replay (returned
        as stored); a tombstone of the same dependency fingerprint; every source in draft
        order; the trust ceiling; the deadlines.
        """
        if not isinstance(draft, MemoryDraft):
            raise ValidationError("draft", "must be a MemoryDraft")
        scope = draft.scope
        fingerprint = policy.dependency_fingerprint(scope, draft.kind, draft.source_event_ids)
        key = scope_key(scope)
        with self._repository.unit_of_work("materialize", write=True) as uow:
            tombstones = uow.get_tombstones(key, draft.memory_id)
            if _blocking_tombstones(tombstones, EntityType.MEMORY):
                raise EntityDeleted(draft.memory_id)
            existing = uow.get_memory(key, draft.memory_id)
            if existing is not None:
                stored = _replayed_memory(uow, existing, scope)
                if not policy.memory_matches(stored, draft, fingerprint):
                    raise IdempotencyConflict(draft.memory_id)
                uow.commit()
                return stored
            if _blocking_tombstones(
                uow.tombstones_for_fingerprint(key, fingerprint), EntityType.MEMORY
            ):
                raise EntityDeleted(draft.memory_id)
            found = uow.get_events(key, draft.source_event_ids)
            sources: list[RawEventReceipt] = []
            for event_id in draft.source_event_ids:
                row = found.get(event_id)
                if row is None:
                    _diagnose(uow, key, EntityType.RAW_EVENT, event_id)
                sources.append(_receipt(row, scope, "invalid raw event record"))
            policy.check_trust_ceiling(
                draft.memory_id, draft.trust, (s.source.trust for s in sources)
            )
            clear_until, recall_until = policy.deadlines(
                draft.created_at,
                (s.clear_for for s in sources),
                (s.recall_for for s in sources),
            )
            record = MemoryRecord(
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
            uow.insert_memory(records.memory_row(record), edges)
            _audit(uow, scope, "materialize", EntityType.MEMORY, draft.memory_id, draft.created_at)
            uow.commit()
        return record

    # --- recall ----------------------------------------------------------------------------

    def recall(self, query: RecallQuery) -> tuple[RecallItem, ...]:
        """Active, unexpired, already-created memories of the exact scope at ``as_of``:
        clarity descending, then ``created_at`` descending, then ``memory_id`` ascending,
        at most ``limit``. Every returned row is verified against its digest."""
        if not isinstance(query, RecallQuery):
            raise ValidationError("query", "must be a RecallQuery")
        scope, key = query.scope, scope_key(query.scope)
        as_of = records.to_us(query.as_of)
        shift = policy.CLARITY_ROUNDING_SHIFT
        with self._repository.unit_of_work("recall", write=False) as uow:
            rows = uow.recall_clear(key, as_of, query.kinds, query.limit, shift)
            if len(rows) < query.limit:
                rows += _best_fading(uow, key, as_of, query, query.limit - len(rows))
            edges = _edges_by_memory(uow.get_edges(key, [r.memory_id for r in rows]))
            memories = [
                _memory(row, edges[row.memory_id], scope, "invalid memory record") for row in rows
            ]
        return tuple(
            RecallItem(m, policy.clarity(query.as_of, m.clear_until, m.recall_until))
            for m in memories
        )

    # --- govern ----------------------------------------------------------------------------

    def govern(self, command: GovernanceCommand) -> GovernanceResult:
        """Seal, restore, forget or delete one entity, with tombstones and one audit row.

        Deleting a raw event deletes and tombstones every memory derived from it. When a
        forget or delete returns, the removed bodies are gone from the database files.
        """
        if not isinstance(command, GovernanceCommand):
            raise ValidationError("command", "must be a GovernanceCommand")
        if (
            command.entity_type is EntityType.RAW_EVENT
            and command.action is not GovernanceAction.DELETE
        ):
            raise ValidationError("action", "is not supported for raw events")
        erasing = command.action in (GovernanceAction.FORGET, GovernanceAction.DELETE)
        with self._repository.unit_of_work("govern", write=True, erasing=erasing) as uow:
            if command.entity_type is EntityType.MEMORY:
                affected = _govern_memory(uow, command)
            else:
                affected = _delete_event(uow, command)
            _audit(
                uow,
                command.scope,
                command.action.value,
                command.entity_type,
                command.entity_id,
                command.occurred_at,
            )
            uow.commit()
        return GovernanceResult(command, tuple(sorted(affected)))

    # --- expire ----------------------------------------------------------------------------

    def expire_raw_content(self, *, as_of: datetime) -> int:
        """Remove every raw body whose ``raw_expires_at`` is at or before ``as_of``, in
        every scope; returns how many were removed. Receipts, hashes, memories and lineage
        stay. When it returns, the removed bodies are gone from the database files."""
        when = v.utc("as_of", as_of)
        as_of_us = records.to_us(when)
        expired = 0
        with self._repository.unit_of_work("expire", write=True, erasing=True) as uow:
            # Chunks keep memory bounded however many bodies are due; one transaction.
            while rows := uow.expirable_events(as_of_us, _EXPIRY_CHUNK):
                for row in rows:
                    receipt = _receipt(row, None, "invalid raw event record")
                    if not receipt.content_available or receipt.raw_expires_at > when:
                        _corrupt("invalid raw event record")
                    uow.expire_event(records.with_event_status(row, records.EVENT_EXPIRED))
                    _audit(
                        uow, receipt.scope, "expire", EntityType.RAW_EVENT, receipt.event_id, when
                    )
                expired += len(rows)
            uow.commit()
        return expired

    # --- audit -----------------------------------------------------------------------------

    def audit(self, scope: Scope, *, limit: int = 100) -> tuple[AuditRecord, ...]:
        """The newest body-free lifecycle records of the scope: ``occurred_at`` (claimed
        time) descending, then write order descending; ``limit`` is 1 through 100."""
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        v.limit(limit)
        with self._repository.unit_of_work("audit", write=False) as uow:
            rows = uow.recent_audit(scope_key(scope), limit)
        result: list[AuditRecord] = []
        for row in rows:
            try:
                record = records.audit_from_row(row, scope)
            except RowInvalid:
                _corrupt("invalid audit record")
            if not policy.audit_row_allowed(row.action, row.entity_type, row.reason):
                _corrupt("invalid audit record")
            result.append(record)
        return tuple(result)

    # --- integrity -------------------------------------------------------------------------

    def verify_integrity(self, scope: Scope | None = None) -> IntegrityReport:
        """Check every stored row (of one scope, or of the whole store) without changing
        anything, and report body-free problems. Cost grows with the store."""
        if scope is not None and not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        with self._repository.unit_of_work("verify", write=False) as uow:
            return integrity.verify(uow, scope)


# --- helpers: one function per rule, shared by the operations above ----------------------


def _prepare_event(draft: RawEventDraft, now: datetime) -> RawEventReceipt:
    expires_at = policy.raw_expires_at(draft)
    return RawEventReceipt(
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


def _ingest(uow: UnitOfWork, draft: RawEventDraft, receipt: RawEventReceipt) -> RawEventReceipt:
    key = scope_key(draft.scope)
    if _blocking_tombstones(uow.get_tombstones(key, draft.event_id), EntityType.RAW_EVENT):
        raise EntityDeleted(draft.event_id)
    existing = uow.get_events(key, (draft.event_id,)).get(draft.event_id)
    if existing is not None:
        stored = _receipt(existing, draft.scope, "invalid raw event record")
        if not policy.receipt_matches(stored, draft, receipt.content_hash, receipt.raw_expires_at):
            raise IdempotencyConflict(draft.event_id)
        return stored
    _audit(uow, draft.scope, "ingest", EntityType.RAW_EVENT, draft.event_id, receipt.ingested_at)
    uow.insert_event(
        records.event_row(receipt), records.body_row(draft.scope, draft.event_id, draft.content)
    )
    return receipt


def _audit(
    uow: UnitOfWork,
    scope: Scope,
    action: str,
    entity_type: EntityType,
    entity_id: str,
    occurred_at: datetime,
) -> None:
    uow.insert_audit(
        records.audit_row(
            _new_audit_id(),
            scope,
            action,
            entity_type,
            entity_id,
            occurred_at,
            policy.AUDIT_REASONS[action],
        )
    )


def _receipt(row: EventRow, scope: Scope | None, diagnostic: str) -> RawEventReceipt:
    try:
        return records.receipt_from_row(row, scope)
    except RowInvalid:
        _corrupt(diagnostic)


def _memory(
    row: MemoryRow, edges: Sequence[EdgeRow], scope: Scope, diagnostic: str
) -> MemoryRecord:
    try:
        return records.memory_from_row(row, edges, scope)
    except RowInvalid:
        _corrupt(diagnostic)


def _edges_by_memory(edges: Sequence[EdgeRow]) -> defaultdict[str, list[EdgeRow]]:
    grouped: defaultdict[str, list[EdgeRow]] = defaultdict(list)
    for edge in edges:
        grouped[edge.memory_id].append(edge)
    return grouped


def _blocking_tombstones(tombstones: Sequence[TombstoneRow], entity_type: EntityType) -> bool:
    """Whether one of these exact-scope tombstones (each verified) is of this type."""
    blocking = False
    for row in tombstones:
        try:
            found = records.check_tombstone(row)
        except RowInvalid:
            _corrupt("invalid tombstone")
        blocking = blocking or found is entity_type
    return blocking


def _diagnose(uow: UnitOfWork, key: ScopeKey, entity_type: EntityType, entity_id: str) -> NoReturn:
    """The one missing-entity diagnosis: deleted here, known elsewhere, or unknown.

    Bounded look-ups only: the exact scope's tombstones, then one tombstone of the same
    type elsewhere, then one live row elsewhere. Every tombstone read is verified.
    """
    if _blocking_tombstones(uow.get_tombstones(key, entity_id), entity_type):
        raise EntityDeleted(entity_id)
    elsewhere = uow.tombstone_elsewhere(entity_id, entity_type.value, key)
    if elsewhere is not None:
        _blocking_tombstones((elsewhere,), entity_type)
        raise ScopeMismatch(entity_id)
    live_elsewhere = (
        uow.event_id_elsewhere(entity_id, key)
        if entity_type is EntityType.RAW_EVENT
        else uow.memory_id_elsewhere(entity_id, key)
    )
    if live_elsewhere:
        raise ScopeMismatch(entity_id)
    raise EntityNotFound(entity_id)


def _replayed_memory(uow: UnitOfWork, row: MemoryRow, scope: Scope) -> MemoryRecord:
    """A stored memory for replay comparison: its edges (snapshots included) must verify
    and each edge's source must still exist."""
    edges = uow.get_edges(row.scope, (row.memory_id,))
    record = _memory(row, edges, scope, "invalid memory record")  # edge digests included
    for edge in edges:
        try:
            records.edge_snapshots(edge)
        except RowInvalid:
            _corrupt("invalid memory record")
    present = uow.get_events(row.scope, record.source_event_ids)
    if len(present) != len(record.source_event_ids):
        _corrupt("invalid memory record")
    return record


def _best_fading(
    uow: UnitOfWork, key: ScopeKey, as_of: int, query: RecallQuery, wanted: int
) -> list[MemoryRow]:
    """The ``wanted`` best memories that are fading at ``as_of``, ranked exactly here
    among the candidates the repository pre-selects."""
    candidates = uow.recall_fading(
        key,
        as_of,
        query.kinds,
        policy.CLARITY_ROUNDING_SHIFT,
        wanted,
        policy.EXACT_FLOAT_SPAN,
    )
    ranked = []
    for c in candidates:
        values = (c.created_at, c.clear_until, c.recall_until)
        if not all(type(x) is int for x in values) or not isinstance(c.memory_id, str):
            _corrupt("invalid memory record")
        score = policy.clarity_us(as_of, c.clear_until, c.recall_until)
        ranked.append((-score, -c.created_at, c.memory_id))
    chosen = [memory_id for _, _, memory_id in heapq.nsmallest(wanted, ranked)]
    by_id = {row.memory_id: row for row in uow.get_memories(key, chosen)}
    if len(by_id) != len(chosen):
        _corrupt("invalid memory record")
    return [by_id[memory_id] for memory_id in chosen]


def _lineage_snapshots(
    scope: Scope, memory_id: str, kind: object, fingerprint: object, edges: Sequence[EdgeRow]
) -> dict[str, tuple[TrustLevel, timedelta, timedelta]]:
    """A memory's verified edges, by source ID, whose IDs reproduce its stored fingerprint."""
    if not edges or not isinstance(kind, str) or not policy.is_sha256_hex(fingerprint):
        _corrupt("invalid memory lineage")
    key = scope_key(scope)
    snapshots = {}
    for edge in edges:
        if edge.memory_id != memory_id or edge.scope != key:
            _corrupt("invalid memory lineage")
        try:
            snapshots[edge.event_id] = records.check_edge(edge)
        except RowInvalid:
            _corrupt("invalid memory lineage")
    if len(snapshots) != len(edges):
        _corrupt("invalid memory lineage")
    if policy.dependency_fingerprint(scope, kind, snapshots) != fingerprint:
        _corrupt("invalid memory lineage")
    return snapshots


def _check_lineage(
    uow: UnitOfWork,
    scope: Scope,
    memory_id: str,
    kind: object,
    fingerprint: object,
    edges: Sequence[EdgeRow],
) -> None:
    """Lineage check: valid edges whose sources exist with unchanged snapshots, and a
    stored fingerprint equal to the one recomputed from them."""
    snapshots = _lineage_snapshots(scope, memory_id, kind, fingerprint, edges)
    found = uow.get_events(scope_key(scope), list(snapshots))
    for event_id, snapshot in snapshots.items():
        row = found.get(event_id)
        if row is None:
            _corrupt("invalid memory lineage")
        receipt = _receipt(row, scope, "invalid memory lineage")
        if (receipt.source.trust, receipt.clear_for, receipt.recall_for) != snapshot:
            _corrupt("invalid memory lineage")


def _govern_memory(uow: UnitOfWork, command: GovernanceCommand) -> list[str]:
    scope, key, memory_id = command.scope, scope_key(command.scope), command.entity_id
    row = uow.get_memory(key, memory_id)
    if row is None:
        _diagnose(uow, key, EntityType.MEMORY, memory_id)
    edges = uow.get_edges(key, (memory_id,))
    try:
        status = MemoryStatus(row.status)
    except ValueError:
        _corrupt("invalid memory governance state")
    _check_lineage(uow, scope, memory_id, row.kind, row.dependency_fingerprint, edges)
    action = command.action
    if action in (GovernanceAction.SEAL, GovernanceAction.RESTORE):
        # A status change rewrites the digest, so the whole row must verify first.
        _memory(row, edges, scope, "invalid memory governance state")
        wanted_from = (
            MemoryStatus.ACTIVE if action is GovernanceAction.SEAL else MemoryStatus.SEALED
        )
        if status is not wanted_from:
            raise InvalidTransition(memory_id)
        new_status = MemoryStatus.SEALED if status is MemoryStatus.ACTIVE else MemoryStatus.ACTIVE
        uow.update_memory(records.with_memory_status(row, new_status, [e.event_id for e in edges]))
        return [memory_id]
    # Forget and delete remove the row even if its body no longer verifies: erasure must
    # not be blocked by the corruption of what is being erased.
    uow.delete_memory(key, memory_id)
    uow.insert_tombstone(
        records.tombstone_row(
            scope,
            EntityType.MEMORY,
            memory_id,
            str(row.dependency_fingerprint),
            command.occurred_at,
            policy.GOVERNANCE_REASON,
        )
    )
    return [memory_id]


def _delete_event(uow: UnitOfWork, command: GovernanceCommand) -> list[str]:
    scope, key, event_id = command.scope, scope_key(command.scope), command.entity_id
    row = uow.get_events(key, (event_id,)).get(event_id)
    if row is None:
        _diagnose(uow, key, EntityType.RAW_EVENT, event_id)
    _receipt(row, scope, "invalid raw deletion state")
    dependent_ids = sorted(set(uow.dependent_memory_ids(key, event_id)))
    dependents = {m.memory_id: m for m in uow.get_memories(key, dependent_ids)}
    if len(dependents) != len(dependent_ids):
        _corrupt("invalid raw deletion state")
    edges = _edges_by_memory(uow.get_edges(key, dependent_ids))
    for memory_id in dependent_ids:
        memory = dependents[memory_id]
        _lineage_snapshots(
            scope, memory_id, memory.kind, memory.dependency_fingerprint, edges[memory_id]
        )
    for memory_id in dependent_ids:
        uow.delete_memory(key, memory_id)
    uow.delete_event(key, event_id)
    uow.insert_tombstone(
        records.tombstone_row(
            scope,
            EntityType.RAW_EVENT,
            event_id,
            None,
            command.occurred_at,
            policy.GOVERNANCE_REASON,
        )
    )
    for memory_id in dependent_ids:
        uow.insert_tombstone(
            records.tombstone_row(
                scope,
                EntityType.MEMORY,
                memory_id,
                dependents[memory_id].dependency_fingerprint,
                command.occurred_at,
                policy.GOVERNANCE_REASON,
            )
        )
    return [event_id, *dependent_ids]
