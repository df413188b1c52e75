"""Exact reads: get_memory, get_receipt, derived_memories and paged list_memories."""

from __future__ import annotations

import base64
import dataclasses
import json
from datetime import timedelta

import pytest
from conformance_builders import (
    NOW,
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
    EntityDeleted,
    EntityNotFound,
    EntityType,
    GovernanceAction,
    MemoryPage,
    MemoryRecord,
    MemoryStatus,
    Scope,
    ScopeMismatch,
    TrueHeart,
    ValidationError,
)

ACTIVE = MemoryStatus.ACTIVE
SEALED = MemoryStatus.SEALED
CURSOR_ERROR = msg("cursor: must be a cursor returned by the same listing")


# --- get_memory and get_receipt -------------------------------------------------------------


def test_get_memory_returns_the_materialised_record(service: TrueHeart) -> None:
    service.ingest_event(event("evt-2"))
    service.ingest_event(event("evt-1"))
    record = service.materialize_once(
        memory("mem-1", ("evt-2", "evt-1"), metadata={"k": [1, {"x": None}]})
    )
    found = service.get_memory(SCOPE, "mem-1")
    assert isinstance(found, MemoryRecord)
    assert found == record
    assert found.source_event_ids == ("evt-1", "evt-2")


def test_get_memory_returns_sealed_and_restored_memories(service: TrueHeart) -> None:
    record = materialize_all(service, {"mem-1": "content"})["mem-1"]
    service.govern(command(GovernanceAction.SEAL, "mem-1"))
    sealed = service.get_memory(SCOPE, "mem-1")
    assert sealed == dataclasses.replace(record, status=SEALED)
    service.govern(command(GovernanceAction.RESTORE, "mem-1"))
    assert service.get_memory(SCOPE, "mem-1") == record


def test_get_receipt_returns_the_ingested_receipt(service: TrueHeart) -> None:
    receipt = service.ingest_event(event("evt-1", metadata={"m": "v"}))
    assert service.get_receipt(SCOPE, "evt-1") == receipt
    service.expire_raw_content(as_of=NOW + timedelta(days=7))
    assert service.get_receipt(SCOPE, "evt-1") == dataclasses.replace(
        receipt, content_available=False
    )


def test_unknown_ids_are_not_found(service: TrueHeart) -> None:
    materialize_all(service, {"mem-1": "content"})
    with pytest.raises(EntityNotFound, match=msg("entity not found: mem-x")):
        service.get_memory(SCOPE, "mem-x")
    with pytest.raises(EntityNotFound, match=msg("entity not found: evt-x")):
        service.get_receipt(SCOPE, "evt-x")
    # Memory and event IDs are separate namespaces.
    with pytest.raises(EntityNotFound, match=msg("entity not found: evt-1")):
        service.get_memory(SCOPE, "evt-1")
    with pytest.raises(EntityNotFound, match=msg("entity not found: mem-1")):
        service.get_receipt(SCOPE, "mem-1")


def test_ids_known_only_in_another_scope_are_a_scope_mismatch(service: TrueHeart) -> None:
    materialize_all(service, {"mem-1": "content"}, scope=OTHER_SCOPE)
    with pytest.raises(ScopeMismatch, match=msg("scope mismatch: mem-1")):
        service.get_memory(SCOPE, "mem-1")
    with pytest.raises(ScopeMismatch, match=msg("scope mismatch: evt-1")):
        service.get_receipt(SCOPE, "evt-1")
    # A tombstone elsewhere is also a mismatch here, not a deletion.
    service.govern(command(GovernanceAction.FORGET, "mem-1", scope=OTHER_SCOPE))
    with pytest.raises(ScopeMismatch, match=msg("scope mismatch: mem-1")):
        service.get_memory(SCOPE, "mem-1")
    with pytest.raises(EntityDeleted, match=msg("entity deleted: mem-1")):
        service.get_memory(OTHER_SCOPE, "mem-1")


