"""Questions about a period that name nothing else ("what did I do yesterday?"): the
answer is the memories about the period in time order, never those of every time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conformance_builders import NOW, SCOPE, check_capsule, claim, event, memory
from semantic_builders import ConceptEmbedder

from trueheart_core import (
    ClaimStatus,
    MemoryCapsule,
    SearchQuery,
    TimeOrder,
    TimeTrace,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.ports import Capability, Repository
from trueheart_core.service.records import scope_key, to_us

# NOW is 2026-08-13 12:00 UTC, a Thursday.
YESTERDAY = datetime(2026, 8, 12, tzinfo=UTC)
LAST_WEEK = datetime(2026, 8, 3, tzinfo=UTC)
JUNE = datetime(2026, 6, 2, 9, 0, tzinfo=UTC)
MARCH = datetime(2026, 3, 14, 9, 0, tzinfo=UTC)
ENDED_TOO = (ClaimStatus.CURRENT, ClaimStatus.NOT_YET_VALID, ClaimStatus.ENDED)

DAYS = {
    "hike": ("Went hiking on the ridge with Sam.", YESTERDAY + timedelta(hours=9)),
    "dinner": ("Cooked pad thai for dinner.", YESTERDAY + timedelta(hours=19)),
    "report": ("Finished the quarterly report.", LAST_WEEK + timedelta(days=2, hours=15)),
    "films": ("I do not like horror films.", datetime(2025, 6, 1, tzinfo=UTC)),
    "rome": ("What I did in Rome: saw the Colosseum.", datetime(2025, 5, 2, tzinfo=UTC)),
}


def _store(service: TrueHeart, memories: dict[str, tuple[str, datetime]], **fields: Any) -> None:
    service.ingest_event(event("evt-1", recall_for=timedelta(days=3650)))
    for memory_id, (content, created) in memories.items():
        service.materialize_once(
            memory(memory_id, ("evt-1",), content=content, created_at=created, **fields)
        )


def _search(service: TrueHeart, text: str, **fields: Any) -> MemoryCapsule:
    fields.setdefault("budget_tokens", 10_000)
    capsule = service.search(SearchQuery(SCOPE, text, NOW, **fields))
    check_capsule(capsule)
    return capsule


def _ids(capsule: MemoryCapsule) -> list[str]:
    return [item.memory.memory_id for item in capsule.items]


@pytest.mark.parametrize(
    "text",
    [
        "What did I do yesterday?",
        "what happened yesterday?",
        "yesterday",
        "Anything new yesterday?",
        "What was I up to yesterday?",
    ],
)
def test_a_question_about_yesterday_alone_is_answered_with_yesterday(
    service: TrueHeart, text: str
) -> None:
    _store(service, DAYS)
    capsule = _search(service, text)
    assert _ids(capsule) == ["dinner", "hike"]  # newest first
    assert capsule.time == TimeTrace(
        "yesterday",
        YESTERDAY,
        YESTERDAY + timedelta(days=1),
        None,
        True,
        ("time_only",),
    )
    assert [entry.score for entry in capsule.trace] == [0.0, 0.0]
    assert capsule.matched == 2
    assert capsule.semantic is None


def test_last_week_alone_and_its_oldest_first(service: TrueHeart) -> None:
    _store(
        service,
        {
            **DAYS,
            "tyres": ("Changed the winter tyres.", LAST_WEEK + timedelta(days=4)),
            "dentist": ("Dentist appointment, all fine.", LAST_WEEK),
        },
    )
    capsule = _search(service, "What did I do last week?")
    assert _ids(capsule) == ["tyres", "report", "dentist"]
    assert capsule.time is not None and capsule.time.filtered
    first = _search(service, "What did I do for the first time last week?")
    assert _ids(first) == ["dentist", "report", "tyres"]
    assert first.time is not None
    assert first.time.order is TimeOrder.OLDEST
    assert first.time.diagnostics == ("time_only",)


def test_an_empty_period_gives_an_empty_answer_not_every_time(service: TrueHeart) -> None:
    _store(service, DAYS)
    capsule = _search(service, "What did I do in 2024?")
    assert capsule.items == () and capsule.trace == () and capsule.matched == 0
    assert capsule.time is not None
    assert capsule.time.filtered is True
    assert capsule.time.diagnostics == ("time_only", "time_period_empty")


def test_the_answer_holds_claims_made_and_valid_in_the_period_and_memories_naming_it(
    service: TrueHeart,
) -> None:
    _store(
        service,
        {
            "hike-june": ("went hiking by the lake today", JUNE),
            "trip-seoul": ("flying to Seoul in June for the conference", MARCH),
            "hike-march": ("went hiking on the ridge today", MARCH),
        },
    )
    service.materialize_claim(
        claim(
            "claim-june",
            predicate="works_at",
            value="Acme",
            created_at=LAST_WEEK,
            valid_from=datetime(2026, 5, 1, tzinfo=UTC),
            valid_to=datetime(2026, 7, 1, tzinfo=UTC),
        )
    )
    service.materialize_claim(
        claim(
            "claim-made-in-june",
            predicate="team",
            value="Platform",
            created_at=JUNE + timedelta(hours=1),
            valid_from=datetime(2026, 6, 1, tzinfo=UTC),
        )
    )
    service.materialize_claim(
        claim(
            "claim-2025",
            predicate="lives_in",
            value="Rome",
            created_at=JUNE,
            valid_from=datetime(2025, 1, 1, tzinfo=UTC),
            valid_to=datetime(2025, 9, 1, tzinfo=UTC),
        )
    )
    capsule = _search(service, "What did I do in June?", claim_statuses=ENDED_TOO)
    # by created_at, newest first: the claim recorded in June and valid in it, the memory
    # created in June, the memory written in March that names June. Neither the claim
    # recorded last week about June (valid in June, recorded outside it) nor the one
    # recorded in June about 2025 (not valid in June) is read.
    assert _ids(capsule) == ["claim-made-in-june", "hike-june", "trip-seoul"]
    assert capsule.items[0].claim is not None
    assert capsule.time is not None and capsule.time.diagnostics == ("time_only",)


def test_the_window_is_the_newest_memories_of_the_period(service: TrueHeart) -> None:
    days = {
        f"day-{hour:02d}": (f"entry number {hour}", YESTERDAY + timedelta(hours=hour))
        for hour in range(8)
    }
    _store(service, {**DAYS, **days})
    capsule = _search(service, "what happened yesterday", limit=2)
    assert _ids(capsule) == ["dinner", "hike"]
    assert [entry.memory_id for entry in capsule.trace] == ["dinner", "hike", "day-07", "day-06"]
    oldest = _search(service, "what did I do for the first time yesterday", limit=2)
    assert _ids(oldest) == ["day-00", "day-01"]


def test_the_query_filters_still_apply(service: TrueHeart) -> None:
    _store(service, DAYS)
    service.materialize_once(
        memory(
            "task",
            ("evt-1",),
            content="Renewed the passport.",
            kind="task",
            trust=TrustLevel.UNTRUSTED,
            created_at=YESTERDAY + timedelta(hours=12),
        )
    )
    assert _ids(_search(service, "yesterday")) == ["dinner", "task", "hike"]
    assert _ids(_search(service, "yesterday", kinds=("task",))) == ["task"]
    assert _ids(_search(service, "yesterday", min_trust=TrustLevel.OBSERVED)) == [
        "dinner",
        "hike",
    ]
    # a query that is not time_aware is searched as words, as before
    assert _search(service, "yesterday", time_aware=False).time is None


@pytest.mark.requires(Capability.VECTORS)
def test_a_hybrid_search_answers_the_same_without_the_embedder(repository: Repository) -> None:
    embedder = ConceptEmbedder()
    service = TrueHeart(repository, embedder=embedder, clock=lambda: NOW)
    _store(service, DAYS)
    capsule = _search(service, "What did I do yesterday?")
    assert _ids(capsule) == ["dinner", "hike"]
    assert capsule.semantic is None
    assert capsule.time is not None and capsule.time.diagnostics == ("time_only",)
    assert embedder.queries == []
    # a question with content words is still a hybrid search
    assert _search(service, "hiking yesterday").semantic is not None


def test_the_period_walk_orders_ties_by_id_and_stops_at_the_limit(
    service: TrueHeart, repository: Repository
) -> None:
    same = YESTERDAY + timedelta(hours=10)
    _store(
        service,
        {
            "b": ("second", same),
            "a": ("first", same),
            "c": ("third", same),
            "early": ("early", YESTERDAY),
            "today": ("today", NOW - timedelta(hours=1)),
        },
    )
    period = (to_us(YESTERDAY), to_us(YESTERDAY + timedelta(days=1)))

    def walk(newest: bool, limit: int) -> list[str]:
        with repository.unit_of_work("search", write=False) as uow:
            found = uow.search.in_period(
                scope_key(SCOPE),
                period,
                to_us(NOW),
                (),
                None,
                ["current", "not_yet_valid"],
                newest,
                limit,
            )
        return [candidate.memory_id for candidate in found]

    assert walk(True, 10) == ["a", "b", "c", "early"]
    assert walk(False, 10) == ["early", "c", "b", "a"]
    assert walk(True, 2) == ["a", "b"]
    assert walk(False, 2) == ["early", "c"]
    assert walk(True, 0) == []
