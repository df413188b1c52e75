"""Stop words a query writes as names or abbreviations ("US", "IT", "Will", "May") are
searched like any other word; the same words written as function words are left out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from conformance_builders import NOW, SCOPE, check_capsule, event, memory

from trueheart_core import MemoryCapsule, SearchQuery, TrueHeart

# NOW is 2026-08-13 12:00 UTC.
YESTERDAY = datetime(2026, 8, 12, tzinfo=UTC)


def _store(service: TrueHeart, memories: dict[str, tuple[str, datetime]]) -> None:
    service.ingest_event(event("evt-1", recall_for=timedelta(days=3650)))
    for memory_id, (content, created) in memories.items():
        service.materialize_once(memory(memory_id, ("evt-1",), content=content, created_at=created))


def _search(service: TrueHeart, text: str) -> MemoryCapsule:
    capsule = service.search(SearchQuery(SCOPE, text, NOW, budget_tokens=10_000))
    check_capsule(capsule)
    return capsule


def _ids(capsule: MemoryCapsule) -> list[str]:
    return [item.memory.memory_id for item in capsule.items]


OLD = datetime(2026, 5, 1, tzinfo=UTC)


def test_an_abbreviation_in_capitals_is_searched(service: TrueHeart) -> None:
    _store(
        service,
        {
            "renewal": ("Passport renewed.", OLD),
            "visa": ("Applied for a US visa, passport photos attached.", OLD),
            "laptop": ("The IT desk replaced my laptop.", OLD),
            "desk": ("Bought a standing desk.", OLD),
        },
    )
    assert _ids(_search(service, "my US passport"))[0] == "visa"
    assert _ids(_search(service, "which desk did IT use?"))[0] == "laptop"


def test_a_name_that_is_a_stop_word_is_searched(service: TrueHeart) -> None:
    _store(
        service,
        {
            "budget": ("Budget review moved.", OLD),
            "will": ("Will said the budget for the review is far too tight.", OLD),
        },
    )
    capsule = _search(service, "What did Will tell me about the budget?")
    assert _ids(capsule) == ["will", "budget"]
    # "will" as a modal verb at the start of a question is still left out.
    assert _ids(_search(service, "Will the budget review move?"))[0] == "budget"


def test_a_given_name_with_a_possessive_is_a_name_where_a_question_begins(
    service: TrueHeart,
) -> None:
    _store(
        service,
        {
            "anna": ("Anna's birthday: May 3", OLD + timedelta(days=60)),
            "will": ("Will's birthday is on June 2; he wants a fountain pen", OLD),
        },
    )
    assert _ids(_search(service, "Will's birthday?"))[0] == "will"


def test_a_question_about_someone_in_a_period_is_about_them(service: TrueHeart) -> None:
    _store(
        service,
        {
            "sink": ("Will fixed the kitchen sink.", YESTERDAY + timedelta(hours=10)),
            "dinner": ("Cooked pad thai for dinner.", YESTERDAY + timedelta(hours=19)),
        },
    )
    # With "Will" a name, the question names more than its period: it is about Will.
    assert _ids(_search(service, "What did Will do yesterday?")) == ["sink"]
    # Every word but the period's a function word: the whole day, newest first.
    assert _ids(_search(service, "What did I do yesterday?")) == ["dinner", "sink"]
