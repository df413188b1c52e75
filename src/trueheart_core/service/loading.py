"""Verified loading of stored rows, and the one missing-entity diagnosis.

Service-layer helpers shared by every operation: a stored row becomes a DTO only after
its digest verifies, and anything that does not verify fails closed with a fixed,
body-free ``RepositoryCorruption``.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict, defaultdict
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


_RECEIPTS = "verified receipts"
"""The key of the verified-receipt cache in a repository's scratch dictionary."""
RECEIPT_CACHE = 1024
"""How many verified receipts a repository keeps (body-free; emptied by every erasure)."""


def source_receipt(
    uow: UnitOfWork, row: EventRow, scope: Scope, diagnostic: str
) -> RawEventReceipt:
    """:func:`receipt`, remembered for the stored row exactly as read: a source that
    many memories name is verified once, not at every write that reads it. The cache
    lives in the repository's scratch dictionary, which every erasure empties; a row
    that differs in any field (its digest included) is verified anew."""
    store = uow.scratch()
    cache = store.get(_RECEIPTS)
    if not isinstance(cache, OrderedDict):
        cache = OrderedDict()
        store[_RECEIPTS] = cache
    try:
        found = cache.get(row)
    except TypeError:  # a stored value of an unhashable type: no cache
        return receipt(row, scope, diagnostic)
    if isinstance(found, RawEventReceipt) and found.scope == scope:
        return found
    verified = receipt(row, scope, diagnostic)
    # Units of work of several threads may share the dictionary (a server backend):
    # a race between them costs a verification, never an answer.
    with contextlib.suppress(KeyError, RuntimeError):
        cache[row] = verified
        while len(cache) > RECEIPT_CACHE:
            cache.popitem(last=False)
    return verified


def memory(
    row: MemoryRow,
    edges: Sequence[EdgeRow],
    scope: Scope,
    diagnostic: str,
    *,
    edges_verified: bool = False,
) -> MemoryRecord:
    try:
        return records.memory_from_row(row, edges, scope, edges_verified=edges_verified)
    except RowInvalid:
        corrupt(diagnostic)


def verified_memory(
    row: MemoryRow, edges: Sequence[EdgeRow], diagnostic: str, *, edges_verified: bool = False
) -> list[str]:
    """Verify a memory row and its edges (see ``records.verify_memory_row``); returns its
    sorted source IDs."""
    try:
        return records.verify_memory_row(row, edges, edges_verified=edges_verified)
    except RowInvalid:
        corrupt(diagnostic)


def entry_columns(row: MemoryRow, diagnostic: str) -> None:
    """Check the columns a search entry copies from the row (``records.check_entry_columns``)."""
    try:
        records.check_entry_columns(row)
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
