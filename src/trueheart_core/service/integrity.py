"""Whole-store verification: every stored row, cross-checked, never mutated, and every
derived index (search entries, terms and statistics; claim index keys) compared with
the rows it is derived from.

It streams rows in storage order and looks up related rows a chunk at a time, so memory
use stays bounded however large the store is. Findings are body-free.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import islice
from typing import TypeVar

from trueheart_core.domain import policy
from trueheart_core.domain.claims import CLAIM_KIND
from trueheart_core.domain.model import (
    EntityType,
    IntegrityProblem,
    IntegrityReport,
    MemoryStatus,
    Scope,
)
from trueheart_core.domain.search.tokenize import TOKENIZER_ID
from trueheart_core.errors import RepositoryCorruption, TrustEscalation
from trueheart_core.ports import (
    AuditRow,
    BodyRow,
    ClaimRow,
    EdgeRow,
    EventRow,
    ExtractionRow,
    MemoryRow,
    ScopeKey,
    SearchDocRow,
    TombstoneRow,
    UnitOfWork,
)
from trueheart_core.service import records
from trueheart_core.service import search as searching
from trueheart_core.service import semantic as projecting
from trueheart_core.service.records import RowInvalid

_CHUNK = 500
_T = TypeVar("_T")
INDEX_UNREADABLE = "index_unreadable"
"""The finding of a scope (or, in a whole-store check, the store) whose search index
holds a row that cannot be read: ``rebuild_search_index()`` writes it anew."""


def _chunks(rows: Iterator[_T]) -> Iterator[list[_T]]:
    while chunk := list(islice(rows, _CHUNK)):
        yield chunk


def _by_scope(rows: Iterable[_T], key: Callable[[_T], ScopeKey]) -> dict[ScopeKey, list[_T]]:
    grouped: dict[ScopeKey, list[_T]] = defaultdict(list)
    for row in rows:
        grouped[key(row)].append(row)
    return grouped


class _Findings:
    def __init__(self) -> None:
        self.problems: list[IntegrityProblem] = []
        self.checked = 0
        self._unreadable: set[ScopeKey | None] = set()

    def add(self, entity_type: str, entity_id: object, scope: object, code: str) -> None:
        try:
            valid_scope: Scope | None = records.scope_of(scope)  # type: ignore[arg-type]
        except (RowInvalid, TypeError, ValueError):
            valid_scope = None
        text_id = entity_id if isinstance(entity_id, str) else ""
        self.problems.append(IntegrityProblem(entity_type, text_id, valid_scope, code))

    def readable(self, key: ScopeKey | None, read: Callable[[], _T]) -> _T | None:
        """``read()``, or None when the search index refuses it as damaged: a row the
        index cannot be read through (a pending row whose postings or change damage
        changed, for instance) is reported once per scope (``index_unreadable``, which
        ``rebuild_search_index()`` repairs) instead of ending the check."""
        try:
            return read()
        except RepositoryCorruption:
            if key not in self._unreadable:
                self._unreadable.add(key)
                self.add("search_index", "", key, INDEX_UNREADABLE)
            return None


def verify(uow: UnitOfWork, scope: Scope | None) -> IntegrityReport:
    """Check every row of the store (or of one scope) and report what is wrong.

    A whole-store check also runs the storage engine's own consistency check, which
    proves that the indexes that reads select rows through agree with their tables.
    """
    key = records.scope_key(scope) if scope is not None else None
    found = _Findings()
    _check_events(uow.events.iter(key), found)
    _check_bodies(uow, uow.events.iter_bodies(key), found)
    index_state = uow.search.tokenizer()
    index_current = index_state == TOKENIZER_ID
    _check_memories(uow, uow.memories.iter(key), found, index_current)
    _check_edges(uow, uow.memories.iter_edges(key), found)
    _check_tombstones(uow, uow.tombstones.iter(key), found)
    _check_audit(uow, uow.audit.iter(key), found)
    _check_audit_ids(uow, key, found)
    _check_claims(uow, uow.claims.iter(key), found)
    _check_extractions(uow, uow.claims.iter_extractions(key), found)
    found.checked += projecting.check_vectors(uow, key, found.add)
    _check_claim_keys(uow, key, found)
    if index_current:
        _check_search_index(uow, key, found)
    elif index_state != "":
        # An empty identity is an index not built yet; it is built on first use.
        found.add("search_index", "", None, "index_built_by_other_rules")
    if scope is None and not uow.operations.storage_is_consistent():
        found.add("storage", "", None, "storage_check_failed")
    return IntegrityReport(tuple(found.problems), found.checked)


def _check_events(rows: Iterator[EventRow], found: _Findings) -> None:
    for row in rows:
        found.checked += 1
        try:
            records.receipt_from_row(row)
        except RowInvalid as error:
            found.add(EntityType.RAW_EVENT.value, row.event_id, row.scope, error.code)


def _check_bodies(uow: UnitOfWork, rows: Iterator[BodyRow], found: _Findings) -> None:
    for chunk in _chunks(rows):
        for key, bodies in _by_scope(chunk, lambda b: b.scope).items():
            receipts = uow.events.get(key, [b.event_id for b in bodies])
            for body in bodies:
                found.checked += 1
                receipt = receipts.get(body.event_id)
                try:
                    if receipt is None:
                        raise RowInvalid("body_without_receipt")
                    records.check_body(body, str(receipt.content_hash))
                except RowInvalid as error:
                    found.add("raw_body", body.event_id, body.scope, error.code)


def _check_memories(
    uow: UnitOfWork, rows: Iterator[MemoryRow], found: _Findings, index_current: bool
) -> None:
    for chunk in _chunks(rows):
        for key, memories in _by_scope(chunk, lambda m: m.scope).items():
            ids = [m.memory_id for m in memories]
            edges: dict[str, list[EdgeRow]] = defaultdict(list)
            for edge in uow.memories.edges(key, ids):
                edges[edge.memory_id].append(edge)
            sources = uow.events.get(key, sorted({e.event_id for es in edges.values() for e in es}))
            docs = None
            if index_current:
                docs = found.readable(key, partial(_entries_of, uow, key, ids))
            for memory in memories:
                found.checked += 1
                try:
                    check_memory(memory, edges[memory.memory_id], sources)
                except RowInvalid as error:
                    found.add(EntityType.MEMORY.value, memory.memory_id, memory.scope, error.code)
                    continue
                if docs is not None:
                    _check_entry(memory, docs.get(memory.memory_id), found)


def _entries_of(uow: UnitOfWork, key: ScopeKey, ids: list[str]) -> dict[str | None, SearchDocRow]:
    """The search entries of these memories of the scope, by memory ID."""
    return {d.memory_id: d for d in uow.search.docs_for(key, ids)}


def _check_entry(memory: MemoryRow, doc: SearchDocRow | None, found: _Findings) -> None:
    """A verified memory's search entry: present exactly when it is active, and equal to
    the entry its row yields."""
    active = memory.status == MemoryStatus.ACTIVE.value
    code = None
    if active and doc is None:
        code = "memory_not_indexed"
    elif not active and doc is not None:
        code = "inactive_memory_indexed"
    elif doc is not None and doc != searching.doc_row(memory):
        code = "index_entry_mismatch"
    if code is not None:
        found.add("search_index", memory.memory_id, memory.scope, code)


def _check_search_index(uow: UnitOfWork, key: ScopeKey | None, found: _Findings) -> None:
    """Index rows that no memory accounts for, and aggregates that disagree with rows."""
    found.readable(key, lambda: _check_entries_and_terms(uow, key, found))
    found.readable(key, lambda: _check_statistics(uow, key, found))


def _check_entries_and_terms(uow: UnitOfWork, key: ScopeKey | None, found: _Findings) -> None:
    for doc in uow.search.iter_docs(key):
        found.checked += 1
        if doc.memory_id is None:
            found.add("search_index", "", doc.scope, "index_entry_without_memory")
    for term in uow.search.iter_terms(key):
        # A term row that no posting holds is stale: a sound index has deleted it.
        if term.df != term.postings or term.df < 1:
            found.add("search_index", "", term.scope, "term_count_mismatch")
        if term.duplicates:
            found.add("search_index", "", term.scope, "duplicate_term")


def _check_statistics(uow: UnitOfWork, key: ScopeKey | None, found: _Findings) -> None:
    for stats in uow.search.iter_stats(key):
        if (stats.docs, stats.length) != (stats.actual_docs, stats.actual_length):
            found.add("search_index", "", stats.scope, "statistics_mismatch")
    if uow.search.orphan_postings(key):
        found.add("search_index", "", key, "posting_without_entry")


def check_memory(memory: MemoryRow, edges: Sequence[EdgeRow], sources: dict[str, EventRow]) -> None:
    """Verify a memory row with its edges against its source receipts (raising
    :class:`RowInvalid`): digests, fingerprint, snapshots, trust ceiling, deadlines."""
    record = records.memory_from_row(memory, edges)
    snapshots = [records.check_edge(e) for e in edges]
    recomputed = policy.dependency_fingerprint(record.scope, record.kind, record.source_event_ids)
    if recomputed != record.dependency_fingerprint:
        raise RowInvalid("fingerprint_mismatch")
    for edge, snapshot in zip(edges, snapshots, strict=True):
        source = sources.get(edge.event_id)
        if source is None:
            raise RowInvalid("missing_source")
        try:
            receipt = records.receipt_from_row(source)
        except RowInvalid:
            raise RowInvalid("invalid_source") from None
        if (receipt.source.trust, receipt.clear_for, receipt.recall_for) != snapshot:
            raise RowInvalid("snapshot_mismatch")
    try:
        policy.check_trust_ceiling(record.memory_id, record.trust, (s[0] for s in snapshots))
    except TrustEscalation:
        raise RowInvalid("trust_escalation") from None
    expected = policy.deadlines(
        record.created_at, (s[1] for s in snapshots), (s[2] for s in snapshots)
    )
    if expected != (record.clear_until, record.recall_until):
        raise RowInvalid("deadline_mismatch")


def _check_edges(uow: UnitOfWork, rows: Iterator[EdgeRow], found: _Findings) -> None:
    for chunk in _chunks(rows):
        for key, edges in _by_scope(chunk, lambda e: e.scope).items():
            memories = {
                m.memory_id for m in uow.memories.get_many(key, [e.memory_id for e in edges])
            }
            for edge in edges:
                found.checked += 1
                try:
                    records.check_edge(edge)
                    if edge.memory_id not in memories:
                        raise RowInvalid("dangling_edge")
                except RowInvalid as error:
                    found.add("lineage", edge.memory_id, edge.scope, error.code)


def _check_tombstones(uow: UnitOfWork, rows: Iterator[TombstoneRow], found: _Findings) -> None:
    for row in rows:
        found.checked += 1
        try:
            entity_type = records.check_tombstone(row)
            if entity_type is EntityType.RAW_EVENT:
                live = bool(uow.events.get(row.scope, (row.entity_id,)))
            else:
                live = uow.memories.get(row.scope, row.entity_id) is not None
            if live:
                raise RowInvalid("tombstone_has_live_row")
        except RowInvalid as error:
            found.add("tombstone", row.entity_id, row.scope, error.code)


_TOMBSTONED = frozenset({"forget", "delete"})
"""Audit actions whose entity a tombstone must still block: tombstones are never
removed, so one missing lets a forgotten or deleted ID come back."""


def _check_audit(uow: UnitOfWork, rows: Iterator[AuditRow], found: _Findings) -> None:
    for row in rows:
        found.checked += 1
        try:
            records.audit_from_row(row)
            if not policy.audit_row_allowed(row.action, row.entity_type, row.reason):
                raise RowInvalid("audit_policy_violation")
        except RowInvalid as error:
            found.add("audit", row.audit_id, row.scope, error.code)
            continue
        if row.action in _TOMBSTONED and not any(
            t.entity_type == row.entity_type for t in uow.tombstones.get(row.scope, row.entity_id)
        ):
            found.add(row.entity_type, row.entity_id, row.scope, "tombstone_missing")


def _check_audit_ids(uow: UnitOfWork, key: ScopeKey | None, found: _Findings) -> None:
    """Every audit record has an ID of its own (a random one, ``uuid4().hex``): an ID
    that two rows hold is a record copied, or one forged over another. Found by one
    grouped read (the audit log has no index by ID), reported once per ID."""
    for scope, audit_id in uow.audit.repeated_ids(key):
        found.add("audit", audit_id, scope, "duplicate_audit_id")


def _check_claims(uow: UnitOfWork, rows: Iterator[ClaimRow], found: _Findings) -> None:
    """Each claim row verifies, and its memory exists, is of the claim kind and holds the
    claim's canonical text (the memory itself is checked with the memories); a claim
    that supersedes another names a claim of its scope, or one removed since (whose
    memory tombstone is there): the only targets a write accepts and leaves."""
    for chunk in _chunks(rows):
        for key, claims in _by_scope(chunk, lambda c: c.scope).items():
            ids = [c.claim_id for c in claims]
            memories = {m.memory_id: m for m in uow.memories.get_many(key, ids)}
            edges: dict[str, list[EdgeRow]] = defaultdict(list)
            for edge in uow.memories.edges(key, ids):
                edges[edge.memory_id].append(edge)
            targets = sorted({c.supersedes for c in claims if type(c.supersedes) is str})
            held = {row.claim_id for row in uow.claims.get(key, targets)} if targets else set()
            for claim in claims:
                found.checked += 1
                memory_row = memories.get(claim.claim_id)
                try:
                    if memory_row is None or memory_row.kind != CLAIM_KIND:
                        raise RowInvalid("claim_without_memory")
                    try:
                        memory = records.memory_from_row(memory_row, edges[claim.claim_id])
                    except RowInvalid:
                        continue  # reported with the memories
                    record = records.claim_from_row(claim, memory)
                    target = record.supersedes
                    if target is not None and target not in held and not _removed(uow, key, target):
                        raise RowInvalid("supersedes_unknown")
                except RowInvalid as error:
                    found.add("claim", claim.claim_id, claim.scope, error.code)


def _removed(uow: UnitOfWork, key: ScopeKey, memory_id: str) -> bool:
    """Whether the scope holds a memory tombstone of this ID."""
    return any(
        row.entity_type == EntityType.MEMORY.value for row in uow.tombstones.get(key, memory_id)
    )


def _check_extractions(uow: UnitOfWork, rows: Iterator[ExtractionRow], found: _Findings) -> None:
    """Each extraction record verifies and belongs to an existing event."""
    for row in rows:
        found.checked += 1
        try:
            records.extraction_from_row(row)
            if not uow.events.get(row.scope, (row.event_id,)):
                raise RowInvalid("extraction_without_event")
        except RowInvalid as error:
            found.add("extraction", row.event_id, row.scope, error.code)


def _check_claim_keys(uow: UnitOfWork, key: ScopeKey | None, found: _Findings) -> None:
    """The claim index is derived from the claim rows: its subject and predicate keys
    must be those of the rows' texts, or a claims question by subject misses the row."""
    for scope, claim_id in uow.claims.stale_keys(key):
        found.add("claim_index", claim_id, scope, "claim_key_mismatch")
