"""The calendar behind the time expressions of search queries (pure).

The grammars (``when_en``, ``when_cjk``) say *what* a query mentions: a
:class:`Mention` of a :data:`Period` (the day, week, month or year around ``as_of``, a
named year, month or day, or a rolling window) or of an order. :func:`resolve` says
*when* that is: a half-open interval of ``created_at`` in microseconds since the Unix
epoch, UTC.

Everything is computed in UTC on the proleptic Gregorian calendar with integer
arithmetic only (days since 1970-01-01 to and from year, month and day), so no
``as_of``, however far from the present, can overflow: the results are plain ints even
where :mod:`datetime` could not represent them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "DAY_US",
    "FIRST_YEAR",
    "LAST_YEAR",
    "RECENT_DAYS",
    "Bound",
    "Dated",
    "Mention",
    "Order",
    "Period",
    "Relative",
    "Rolling",
    "Unit",
    "resolve",
]

Unit = Literal["day", "week", "month", "year"]
Order = Literal["newest", "oldest"]
Bound = Literal["within", "since", "before", "after", "until"]
"""How a period limits ``created_at``: ``within`` it, from its start on (``since``),
before its start (``before``), from its end on (``after``), or before its end
(``until``)."""

DAY_US = 86_400_000_000
FIRST_YEAR = 1970
LAST_YEAR = 2100
"""A number is a year only from 1970 through 2100: a memory store holds nothing older
than the epoch, and larger numbers are far more often counts or codes."""

RECENT_DAYS = 30
""""Recently", "lately", 最近, この頃: the last this many days before ``as_of``."""

_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to the given date (negative before it), for any year."""
    year -= month <= 2
    era, year_of_era = divmod(year, 400)
    day_of_year = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """The (year, month, day) that is ``days`` days after 1970-01-01."""
    era, day_of_era = divmod(days + 719_468, 146_097)
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted + 2) // 5 + 1
    month = shifted + 3 if shifted < 10 else shifted - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def days_in_month(year: int, month: int) -> int:
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 29 if month == 2 and leap else _MONTH_DAYS[month - 1]


_MIN_US = days_from_civil(1, 1, 1) * DAY_US
_MAX_US = days_from_civil(10_000, 1, 1) * DAY_US - 1  # datetime.max


@dataclass(frozen=True, slots=True)
class Relative:
    """The calendar ``unit`` that holds ``as_of``, moved by ``offset`` units: today is
    ``("day", 0)``, last week ``("week", -1)``, three months ago ``("month", -3)``.
    Weeks are ISO weeks, Monday 00:00 to Monday 00:00."""

    unit: Unit
    offset: int


@dataclass(frozen=True, slots=True)
class Rolling:
    """The last ``amount`` units before ``as_of`` to the microsecond, with no upper
    bound: the past 3 days start exactly 72 hours before ``as_of``. A month back is the
    same day of the month (the month's last day if it is shorter), a year likewise."""

    unit: Unit
    amount: int


@dataclass(frozen=True, slots=True)
class Dated:
    """A named year, month or day.

    With ``year``, that year (it must be from :data:`FIRST_YEAR` through
    :data:`LAST_YEAR`); with ``year_offset``, the year of ``as_of`` moved by it. With
    neither, the latest such month or day that starts at or before ``as_of``, or, when
    ``previous``, the latest such month before the month of ``as_of``. A day that its
    month lacks (April 31) resolves to nothing; February 29 without a year is the latest
    one."""

    month: int | None = None
    day: int | None = None
    year: int | None = None
    year_offset: int | None = None
    previous: bool = False


Period = Relative | Rolling | Dated


@dataclass(frozen=True, slots=True)
class Mention:
    """What a grammar found at ``[begin, end)`` of the query: a period limiting
    ``created_at`` as ``bound`` says, an order, or both (``recently``)."""

    begin: int
    end: int
    period: Period | None = None
    order: Order | None = None
    bound: Bound = "within"


def _span(year: int, month: int | None, day: int | None) -> tuple[int, int] | None:
    """The days [first, past the last) of a year, month or day, or None for a day that
    its month lacks."""
    if month is None:
        return days_from_civil(year, 1, 1), days_from_civil(year + 1, 1, 1)
    if day is None:
        first = days_from_civil(year, month, 1)
        return first, first + days_in_month(year, month)
    if not 1 <= day <= days_in_month(year, month):
        return None
    first = days_from_civil(year, month, day)
    return first, first + 1


def _dated(period: Dated, as_of_us: int) -> tuple[int, int] | None:
    year, month, _ = civil_from_days(as_of_us // DAY_US)
    if period.year is not None:
        if not FIRST_YEAR <= period.year <= LAST_YEAR:
            return None
        return _span(period.year, period.month, period.day)
    if period.year_offset is not None:
        return _span(year + period.year_offset, period.month, period.day)
    if period.month is None:
        return None
    if period.previous and period.month >= month:
        year -= 1
    # Leap years are at most eight years apart, so nine tries find any February 29.
    for candidate in range(year, year - 9, -1):
        days = _span(candidate, period.month, period.day)
        if days is not None and days[0] * DAY_US <= as_of_us:
            return days
    return None


def _relative(period: Relative, as_of_us: int) -> tuple[int, int]:
    today = as_of_us // DAY_US
    if period.unit == "day":
        return today + period.offset, today + period.offset + 1
    if period.unit == "week":
        # 1970-01-01 was a Thursday, three days after a Monday.
        monday = today - (today + 3) % 7 + 7 * period.offset
        return monday, monday + 7
    year, month, _ = civil_from_days(today)
    if period.unit == "month":
        year, month = divmod(year * 12 + month - 1 + period.offset, 12)
        first = days_from_civil(year, month + 1, 1)
        return first, first + days_in_month(year, month + 1)
    return days_from_civil(year + period.offset, 1, 1), days_from_civil(
        year + period.offset + 1, 1, 1
    )


def _rolling(period: Rolling, as_of_us: int) -> int:
    if period.unit in ("day", "week"):
        return as_of_us - period.amount * DAY_US * (7 if period.unit == "week" else 1)
    today, time_of_day = divmod(as_of_us, DAY_US)
    year, month, day = civil_from_days(today)
    months = period.amount * (12 if period.unit == "year" else 1)
    year, month = divmod(year * 12 + month - 1 - months, 12)
    day = min(day, days_in_month(year, month + 1))
    return days_from_civil(year, month + 1, day) * DAY_US + time_of_day


def _bounded(period: Period, bound: Bound, as_of_us: int) -> tuple[int | None, int | None] | None:
    if isinstance(period, Rolling):
        return _rolling(period, as_of_us), None
    days = _relative(period, as_of_us) if isinstance(period, Relative) else _dated(period, as_of_us)
    if days is None:
        return None
    start, end = days[0] * DAY_US, days[1] * DAY_US
    if bound == "since":
        return start, None
    if bound == "before":
        return None, start
    if bound == "after":
        return end, None
    if bound == "until":
        return None, end
    return start, end


def resolve(period: Period, bound: Bound, as_of_us: int) -> tuple[int | None, int | None] | None:
    """The ``[start, end)`` of ``created_at`` (microseconds, None for no limit) that
    ``period`` limited by ``bound`` means at ``as_of_us``, or None when it means no
    date at all: a year out of range, a day its month lacks, or a bound that a
    :class:`datetime.datetime` cannot hold (before year 1 or after year 9999)."""
    bounds = _bounded(period, bound, as_of_us)
    if bounds is None or any(b is not None and not _MIN_US <= b <= _MAX_US for b in bounds):
        return None
    return bounds
