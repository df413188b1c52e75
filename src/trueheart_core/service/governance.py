"""Governance of memories and raw events: seal, restore, forget, delete.

Service-layer functions over one unit of work: each checks the stored state (lineage,
status, scope) and applies the change with its tombstones; the caller writes the audit
row and commits. Forget and delete remove search entries with the memory, in the same
transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from trueheart_core.domain import policy
from trueheart_core.domain.model import (
    ArtifactClass,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    GovernanceResult,
    MemoryStatus,
    Scope,
    TrustLevel,
    assembled,
)
from trueheart_core.errors import InvalidTransition
from trueheart_core.ports import EdgeRow, EventRow, ScopeKey, UnitOfWork
from trueheart_core.service import loading, records
from trueheart_core.service import search as searching
from trueheart_core.service.records import RowInvalid, scope_key

Removed = set[ArtifactClass]
_ARTIFACT_ORDER = tuple(ArtifactClass)
"""The classes in their declared order (iterating the enum class runs Python code)."""


def _lineage_snapshots(
    scope: Scope, memory_id: str, kind: object, fingerprint: object, edges: Sequence[EdgeRow]
) -> dict[str, tuple[TrustLevel, timedelta, timedelta]]:
    """A memory's verified edges, by source ID, whose IDs reproduce its stored fingerprint."""
    if not edges or not isinstance(kind, str) or not policy.is_sha256_hex(fingerprint):
        loading.corrupt("invalid memory lineage")
    key = scope_key(scope)
    snapshots = {}
    for edge in edges:
        if edge.memory_id != memory_id or edge.scope != key:
            loading.corrupt("invalid memory lineage")
        try:
            snapshots[edge.event_id] = records.check_edge(edge)
        except RowInvalid:
            loading.corrupt("invalid memory lineage")
    if len(snapshots) != len(edges):
        loading.corrupt("invalid memory lineage")
    if policy.dependency_fingerprint(scope, kind, snapshots) != fingerprint:
        loading.corrupt("invalid memory lineage")
    return snapshots


def _check_lineage(
    uow: UnitOfWork,
    scope: Scope,
    memory_id: str,
    kind: object,
    fingerprint: object,
    edges: Sequence[EdgeRow],
    found: dict[str, EventRow],
) -> None:
    """Lineage check: valid edges whose sources (``found``, the receipts read with the
    edges) exist with unchanged snapshots, and a stored fingerprint equal to the one
    recomputed from them."""
    snapshots = _lineage_snapshots(scope, memory_id, kind, fingerprint, edges)
    for event_id, snapshot in snapshots.items():
        row = found.get(event_id)
        if row is None:
            loading.corrupt("invalid memory lineage")
        receipt = loading.source_receipt(uow, row, scope, "invalid memory lineage")
        if (receipt.source.trust, receipt.clear_for, receipt.recall_for) != snapshot:
            loading.corrupt("invalid memory lineage")


_REMOVED_BY_MEMORY_DELETE = (
    ArtifactClass.MEMORY,
    ArtifactClass.LINEAGE_EDGE,
    ArtifactClass.CLAIM,
    ArtifactClass.SEARCH_ENTRY,
    ArtifactClass.SEARCH_TERM,
    ArtifactClass.VECTOR,
)


def _removed(
    uow: UnitOfWork, key: ScopeKey, memory_ids: Sequence[str], classes: Sequence[ArtifactClass]
) -> Removed:
    """Which of ``classes`` removing these memories removes, read before the change."""
    if not memory_ids:
        return set()
    counts = uow.operations.removal_counts(key, memory_ids)
    return {artifact for artifact in classes if counts.get(artifact.value, 0)}


def result(
    command: GovernanceCommand, affected: Sequence[str], removed: Removed
) -> GovernanceResult:
    """The result of ``command``. The usual one, which names the command's own entity
    alone, is assembled without its checks: the ID is the validated command's, and the
    classes are put in their order here, as the checks would put them."""
    ordered = tuple(artifact for artifact in _ARTIFACT_ORDER if artifact in removed)
    if len(affected) == 1 and affected[0] == command.entity_id:
        return assembled(GovernanceResult, command, (command.entity_id,), ordered)
    return GovernanceResult(command, tuple(sorted(affected)), ordered)


