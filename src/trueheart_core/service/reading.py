"""Exact reads: one memory, one receipt, and a scope's memories page by page.

Service-layer functions over one unit of work. A missing ID gets the same fail-closed
diagnosis as governance (deleted here, known in another scope, or unknown), and every
row is verified before it becomes a DTO.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json

from trueheart_core.domain import validation
from trueheart_core.domain.model import (
    EntityType,
    MemoryRecord,
    MemoryStatus,
    RawEventReceipt,
    Scope,
)
from trueheart_core.domain.search.model import MemoryPage
from trueheart_core.errors import ValidationError
from trueheart_core.ports import UnitOfWork
from trueheart_core.service import loading
from trueheart_core.service.records import scope_key

_CURSOR_VERSION = "m1"


def get_memory(uow: UnitOfWork, scope: Scope, memory_id: str) -> MemoryRecord:
    """The memory with this ID in the exact scope, whatever its status."""
    key = scope_key(scope)
    row = uow.memories.get(key, memory_id)
    if row is None:
        loading.diagnose(uow, key, EntityType.MEMORY, memory_id)
    return loading.memory(
        row, uow.memories.edges(key, (memory_id,)), scope, "invalid memory record"
    )


def get_receipt(uow: UnitOfWork, scope: Scope, event_id: str) -> RawEventReceipt:
    """The receipt of the event with this ID in the exact scope."""
    key = scope_key(scope)
    row = uow.events.get(key, (event_id,)).get(event_id)
    if row is None:
        loading.diagnose(uow, key, EntityType.RAW_EVENT, event_id)
    return loading.receipt(row, scope, "invalid raw event record")


def derived_memories(uow: UnitOfWork, scope: Scope, event_id: str) -> tuple[str, ...]:
    """The IDs of the memories held in the exact scope that were derived from this
    event, in ID order."""
    key = scope_key(scope)
    if not uow.events.get(key, (event_id,)):
        loading.diagnose(uow, key, EntityType.RAW_EVENT, event_id)
    found = uow.memories.dependents(key, event_id)
    if any(type(memory_id) is not str for memory_id in found):
        loading.corrupt("invalid memory lineage")
    return tuple(sorted(set(found)))


def _listing_id(
    scope: Scope,
    statuses: tuple[MemoryStatus, ...],
    kinds: tuple[str, ...],
    descending: bool = False,
) -> str:
    """A short fingerprint of what a listing selects and in which order, bound into its
    cursors (a listing in ID order has the fingerprint it had before the order could be
    reversed, so that its cursors stay valid)."""
    selected: list[object] = [
        list(scope_key(scope)),
        [s.value for s in statuses],
        sorted(set(kinds)),
    ]
    if descending:
        selected.append("descending")
    text = validation.canonical_json(selected)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def encode_cursor(listing: str, last_id: str, version: str = _CURSOR_VERSION) -> str:
    """An opaque cursor: its kind's ``version``, the listing's fingerprint and the last
    ID returned."""
    payload = json.dumps([version, listing, last_id], ensure_ascii=True)
    return base64.urlsafe_b64encode(payload.encode("ascii")).decode("ascii").rstrip("=")


def decode_cursor(
    cursor: object, listing: str, version: str = _CURSOR_VERSION, made_by: str = "listing"
) -> str:
    """The last ID of a cursor of this ``version`` made by the same listing;
    ``ValidationError`` (``must be a cursor returned by the same <made_by>``) otherwise."""
    invalid = ValidationError("cursor", f"must be a cursor returned by the same {made_by}")
    # The longest cursor made: an ID of 128 characters outside the BMP, each written as
    # 12 ASCII characters in the JSON, then base64 (about 2,100 characters).
    if not isinstance(cursor, str) or not cursor or len(cursor) > 4096 or not cursor.isascii():
        raise invalid
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        value = json.loads(raw.decode("ascii"))
    except (binascii.Error, UnicodeDecodeError, ValueError, RecursionError):
        raise invalid from None  # RecursionError: JSON nested too deep to read
    if (
        not isinstance(value, list)
        or len(value) != 3
        or value[0] != version
        or value[1] != listing
        or not isinstance(value[2], str)
    ):
        raise invalid
    try:
        return validation.text("cursor", value[2])
    except ValidationError:
        raise invalid from None


def _in_order(before: str, after: str, descending: bool) -> bool:
    """Whether ID ``after`` strictly follows ID ``before`` in the listing's order."""
    return before > after if descending else before < after


def list_memories(
    uow: UnitOfWork,
    scope: Scope,
    statuses: tuple[MemoryStatus, ...],
    kinds: tuple[str, ...],
    limit: int,
    cursor: str | None,
    descending: bool = False,
) -> MemoryPage:
    """One page of the scope's memories in ``memory_id`` order after ``cursor`` (in the
    reverse order, before it: ``descending``)."""
    listing = _listing_id(scope, statuses, kinds, descending)
    after = None if cursor is None else decode_cursor(cursor, listing)
    key = scope_key(scope)
    rows = uow.memories.page(
        key, [s.value for s in statuses], kinds, after, limit + 1, descending=descending
    )
    more = len(rows) > limit
    rows = rows[:limit]
    edges = loading.edges_by_memory(uow.memories.edges(key, [r.memory_id for r in rows]))
    items: list[MemoryRecord] = []
    for row in rows:
        memory = loading.memory(row, edges[row.memory_id], scope, "invalid memory record")
        if memory.status not in statuses or (kinds and memory.kind not in kinds):
            loading.corrupt("invalid memory record")
        if items and not _in_order(items[-1].memory_id, memory.memory_id, descending):
            loading.corrupt("invalid memory record")
        if after is not None and not _in_order(after, memory.memory_id, descending):
            loading.corrupt("invalid memory record")
        items.append(memory)
    next_cursor = encode_cursor(listing, items[-1].memory_id) if more and items else None
    return MemoryPage(tuple(items), next_cursor)
