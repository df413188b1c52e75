"""Claims page by page: limits, cursors, the order of pages, and conflicts per page.

The property every page size must keep: the claims of all pages, one after the other,
are the claims of the unpaged answer, and their conflicts are its conflicts, each once.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    claim,
    claim_views,
    command,
    event,
    ingest_ids,
    msg,
)

from trueheart_core import (
    ClaimQuery,
    ClaimSet,
    ClaimStatus,
    EntityType,
    GovernanceAction,
    TrueHeart,
    ValidationError,
)

CURRENT, SUPERSEDED = ClaimStatus.CURRENT, ClaimStatus.SUPERSEDED
ENDED, NOT_YET_VALID = ClaimStatus.ENDED, ClaimStatus.NOT_YET_VALID
MARCH = datetime(2026, 3, 1, tzinfo=UTC)
APRIL = datetime(2026, 4, 1, tzinfo=UTC)
MAY = datetime(2026, 5, 1, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, tzinfo=UTC)
JULY = datetime(2026, 7, 1, tzinfo=UTC)
SIZES = (1, 2, 3, 7)
SAME_QUERY = "cursor: must be a cursor returned by the same query"


def _seal(service: TrueHeart, memory_id: str) -> None:
    service.govern(command(GovernanceAction.SEAL, memory_id, entity_type=EntityType.MEMORY))


def _populate(service: TrueHeart) -> None:
    """Several (subject, predicate) groups, with conflicts, every status, superseded and
    sealed claims, ties on ``created_at``, and claims made at several times; subjects
    whose code-point order differs from their order in UTF-16."""
    ingest_ids(service, "evt-1")
    put = service.materialize_claim
    # user:ada prefers_theme: a conflict until c-a3 (June) supersedes c-a2.
    put(claim("c-a1", created_at=MARCH, value="dark"))
    put(claim("c-a2", created_at=MARCH, value="light"))
    put(claim("c-a0", created_at=APRIL, value="dark"))  # a later ID sorts by time first
    put(claim("c-a3", created_at=JUNE, value="dark", supersedes="c-a2"))
    # user:ada prefers_font: one current claim, one ended, one not yet valid.
    put(claim("c-f1", created_at=MARCH, predicate="prefers_font", value="serif"))
    put(claim("c-f2", created_at=MARCH, predicate="prefers_font", value="mono", valid_to=APRIL))
    put(claim("c-f3", created_at=MARCH, predicate="prefers_font", value="sans", valid_from=JULY))
    # user:bob prefers_theme: a conflict of three, one of them sealed later.
    for claim_id, value in (("c-b1", "blue"), ("c-b2", "green"), ("c-b3", "red")):
        put(claim(claim_id, created_at=APRIL, subject="user:bob", value=value))
    _seal(service, "c-b3")
    # user:bob speaks: the same value twice is no conflict.
    put(claim("c-s1", created_at=APRIL, subject="user:bob", predicate="speaks", value="en"))
    put(claim("c-s2", created_at=MAY, subject="user:bob", predicate="speaks", value="en"))
    # Astral and BMP subjects: U+FF5E sorts before U+1F600 by code point.
    put(claim("c-x1", created_at=MAY, subject="user:\U0001f600", value="dark"))
    put(claim("c-x2", created_at=MAY, subject="user:\U0001f600", value="light"))
    put(claim("c-y1", created_at=MAY, subject="user:\uff5e", value="dark"))
    put(claim("c-y2", created_at=JUNE, subject="user:\uff5e", value="light"))
    # A long group with the conflict made by its last claim.
    for index in range(9):
        put(claim(f"c-z{index}", created_at=MARCH, subject="user:zed", value="dark"))
    put(claim("c-zz", created_at=MAY, subject="user:zed", value="light"))
    # The other scope holds claims that must never appear.
    service.ingest_event(event("evt-o", scope=OTHER_SCOPE))
    put(claim("c-o1", ("evt-o",), scope=OTHER_SCOPE, value="dark"))
    put(claim("c-o2", ("evt-o",), scope=OTHER_SCOPE, value="light"))


def _pages(service: TrueHeart, query: ClaimQuery, limit: int) -> list[ClaimSet]:
    """Every page of ``query`` with this limit, following the cursors."""
    pages = [service.claims(replace(query, limit=limit))]
    while pages[-1].next_cursor is not None:
        assert len(pages) <= 1000, "the cursors do not end"
        pages.append(service.claims(replace(query, limit=limit, cursor=pages[-1].next_cursor)))
    return pages


def _assert_pages_make_the_answer(service: TrueHeart, query: ClaimQuery) -> ClaimSet:
    whole = service.claims(query)
    assert whole.next_cursor is None
    for limit in SIZES:
        pages = _pages(service, query, limit)
        claims = tuple(view for page in pages for view in page.claims)
        conflicts = [conflict for page in pages for conflict in page.conflicts]
        assert claims == whole.claims, limit
        assert sorted(conflicts, key=lambda c: c.claim_ids) == list(whole.conflicts), limit
        for page in pages:
            assert len(page.claims) <= limit
            assert (page.as_of, page.known_at) == (whole.as_of, whole.known_at)
            assert list(page.conflicts) == sorted(page.conflicts, key=lambda c: c.claim_ids)
        assert all(page.claims for page in pages[1:])
    return whole


QUERIES: list[dict[str, Any]] = [
    {"as_of": MAY},
    {"as_of": JUNE},
    {"as_of": JULY},
    {"as_of": APRIL},
    {"as_of": JULY, "known_at": APRIL},  # before c-a3, c-s2, the c-x and c-y claims
    {"as_of": JULY, "known_at": MARCH},
    {"as_of": JUNE, "statuses": (CURRENT,)},
    {"as_of": MAY, "statuses": (SUPERSEDED, ENDED, NOT_YET_VALID)},
    {"as_of": JULY, "statuses": (ENDED,)},
    {"as_of": JULY, "statuses": (NOT_YET_VALID,)},
    {"as_of": MAY, "subject": "user:bob"},
    {"as_of": MAY, "subject": "user:ada", "predicate": "prefers_theme"},
    {"as_of": MAY, "predicate": "prefers_theme"},
    {"as_of": MAY, "subject": "user:nobody"},
]


@pytest.mark.parametrize("fields", QUERIES, ids=[str(i) for i in range(len(QUERIES))])
def test_pages_together_are_the_unpaged_answer(service: TrueHeart, fields: dict[str, Any]) -> None:
    _populate(service)
    _assert_pages_make_the_answer(service, ClaimQuery(SCOPE, **fields))


def test_the_fixture_has_what_the_property_is_about(service: TrueHeart) -> None:
    _populate(service)
    may = service.claims(ClaimQuery(SCOPE, MAY))
    statuses = {status for _, status, _ in claim_views(may)}
    assert statuses == {CURRENT, ENDED, NOT_YET_VALID}
    assert [c.claim_ids for c in may.conflicts] == [
        ("c-a0", "c-a1", "c-a2"),
        ("c-b1", "c-b2"),
        ("c-x1", "c-x2"),
        ("c-z0", "c-z1", "c-z2", "c-z3", "c-z4", "c-z5", "c-z6", "c-z7", "c-z8", "c-zz"),
    ]
    july = service.claims(ClaimQuery(SCOPE, JULY))
    assert ("c-a2", SUPERSEDED, ("c-a3",)) in claim_views(july)
    # c-a3 (dark) closed c-a2 (light); c-f3 (sans) became valid beside c-f1 (serif)
    assert [c.claim_ids for c in july.conflicts][:2] == [("c-b1", "c-b2"), ("c-f1", "c-f3")]
    # Sealed claims are not known; the past does not know later claims.
    assert "c-b3" not in [view[0] for view in claim_views(july)]
    past = service.claims(ClaimQuery(SCOPE, JULY, known_at=APRIL))
    assert [view[0] for view in claim_views(past)][:3] == ["c-f1", "c-f2", "c-f3"]


def test_unpaged_answer_is_unchanged(service: TrueHeart) -> None:
    """Without a limit, one answer holds every claim in (subject, predicate, created_at,
    claim_id) order, and every conflict."""
    _populate(service)
    answer = service.claims(ClaimQuery(SCOPE, MAY))
    assert answer.next_cursor is None
    assert [view[0] for view in claim_views(answer)] == [
        "c-f1", "c-f2", "c-f3",
        "c-a1", "c-a2", "c-a0",
        "c-b1", "c-b2",
        "c-s1", "c-s2",
        *[f"c-z{i}" for i in range(9)], "c-zz",
        "c-y1",
        "c-x1", "c-x2",
    ]  # fmt: skip
    assert service.claims(ClaimQuery(SCOPE, MAY, limit=1000)) == answer


def test_a_page_reads_as_far_as_needed_past_claims_it_leaves_out(service: TrueHeart) -> None:
    """Hundreds of superseded claims between the current ones: a page reads on in
    batches until it is full or the claims end."""
    ingest_ids(service, "evt-1")
    previous = None
    for index in range(300):
        claim_id = f"c-{index:03d}"
        service.materialize_claim(
            claim(claim_id, created_at=MARCH + timedelta(minutes=index), supersedes=previous)
        )
        previous = claim_id
    service.materialize_claim(claim("c-other", created_at=APRIL, value="light"))
    service.materialize_claim(claim("c-next", created_at=APRIL, subject="user:bob"))
    query = ClaimQuery(SCOPE, MAY, statuses=(CURRENT,))
    whole = _assert_pages_make_the_answer(service, query)
    assert [view[0] for view in claim_views(whole)] == ["c-299", "c-other", "c-next"]
    assert [c.claim_ids for c in whole.conflicts] == [("c-299", "c-other")]
    (first,) = _pages(service, query, 3)
    assert first == whole
    _assert_pages_make_the_answer(service, ClaimQuery(SCOPE, MAY))


@pytest.mark.parametrize(
    "fields",
    [
        {"statuses": (SUPERSEDED,)},
        {"statuses": (CURRENT,)},
        {"statuses": (ENDED,)},
        {"known_at": APRIL},
    ],
    ids=["superseded", "current", "ended", "past"],
)
def test_pages_across_many_groups_with_claims_left_out(
    service: TrueHeart, fields: dict[str, Any]
) -> None:
    """Forty subjects, each with a superseded claim and its superseder, every fifth with
    a conflicting claim and every seventh with an ended one: pages read on across groups
    whose claims they leave out."""
    ingest_ids(service, "evt-1")
    put = service.materialize_claim
    for index in range(40):
        subject = f"user:{index:02d}"
        put(claim(f"c-{index:02d}-a", created_at=MARCH, subject=subject))
        later: dict[str, Any] = {"created_at": MAY, "supersedes": f"c-{index:02d}-a"}
        put(claim(f"c-{index:02d}-b", subject=subject, value="light", **later))
        if index % 5 == 0:
            put(claim(f"c-{index:02d}-c", created_at=MARCH, subject=subject, value="blue"))
        if index % 7 == 0:
            put(claim(f"c-{index:02d}-d", created_at=MARCH, subject=subject, valid_to=APRIL))
    whole = _assert_pages_make_the_answer(service, ClaimQuery(SCOPE, JUNE, **fields))
    assert whole.claims
    if "known_at" not in fields:
        assert len(whole.conflicts) == 8


def test_a_page_that_ends_inside_a_group_leaves_its_conflict_to_a_later_page(
    service: TrueHeart,
) -> None:
    _populate(service)
    query = ClaimQuery(SCOPE, MAY, subject="user:zed", limit=4)
    first = service.claims(query)
    assert [view[0] for view in claim_views(first)] == ["c-z0", "c-z1", "c-z2", "c-z3"]
    assert first.conflicts == ()
    assert first.next_cursor is not None
    pages = _pages(service, replace(query, limit=None), 4)
    assert [len(page.claims) for page in pages] == [4, 4, 2]
    assert [[c.claim_ids for c in page.conflicts] for page in pages] == [
        [],
        [],
        [(*(f"c-z{i}" for i in range(9)), "c-zz")],
    ]


def test_the_last_page_has_no_cursor(service: TrueHeart) -> None:
    _populate(service)
    whole = service.claims(ClaimQuery(SCOPE, MAY))
    exact = service.claims(ClaimQuery(SCOPE, MAY, limit=len(whole.claims)))
    assert exact.next_cursor is None
    assert exact.claims == whole.claims
    assert service.claims(ClaimQuery(SCOPE, MAY, limit=len(whole.claims) - 1)).next_cursor
    empty = service.claims(ClaimQuery(SCOPE, MAY, subject="user:nobody", limit=5))
    assert empty == ClaimSet(MAY, MAY, (), (), None)


def test_a_page_that_ends_at_the_longest_id_has_a_cursor_that_works(service: TrueHeart) -> None:
    """An ID of 128 characters outside the Basic Multilingual Plane makes the longest
    cursor: every cursor of a walk of one-claim pages works."""
    longest = "\U0001f600" * 128
    ingest_ids(service, "evt-1")
    service.materialize_claim(claim(longest, value="dark"))
    service.materialize_claim(claim("\U0001f601", value="light"))
    seen, cursor = [], None
    for _ in range(3):
        page = service.claims(ClaimQuery(SCOPE, NOW, limit=1, cursor=cursor))
        seen += [view.claim.claim_id for view in page.claims]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert sorted(seen) == [longest, "\U0001f601"]


def test_the_limit_may_change_between_pages(service: TrueHeart) -> None:
    _populate(service)
    whole = service.claims(ClaimQuery(SCOPE, JUNE))
    first = service.claims(ClaimQuery(SCOPE, JUNE, limit=2))
    rest = service.claims(ClaimQuery(SCOPE, JUNE, limit=1000, cursor=first.next_cursor))
    assert first.claims + rest.claims == whole.claims
    assert rest.next_cursor is None
    conflicts = sorted(first.conflicts + rest.conflicts, key=lambda c: c.claim_ids)
    assert tuple(conflicts) == whole.conflicts


def test_claims_added_while_paging_after_the_cursor_appear_later(service: TrueHeart) -> None:
    _populate(service)
    first = service.claims(ClaimQuery(SCOPE, JULY, limit=2))
    assert [view[0] for view in claim_views(first)] == ["c-f1", "c-f2"]
    service.materialize_claim(claim("c-f0", created_at=MARCH, predicate="prefers_font"))
    service.materialize_claim(claim("c-zzz", created_at=JUNE, subject="user:zed", value="red"))
    rest = _pages(service, ClaimQuery(SCOPE, JULY, cursor=first.next_cursor, limit=7), 7)
    later = [view[0] for page in rest for view in claim_views(page)]
    assert "c-f0" not in later  # it sorts before the cursor
    assert later.index("c-zz") + 1 == later.index("c-zzz")  # it sorts after it


@pytest.mark.parametrize("limit", [0, -1, 1001, True, 2.0, "5"])
def test_limit_must_be_from_1_through_1000(limit: object) -> None:
    with pytest.raises(ValidationError, match=msg("limit: must be from 1 through 1000")):
        ClaimQuery(SCOPE, NOW, limit=limit)  # type: ignore[arg-type]


def test_limits_at_the_bounds_are_accepted() -> None:
    assert ClaimQuery(SCOPE, NOW, limit=1).limit == 1
    assert ClaimQuery(SCOPE, NOW, limit=1000).limit == 1000
    assert ClaimQuery(SCOPE, NOW).limit is None


def test_a_cursor_needs_a_limit_and_must_be_text() -> None:
    with pytest.raises(ValidationError, match=msg("cursor: needs a limit")):
        ClaimQuery(SCOPE, NOW, cursor="abc")
    for cursor in ("", 7, b"abc"):
        with pytest.raises(ValidationError, match=msg(SAME_QUERY)):
            ClaimQuery(SCOPE, NOW, limit=5, cursor=cursor)  # type: ignore[arg-type]


def _forged(payload: object) -> str:
    text = json.dumps(payload).encode("ascii")
    return base64.urlsafe_b64encode(text).decode("ascii").rstrip("=")


def test_a_cursor_not_made_by_a_page_is_refused(service: TrueHeart) -> None:
    _populate(service)
    first = service.claims(ClaimQuery(SCOPE, MAY, limit=2))
    assert first.next_cursor is not None
    (version, query_id, claim_id) = json.loads(
        base64.urlsafe_b64decode(first.next_cursor + "=" * (-len(first.next_cursor) % 4))
    )
    listing = service.list_memories(SCOPE, limit=1).next_cursor
    assert listing is not None
    bad = [
        "not a cursor",
        "%%%%",
        first.next_cursor[:-2],
        "x" * 3000,
        "é",
        listing,
        _forged([version, query_id]),
        _forged([version, query_id, 5]),
        _forged(["m1", query_id, claim_id]),
        _forged([version, "0" * 16, claim_id]),
        _forged({"cursor": claim_id}),
        base64.urlsafe_b64encode(b"[" * 1500).decode("ascii"),  # nested too deep to read
    ]
    for cursor in bad:
        with pytest.raises(ValidationError, match=msg(SAME_QUERY)):
            service.claims(ClaimQuery(SCOPE, MAY, limit=2, cursor=cursor))
    unknown = _forged([version, query_id, "c-unknown"])
    with pytest.raises(ValidationError, match=msg("cursor: names a claim that is no longer held")):
        service.claims(ClaimQuery(SCOPE, MAY, limit=2, cursor=unknown))


@pytest.mark.parametrize(
    "other",
    [
        {"scope": OTHER_SCOPE},
        {"as_of": JUNE},
        {"known_at": APRIL},
        {"subject": "user:ada"},
        {"predicate": "prefers_font"},
        {"statuses": (CURRENT,)},
    ],
)
def test_a_cursor_of_another_query_is_refused(service: TrueHeart, other: dict[str, Any]) -> None:
    _populate(service)
    query = ClaimQuery(SCOPE, MAY, limit=1)
    cursor = service.claims(query).next_cursor
    assert cursor is not None
    with pytest.raises(ValidationError, match=msg(SAME_QUERY)):
        service.claims(replace(query, cursor=cursor, **other))
    # the same query with it is fine, and the statuses' order does not matter
    assert service.claims(replace(query, cursor=cursor)).claims
    both = ClaimQuery(SCOPE, MAY, statuses=(CURRENT, ENDED), limit=1)
    swapped = replace(both, statuses=(ENDED, CURRENT))
    assert service.claims(replace(swapped, cursor=service.claims(both).next_cursor)).claims


def test_a_cursor_from_another_scope_is_refused(service: TrueHeart) -> None:
    _populate(service)
    cursor = service.claims(ClaimQuery(OTHER_SCOPE, NOW, limit=1)).next_cursor
    assert cursor is not None
    with pytest.raises(ValidationError, match=msg(SAME_QUERY)):
        service.claims(ClaimQuery(SCOPE, NOW, limit=1, cursor=cursor))


def test_a_cursor_whose_claim_was_deleted_is_refused(service: TrueHeart) -> None:
    ingest_ids(service, "evt-1", "evt-2")
    service.materialize_claim(claim("c-1", ("evt-1",)))
    service.materialize_claim(claim("c-2", ("evt-2",), value="light"))
    first = service.claims(ClaimQuery(SCOPE, NOW, limit=1))
    assert [view[0] for view in claim_views(first)] == ["c-1"]
    service.govern(command(GovernanceAction.DELETE, "evt-1", entity_type=EntityType.RAW_EVENT))
    with pytest.raises(ValidationError, match=msg("cursor: names a claim that is no longer held")):
        service.claims(ClaimQuery(SCOPE, NOW, limit=1, cursor=first.next_cursor))
    assert [view[0] for view in claim_views(service.claims(ClaimQuery(SCOPE, NOW, limit=1)))] == [
        "c-2"
    ]


def test_a_cursor_holds_no_subject_predicate_or_value(service: TrueHeart) -> None:
    ingest_ids(service, "evt-1")
    service.materialize_claim(claim("c-1", subject="user:zqxsecret", value="zqxvalue"))
    service.materialize_claim(claim("c-2", subject="user:zqxsecret", value="zqxother"))
    cursor = service.claims(ClaimQuery(SCOPE, NOW, limit=1)).next_cursor
    assert cursor is not None
    decoded = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    assert "zqx" not in decoded and "prefers" not in decoded
    assert "c-1" in decoded