def test_the_exact_scope_wins_over_a_deletion_elsewhere(service: TrueHeart) -> None:
    here = materialize_all(service, {"mem-1": "here"})["mem-1"]
    materialize_all(service, {"mem-1": "there"}, scope=OTHER_SCOPE)
    service.govern(command(GovernanceAction.DELETE, "mem-1", scope=OTHER_SCOPE))
    assert service.get_memory(SCOPE, "mem-1") == here
    assert service.get_receipt(SCOPE, "evt-1").scope == SCOPE


@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_forgotten_and_deleted_memories_are_deleted(
    service: TrueHeart, action: GovernanceAction
) -> None:
    materialize_all(service, {"mem-1": "content", "mem-2": "other"})
    service.govern(command(action, "mem-1"))
    with pytest.raises(EntityDeleted, match=msg("entity deleted: mem-1")):
        service.get_memory(SCOPE, "mem-1")
    assert service.get_memory(SCOPE, "mem-2").memory_id == "mem-2"
    assert service.get_receipt(SCOPE, "evt-1").event_id == "evt-1"


def test_a_raw_event_deletion_deletes_its_dependents(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1"))
    service.ingest_event(event("evt-2"))
    service.materialize_once(memory("mem-1", ("evt-1",)))
    service.materialize_once(memory("mem-both", ("evt-1", "evt-2")))
    kept = service.materialize_once(memory("mem-2", ("evt-2",)))
    service.govern(command(GovernanceAction.DELETE, "evt-1", entity_type=EntityType.RAW_EVENT))
    for memory_id in ("mem-1", "mem-both"):
        with pytest.raises(EntityDeleted, match=msg(f"entity deleted: {memory_id}")):
            service.get_memory(SCOPE, memory_id)
    with pytest.raises(EntityDeleted, match=msg("entity deleted: evt-1")):
        service.get_receipt(SCOPE, "evt-1")
    assert service.get_memory(SCOPE, "mem-2") == kept


def test_derived_memories_names_the_memories_an_event_delete_would_take(
    service: TrueHeart,
) -> None:
    service.ingest_event(event("evt-1"))
    service.ingest_event(event("evt-2"))
    service.materialize_once(memory("mem-b", ("evt-1",)))
    service.materialize_once(memory("mem-a", ("evt-1", "evt-2")))
    service.materialize_once(memory("mem-c", ("evt-1",)))
    service.materialize_once(memory("mem-2", ("evt-2",)))
    assert service.derived_memories(SCOPE, "evt-1") == ("mem-a", "mem-b", "mem-c")
    service.govern(command(GovernanceAction.SEAL, "mem-b"))
    service.govern(command(GovernanceAction.FORGET, "mem-c"))
    assert service.derived_memories(SCOPE, "evt-1") == ("mem-a", "mem-b")
    assert service.derived_memories(SCOPE, "evt-2") == ("mem-2", "mem-a")
    service.ingest_event(event("evt-3"))
    assert service.derived_memories(SCOPE, "evt-3") == ()
    deleted = service.govern(
        command(GovernanceAction.DELETE, "evt-1", entity_type=EntityType.RAW_EVENT)
    )
    assert set(deleted.affected_ids) == {"evt-1", "mem-a", "mem-b"}
    with pytest.raises(EntityDeleted, match=msg("entity deleted: evt-1")):
        service.derived_memories(SCOPE, "evt-1")
    assert service.derived_memories(SCOPE, "evt-2") == ("mem-2",)


def test_derived_memories_diagnoses_a_missing_event_and_stays_in_its_scope(
    service: TrueHeart,
) -> None:
    materialize_all(service, {"mem-1": "content"}, scope=OTHER_SCOPE)
    with pytest.raises(ScopeMismatch, match=msg("scope mismatch: evt-1")):
        service.derived_memories(SCOPE, "evt-1")
    with pytest.raises(EntityNotFound, match=msg("entity not found: evt-x")):
        service.derived_memories(SCOPE, "evt-x")
    # An event of the same ID here answers for its own scope only.
    service.ingest_event(event("evt-1"))
    assert service.derived_memories(SCOPE, "evt-1") == ()
    assert service.derived_memories(OTHER_SCOPE, "evt-1") == ("mem-1",)
    with pytest.raises(ValidationError, match=msg("event_id: must be a non-blank string")):
        service.derived_memories(SCOPE, "")
    with pytest.raises(ValidationError, match=msg("scope: must be a Scope")):
        service.derived_memories(None, "evt-1")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "must be a non-blank string"),
        (" \t", "must be a non-blank string"),
        (None, "must be a non-blank string"),
        (5, "must be a non-blank string"),
        (b"mem-1", "must be a non-blank string"),
        ("x" * 129, "must be at most 128 characters"),
        ("mem-\ud800", "must be valid UTF-8"),
    ],
)
def test_exact_reads_validate_their_arguments(
    service: TrueHeart, value: object, message: str
) -> None:
    with pytest.raises(ValidationError, match=msg(f"memory_id: {message}")):
        service.get_memory(SCOPE, value)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=msg(f"event_id: {message}")):
        service.get_receipt(SCOPE, value)  # type: ignore[arg-type]


