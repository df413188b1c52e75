"""Time in search queries: a period limits the candidates (by creation, by validity for
claims, or by what a memory mentions), an order puts the relevant newest or oldest
first, and the capsule says how the query's time was read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conformance_builders import (
    NOW,
    SCOPE,
    check_capsule,
    claim,
    event,
    memory,
)
from semantic_builders import ConceptEmbedder

from trueheart_core import (
    ClaimStatus,
    HashingEmbedder,
    MemoryCapsule,
    SearchQuery,
    TimeOrder,
    TimeTrace,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Capability, Repository

# NOW is 2026-08-13 12:00 UTC, a Thursday.
MARCH = datetime(2026, 3, 14, 9, 0, tzinfo=UTC)
APRIL = datetime(2026, 4, 20, 9, 0, tzinfo=UTC)
JUNE = datetime(2026, 6, 2, 9, 0, tzinfo=UTC)
LAST_WEEK = datetime(2026, 8, 5, 9, 0, tzinfo=UTC)  # Wednesday of the week before NOW's


def _store(service: TrueHeart, memories: dict[str, tuple[str, datetime]]) -> None:
    service.ingest_event(event("evt-1", recall_for=timedelta(days=3650)))
    for memory_id, (content, created) in memories.items():
        service.materialize_once(memory(memory_id, ("evt-1",), content=content, created_at=created))


def _search(service: TrueHeart, text: str, **fields: Any) -> MemoryCapsule:
    capsule = service.search(SearchQuery(SCOPE, text, NOW, budget_tokens=10_000, **fields))
    check_capsule(capsule)
    return capsule


def _ids(capsule: MemoryCapsule) -> list[str]:
    return [item.memory.memory_id for item in capsule.items]


HIKES = {
    "hike-march": ("went hiking on the ridge today", MARCH),
    "hike-april": ("went hiking on the ridge today", APRIL),
    "hike-june": ("went hiking by the lake today", JUNE),
    "trip-seoul": ("flying to Seoul in June for the conference", MARCH),
    "trip-busan": ("flying to Busan in June", APRIL),
    "note": ("bought new hiking boots", LAST_WEEK),
}


def test_a_month_limits_the_candidates_to_memories_created_in_it(service: TrueHeart) -> None:
    _store(service, HIKES)
    capsule = _search(service, "Where did I go hiking in March?")
    assert _ids(capsule) == ["hike-march"]
    assert capsule.time == TimeTrace(
        "in March",
        datetime(2026, 3, 1, tzinfo=UTC),
        datetime(2026, 4, 1, tzinfo=UTC),
        None,
        True,
    )
    assert capsule.matched == 1
    # without reading time, every hike is a match and the period is not applied
    words = _search(service, "Where did I go hiking in March?", time_aware=False)
    assert set(_ids(words)) == {"hike-march", "hike-april", "hike-june", "note"}
    assert words.time is None


def test_a_memory_that_mentions_the_month_is_about_it_whenever_written(
    service: TrueHeart,
) -> None:
    _store(service, HIKES)
    # created in March and April, but both say "June": only the one about Seoul matches
    capsule = _search(service, "Why am I flying to Seoul in June?")
    assert _ids(capsule) == ["trip-seoul", "trip-busan"]
    assert capsule.time is not None and capsule.time.filtered
    # the June hike was created in June: it is in the period but shares no word
    assert "hike-june" not in _ids(capsule)


def test_a_question_about_december_in_chinese_is_none_about_february(
    service: TrueHeart,
) -> None:
    """十二月 is the pairs 十二 and 二月: the question looks for 十二 only."""
    _store(
        service,
        {"feb-trip": ("二月去北京出差", MARCH), "dec-trip": ("十二月去上海出差", MARCH)},
    )
    capsule = _search(service, "十二月去哪里出差")
    assert capsule.time is not None and capsule.time.filtered
    assert _ids(capsule) == ["dec-trip"]


def test_the_bound_of_an_open_period_is_not_a_mention(service: TrueHeart) -> None:
    """ "before 2025" ends at 2025: a memory that says 2025 is about a year outside it,
    and one that says 2024 is inside it only by being written then."""
    _store(
        service,
        {
            "moved-2019": ("moved to Lisbon for work", datetime(2019, 6, 1, tzinfo=UTC)),
            "moved-2025": ("moved to Berlin in 2025 for work", datetime(2026, 1, 5, tzinfo=UTC)),
            "plan-2024": (
                "goal for 2024: move to Oslo for work",
                datetime(2023, 12, 20, tzinfo=UTC),
            ),
        },
    )
    before = _search(service, "where did I move for work before 2025?")
    assert before.time is not None and before.time.filtered
    assert "moved-2025" not in _ids(before)
    assert set(_ids(before)) == {"moved-2019", "plan-2024"}
    after = _search(service, "where did I move for work after 2024?")
    assert after.time is not None and after.time.filtered
    assert _ids(after) == ["moved-2025"]


def test_a_calendar_year_said_relatively_is_named_by_its_number(service: TrueHeart) -> None:
    """ "this year" is 2026 (``NOW``'s): a memory written last December about 2026 says
    so, and is about the period as much as one written in it."""
    _store(
        service,
        {
            "goals-2026": ("goals for 2026: run a marathon", datetime(2025, 12, 28, tzinfo=UTC)),
            "goals-2025": ("goals for 2025: learn to swim", datetime(2024, 12, 30, tzinfo=UTC)),
        },
    )
    capsule = _search(service, "what are my goals this year?")
    assert capsule.time is not None and capsule.time.filtered
    assert _ids(capsule) == ["goals-2026"]


def test_relative_words_are_never_mentions(service: TrueHeart) -> None:
    _store(
        service,
        {
            "said-last-week": ("last week I went hiking", JUNE),
            "hike-last-week": ("went hiking today", LAST_WEEK),
        },
    )
    capsule = _search(service, "where did I go hiking last week?")
    assert _ids(capsule) == ["hike-last-week"]
    assert capsule.time is not None
    assert (capsule.time.start, capsule.time.end) == (
        datetime(2026, 8, 3, tzinfo=UTC),
        datetime(2026, 8, 10, tzinfo=UTC),
    )


def test_an_empty_period_falls_back_to_every_time_and_says_so(service: TrueHeart) -> None:
    _store(service, HIKES)
    capsule = _search(service, "Where did I go hiking in 2024?")
    assert set(_ids(capsule)) == {"hike-march", "hike-april", "hike-june", "note"}
    assert capsule.time is not None
    assert capsule.time.filtered is False
    assert capsule.time.diagnostics == ("time_period_empty",)
    assert capsule.time.start == datetime(2024, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "as_of"),
    [
        ("what happened last month", datetime(9999, 2, 10, tzinfo=UTC)),
        ("what did I do yesterday", datetime(9999, 12, 2, tzinfo=UTC)),
        ("hiking on December 1", datetime.max.replace(tzinfo=UTC)),
    ],
)
def test_a_period_at_the_end_of_the_calendar_is_searched(
    service: TrueHeart, text: str, as_of: datetime
) -> None:
    # A month or year that ends where no datetime reaches names no words; the search
    # answers like any other.
    _store(service, HIKES)
    capsule = service.search(SearchQuery(SCOPE, text, as_of, budget_tokens=10_000))
    check_capsule(capsule)
    assert capsule.time is not None
    assert capsule.time.start is not None and capsule.time.start.year == 9999


def test_most_recently_puts_the_newest_relevant_memory_first(service: TrueHeart) -> None:
    _store(
        service,
        {
            "dinner-old": ("had dinner at Casa Lola tonight", MARCH),
            "dinner-new": ("had dinner at Bistro Nord tonight", JUNE),
            "dinner-mid": ("had dinner at the Salt Room tonight", APRIL),
            "unrelated": ("renewed the car insurance", LAST_WEEK),
        },
    )
    capsule = _search(service, "Where did I have dinner most recently?")
    assert _ids(capsule) == ["dinner-new", "dinner-mid", "dinner-old"]
    assert capsule.time == TimeTrace("most recently", None, None, TimeOrder.NEWEST, False)
    first = _search(service, "where did I have dinner for the first time?")
    assert _ids(first) == ["dinner-old", "dinner-mid", "dinner-new"]
    assert first.time is not None and first.time.order is TimeOrder.OLDEST
    # the ranks follow the new order; the scores are the relevance scores
    assert [entry.rank for entry in capsule.trace] == [1, 2, 3]


def test_an_order_keeps_weak_matches_after_the_relevant_ones(service: TrueHeart) -> None:
    _store(
        service,
        {
            "strong-old": ("dinner at Casa Lola with Ada and Bo", MARCH),
            "weak-new": ("Ada", JUNE),
        },
    )
    capsule = _search(service, "dinner with Ada at Casa Lola most recently")
    assert _ids(capsule) == ["strong-old", "weak-new"]


def test_claims_are_in_a_period_by_their_validity(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1", recall_for=timedelta(days=3650)))
    service.materialize_claim(
        claim(
            "claim-paris",
            predicate="lives_in",
            value="Paris",
            created_at=JUNE,
            valid_from=datetime(2025, 1, 1, tzinfo=UTC),
            valid_to=datetime(2025, 9, 1, tzinfo=UTC),
        )
    )
    service.materialize_claim(
        claim(
            "claim-rome",
            predicate="lives_in",
            value="Rome",
            created_at=datetime(2025, 5, 1, tzinfo=UTC),
            valid_from=datetime(2025, 9, 1, tzinfo=UTC),
        )
    )
    statuses = (ClaimStatus.CURRENT, ClaimStatus.ENDED)
    capsule = _search(service, "where did I live in 2025?", claim_statuses=statuses)
    assert set(_ids(capsule)) == {"claim-paris", "claim-rome"}
    early = _search(service, "lives in, since March 2026", claim_statuses=statuses)
    # Paris ended in 2025 (though recorded in June 2026); Rome is still valid
    assert _ids(early) == ["claim-rome"]
    assert early.time is not None and early.time.filtered


@pytest.mark.requires(Capability.VECTORS)
def test_the_period_limits_the_semantic_candidates_too(repository: Repository) -> None:
    service = TrueHeart(repository, embedder=ConceptEmbedder())
    _store(
        service,
        {
            "brief-march": ("prefers concise summaries", MARCH),
            "brief-june": ("answers should be short", JUNE),
        },
    )
    everywhere = _search(service, "terse replies")
    assert set(_ids(everywhere)) == {"brief-march", "brief-june"}
    capsule = _search(service, "terse replies in June")
    assert _ids(capsule) == ["brief-june"]
    assert capsule.semantic is not None
    assert capsule.time is not None and capsule.time.filtered


@pytest.mark.requires(Capability.VECTORS)
def test_a_period_keeps_the_order_of_a_hybrid_ranking(repository: Repository) -> None:
    """A hybrid search limited to a period ranks its candidates as the same search over
    every time does: the fused order's own tie-breaks (similarity, then keyword rank)
    come before clarity and creation time. With the term-based HashingEmbedder, both
    memories fuse to the same score; the one with the higher BM25 stays first although
    the other is newer."""
    service = TrueHeart(repository, embedder=HashingEmbedder())
    memories = {
        "ryokan-twice": ("Ryokan Kyoto ryokan booked.", MARCH),
        "ryokan-once": ("Ryokan Kyoto booked.", MARCH + timedelta(hours=1)),
    }
    filler = "Notes about groceries, laundry, the weather and other errands " * 3
    memories.update({f"fill-{i}": (filler, MARCH + timedelta(days=i)) for i in range(6)})
    _store(service, memories)
    lexical = _search(service, "ryokan kyoto in March", semantic=False)
    hybrid = _search(service, "ryokan kyoto in March", semantic=True)
    assert hybrid.semantic is not None and hybrid.time is not None and hybrid.time.filtered
    assert _ids(lexical)[:2] == ["ryokan-twice", "ryokan-once"]
    assert _ids(hybrid)[:2] == _ids(lexical)[:2]
    assert _ids(hybrid)[:2] == _ids(_search(service, "ryokan kyoto", semantic=True))[:2]


def test_time_aware_must_be_a_bool() -> None:
    with pytest.raises(ValidationError, match="time_aware: must be a bool"):
        SearchQuery(SCOPE, "x", NOW, time_aware=1)  # type: ignore[arg-type]


def test_the_time_trace_is_checked() -> None:
    with pytest.raises(ValidationError, match="expression: must be a non-blank string"):
        TimeTrace(" ", None, None, None, False)
    with pytest.raises(ValidationError, match="order: must be a TimeOrder or None"):
        TimeTrace("latest", None, None, "newest", False)  # type: ignore[arg-type]
    naive = datetime(2026, 1, 1)
    with pytest.raises(ValidationError):
        TimeTrace("in 2026", naive, None, None, True)


@pytest.mark.requires(Capability.VECTORS)
def test_claims_are_semantic_candidates_of_a_period_by_their_validity(
    repository: Repository,
) -> None:
    service = TrueHeart(repository, embedder=ConceptEmbedder())
    service.ingest_event(event("evt-1", recall_for=timedelta(days=3650)))
    # Recorded in June 2026 about 2025; only the concept "dark theme" links the query.
    service.materialize_claim(
        claim(
            "claim-theme",
            value="dark",
            created_at=JUNE,
            valid_from=datetime(2025, 2, 1, tzinfo=UTC),
            valid_to=datetime(2025, 6, 1, tzinfo=UTC),
        )
    )
    service.materialize_once(
        memory("note-2025", ("evt-1",), content="night mode", created_at=MARCH)
    )
    statuses = (ClaimStatus.CURRENT, ClaimStatus.ENDED)
    capsule = _search(service, "night in 2025", claim_statuses=statuses, semantic=True)
    assert capsule.time is not None and capsule.time.filtered
    assert _ids(capsule) == ["claim-theme"]
    (entry,) = capsule.trace
    assert "semantic" in {signal.source.value for signal in entry.signals}


def test_a_day_is_mentioned_by_its_month_beside_its_number(service: TrueHeart) -> None:
    """A memory written before the day that names it ("Dec 8" or "December 8th") is about
    it, whichever name of the month either says; one that names another day of the
    month is not."""
    _store(
        service,
        {
            "appt-short": ("dentist appointment on Aug 2 at 9:30", JUNE),
            "appt-long": ("dentist appointment on August 2nd", JUNE),
            "other-day": ("dentist again on August 20", JUNE),
            "in-it": ("dentist said to floss", datetime(2026, 8, 2, 10, tzinfo=UTC)),
        },
    )
    for question in ("dentist on August 2", "dentist on Aug 2", "dentist on 2 August"):
        capsule = _search(service, question)
        assert capsule.time is not None and capsule.time.filtered, question
        assert sorted(_ids(capsule)) == ["appt-long", "appt-short", "in-it"], question


def test_may_names_the_month_only_beside_a_number_or_a_year(service: TrueHeart) -> None:
    """ "may" is mostly the verb: a memory that says it mentions May only beside a day's
    number or a year; memories created in May are about May whatever they say."""
    may = datetime(2026, 5, 10, 9, tzinfo=UTC)
    _store(
        service,
        {
            "verb": ("the user may prefer green tea", LAST_WEEK),
            "verb-2": ("the parcel may arrive late", LAST_WEEK),
            "dated": ("dentist appointment on May 3", MARCH),
            "yearly": ("lisbon trip planned for May 2026", MARCH),
            "in-may": ("started a pottery class", may),
        },
    )
    capsule = _search(service, "What did I do in May?")
    assert capsule.time is not None and capsule.time.filtered
    assert sorted(_ids(capsule)) == ["dated", "in-may", "yearly"]
    # In a question with other words too: no memory about May says "green tea", so the
    # answer falls back to every time and says so.
    tea = _search(service, "green tea in May")
    assert tea.time is not None and not tea.time.filtered
    assert tea.time.diagnostics == ("time_period_empty",)
    assert _ids(_search(service, "dentist in May")) == ["dated"]


def test_memories_that_lack_the_company_do_not_hide_one_that_has_it(
    service: TrueHeart,
) -> None:
    """A question about May alone reads on past the memories that say "may" beside no
    number, however many outrank the one that names May 3."""
    memories = {f"verb-{n}": ("it may rain", MARCH) for n in range(40)}
    memories["dated"] = ("dentist appointment on May 3 with doctor Alvarez", MARCH)
    _store(service, memories)
    capsule = service.search(SearchQuery(SCOPE, "What did I do in May?", NOW, limit=5))
    check_capsule(capsule)
    assert _ids(capsule) == ["dated"]
    assert capsule.time is not None and capsule.time.filtered


def test_a_year_alone_is_no_mention_of_a_month_of_it(service: TrueHeart) -> None:
    """ "March 2025" is one month: a memory that says only "2025" is about the year, not
    that month; one that says "March" is."""
    _store(
        service,
        {
            "yearly": ("tax papers for 2025 filed", datetime(2026, 4, 2, tzinfo=UTC)),
            "monthly": ("tax papers for march filed", datetime(2026, 4, 2, tzinfo=UTC)),
        },
    )
    capsule = _search(service, "tax papers in March 2025")
    assert capsule.time is not None and capsule.time.filtered
    assert _ids(capsule) == ["monthly"]
