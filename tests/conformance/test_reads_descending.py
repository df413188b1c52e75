"""Paged list_memories in descending ID order: the same pages as the ascending listing,
walked from the other end, with cursors bound to their order."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from conformance_builders import (
    OTHER_SCOPE,
    SCOPE,
    all_pages,
    command,
    event,
    materialize_all,
    memory,
    msg,
    page_ids,
)

from trueheart_core import (
    GovernanceAction,
    MemoryStatus,
    TrueHeart,
    ValidationError,
)

ACTIVE = MemoryStatus.ACTIVE
SEALED = MemoryStatus.SEALED
CURSOR_ERROR = msg("cursor: must be a cursor returned by the same listing")
IDS = ["A", "Z", "a", "m-1", "m-10", "m-9", "\u00e9", "\u4e2d", "\ufb01", "\U0001f600"]


def test_descending_pages_follow_reverse_code_point_order(service: TrueHeart) -> None:
    assert sorted(IDS) == IDS
    records = materialize_all(service, dict.fromkeys(IDS[3:] + IDS[:3], "content"))
    materialize_all(service, {"b": "elsewhere", "\U0001f601": "elsewhere"}, scope=OTHER_SCOPE)
    for limit, sizes in ((3, [3, 3, 3, 1]), (5, [5, 5]), (10, [10]), (100, [10])):
        pages = all_pages(service, limit, descending=True)
        assert [len(page.items) for page in pages] == sizes
        assert page_ids(pages) == IDS[::-1]
        assert [m for page in pages for m in page.items] == [records[i] for i in IDS[::-1]]
        assert pages[-1].next_cursor is None
    first = service.list_memories(SCOPE, limit=1, descending=True)
    assert [m.memory_id for m in first.items] == ["\U0001f600"]
    assert service.list_memories(SCOPE, descending=False) == service.list_memories(SCOPE)


def test_descending_listing_applies_the_same_filters(service: TrueHeart) -> None:
    service.ingest_event(event())
    kinds = {"m-1": "fact", "m-2": "preference", "m-3": "fact", "m-4": "Fact", "m-5": "fact"}
    for memory_id, kind in kinds.items():
        service.materialize_once(memory(memory_id, kind=kind))
    for memory_id in ("m-2", "m-3"):
        service.govern(command(GovernanceAction.SEAL, memory_id))
    service.govern(command(GovernanceAction.FORGET, "m-4"))
    filters: list[tuple[MemoryStatus | None, tuple[str, ...]]] = [
        (None, ()),
        (ACTIVE, ()),
        (SEALED, ()),
        (None, ("fact",)),
        (ACTIVE, ("fact",)),
        (SEALED, ("fact", "preference")),
        (ACTIVE, ("other",)),
    ]
    for status, kind_filter in filters:
        ascending = page_ids(all_pages(service, 100, status=status, kinds=kind_filter))
        for limit in (1, 2, 100):
            pages = all_pages(service, limit, status=status, kinds=kind_filter, descending=True)
            assert page_ids(pages) == ascending[::-1], (status, kind_filter, limit)
    assert page_ids(all_pages(service, 2, descending=True)) == ["m-5", "m-3", "m-2", "m-1"]


def test_a_cursor_works_only_in_the_order_that_made_it(service: TrueHeart) -> None:
    materialize_all(service, {"m-1": "a", "m-2": "b", "m-3": "c"})
    down = service.list_memories(SCOPE, limit=1, descending=True)
    up = service.list_memories(SCOPE, limit=1)
    assert down.next_cursor is not None and up.next_cursor is not None
    for _ in range(2):
        page = service.list_memories(SCOPE, limit=1, cursor=down.next_cursor, descending=True)
        assert [m.memory_id for m in page.items] == ["m-2"]
    with pytest.raises(ValidationError, match=CURSOR_ERROR):
        service.list_memories(SCOPE, cursor=down.next_cursor)
    with pytest.raises(ValidationError, match=CURSOR_ERROR):
        service.list_memories(SCOPE, cursor=up.next_cursor, descending=True)
    for misuse in ({"status": ACTIVE}, {"kinds": ("fact",)}):
        with pytest.raises(ValidationError, match=CURSOR_ERROR):
            service.list_memories(
                SCOPE,
                cursor=down.next_cursor,
                descending=True,
                **misuse,  # type: ignore[arg-type]
            )
    with pytest.raises(ValidationError, match=CURSOR_ERROR):
        service.list_memories(OTHER_SCOPE, cursor=down.next_cursor, descending=True)


@pytest.mark.parametrize("descending", [None, 0, 1, "yes", 1.0, (True,)])
def test_descending_must_be_a_bool(service: TrueHeart, descending: object) -> None:
    materialize_all(service, {"m-1": "a"})
    with pytest.raises(ValidationError, match=msg("descending: must be a bool")):
        service.list_memories(SCOPE, descending=descending)  # type: ignore[arg-type]


def test_memories_added_while_paging_down_appear_once_before_the_cursor(
    service: TrueHeart,
) -> None:
    materialize_all(service, {"b": "b", "d": "d", "f": "f", "h": "h"})
    first = service.list_memories(SCOPE, limit=2, descending=True)
    assert [m.memory_id for m in first.items] == ["h", "f"]
    for memory_id in ("a", "c", "e", "i"):
        service.materialize_once(memory(memory_id, content=memory_id))
    service.govern(command(GovernanceAction.FORGET, "b"))
    pages = [first]
    cursor = first.next_cursor
    while cursor is not None:
        page = service.list_memories(SCOPE, limit=2, cursor=cursor, descending=True)
        pages.append(page)
        cursor = page.next_cursor
    assert page_ids(pages) == ["h", "f", "e", "d", "c", "a"]


def test_the_ascending_listing_takes_the_cursors_it_always_made(service: TrueHeart) -> None:
    """A cursor of the listing in ID order is what 0.5.0 made: base64 of the JSON
    ``["m1", <the first 16 hex digits of the SHA-256 of the canonical JSON of [scope,
    statuses, kinds]>, <last ID>]``, without padding."""
    materialize_all(service, {"m-1": "a", "m-2": "b", "m-3": "c"})
    selection = [[SCOPE.tenant_id, SCOPE.owner_id, SCOPE.subject_id], ["active", "sealed"], []]
    text = json.dumps(selection, separators=(",", ":"), ensure_ascii=False)
    listing = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    made = base64.urlsafe_b64encode(json.dumps(["m1", listing, "m-1"]).encode("ascii"))
    cursor = made.decode("ascii").rstrip("=")
    assert service.list_memories(SCOPE, limit=1).next_cursor == cursor
    page = service.list_memories(SCOPE, cursor=cursor)
    assert [m.memory_id for m in page.items] == ["m-2", "m-3"]
    with pytest.raises(ValidationError, match=CURSOR_ERROR):
        service.list_memories(SCOPE, cursor=cursor, descending=True)