@pytest.mark.parametrize("scope", [None, "tenant", ("tenant", "owner", "subject")])
def test_exact_reads_and_listing_require_a_scope(service: TrueHeart, scope: object) -> None:
    with pytest.raises(ValidationError, match=msg("scope: must be a Scope")):
        service.get_memory(scope, "")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=msg("scope: must be a Scope")):
        service.get_receipt(scope, "")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=msg("scope: must be a Scope")):
        service.list_memories(scope, limit=0)  # type: ignore[arg-type]


# --- list_memories ------------------------------------------------------------------------

# Code-point order: upper case before lower case, "m-10" before "m-9", and U+FB01 before
# U+1F600 (UTF-16 code-unit order would put the emoji's surrogates first).
IDS_IN_ORDER = [
    "B",
    "Z",
    "a",
    "b",
    "m-10",
    "m-9",
    "\u00e9",
    "\u4e2d",
    "\ufb01",
    "\U0001f600",
]


def test_pages_follow_code_point_order(service: TrueHeart) -> None:
    assert sorted(IDS_IN_ORDER) == IDS_IN_ORDER
    scrambled = IDS_IN_ORDER[5:] + IDS_IN_ORDER[:5][::-1]
    records = materialize_all(service, dict.fromkeys(scrambled, "content"))
    pages = all_pages(service, 3)
    assert [len(page.items) for page in pages] == [3, 3, 3, 1]
    assert page_ids(pages) == IDS_IN_ORDER
    assert [m for page in pages for m in page.items] == [records[i] for i in IDS_IN_ORDER]
    assert all(isinstance(page.next_cursor, str) for page in pages[:-1])
    assert pages[-1].next_cursor is None
    whole = service.list_memories(SCOPE)
    assert [m.memory_id for m in whole.items] == IDS_IN_ORDER
    assert whole.next_cursor is None


@pytest.mark.parametrize(("limit", "sizes"), [(3, [3, 3]), (6, [6]), (1, [1] * 6), (100, [6])])
def test_an_exactly_full_last_page_has_no_cursor(
    service: TrueHeart, limit: int, sizes: list[int]
) -> None:
    materialize_all(service, {f"m-{n}": "content" for n in range(6)})
    pages = all_pages(service, limit)
    assert [len(page.items) for page in pages] == sizes
    assert pages[-1].next_cursor is None
    assert page_ids(pages) == [f"m-{n}" for n in range(6)]