def govern_memory(uow: UnitOfWork, command: GovernanceCommand) -> tuple[list[str], Removed]:
    scope, key, memory_id = command.scope, scope_key(command.scope), command.entity_id
    row, edges, sources = uow.memories.with_lineage(key, memory_id)
    if row is None:
        loading.diagnose(uow, key, EntityType.MEMORY, memory_id)
    try:
        status = MemoryStatus(row.status)
    except ValueError:
        loading.corrupt("invalid memory governance state")
    _check_lineage(uow, scope, memory_id, row.kind, row.dependency_fingerprint, edges, sources)
    action = command.action
    if action in (GovernanceAction.SEAL, GovernanceAction.RESTORE):
        # A status change rewrites the digest, so the whole row must verify first (its
        # edges, these very rows, were verified by the lineage check above). Its values
        # are not checked here, as the contract has it (every read checks them), but for
        # the types of those a restore copies into the search index.
        source_ids = loading.verified_memory(
            row, edges, "invalid memory governance state", edges_verified=True
        )
        if action is GovernanceAction.RESTORE:
            loading.entry_columns(row, "invalid memory governance state")
        wanted_from = (
            MemoryStatus.ACTIVE if action is GovernanceAction.SEAL else MemoryStatus.SEALED
        )
        if status is not wanted_from:
            raise InvalidTransition(memory_id)
        # Rebuild an outdated index first, so the change below is applied to a current one.
        searching.ensure_index(uow)
        new_status = MemoryStatus.SEALED if status is MemoryStatus.ACTIVE else MemoryStatus.ACTIVE
        uow.memories.update(records.with_memory_status(row, new_status, source_ids))
        removed: Removed = set()
        if new_status is MemoryStatus.ACTIVE:
            uow.search.index(searching.doc_row(row))
        else:
            entries, terms = uow.search.unindex(key, memory_id)
            if entries:
                removed.add(ArtifactClass.SEARCH_ENTRY)
            if terms:
                removed.add(ArtifactClass.SEARCH_TERM)
        return [memory_id], removed
    # Forget and delete remove the row even if its body no longer verifies: erasure must
    # not be blocked by the corruption of what is being erased.
    removed = _removed(uow, key, (memory_id,), _REMOVED_BY_MEMORY_DELETE)
    uow.memories.delete(key, memory_id)
    uow.tombstones.insert(
        records.tombstone_row(
            scope,
            EntityType.MEMORY,
            memory_id,
            str(row.dependency_fingerprint),
            command.occurred_at,
            policy.GOVERNANCE_REASON,
        )
    )
    return [memory_id], removed


def delete_event(uow: UnitOfWork, command: GovernanceCommand) -> tuple[list[str], Removed]:
    scope, key, event_id = command.scope, scope_key(command.scope), command.entity_id
    row = uow.events.get(key, (event_id,)).get(event_id)
    if row is None:
        loading.diagnose(uow, key, EntityType.RAW_EVENT, event_id)
    loading.receipt(row, scope, "invalid raw deletion state")
    dependent_ids = sorted(set(uow.memories.dependents(key, event_id)))
    dependents = {m.memory_id: m for m in uow.memories.get_many(key, dependent_ids)}
    if len(dependents) != len(dependent_ids):
        loading.corrupt("invalid raw deletion state")
    edges = loading.edges_by_memory(uow.memories.edges(key, dependent_ids))
    for memory_id in dependent_ids:
        memory = dependents[memory_id]
        _lineage_snapshots(
            scope, memory_id, memory.kind, memory.dependency_fingerprint, edges[memory_id]
        )
    removed = {ArtifactClass.RAW_EVENT}
    removed |= _removed(uow, key, dependent_ids, _REMOVED_BY_MEMORY_DELETE)
    if row.has_body:
        removed.add(ArtifactClass.RAW_BODY)
    if uow.claims.get_extraction(key, event_id) is not None:
        removed.add(ArtifactClass.EXTRACTION_RECORD)
    for memory_id in dependent_ids:
        uow.memories.delete(key, memory_id)
    uow.events.delete(key, event_id)
    uow.tombstones.insert(
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
        uow.tombstones.insert(
            records.tombstone_row(
                scope,
                EntityType.MEMORY,
                memory_id,
                dependents[memory_id].dependency_fingerprint,
                command.occurred_at,
                policy.GOVERNANCE_REASON,
            )
        )
    return [event_id, *dependent_ids], removed
