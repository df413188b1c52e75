"""Which words of a time expression a memory can mention (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from trueheart_core.domain.search.mentions import Mentions, mention_terms, mentions_of, period_terms


@pytest.mark.parametrize(
    ("expressions", "expected"),
    [
        (("in June",), {"june"}),
        (("March 2025",), {"march", "2025"}),
        (("in Sept",), {"sept"}),
        (("in 2025",), {"2025"}),
        (("三月",), {"三月"}),
        (("三月に",), {"三月"}),
        (("十二月",), {"十二"}),  # not 二月: December is no question about February
        (("十一月に",), {"十一"}),
        (("二月到十二月",), {"二月", "十二"}),
        (("2025年3月",), {"2025"}),
    ],
)
def test_absolute_names_of_a_period_are_mentions(
    expressions: tuple[str, ...], expected: set[str]
) -> None:
    assert mention_terms(expressions) == expected


@pytest.mark.parametrize(
    "expression",
    ["yesterday", "last week", "3 days ago", "recently", "昨天", "先週", "上个月", "最近"],
)
def test_relative_words_are_never_mentions(expression: str) -> None:
    assert mention_terms((expression,)) == frozenset()


def test_years_outside_the_recognised_range_and_other_numbers_are_not_mentions() -> None:
    assert mention_terms(("in 1969", "in 2101", "room 12")) == frozenset()
    assert mention_terms(()) == frozenset()


def _us(year: int, month: int = 1, day: int = 1) -> int:
    return int(datetime(year, month, day, tzinfo=UTC).timestamp()) * 1_000_000


@pytest.mark.parametrize(
    ("start", "end", "terms"),
    [
        (_us(2026), _us(2027), {"2026"}),
        (_us(2026, 2), _us(2026, 3), {"february", "feb", "二月"}),
        (_us(2025, 12), _us(2026), {"december", "dec", "十二"}),
        (_us(2025, 9), _us(2025, 10), {"september", "sep", "sept", "九月"}),
        (_us(2026, 5), _us(2026, 6), {"may", "五月"}),
        (_us(1969), _us(1970), set()),  # a year no memory is taken to name
        (_us(2026, 3, 9), _us(2026, 3, 16), set()),  # a week
        (_us(2026, 1), _us(2026, 3), set()),  # two months
        (_us(2026, 1, 2), _us(2027, 1, 2), set()),  # not a calendar year
        (None, _us(2025), set()),
        (_us(2024), None, set()),
        # The last months a datetime holds: nothing after them ends a period.
        (_us(9999, 1), _us(9999, 2), {"january", "jan", "一月"}),
        (_us(9999, 12), _us(9999, 12, 31), set()),
        (_us(9999, 1), _us(9999, 12, 31), set()),
    ],
)
def test_a_calendar_year_or_month_is_named_by_its_words(
    start: int | None, end: int | None, terms: set[str]
) -> None:
    assert period_terms(start, end) == terms


def _holds(mentions: Mentions, text: str) -> bool:
    return mentions.held_by(set(text.lower().replace(",", " ").split()).__contains__)


def test_a_day_is_mentioned_by_a_name_of_its_month_beside_its_number() -> None:
    day = mentions_of([("on December 8", _us(2025, 12, 8), _us(2025, 12, 9))])
    assert _holds(day, "dentist on dec 8") and _holds(day, "december 8th party")
    assert not _holds(day, "party on december 20") and not _holds(day, "8 apples")
    assert day.names() == {"december", "dec"} and day.need_company()
    # A relative day is named the same way.
    yesterday = mentions_of([("yesterday", _us(2026, 3, 1), _us(2026, 3, 2))])
    assert _holds(yesterday, "march 1st") and not _holds(yesterday, "yesterday")


def test_may_needs_a_number_or_a_year_beside_it() -> None:
    may = mentions_of([("in May", _us(2026, 5), _us(2026, 6))])
    assert _holds(may, "dentist on may 3") and _holds(may, "trip in may 2026")
    assert not _holds(may, "the user may prefer tea")
    assert _holds(may, "五月 に")  # the month's bigram needs no company
    june = mentions_of([("in June", _us(2026, 6), _us(2026, 7))])
    assert _holds(june, "flying to seoul in june") and not june.need_company()


def test_no_closed_period_mentions_nothing() -> None:
    assert not mentions_of([])
    assert not mentions_of([("last week", _us(2026, 3, 2), _us(2026, 3, 9))])
    assert not mentions_of([("last week", _us(2026, 3, 2), _us(2026, 3, 9))]).held_by(
        lambda word: True
    )


def test_a_year_names_a_period_that_holds_all_of_it() -> None:
    march = mentions_of([("March 2025", _us(2025, 3), _us(2025, 4))])
    assert not _holds(march, "taxes for 2025") and _holds(march, "trip in march")
    assert _holds(mentions_of([("in 2025", _us(2025), _us(2026))]), "taxes for 2025")
    both = mentions_of([("from 2024 to 2025", _us(2024), _us(2026))])
    assert _holds(both, "moved in 2024") and _holds(both, "taxes for 2025")
