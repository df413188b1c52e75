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
day before it was written. A period that is one calendar year or month, however the
question says it ("this year", "last month", 去年), is also named by that year, or by
that month's English names and its Chinese and Japanese bigram (``period_terms``).

Two rules need company (:class:`Mentions`, built by :func:`mentions_of`). A period of
one calendar day is mentioned by a name of its month beside its day's number ("Dec 8",
"December 8th"), not by the month's name alone, which any day of it shares. And
``may``, far more often the verb than the month, names May only beside a day's number
or a year ("May 3", "May 2025"). A year names only a period that holds all of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import MAXYEAR, UTC, datetime

from trueheart_core.domain.search.tokenize import tokenize

__all__ = ["NO_MENTIONS", "Mentions", "mention_terms", "mentions_of", "period_terms"]

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


_ENGLISH_MONTHS = (
    ("january", "jan"),
    ("february", "feb"),
    ("march", "mar"),
    ("april", "apr"),
    ("may",),
    ("june", "jun"),
    ("july", "jul"),
    ("august", "aug"),
    ("september", "sep", "sept"),
    ("october", "oct"),
    ("november", "nov"),
    ("december", "dec"),
)
_CJK_MONTHS = (
    "一月",
    "二月",
    "三月",
    "四月",
    "五月",
    "六月",
    "七月",
    "八月",
    "九月",
    "十月",
    "十一",
    "十二",
)


def period_terms(start_us: int | None, end_us: int | None) -> frozenset[str]:
    """The words that name ``[start_us, end_us)`` (microseconds since the epoch, UTC)
    when it is exactly one calendar year from 1970 to 2100 or one calendar month; none
    otherwise."""
    if start_us is None or end_us is None:
        return frozenset()
    start = datetime.fromtimestamp(start_us / 1_000_000, UTC)
    end = datetime.fromtimestamp(end_us / 1_000_000, UTC)
    if start != datetime(start.year, start.month, 1, tzinfo=UTC):
        return frozenset()
    # The first instant after the year 9999 is no datetime: nothing ends there.
    next_year = None if start.year == MAXYEAR else datetime(start.year + 1, 1, 1, tzinfo=UTC)
    if start.month == 1 and end == next_year:
        return frozenset({str(start.year)}) if 1970 <= start.year <= 2100 else frozenset()
    following = (
        next_year if start.month == 12 else datetime(start.year, start.month + 1, 1, tzinfo=UTC)
    )
    if end != following:
        return frozenset()
    return frozenset((*_ENGLISH_MONTHS[start.month - 1], _CJK_MONTHS[start.month - 1]))


_DAY_US = 86_400_000_000
_ORDINAL = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}
_AMBIGUOUS = frozenset({"may"})
"""Month names that are more often another word: they name their month only in company."""
_DAY_NUMBERS = frozenset(
    form for day in range(1, 32) for form in (str(day), f"{day}{_ORDINAL.get(day, 'th')}")
)
_YEARS = frozenset(str(year) for year in range(1970, 2101))

Alternative = tuple[frozenset[str], frozenset[str]]


@dataclass(frozen=True, slots=True)
class Mentions:
    """What a memory holds when it mentions a question's period: for one of the
    ``alternatives``, a word of its names and, when its company is not empty, a word of
    its company too."""

    alternatives: tuple[Alternative, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.alternatives)

    def names(self) -> frozenset[str]:
        """Every name of every alternative (the words to look memories up by)."""
        return frozenset().union(*(names for names, _ in self.alternatives))

    def words(self) -> frozenset[str]:
        """Every word an alternative reads, names and company."""
        return frozenset().union(*(names | company for names, company in self.alternatives))

    def need_company(self) -> bool:
        """Whether some name mentions the period only in company."""
        return any(company for _, company in self.alternatives)

    def held_by(self, holds: Callable[[str], bool]) -> bool:
        """Whether a memory mentions the period; ``holds`` says whether it holds a word."""
        return any(
            any(map(holds, names)) and (not company or any(map(holds, company)))
            for names, company in self.alternatives
        )


NO_MENTIONS = Mentions()
"""The mentions of a question whose period no word names."""


def _one_day(start_us: int, end_us: int) -> datetime | None:
    """The calendar day (UTC) that ``[start_us, end_us)`` is exactly, or ``None``."""
    if end_us - start_us != _DAY_US or start_us % _DAY_US:
        return None
    try:
        return datetime.fromtimestamp(start_us / 1_000_000, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _holds_year(start_us: int, end_us: int, year: str) -> bool:
    """Whether ``[start_us, end_us)`` holds the whole calendar year ``year`` (one of
    ``_YEARS``)."""
    first = int(datetime(int(year), 1, 1, tzinfo=UTC).timestamp()) * 1_000_000
    after = int(datetime(int(year) + 1, 1, 1, tzinfo=UTC).timestamp()) * 1_000_000
    return start_us <= first and after <= end_us


def mentions_of(pieces: Iterable[tuple[str, int, int]]) -> Mentions:
    """What mentions the periods of these closed time expressions ``(text, start_us,
    end_us)``: a day by a name of its month beside its number (or by a Chinese or
    Japanese month word of the expression alone); any other period by the words
    of :func:`mention_terms` and :func:`period_terms`, ``may`` only beside a day's
    number or a year, and a year only when the period holds all of it."""
    found: list[Alternative] = []
    for text, start_us, end_us in pieces:
        day = _one_day(start_us, end_us)
        terms = mention_terms((text,))
        if day is not None:
            number = {str(day.day), f"{day.day}{_ORDINAL.get(day.day, 'th')}"}
            found.append((frozenset(_ENGLISH_MONTHS[day.month - 1]), frozenset(number)))
            terms = frozenset(term for term in terms if not term.isascii())
        else:
            terms |= period_terms(start_us, end_us)
        # A year names the question's period only when the period holds all of it: a
        # memory that says "2025" is not about March 2025.
        terms = frozenset(t for t in terms if t not in _YEARS or _holds_year(start_us, end_us, t))
        if terms - _AMBIGUOUS:
            found.append((frozenset(terms - _AMBIGUOUS), frozenset()))
        found.extend(
            (frozenset({word}), _DAY_NUMBERS | _YEARS) for word in sorted(terms & _AMBIGUOUS)
        )
    return Mentions(tuple(dict.fromkeys(found)))
