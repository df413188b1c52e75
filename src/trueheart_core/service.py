"""The TrueHeart lifecycle service: one public operation is one unit of work.

The service validates arguments, applies the lifecycle policy (``policy``), converts
between DTOs and stored rows (``records``), and orchestrates primitive reads and writes
on the repository port. It never sees SQL.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from trueheart_core import governance, integrity, loading, policy, reading, records, searching
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
)
from trueheart_core.errors import (
    EntityDeleted,
    IdempotencyConflict,
    RepositoryCorruption,
    ValidationError,
)
from trueheart_core.ports import (
    MemoryRow,
    Repository,
    ScopeKey,
    UnitOfWork,
)
from trueheart_core.records import RowInvalid, scope_key
from trueheart_core.retrieval.capsule import TokenEstimator, Utf8BytesEstimator
from trueheart_core.retrieval.model import MemoryCapsule, MemoryPage, SearchQuery, status_filter

__all__ = ["TrueHeart"]


_EXPIRY_CHUNK = 500


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _new_audit_id() -> str:
    return uuid.uuid4().hex


class TrueHeart:
    """Governed long-term memory over a repository.

    ``clock`` supplies ingest time (called once per ``ingest_event`` call, replays
    included, and once per ``ingest_events`` batch); it must return aware datetimes.
    ``token_estimator`` prices memories in search capsules (default:
    :class:`Utf8BytesEstimator`, ``ceil(UTF-8 bytes / 3)``).
    Closing the service (or leaving its ``with`` block) closes the repository.
    """

    def __init__(
        self,
        repository: Repository,
        *,
        clock: Callable[[], datetime] = _utc_now,
        token_estimator: TokenEstimator | None = None,
    ) -> None:
        if not callable(getattr(repository, "unit_of_work", None)) or not callable(
            getattr(repository, "close", None)
        ):
            raise ValidationError("repository", "must be a Repository")
        if not callable(clock):
            raise ValidationError("clock", "must be callable")
        estimator = Utf8BytesEstimator() if token_estimator is None else token_estimator
        if (
            isinstance(estimator, type)
            or not isinstance(estimator, TokenEstimator)
            or not callable(estimator.estimate)
            or not isinstance(estimator.name, str)
        ):
            raise ValidationError("token_estimator", "must be a TokenEstimator")
        v.text("token_estimator", estimator.name)
        self._repository = repository
        self._clock = clock
        self._estimator = estimator

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
            if loading.blocking_tombstones(tombstones, EntityType.MEMORY):
                raise EntityDeleted(draft.memory_id)
            existing = uow.get_memory(key, draft.memory_id)
            if existing is not None:
                stored = _replayed_memory(uow, existing, scope)
                if not policy.memory_matches(stored, draft, fingerprint):
                    raise IdempotencyConflict(draft.memory_id)
                uow.commit()
                return stored
            if loading.blocking_tombstones(
                uow.tombstones_for_fingerprint(key, fingerprint), EntityType.MEMORY
            ):
                raise EntityDeleted(draft.memory_id)
            found = uow.get_events(key, draft.source_event_ids)
            sources: list[RawEventReceipt] = []
            for event_id in draft.source_event_ids:
                row = found.get(event_id)
                if row is None:
                    loading.diagnose(uow, key, EntityType.RAW_EVENT, event_id)
                sources.append(loading.receipt(row, scope, "invalid raw event record"))
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
            searching.ensure_index(uow)
            uow.insert_memory(records.memory_row(record), edges)
            uow.index_memory(searching.doc_row(record))
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
            edges = loading.edges_by_memory(uow.get_edges(key, [r.memory_id for r in rows]))
            memories = [
                loading.memory(row, edges[row.memory_id], scope, "invalid memory record")
                for row in rows
            ]
        return tuple(
            RecallItem(m, policy.clarity(query.as_of, m.clear_until, m.recall_until))
            for m in memories
        )

    # --- search and exact reads ---------------------------------------------------------

    def search(self, query: SearchQuery) -> MemoryCapsule:
        """The memories of the exact scope most relevant to ``query.text`` at
        ``query.as_of``, packed whole into ``query.budget_tokens``.

        Candidates are active memories with ``created_at <= as_of < recall_until`` (and
        the query's kinds and minimum trust) that share a term with the query. They are
        ranked by BM25 score, then clarity, then ``created_at`` (newest first), then
        ``memory_id``; the best ``2 * limit`` are considered and packed in that order,
        each one whole or not at all, at most ``limit`` of them. The capsule's trace
        says, body-free, why each considered candidate is in or out.

        An index built by other tokenisation rules (or by a version without search) is
        rebuilt first, in a writing transaction of its own.
        """
        if not isinstance(query, SearchQuery):
            raise ValidationError("query", "must be a SearchQuery")
        for _ in range(2):
            with self._repository.unit_of_work("search", write=False) as uow:
                if searching.index_is_current(uow):
                    return searching.search(uow, query, self._estimator)
            with self._repository.unit_of_work("index", write=True) as uow:
                searching.ensure_index(uow)
                uow.commit()
        raise RepositoryCorruption("invalid search index")

    def rebuild_search_index(self) -> int:
        """Rebuild the whole search index from the memory rows, in one transaction, and
        return how many memories it holds. Active memories whose rows do not verify are
        left out (``verify_integrity`` reports them). When it returns, entries that were
        removed are gone from the database files."""
        with self._repository.unit_of_work("index", write=True, erasing=True) as uow:
            indexed = searching.rebuild(uow)
            uow.commit()
        return indexed

    def get_memory(self, scope: Scope, memory_id: str) -> MemoryRecord:
        """The memory with this ID in the exact scope, active or sealed.

        Raises ``EntityDeleted`` if it was forgotten or deleted here, ``ScopeMismatch``
        if the ID is known only in another scope, ``EntityNotFound`` otherwise.
        """
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        v.text("memory_id", memory_id)
        with self._repository.unit_of_work("read", write=False) as uow:
            return reading.get_memory(uow, scope, memory_id)

    def get_receipt(self, scope: Scope, event_id: str) -> RawEventReceipt:
        """The body-free receipt of the event with this ID in the exact scope, with the
        same diagnosis as :meth:`get_memory` when it is missing."""
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        v.text("event_id", event_id)
        with self._repository.unit_of_work("read", write=False) as uow:
            return reading.get_receipt(uow, scope, event_id)

    def list_memories(
        self,
        scope: Scope,
        *,
        status: MemoryStatus | None = None,
        kinds: tuple[str, ...] = (),
        limit: int = 100,
        cursor: str | None = None,
    ) -> MemoryPage:
        """Every memory held in the exact scope, page by page, in ``memory_id`` order.

        ``status`` selects one status (``None``: active and sealed), ``kinds`` some kinds
        (empty: all). Pass a page's ``next_cursor`` to get the next page; it is ``None``
        on the last one. A cursor only works for the listing that made it. Memories
        added while paging appear on a later page if their ID sorts after the cursor.
        """
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        statuses = status_filter(status)
        v.text_tuple("kinds", kinds)
        v.limit(limit)
        if cursor is not None and not isinstance(cursor, str):
            raise ValidationError("cursor", "must be a cursor returned by the same listing")
        with self._repository.unit_of_work("read", write=False) as uow:
            return reading.list_memories(uow, scope, statuses, kinds, limit, cursor)

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
                affected = governance.govern_memory(uow, command)
            else:
                affected = governance.delete_event(uow, command)
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
                    receipt = loading.receipt(row, None, "invalid raw event record")
                    if not receipt.content_available or receipt.raw_expires_at > when:
                        loading.corrupt("invalid raw event record")
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
                loading.corrupt("invalid audit record")
            if not policy.audit_row_allowed(row.action, row.entity_type, row.reason):
                loading.corrupt("invalid audit record")
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
    if loading.blocking_tombstones(uow.get_tombstones(key, draft.event_id), EntityType.RAW_EVENT):
        raise EntityDeleted(draft.event_id)
    existing = uow.get_events(key, (draft.event_id,)).get(draft.event_id)
    if existing is not None:
        stored = loading.receipt(existing, draft.scope, "invalid raw event record")
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


def _replayed_memory(uow: UnitOfWork, row: MemoryRow, scope: Scope) -> MemoryRecord:
    """A stored memory for replay comparison: its edges (snapshots included) must verify
    and each edge's source must still exist."""
    edges = uow.get_edges(row.scope, (row.memory_id,))
    record = loading.memory(row, edges, scope, "invalid memory record")  # edge digests included
    for edge in edges:
        try:
            records.edge_snapshots(edge)
        except RowInvalid:
            loading.corrupt("invalid memory record")
    present = uow.get_events(row.scope, record.source_event_ids)
    if len(present) != len(record.source_event_ids):
        loading.corrupt("invalid memory record")
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
            loading.corrupt("invalid memory record")
        score = policy.clarity_us(as_of, c.clear_until, c.recall_until)
        ranked.append((-score, -c.created_at, c.memory_id))
    chosen = [memory_id for _, _, memory_id in heapq.nsmallest(wanted, ranked)]
    by_id = {row.memory_id: row for row in uow.get_memories(key, chosen)}
    if len(by_id) != len(chosen):
        loading.corrupt("invalid memory record")
    return [by_id[memory_id] for memory_id in chosen]
