"""Which words of a time expression a memory can mention (pure)."""

from __future__ import annotations

import pytest

from trueheart_core.domain.search.mentions import mention_terms


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
