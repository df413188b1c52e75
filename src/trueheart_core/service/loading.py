"""Verified loading of stored rows, and the one missing-entity diagnosis.

Service-layer helpers shared by every operation: a stored row becomes a DTO only after
its digest verifies, and anything that does not verify fails closed with a fixed,
body-free ``RepositoryCorruption``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import NoReturn

from trueheart_core.domain.model import EntityType, MemoryRecord, RawEventReceipt, Scope
from trueheart_core.errors import EntityDeleted, EntityNotFound, RepositoryCorruption, ScopeMismatch
from trueheart_core.ports import EdgeRow, EventRow, MemoryRow, ScopeKey, TombstoneRow, UnitOfWork
from trueheart_core.service import records
from trueheart_core.service.records import RowInvalid


def corrupt(diagnostic: str) -> NoReturn:
    raise RepositoryCorruption(diagnostic) from None


def receipt(row: EventRow, scope: Scope | None, diagnostic: str) -> RawEventReceipt:
    try:
        return records.receipt_from_row(row, scope)
    except RowInvalid:
        corrupt(diagnostic)


def memory(row: MemoryRow, edges: Sequence[EdgeRow], scope: Scope, diagnostic: str) -> MemoryRecord:
    try:
        return records.memory_from_row(row, edges, scope)
    except RowInvalid:
        corrupt(diagnostic)


def edges_by_memory(edges: Sequence[EdgeRow]) -> defaultdict[str, list[EdgeRow]]:
    grouped: defaultdict[str, list[EdgeRow]] = defaultdict(list)
    for edge in edges:
        grouped[edge.memory_id].append(edge)
    return grouped


def blocking_tombstones(tombstones: Sequence[TombstoneRow], entity_type: EntityType) -> bool:
    """Whether one of these exact-scope tombstones (each verified) is of this type."""
    blocking = False
    for row in tombstones:
        try:
            found = records.check_tombstone(row)
        except RowInvalid:
            corrupt("invalid tombstone")
        blocking = blocking or found is entity_type
    return blocking


def diagnose(uow: UnitOfWork, key: ScopeKey, entity_type: EntityType, entity_id: str) -> NoReturn:
    """The one missing-entity diagnosis: deleted here, known elsewhere, or unknown.

    Bounded look-ups only: the exact scope's tombstones, then one tombstone of the same
    type elsewhere, then one live row elsewhere. Every tombstone read is verified.
    """
    if blocking_tombstones(uow.tombstones.get(key, entity_id), entity_type):
        raise EntityDeleted(entity_id)
    elsewhere = uow.tombstones.elsewhere(entity_id, entity_type.value, key)
    if elsewhere is not None:
        blocking_tombstones((elsewhere,), entity_type)
        raise ScopeMismatch(entity_id)
    live_elsewhere = (
        uow.events.id_elsewhere(entity_id, key)
        if entity_type is EntityType.RAW_EVENT
        else uow.memories.id_elsewhere(entity_id, key)
    )
    if live_elsewhere:
        raise ScopeMismatch(entity_id)
    raise EntityNotFound(entity_id)