def test_status_and_kinds_filters(service: TrueHeart) -> None:
    service.ingest_event(event())
    kinds = {"m-1": "fact", "m-2": "preference", "m-3": "fact", "m-4": "Fact", "m-5": "fact"}
    for memory_id, kind in kinds.items():
        service.materialize_once(memory(memory_id, kind=kind))
    for memory_id in ("m-2", "m-3"):
        service.govern(command(GovernanceAction.SEAL, memory_id))
    cases: list[tuple[MemoryStatus | None, tuple[str, ...], list[str]]] = [
        (None, (), ["m-1", "m-2", "m-3", "m-4", "m-5"]),
        (ACTIVE, (), ["m-1", "m-4", "m-5"]),
        (SEALED, (), ["m-2", "m-3"]),
        (None, ("fact",), ["m-1", "m-3", "m-5"]),
        (ACTIVE, ("fact",), ["m-1", "m-5"]),
        (SEALED, ("fact", "preference"), ["m-2", "m-3"]),
        (ACTIVE, ("other",), []),
    ]
    for status, kind_filter, expected in cases:
        for limit in (1, 2, 100):
            pages = all_pages(service, limit, status=status, kinds=kind_filter)
            assert page_ids(pages) == expected, (status, kind_filter, limit)
            for item in (m for page in pages for m in page.items):
                assert status is None or item.status is status
                assert not kind_filter or item.kind in kind_filter


def test_listing_skips_deleted_memories_and_other_scopes(service: TrueHeart) -> None:
    materialize_all(service, {"m-1": "a", "m-2": "b", "m-3": "c"})
    materialize_all(service, {"m-0": "a", "m-2": "b", "m-9": "c"}, scope=OTHER_SCOPE)
    service.govern(command(GovernanceAction.FORGET, "m-2"))
    page = service.list_memories(SCOPE)
    assert [m.memory_id for m in page.items] == ["m-1", "m-3"]
    assert all(m.scope == SCOPE for m in page.items)
    other = service.list_memories(OTHER_SCOPE)
    assert [m.memory_id for m in other.items] == ["m-0", "m-2", "m-9"]


def test_an_empty_scope_gives_an_empty_last_page(service: TrueHeart) -> None:
    assert service.list_memories(SCOPE) == MemoryPage((), None)
    materialize_all(service, {"m-1": "content"}, scope=OTHER_SCOPE)
    assert service.list_memories(SCOPE) == MemoryPage((), None)
    assert service.list_memories(Scope("t", "o", "nobody"), limit=1) == MemoryPage((), None)
    assert service.list_memories(OTHER_SCOPE, status=SEALED) == MemoryPage((), None)


@pytest.mark.parametrize("limit", [0, 101, -1, True, 1.5, None, "10"])
def test_listing_limit_bounds(service: TrueHeart, limit: object) -> None:
    with pytest.raises(ValidationError, match=msg("limit: must be from 1 through 100")):
        service.list_memories(SCOPE, limit=limit)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"status": "active"}, "status: must be a MemoryStatus or None"),
        ({"status": 1}, "status: must be a MemoryStatus or None"),
        ({"kinds": ["fact"]}, "kinds: must be a tuple"),
        ({"kinds": "fact"}, "kinds: must be a tuple"),
        ({"kinds": ("fact", "")}, "kinds: must be a non-blank string"),
    ],
)
def test_listing_filters_are_validated(
    service: TrueHeart, filters: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=msg(message)):
        service.list_memories(SCOPE, **filters)  # type: ignore[arg-type]


def _first_cursor(service: TrueHeart, **filters: object) -> str:
    page = service.list_memories(SCOPE, limit=1, **filters)  # type: ignore[arg-type]
    assert page.next_cursor is not None
    return page.next_cursor


def test_a_page_that_ends_at_the_longest_id_has_a_cursor_that_works(service: TrueHeart) -> None:
    """An ID of 128 characters outside the Basic Multilingual Plane: the longest cursor."""
    longest = "\U0001f600" * 128
    materialize_all(service, {longest: "first", "\U0001f601": "second"})
    first = service.list_memories(SCOPE, limit=1)
    assert [m.memory_id for m in first.items] == [longest]
    assert first.next_cursor is not None
    second = service.list_memories(SCOPE, limit=1, cursor=first.next_cursor)
    assert [m.memory_id for m in second.items] == ["\U0001f601"]


