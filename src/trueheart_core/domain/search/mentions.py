"""Which words of a time expression a memory can *mention* (pure).

"Why am I going to Seoul in June?" asks about a memory that says "June", whenever it
was written; "Where did I go hiking in March?" about one written in March that says
"today". A search cannot tell the two apart from the question alone, so a memory that
holds a word naming the calendar period of the question's time expression counts as
being about that period, as a memory created in it does.

Only words that name a period absolutely count: English month names and their
abbreviations, years from 1970 to 2100, and the Chinese and Japanese month bigrams
(``三月``, and only ``十一`` and ``十二`` of ``十一月`` and ``十二月``, whose second
bigram is another month's). Relative words
("yesterday", "last week", 昨天) never do: a memory that says "yesterday" means the
day before it was written.
"""

from __future__ import annotations

from collections.abc import Iterable

from trueheart_core.domain.search.tokenize import tokenize

__all__ = ["mention_terms"]

_MONTH_NAMES = """
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec
"""
_MONTHS = frozenset(_MONTH_NAMES.split())
_NUMERALS = frozenset("一二三四五六七八九十")


def _names_a_period(term: str) -> bool:
    if term in _MONTHS:
        return True
    if term.isascii() and term.isdigit() and len(term) == 4:
        return 1970 <= int(term) <= 2100
    return (len(term) == 2 and term[0] in _NUMERALS and term[1] == "月") or term in ("十一", "十二")


_TWO_NUMERAL_MONTHS = ("十一月", "十二月")
"""Months whose bigrams hold another month's: 十二月 (December) is 十二 and 二月
(February)."""


def _terms(text: str) -> Iterable[str]:
    """The terms of one expression; 十一月 and 十二月 give only 十一 and 十二, so that a
    question about December is not one about February as well."""
    for month in _TWO_NUMERAL_MONTHS:
        if month in text:
            yield month[:2]
            text = text.replace(month, " ")
    yield from tokenize(text)


def mention_terms(expressions: Iterable[str]) -> frozenset[str]:
    """The terms of these time expressions (as the tokeniser gives them) that name a
    calendar period absolutely."""
    return frozenset(term for text in expressions for term in _terms(text) if _names_a_period(term))
