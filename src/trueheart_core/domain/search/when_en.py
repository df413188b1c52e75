"""English time expressions of search queries (pure): where they are and what they mean.

:func:`mentions` finds every English expression of ``docs/time-expressions.md`` in a
query (already folded by ``when``: full-width letters and digits made ASCII), without
resolving it. Matching is case-insensitive and whole-word. Words that are also ordinary
English (``may``, ``march``, ``first``, ``last``) count as time only in the company
that makes them so: a false reference filters the right memory away, a missed one only
leaves the query as it was.

Every pattern starts with a word or digit and quantifies nothing but whitespace after a
literal and bounded digit runs, so that each runs in linear time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from trueheart_core.domain.search.when_calendar import (
    RECENT_DAYS,
    Bound,
    Dated,
    Mention,
    Order,
    Relative,
    Rolling,
    Unit,
)

__all__ = ["mentions"]

_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_MONTHS = {
    name: number
    for number, name in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        start=1,
    )
}
_ABBREVIATIONS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_VERBS = frozenset({"may", "march"})  # months that are also everyday words
_BOUNDS: dict[str, Bound] = {
    "since": "since",
    "before": "before",
    "after": "after",
    "until": "until",
    "till": "until",
}
_BOUND_WORDS = "since|before|after|until|till"
_COUNT = "[0-9]{1,4}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True))
_MONTH = "|".join(sorted([*_MONTHS, *_ABBREVIATIONS], key=len, reverse=True))
_PRONOUN = "(?:i|we|you|they|he|she)"
_FLAGS = re.IGNORECASE | re.VERBOSE
# Word edges: a Latin letter or a digit may not touch an expression on either side, but a
# Chinese or Japanese character may ("去了March 2025", "last weekに").
_LATIN = "0-9a-z\u00c0-\u024f"
_START = f"(?<![{_LATIN}])"
_LETTER = re.compile(f"[{_LATIN}]", re.IGNORECASE)
_END = f"(?![{_LATIN}])"
# A year ends the number: no digit, letter or % after it, and no decimal, time, date or
# range that goes on with a digit ("2025.5", "2025-03-05").
_YEAR_END = f"(?![{_LATIN}%]|[.,:/-][0-9])"

_DATE = re.compile(
    rf"""{_START}
    (?:(?P<prep>in|during|from|of|on|{_BOUND_WORDS})\s+)?
    (?:(?P<det>last|this)\s+)?
    (?:(?P<part>early|late|mid)(?:\s+|-))?
    (?:
        (?:the\s+)?(?P<day1>[0-9]{{1,2}})(?P<suffix1>st|nd|rd|th)?\s+(?P<of>of\s+)?
        (?P<month1>{_MONTH})
      | (?P<month2>{_MONTH})(?:\s+(?P<day2>[0-9]{{1,2}})(?P<suffix2>st|nd|rd|th)?)?
    ){_END}
    (?:
        ,?\s+(?:of\s+)?(?P<year>[0-9]{{4}}){_YEAR_END}
      | \s+(?:of\s+)?(?P<year_det>last|this)\s+year{_END}
    )?""",
    _FLAGS,
)
_YEAR = re.compile(
    rf"""{_START}(?P<prep>in|during|{_BOUND_WORDS})\s+(?:the\s+year\s+)?(?P<year>[0-9]{{4}})
    {_YEAR_END}""",
    _FLAGS,
)
_RELATIVE = re.compile(
    rf"""{_START}(?:(?P<prep>during|from|{_BOUND_WORDS})\s+)?
    (?:
        (?P<today>today)
      | (?P<two_days>(?:the\s+)?day\s+before\s+yesterday)
      | (?P<yesterday>yesterday)
      | (?P<det>last|this)\s+(?P<unit>week|month|year){_END}(?!\s+of{_END})
      | (?P<count>{_COUNT})\s+(?P<units>day|week|month|year)s?\s+ago
    ){_END}""",
    _FLAGS,
)
_ROLLING = re.compile(
    rf"""{_START}(?:(?:in|over|during|within|for)\s+)?
    (?:
        (?:the\s+)?(?:past|last)\s+(?P<count>{_COUNT})\s+(?P<units>day|week|month|year)s
      | (?:the\s+)?past\s+(?P<unit>week|month|year)
    ){_END}(?!\s+of{_END})""",
    _FLAGS,
)
_RECENTLY = re.compile(f"{_START}(?:recently|lately){_END}", re.IGNORECASE)
# "first" and "last" after a verb are an order only where the clause ends or a time
# phrase follows: "what did I buy first?", not "did I buy first class tickets".
_CLAUSE_END = (
    r"(?=\s*(?:[?!.,;:)]|$)|\s+(?:in|on|during|at|since|before|after|yesterday|today"
    rf"|this|ever|when|while){_END})"
)
_NEWEST = re.compile(
    rf"""{_START}(?:
        (?:the\s+)?most\s+recent(?:ly)?
      | (?P<latest>(?:the\s+)?latest)
      | (?:the\s+)?last\s+time
      | (?:did|when|where)\s+{_PRONOUN}\s+(?P<word1>last)
      | did\s+{_PRONOUN}\s+[a-z]+\s+(?P<word2>last){_CLAUSE_END}
    ){_END}""",
    _FLAGS,
)
_OLDEST = re.compile(
    rf"""{_START}(?:
        (?:for\s+)?(?:the\s+)?(?:very\s+)?first\s+time
      | (?:the\s+)?(?:very\s+)?first\s+ever
      | the\s+very\s+first
      | (?:the\s+)?earliest
      | at\s+first(?![\s-]+(?:aid|base|class|floor|grade|name|person|place|prize){_END})
      | (?:did|when|where|since)\s+{_PRONOUN}\s+(?P<word1>first)(?!\s+of\s+all{_END})
      | did\s+{_PRONOUN}\s+[a-z]+\s+(?P<word2>first){_CLAUSE_END}
    ){_END}""",
    _FLAGS,
)
# A bare month and day followed by one of these is a verb and a count, not a date:
# "march 3 miles", "may 2 more".
_COUNTED = re.compile(
    r"\s*(?:%|(?:miles?|km|kilometers?|kilometres?|meters?|metres?|steps?|times?|hours?"
    r"|minutes?|seconds?|days?|weeks?|months?|years?|people|persons?|pages?|points?|laps?"
    rf"|blocks?|more|of|or|to){_END})",
    re.IGNORECASE,
)
# After "this", "last", "early", "late" or "mid", "may" and "march" are a month only
# where the phrase ends ("what did I do last May?") or a preposition, conjunction or
# subject follows: "this may be wrong" stays a verb.
_PHRASE_END = re.compile(
    rf"\s*(?:$|[^\w\s])|\s+(?:in|at|when|while|with|and|or|for|during|i|we|you|my){_END}",
    re.IGNORECASE,
)


def _bound(prep: str | None) -> Bound:
    return _BOUNDS.get(prep.lower(), "within") if prep else "within"


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word.lower()]


def _unit(word: str) -> Unit:
    unit = word.lower()
    if unit == "day":
        return "day"
    if unit == "week":
        return "week"
    return "month" if unit == "month" else "year"


def _date(match: re.Match[str], text: str) -> Mention | None:
    """The mention of a month or day, or None where the words are not a date."""
    prep, det, part = match["prep"], match["det"], match["part"]
    word = (match["month1"] or match["month2"]).lower()
    day_text = match["day1"] or match["day2"]
    day = int(day_text) if day_text else None
    year = int(match["year"]) if match["year"] else None
    year_det = match["year_det"].lower() if match["year_det"] else None
    dated = year is not None or year_det is not None
    if not (prep or det or part or day or dated):
        return None
    if text.startswith(("'", "\u2019"), match.end("month1" if match["month1"] else "month2")):
        return None  # "May's", "June's": a person's name
    if day is not None and not 1 <= day <= 31:
        return None
    if word in _ABBREVIATIONS and day is None and not dated:
        return None
    if det and (day is not None or dated):
        return None
    if day is not None and not dated and _COUNTED.match(text, match.end()):
        return None
    if word in _VERBS:
        # "all 3 may come": a number before "may" needs an ordinal, "of", a preposition
        # or a year to be a day.
        if (
            word == "may"
            and match["day1"]
            and not (match["suffix1"] or match["of"] or prep or dated)
        ):
            return None
        if (
            (det or part)
            and not (prep or day or dated)
            and not _PHRASE_END.match(text, match.end())
        ):
            return None
    month = _MONTHS.get(word) or _ABBREVIATIONS[word]
    if year is not None:
        period = Dated(month=month, day=day, year=year)
    elif year_det is not None:
        period = Dated(month=month, day=day, year_offset=-1 if year_det == "last" else 0)
    elif det is not None:
        period = (
            Dated(month=month, previous=True)
            if det.lower() == "last"
            else Dated(month=month, year_offset=0)
        )
    else:
        period = Dated(month=month, day=day)
    return Mention(match.start(), match.end(), period, bound=_bound(prep))


def _word_before(text: str, index: int) -> str:
    """The word, lower-cased, that ends where the whitespace before ``index`` begins, or
    "" where no whitespace precedes ``index``."""
    end = index
    while end > 0 and text[end - 1].isspace():
        end -= 1
    begin = end
    while begin > 0 and _LETTER.match(text, begin - 1):
        begin -= 1
    return text[begin:end].lower() if end < index else ""


def _relative(match: re.Match[str], text: str) -> Mention | None:
    if match["det"] and _word_before(text, match.start("det")) == "the":
        return None  # "the last week (I was there)" can be the final week of something
    if match["today"]:
        period = Relative("day", 0)
    elif match["two_days"]:
        period = Relative("day", -2)
    elif match["yesterday"]:
        period = Relative("day", -1)
    elif match["det"]:
        period = Relative(_unit(match["unit"]), -1 if match["det"].lower() == "last" else 0)
    else:
        count = _count(match["count"])
        if count == 0:
            return None
        period = Relative(_unit(match["units"]), -count)
    return Mention(match.start(), match.end(), period, bound=_bound(match["prep"]))


def _ordered(match: re.Match[str], order: Order) -> Mention:
    for group in ("word1", "word2"):
        if match[group]:
            return Mention(match.start(group), match.end(group), order=order)
    return Mention(match.start(), match.end(), order=order)


def mentions(text: str) -> Iterator[Mention]:
    """Every English time expression of ``text``, left to right within each kind."""
    for match in _DATE.finditer(text):
        mention = _date(match, text)
        if mention is not None:
            yield mention
    for match in _YEAR.finditer(text):
        period = Dated(year=int(match["year"]))
        yield Mention(match.start(), match.end(), period, bound=_bound(match["prep"]))
    for match in _RELATIVE.finditer(text):
        mention = _relative(match, text)
        if mention is not None:
            yield mention
    for match in _ROLLING.finditer(text):
        amount = _count(match["count"]) if match["count"] else 1
        unit = _unit(match["units"] or match["unit"])
        if amount > 0:
            yield Mention(match.start(), match.end(), Rolling(unit, amount))
    for match in _RECENTLY.finditer(text):
        yield Mention(match.start(), match.end(), Rolling("day", RECENT_DAYS), order="newest")
    for match in _NEWEST.finditer(text):
        if not (match["latest"] and _word_before(text, match.start()) == "at"):
            yield _ordered(match, "newest")  # "at the latest" is a deadline
    for match in _OLDEST.finditer(text):
        yield _ordered(match, "oldest")