def test_a_cursor_only_works_for_the_listing_that_made_it(service: TrueHeart) -> None:
    materialize_all(service, {"m-1": "a", "m-2": "b", "m-3": "c"})
    materialize_all(service, {"m-1": "a", "m-2": "b", "m-3": "c"}, scope=OTHER_SCOPE)
    cursor = _first_cursor(service)
    # It works again and again for its own listing.
    for _ in range(2):
        page = service.list_memories(SCOPE, limit=1, cursor=cursor)
        assert [m.memory_id for m in page.items] == ["m-2"]
    misuses: list[dict[str, object]] = [
        {"scope": OTHER_SCOPE},
        {"status": ACTIVE},
        {"status": SEALED},
        {"kinds": ("fact",)},
    ]
    for misuse in misuses:
        arguments: dict[str, object] = {"scope": SCOPE, "limit": 1, **misuse}
        with pytest.raises(ValidationError, match=CURSOR_ERROR):
            service.list_memories(cursor=cursor, **arguments)  # type: ignore[arg-type]
    fact_cursor = _first_cursor(service, kinds=("fact",))
    with pytest.raises(ValidationError, match=CURSOR_ERROR):
        service.list_memories(SCOPE, cursor=fact_cursor)
    active_cursor = _first_cursor(service, status=ACTIVE)
    with pytest.raises(ValidationError, match=CURSOR_ERROR):
        service.list_memories(SCOPE, status=None, cursor=active_cursor)
    assert [
        m.memory_id for m in service.list_memories(SCOPE, status=ACTIVE, cursor=active_cursor).items
    ] == ["m-2", "m-3"]


def _forged(payload: object) -> str:
    raw = json.dumps(payload).encode("ascii")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "garbage",
        "!!!!",
        "====",
        "\u00e9t\u00e9",
        "A" * 3000,
        _forged(["m1"]),
        _forged({"last": "m-1"}),
        _forged(["m0", "0" * 16, "m-1"]),
        5,
        b"cursor",
        ["m-1"],
    ],
    ids=lambda value: type(value).__name__ + str(len(str(value))),
)
def test_garbage_and_non_text_cursors_are_rejected(service: TrueHeart, cursor: object) -> None:
    materialize_all(service, {"m-1": "a", "m-2": "b"})
    with pytest.raises(ValidationError, match=CURSOR_ERROR):
        service.list_memories(SCOPE, cursor=cursor)  # type: ignore[arg-type]


def test_damaged_cursors_are_rejected(service: TrueHeart) -> None:
    materialize_all(service, {"m-1": "a", "m-2": "b", "m-3": "c"})
    cursor = _first_cursor(service)
    version, listing, last_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * 4))
    assert last_id == "m-1"
    damaged = [
        cursor[:-4],
        cursor + "x",
        _forged([version, listing, " "]),
        _forged([version, listing, "x" * 129]),
        _forged([version, listing, 1]),
        _forged(["m9", listing, last_id]),
        _forged([version, listing, last_id, "extra"]),
    ]
    for value in damaged:
        with pytest.raises(ValidationError, match=CURSOR_ERROR):
            service.list_memories(SCOPE, limit=1, cursor=value)
    assert service.list_memories(SCOPE, limit=1, cursor=_forged([version, listing, last_id]))


def test_memories_added_while_paging_appear_once_after_the_cursor(service: TrueHeart) -> None:
    materialize_all(service, {"b": "b", "d": "d", "f": "f", "h": "h"})
    first = service.list_memories(SCOPE, limit=2)
    assert [m.memory_id for m in first.items] == ["b", "d"]
    assert first.next_cursor is not None
    for memory_id in ("a", "c", "e", "i"):
        service.materialize_once(memory(memory_id, content=memory_id))
    service.govern(command(GovernanceAction.FORGET, "h"))
    rest = [first]
    cursor: str | None = first.next_cursor
    while cursor is not None:
        page = service.list_memories(SCOPE, limit=2, cursor=cursor)
        rest.append(page)
        cursor = page.next_cursor
    seen = page_ids(rest)
    assert seen == ["b", "d", "e", "f", "i"]
    assert len(seen) == len(set(seen))
