"""Time expressions in search queries: what is recognised, what it resolves to, and what
is left alone, without a database.

Unless a test says otherwise, queries are resolved at Wednesday 2026-03-18 10:00 UTC:
this week is Monday 2026-03-16 to Monday 2026-03-23, last week 2026-03-09 to 2026-03-16.
Expected bounds are written as literal UTC datetimes."""

from __future__ import annotations

import dataclasses
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core.domain.search.model import MAX_QUERY_CHARS
from trueheart_core.domain.search.when import (
    READ_CHARS,
    TimeReference,
    find_time,
    without_time,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
DOC = Path(__file__).resolve().parents[2] / "docs" / "time-expressions.md"


def us(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(microseconds=1)


def D(year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


AS_OF = us(D(2026, 3, 18, 10))
Expected = tuple[str, datetime | None, datetime | None, str | None]


def check(query: str, expected: Expected, as_of: int = AS_OF) -> TimeReference:
    expression, start, end, order = expected
    found = find_time(query, as_of)
    assert found is not None, query
    assert (found.expression, found.start, found.end, found.order) == (
        expression,
        None if start is None else us(start),
        None if end is None else us(end),
        order,
    )
    return found


# --- English ------------------------------------------------------------------------------

ENGLISH: list[tuple[str, Expected]] = [
    # days
    ("what did I eat today?", ("today", D(2026, 3, 18), D(2026, 3, 19), None)),
    ("what did I eat yesterday?", ("yesterday", D(2026, 3, 17), D(2026, 3, 18), None)),
    (
        "who called the day before yesterday",
        ("the day before yesterday", D(2026, 3, 16), D(2026, 3, 17), None),
    ),
    (
        "who called day before yesterday",
        ("day before yesterday", D(2026, 3, 16), D(2026, 3, 17), None),
    ),
    # calendar weeks, months, years
    ("plans this week", ("this week", D(2026, 3, 16), D(2026, 3, 23), None)),
    ("plans last week", ("last week", D(2026, 3, 9), D(2026, 3, 16), None)),
    ("bills this month", ("this month", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("bills last month", ("last month", D(2026, 2, 1), D(2026, 3, 1), None)),
    ("trips this year", ("this year", D(2026, 1, 1), D(2027, 1, 1), None)),
    ("trips last year", ("last year", D(2025, 1, 1), D(2026, 1, 1), None)),
    ("last year's trip", ("last year", D(2025, 1, 1), D(2026, 1, 1), None)),
    # ... ago
    ("3 days ago", ("3 days ago", D(2026, 3, 15), D(2026, 3, 16), None)),
    ("a day ago", ("a day ago", D(2026, 3, 17), D(2026, 3, 18), None)),
    ("twelve days ago", ("twelve days ago", D(2026, 3, 6), D(2026, 3, 7), None)),
    ("one week ago", ("one week ago", D(2026, 3, 9), D(2026, 3, 16), None)),
    ("two weeks ago", ("two weeks ago", D(2026, 3, 2), D(2026, 3, 9), None)),
    ("a month ago", ("a month ago", D(2026, 2, 1), D(2026, 3, 1), None)),
    ("3 months ago", ("3 months ago", D(2025, 12, 1), D(2026, 1, 1), None)),
    ("12 months ago", ("12 months ago", D(2025, 3, 1), D(2025, 4, 1), None)),
    ("a year ago", ("a year ago", D(2025, 1, 1), D(2026, 1, 1), None)),
    ("Two Years Ago", ("Two Years Ago", D(2024, 1, 1), D(2025, 1, 1), None)),
    # months without a year: the latest that starts at or before as_of
    ("where did I go hiking in March?", ("in March", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("in April", ("in April", D(2025, 4, 1), D(2025, 5, 1), None)),
    ("during May", ("during May", D(2025, 5, 1), D(2025, 6, 1), None)),
    ("the month of June", ("of June", D(2025, 6, 1), D(2025, 7, 1), None)),
    ("from February", ("from February", D(2026, 2, 1), D(2026, 3, 1), None)),
    ("early March", ("early March", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("in mid-March", ("in mid-March", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("late November", ("late November", D(2025, 11, 1), D(2025, 12, 1), None)),
    ("this March", ("this March", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("this December", ("this December", D(2026, 12, 1), D(2027, 1, 1), None)),
    ("last March", ("last March", D(2025, 3, 1), D(2025, 4, 1), None)),
    ("last February", ("last February", D(2026, 2, 1), D(2026, 3, 1), None)),
    ("what did I do last May?", ("last May", D(2025, 5, 1), D(2025, 6, 1), None)),
    # days of a month
    ("March 3", ("March 3", D(2026, 3, 3), D(2026, 3, 4), None)),
    ("on March 3rd", ("on March 3rd", D(2026, 3, 3), D(2026, 3, 4), None)),
    ("3 March", ("3 March", D(2026, 3, 3), D(2026, 3, 4), None)),
    ("the 3rd of March", ("the 3rd of March", D(2026, 3, 3), D(2026, 3, 4), None)),
    ("on 3 May", ("on 3 May", D(2025, 5, 3), D(2025, 5, 4), None)),
    ("March 18", ("March 18", D(2026, 3, 18), D(2026, 3, 19), None)),
    ("March 19", ("March 19", D(2025, 3, 19), D(2025, 3, 20), None)),
    ("Dec 3", ("Dec 3", D(2025, 12, 3), D(2025, 12, 4), None)),
    # with a year
    ("March 2025", ("March 2025", D(2025, 3, 1), D(2025, 4, 1), None)),
    ("in March of 2024", ("in March of 2024", D(2024, 3, 1), D(2024, 4, 1), None)),
    ("March 3, 2025", ("March 3, 2025", D(2025, 3, 3), D(2025, 3, 4), None)),
    ("3 March 2024", ("3 March 2024", D(2024, 3, 3), D(2024, 3, 4), None)),
    ("Jan 2025", ("Jan 2025", D(2025, 1, 1), D(2025, 2, 1), None)),
    ("Sept 5, 2025", ("Sept 5, 2025", D(2025, 9, 5), D(2025, 9, 6), None)),
    ("in March last year", ("in March last year", D(2025, 3, 1), D(2025, 4, 1), None)),
    ("December of last year", ("December of last year", D(2025, 12, 1), D(2026, 1, 1), None)),
    ("May this year", ("May this year", D(2026, 5, 1), D(2026, 6, 1), None)),
    ("in 2025", ("in 2025", D(2025, 1, 1), D(2026, 1, 1), None)),
    ("during 1970", ("during 1970", D(1970, 1, 1), D(1971, 1, 1), None)),
    ("in 2100", ("in 2100", D(2100, 1, 1), D(2101, 1, 1), None)),
    ("in the year 2020", ("in the year 2020", D(2020, 1, 1), D(2021, 1, 1), None)),
    # bounds: since, before, after, until
    ("since March", ("since March", D(2026, 3, 1), None, None)),
    ("before March", ("before March", None, D(2026, 3, 1), None)),
    ("after March", ("after March", D(2026, 4, 1), None, None)),
    ("until March", ("until March", None, D(2026, 4, 1), None)),
    ("till May", ("till May", None, D(2025, 6, 1), None)),
    ("since last March", ("since last March", D(2025, 3, 1), None, None)),
    ("since 2025", ("since 2025", D(2025, 1, 1), None, None)),
    ("before 2025", ("before 2025", None, D(2025, 1, 1), None)),
    ("after 2025", ("after 2025", D(2026, 1, 1), None, None)),
    ("until 2024", ("until 2024", None, D(2025, 1, 1), None)),
    ("since yesterday", ("since yesterday", D(2026, 3, 17), None, None)),
    ("before last week", ("before last week", None, D(2026, 3, 9), None)),
    ("during last month", ("during last month", D(2026, 2, 1), D(2026, 3, 1), None)),
    ("the email from last week", ("from last week", D(2026, 3, 9), D(2026, 3, 16), None)),
    # rolling windows, to the microsecond
    ("in the past 3 days", ("in the past 3 days", D(2026, 3, 15, 10), None, None)),
    ("over the last 2 weeks", ("over the last 2 weeks", D(2026, 3, 4, 10), None, None)),
    ("last three months", ("last three months", D(2025, 12, 18, 10), None, None)),
    ("the past week", ("the past week", D(2026, 3, 11, 10), None, None)),
    ("within the past month", ("within the past month", D(2026, 2, 18, 10), None, None)),
    ("past year", ("past year", D(2025, 3, 18, 10), None, None)),
    # recently: the last 30 days, newest first
    ("what did I read recently", ("recently", D(2026, 2, 16, 10), None, "newest")),
    ("lately I have been", ("lately", D(2026, 2, 16, 10), None, "newest")),
    # orders only
    ("what did I order most recently?", ("most recently", None, None, "newest")),
    ("my most recent order", ("most recent", None, None, "newest")),
    ("the most recent order", ("the most recent", None, None, "newest")),
    ("my latest order", ("latest", None, None, "newest")),
    ("the latest order", ("the latest", None, None, "newest")),
    ("last time I went", ("last time", None, None, "newest")),
    ("the last time I went", ("the last time", None, None, "newest")),
    ("when did I last see my dentist", ("last", None, None, "newest")),
    ("what did I eat last?", ("last", None, None, "newest")),
    ("first time at the beach", ("first time", None, None, "oldest")),
    ("the first time we met", ("the first time", None, None, "oldest")),
    ("for the first time", ("for the first time", None, None, "oldest")),
    ("for the very first time", ("for the very first time", None, None, "oldest")),
    ("my first ever concert", ("first ever", None, None, "oldest")),
    ("the very first concert", ("the very first", None, None, "oldest")),
    ("my earliest memory", ("earliest", None, None, "oldest")),
    ("the earliest note", ("the earliest", None, None, "oldest")),
    ("at first I thought", ("at first", None, None, "oldest")),
    ("when did I first meet Anna", ("first", None, None, "oldest")),
    ("where did we first meet", ("first", None, None, "oldest")),
    ("since we first met", ("first", None, None, "oldest")),
    ("what did I buy first?", ("first", None, None, "oldest")),
]


@pytest.mark.parametrize(("query", "expected"), ENGLISH)
def test_english_forms(query: str, expected: Expected) -> None:
    check(query, expected)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("YESTERDAY", ("YESTERDAY", D(2026, 3, 17), D(2026, 3, 18), None)),
        ("Last Week", ("Last Week", D(2026, 3, 9), D(2026, 3, 16), None)),
        ("IN MARCH", ("IN MARCH", D(2026, 3, 1), D(2026, 4, 1), None)),
        ("Most Recently", ("Most Recently", None, None, "newest")),
        # full-width letters, digits and the ideographic space are folded, offsets kept
        (
            "\uff4c\uff41\uff53\uff54\u3000\uff57\uff45\uff45\uff4b",
            (
                "\uff4c\uff41\uff53\uff54\u3000\uff57\uff45\uff45\uff4b",
                D(2026, 3, 9),
                D(2026, 3, 16),
                None,
            ),
        ),
        (
            "in \uff12\uff10\uff12\uff15",
            ("in \uff12\uff10\uff12\uff15", D(2025, 1, 1), D(2026, 1, 1), None),
        ),
        ("\uff13 days ago", ("\uff13 days ago", D(2026, 3, 15), D(2026, 3, 16), None)),
        ("in  \t March", ("in  \t March", D(2026, 3, 1), D(2026, 4, 1), None)),
    ],
)
def test_english_is_case_insensitive_and_folded(query: str, expected: Expected) -> None:
    check(query, expected)


@pytest.mark.parametrize(
    "query",
    [
        # "first" and "last" that are not about time
        "my first name",
        "first aid kit",
        "first of all, what is my address",
        "where is the first aid box",
        "is the kit at first aid",
        "did I buy first class tickets",
        "when did I first of all decide",
        "first",
        "last",
        "by Friday at the latest",
        "the last week of the trip",
        "the last week I was in Paris",
        "the last month at school",
        "the last day of school",
        # month names that are words
        "I may go",
        "march on",
        "May I ask something",
        "MAY I ASK",
        "this may be wrong",
        "last march was long, they said",
        "we will march 3 miles",
        "may 2 more come",
        "all 3 may come",
        "a friend of May's",
        "in June's house",
        "in Jan",
        "I called Jan 3 times",
        # numbers that are not years
        "room 2025",
        "error 1984",
        "2025",
        "in 1969",
        "in 2101",
        "March 2101",
        "in 2025.5 seconds",
        "in 2025-03-05",
        "in 2025é",
        "in 2025%",
        # a month's year ends the number as a year after "in" does
        "March 2025x",
        "March 2025é",
        "March 2025.5",
        "March 2025-03",
        # dates that do not exist
        "on April 31",
        "February 30",
        "February 29, 2025",
        "March 0",
        "March 32",
        # not recognised at all
        "tomorrow",
        "next week",
        "tonight",
        "this morning",
        "last night",
        "last weekend",
        "this weekend",
        "an hour ago",
        "a few days ago",
        "thirteen days ago",
        "0 days ago",
        "my recent trip",
        "3 days",
        "days ago",
        "",
        "   ",
    ],
)
def test_english_negatives(query: str) -> None:
    assert find_time(query, AS_OF) is None


# --- Chinese ------------------------------------------------------------------------------

CHINESE: list[tuple[str, Expected]] = [
    ("今天", ("今天", D(2026, 3, 18), D(2026, 3, 19), None)),
    ("昨天我吃了什么", ("昨天", D(2026, 3, 17), D(2026, 3, 18), None)),
    ("前天", ("前天", D(2026, 3, 16), D(2026, 3, 17), None)),
    ("大前天", ("大前天", D(2026, 3, 15), D(2026, 3, 16), None)),
    ("本周", ("本周", D(2026, 3, 16), D(2026, 3, 23), None)),
    ("这周", ("这周", D(2026, 3, 16), D(2026, 3, 23), None)),
    ("这星期", ("这星期", D(2026, 3, 16), D(2026, 3, 23), None)),
    ("这个星期", ("这个星期", D(2026, 3, 16), D(2026, 3, 23), None)),
    ("本星期", ("本星期", D(2026, 3, 16), D(2026, 3, 23), None)),
    ("这个礼拜", ("这个礼拜", D(2026, 3, 16), D(2026, 3, 23), None)),
    ("這週", ("這週", D(2026, 3, 16), D(2026, 3, 23), None)),
    ("上周", ("上周", D(2026, 3, 9), D(2026, 3, 16), None)),
    ("上周末去了哪里", ("上周", D(2026, 3, 9), D(2026, 3, 16), None)),
    ("上星期", ("上星期", D(2026, 3, 9), D(2026, 3, 16), None)),
    ("上个星期", ("上个星期", D(2026, 3, 9), D(2026, 3, 16), None)),
    ("上礼拜", ("上礼拜", D(2026, 3, 9), D(2026, 3, 16), None)),
    ("上個禮拜", ("上個禮拜", D(2026, 3, 9), D(2026, 3, 16), None)),
    ("上週", ("上週", D(2026, 3, 9), D(2026, 3, 16), None)),
    ("上上周", ("上上周", D(2026, 3, 2), D(2026, 3, 9), None)),
    ("本月", ("本月", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("这个月", ("这个月", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("这月", ("这月", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("上个月", ("上个月", D(2026, 2, 1), D(2026, 3, 1), None)),
    ("上個月", ("上個月", D(2026, 2, 1), D(2026, 3, 1), None)),
    ("上月", ("上月", D(2026, 2, 1), D(2026, 3, 1), None)),
    ("上上个月", ("上上个月", D(2026, 1, 1), D(2026, 2, 1), None)),
    ("今年", ("今年", D(2026, 1, 1), D(2027, 1, 1), None)),
    ("去年", ("去年", D(2025, 1, 1), D(2026, 1, 1), None)),
    # months and days
    ("三月去了哪里", ("三月", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("3月", ("3月", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("三月份", ("三月份", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("一月", ("一月", D(2026, 1, 1), D(2026, 2, 1), None)),
    ("4月", ("4月", D(2025, 4, 1), D(2025, 5, 1), None)),
    ("十月", ("十月", D(2025, 10, 1), D(2025, 11, 1), None)),
    ("十一月", ("十一月", D(2025, 11, 1), D(2025, 12, 1), None)),
    ("十二月", ("十二月", D(2025, 12, 1), D(2026, 1, 1), None)),
    ("3月5日", ("3月5日", D(2026, 3, 5), D(2026, 3, 6), None)),
    ("3月5号", ("3月5号", D(2026, 3, 5), D(2026, 3, 6), None)),
    ("三月十九日", ("三月十九日", D(2025, 3, 19), D(2025, 3, 20), None)),
    ("去年三月", ("去年三月", D(2025, 3, 1), D(2025, 4, 1), None)),
    ("去年的3月", ("去年的3月", D(2025, 3, 1), D(2025, 4, 1), None)),
    ("今年3月", ("今年3月", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("2025年", ("2025年", D(2025, 1, 1), D(2026, 1, 1), None)),
    ("2025年3月", ("2025年3月", D(2025, 3, 1), D(2025, 4, 1), None)),
    ("2025年十二月", ("2025年十二月", D(2025, 12, 1), D(2026, 1, 1), None)),
    ("2025年3月5日", ("2025年3月5日", D(2025, 3, 5), D(2025, 3, 6), None)),
    ("２０２５年３月", ("２０２５年３月", D(2025, 3, 1), D(2025, 4, 1), None)),
    # ... ago
    ("三天前", ("三天前", D(2026, 3, 15), D(2026, 3, 16), None)),
    ("3天前", ("3天前", D(2026, 3, 15), D(2026, 3, 16), None)),
    ("3天之前", ("3天之前", D(2026, 3, 15), D(2026, 3, 16), None)),
    ("两天以前", ("两天以前", D(2026, 3, 16), D(2026, 3, 17), None)),
    ("十天前", ("十天前", D(2026, 3, 8), D(2026, 3, 9), None)),
    ("二十一天前", ("二十一天前", D(2026, 2, 25), D(2026, 2, 26), None)),
    ("一周前", ("一周前", D(2026, 3, 9), D(2026, 3, 16), None)),
    ("两周前", ("两周前", D(2026, 3, 2), D(2026, 3, 9), None)),
    ("三个星期前", ("三个星期前", D(2026, 2, 23), D(2026, 3, 2), None)),
    ("两个礼拜前", ("两个礼拜前", D(2026, 3, 2), D(2026, 3, 9), None)),
    ("一个月前", ("一个月前", D(2026, 2, 1), D(2026, 3, 1), None)),
    ("三个月前", ("三个月前", D(2025, 12, 1), D(2026, 1, 1), None)),
    ("两年前", ("两年前", D(2024, 1, 1), D(2025, 1, 1), None)),
    # rolling windows
    ("最近三天", ("最近三天", D(2026, 3, 15, 10), None, None)),
    ("过去两周", ("过去两周", D(2026, 3, 4, 10), None, None)),
    ("过去一个月里", ("过去一个月里", D(2026, 2, 18, 10), None, None)),
    ("最近", ("最近", D(2026, 2, 16, 10), None, "newest")),
    ("我最近在读什么书", ("最近", D(2026, 2, 16, 10), None, "newest")),
    # bounds
    ("三月以来", ("三月以来", D(2026, 3, 1), None, None)),
    ("2025年至今", ("2025年至今", D(2025, 1, 1), None, None)),
    ("2025年以前", ("2025年以前", None, D(2025, 1, 1), None)),
    ("去年之前", ("去年之前", None, D(2025, 1, 1), None)),
    ("上周以来", ("上周以来", D(2026, 3, 9), None, None)),
    # orders
    ("最后一次", ("最后一次", None, None, "newest")),
    ("最後一次", ("最後一次", None, None, "newest")),
    ("最近一次去医院", ("最近一次", None, None, "newest")),
    ("上次", ("上次", None, None, "newest")),
    ("上一次", ("上一次", None, None, "newest")),
    ("最新的笔记", ("最新", None, None, "newest")),
    ("第一次", ("第一次", None, None, "oldest")),
    ("最早", ("最早", None, None, "oldest")),
    ("首次", ("首次", None, None, "oldest")),
    ("最初", ("最初", None, None, "oldest")),
]


@pytest.mark.parametrize(("query", "expected"), CHINESE)
def test_chinese_forms(query: str, expected: Expected) -> None:
    check(query, expected)


@pytest.mark.parametrize(
    "query",
    [
        "日本周边",  # 日本 + 周边, Japan's surroundings
        "晚上月亮",  # 晚上 + 月亮, the evening moon
        "这个月饼",  # this mooncake
        "本周年",  # 周年, an anniversary
        "眼前天空",  # 眼前 + 天空
        "三个月",  # a duration, not a time
        "前年",  # two years ago in Chinese, the previous year in Japanese
        "几天前",
        "半年前",
        "2025年前三个月",  # the first three months of 2025
        "三月以后",
        "3月3日前",
        "3月后",
        "1990年代",
        "13月",
        "十三月",
        "0月",
        "3月32日",
        "2月30日",
        "2025年2月29日看牙医",  # no such day: not the 29th of February of another year
        "2021年2月29日",
        "每年3月",  # every March: no one period
        "最近的超市",  # the nearest supermarket
        "最近邻",
        "3天前往北京",  # 前往, to go to
        "第一次世界大战",
        "二〇二五年",
        "明天",
        "下周",
    ],
)
def test_chinese_negatives(query: str) -> None:
    assert find_time(query, AS_OF) is None


# --- Japanese -----------------------------------------------------------------------------

JAPANESE: list[tuple[str, Expected]] = [
    ("今日", ("今日", D(2026, 3, 18), D(2026, 3, 19), None)),
    ("昨日", ("昨日", D(2026, 3, 17), D(2026, 3, 18), None)),
    ("一昨日", ("一昨日", D(2026, 3, 16), D(2026, 3, 17), None)),
    ("おととい", ("おととい", D(2026, 3, 16), D(2026, 3, 17), None)),
    ("今週", ("今週", D(2026, 3, 16), D(2026, 3, 23), None)),
    ("先週どこに行った?", ("先週", D(2026, 3, 9), D(2026, 3, 16), None)),
    ("先々週", ("先々週", D(2026, 3, 2), D(2026, 3, 9), None)),
    ("今月", ("今月", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("先月", ("先月", D(2026, 2, 1), D(2026, 3, 1), None)),
    ("先々月", ("先々月", D(2026, 1, 1), D(2026, 2, 1), None)),
    ("今年", ("今年", D(2026, 1, 1), D(2027, 1, 1), None)),
    ("去年", ("去年", D(2025, 1, 1), D(2026, 1, 1), None)),
    ("昨年", ("昨年", D(2025, 1, 1), D(2026, 1, 1), None)),
    ("一昨年", ("一昨年", D(2024, 1, 1), D(2025, 1, 1), None)),
    ("おととし", ("おととし", D(2024, 1, 1), D(2025, 1, 1), None)),
    # months and days, with the particle に
    ("三月に何をした", ("三月に", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("3月に", ("3月に", D(2026, 3, 1), D(2026, 4, 1), None)),
    ("12月に", ("12月に", D(2025, 12, 1), D(2026, 1, 1), None)),
    ("3月5日に", ("3月5日に", D(2026, 3, 5), D(2026, 3, 6), None)),
    ("2025年に", ("2025年に", D(2025, 1, 1), D(2026, 1, 1), None)),
    ("2025年3月に", ("2025年3月に", D(2025, 3, 1), D(2025, 4, 1), None)),
    ("去年の3月", ("去年の3月", D(2025, 3, 1), D(2025, 4, 1), None)),
    ("３月に", ("３月に", D(2026, 3, 1), D(2026, 4, 1), None)),
    # ... ago
    ("三日前", ("三日前", D(2026, 3, 15), D(2026, 3, 16), None)),
    ("3日前に", ("3日前に", D(2026, 3, 15), D(2026, 3, 16), None)),
    ("一週間前", ("一週間前", D(2026, 3, 9), D(2026, 3, 16), None)),
    ("二週間前", ("二週間前", D(2026, 3, 2), D(2026, 3, 9), None)),
    ("2週間前", ("2週間前", D(2026, 3, 2), D(2026, 3, 9), None)),
    ("3か月前", ("3か月前", D(2025, 12, 1), D(2026, 1, 1), None)),
    ("3ヶ月前", ("3ヶ月前", D(2025, 12, 1), D(2026, 1, 1), None)),
    ("三ヵ月前", ("三ヵ月前", D(2025, 12, 1), D(2026, 1, 1), None)),
    ("3カ月前", ("3カ月前", D(2025, 12, 1), D(2026, 1, 1), None)),
    ("2年前", ("2年前", D(2024, 1, 1), D(2025, 1, 1), None)),
    # rolling windows, recently
    ("ここ3日", ("ここ3日", D(2026, 3, 15, 10), None, None)),
    ("過去3年間", ("過去3年間", D(2023, 3, 18, 10), None, None)),
    ("最近3ヶ月", ("最近3ヶ月", D(2025, 12, 18, 10), None, None)),
    ("最近どこに行った", ("最近", D(2026, 2, 16, 10), None, "newest")),
    ("この頃", ("この頃", D(2026, 2, 16, 10), None, "newest")),
    ("このごろ", ("このごろ", D(2026, 2, 16, 10), None, "newest")),
    ("近頃", ("近頃", D(2026, 2, 16, 10), None, "newest")),
    # bounds
    ("今年から", ("今年から", D(2026, 1, 1), None, None)),
    ("3月から", ("3月から", D(2026, 3, 1), None, None)),
    ("2025年以降", ("2025年以降", D(2025, 1, 1), None, None)),
    ("去年まで", ("去年まで", None, D(2026, 1, 1), None)),
    ("3月より前", ("3月より前", None, D(2026, 3, 1), None)),
    # orders
    ("最後に行ったのはいつ", ("最後に", None, None, "newest")),
    ("一番最近", ("一番最近", None, None, "newest")),
    ("前回", ("前回", None, None, "newest")),
    ("初めて行った店", ("初めて", None, None, "oldest")),
    ("最初に", ("最初に", None, None, "oldest")),
    ("一番最初に", ("一番最初に", None, None, "oldest")),
]


@pytest.mark.parametrize(("query", "expected"), JAPANESE)
def test_japanese_forms(query: str, expected: Expected) -> None:
    check(query, expected)


@pytest.mark.parametrize(
    "query",
    ["2025年度", "今年度", "昨年度", "三月以後", "3月後", "明日", "来週", "きのう"],
)
def test_japanese_negatives(query: str) -> None:
    assert find_time(query, AS_OF) is None


# --- spans, expressions and what lexical matching sees -----------------------------------


@pytest.mark.parametrize(
    ("query", "spans", "rest"),
    [
        ("where did I go hiking in March?", ((22, 30),), "where did I go hiking ?"),
        ("yesterday", ((0, 9),), ""),
        ("  yesterday  ", ((2, 11),), ""),
        ("lunch yesterday with Anna", ((6, 15),), "lunch with Anna"),
        ("昨天我吃了什么", ((0, 2),), "我吃了什么"),
        ("我昨天吃了什么", ((1, 3),), "我 吃了什么"),
        ("三月に何をした", ((0, 3),), "何をした"),
        ("when did I first meet Anna", ((11, 16),), "when did I meet Anna"),
        ("what did I buy first in 2025?", ((15, 20), (21, 28)), "what did I buy ?"),
        ("\U0001f389 yesterday!", ((2, 11),), "\U0001f389 !"),
        (
            "\uff4c\uff41\uff53\uff54 \uff57\uff45\uff45\uff4b\u306b\u8cb7\u3063\u305f",
            ((0, 9),),
            "に買った",
        ),
    ],
)
def test_spans_are_offsets_into_the_query_and_without_time_cuts_them(
    query: str, spans: tuple[tuple[int, int], ...], rest: str
) -> None:
    found = find_time(query, AS_OF)
    assert found is not None
    assert found.spans == spans
    assert found.expressions == tuple(query[b:e] for b, e in spans)
    assert found.expression == " ".join(found.expressions)
    assert found.span == (spans[0][0], spans[-1][1])
    assert without_time(query, found) == rest


def test_the_interface_fields() -> None:
    assert [f.name for f in dataclasses.fields(TimeReference)] == [
        "expression",
        "start",
        "end",
        "order",
        "span",
        "expressions",
        "spans",
    ]
    reference = find_time("yesterday", AS_OF)
    assert reference is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        reference.start = 0  # type: ignore[misc]


def test_without_time_sorts_and_merges_spans_it_is_given() -> None:
    reference = TimeReference(
        expression="a b",
        start=None,
        end=None,
        order=None,
        span=(0, 9),
        expressions=("x", "y"),
        spans=((6, 9), (0, 2), (1, 3)),
    )
    assert without_time("abcd efghij", reference) == "d e ij"


# --- how pieces combine -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected", "pieces"),
    [
        (
            "what did I buy first in 2025?",
            ("first in 2025", D(2025, 1, 1), D(2026, 1, 1), "oldest"),
            ("first", "in 2025"),
        ),
        (
            "for the first time last year",
            ("for the first time last year", D(2025, 1, 1), D(2026, 1, 1), "oldest"),
            ("for the first time", "last year"),
        ),
        (
            "in March, most recently",
            ("in March most recently", D(2026, 3, 1), D(2026, 4, 1), "newest"),
            ("in March", "most recently"),
        ),
        (
            "上个月最后一次去医院",
            ("上个月 最后一次", D(2026, 2, 1), D(2026, 3, 1), "newest"),
            ("上个月", "最后一次"),
        ),
        (
            "去年初めて行った",
            ("去年 初めて", D(2025, 1, 1), D(2026, 1, 1), "oldest"),
            ("去年", "初めて"),
        ),
        # an explicit order overrides the one "recently" implies; its bound stays
        (
            "what did I first do recently",
            ("first recently", D(2026, 2, 16, 10), None, "oldest"),
            ("first", "recently"),
        ),
        (
            "最近第一次",
            ("最近 第一次", D(2026, 2, 16, 10), None, "oldest"),
            ("最近", "第一次"),
        ),
    ],
)
def test_a_range_and_an_order_combine(
    query: str, expected: Expected, pieces: tuple[str, ...]
) -> None:
    assert check(query, expected).expressions == pieces


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # the leftmost range wins; the later one is left in the query
        ("in March or in April", ("in March", D(2026, 3, 1), D(2026, 4, 1), None)),
        ("yesterday or 3 days ago", ("yesterday", D(2026, 3, 17), D(2026, 3, 18), None)),
        ("昨天和今天", ("昨天", D(2026, 3, 17), D(2026, 3, 18), None)),
        ("上周 or last month", ("上周", D(2026, 3, 9), D(2026, 3, 16), None)),
        ("recently, in March", ("recently", D(2026, 2, 16, 10), None, "newest")),
        # the leftmost order wins
        ("the first time, or the last time", ("the first time", None, None, "oldest")),
        ("最后一次还是第一次", ("最后一次", None, None, "newest")),
        # among expressions starting at one place the longest wins
        ("most recently", ("most recently", None, None, "newest")),
        ("一番最近", ("一番最近", None, None, "newest")),
        ("一昨日", ("一昨日", D(2026, 3, 16), D(2026, 3, 17), None)),
        # an expression that starts earlier wins over one it overlaps
        ("the last week of March", ("of March", D(2026, 3, 1), D(2026, 4, 1), None)),
        # one that cannot be resolved does not count and hides nothing
        ("February 30 or yesterday", ("yesterday", D(2026, 3, 17), D(2026, 3, 18), None)),
    ],
)
def test_the_first_range_and_the_first_order_win(query: str, expected: Expected) -> None:
    check(query, expected)


def test_later_ranges_stay_in_the_query() -> None:
    found = find_time("in March or in April", AS_OF)
    assert found is not None
    assert without_time("in March or in April", found) == "or in April"


# --- the calendar -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("in December", ("in December", D(2025, 12, 1), D(2026, 1, 1), None)),
        ("in January", ("in January", D(2026, 1, 1), D(2026, 2, 1), None)),
        ("last January", ("last January", D(2025, 1, 1), D(2025, 2, 1), None)),
        ("十二月", ("十二月", D(2025, 12, 1), D(2026, 1, 1), None)),
        ("yesterday", ("yesterday", D(2026, 1, 4), D(2026, 1, 5), None)),
        ("5 days ago", ("5 days ago", D(2025, 12, 31), D(2026, 1, 1), None)),
        ("last week", ("last week", D(2025, 12, 29), D(2026, 1, 5), None)),
        ("this week", ("this week", D(2026, 1, 5), D(2026, 1, 12), None)),
        ("last month", ("last month", D(2025, 12, 1), D(2026, 1, 1), None)),
        ("2 months ago", ("2 months ago", D(2025, 11, 1), D(2025, 12, 1), None)),
        ("上个月", ("上个月", D(2025, 12, 1), D(2026, 1, 1), None)),
        ("去年", ("去年", D(2025, 1, 1), D(2026, 1, 1), None)),
        ("先月", ("先月", D(2025, 12, 1), D(2026, 1, 1), None)),
        ("December 31", ("December 31", D(2025, 12, 31), D(2026, 1, 1), None)),
    ],
)
def test_around_the_new_year(query: str, expected: Expected) -> None:
    check(query, expected, as_of=us(D(2026, 1, 5, 8)))  # a Monday


def test_a_month_counts_from_its_first_microsecond() -> None:
    march = ("in March", D(2026, 3, 1), D(2026, 4, 1), None)
    check("in March", march, as_of=us(D(2026, 3, 1)))
    before = us(D(2026, 3, 1)) - 1
    check("in March", ("in March", D(2025, 3, 1), D(2025, 4, 1), None), as_of=before)


@pytest.mark.parametrize(
    ("as_of", "query", "expected"),
    [
        (D(2024, 3, 1, 12), "yesterday", ("yesterday", D(2024, 2, 29), D(2024, 3, 1), None)),
        (D(2024, 3, 1, 12), "2 days ago", ("2 days ago", D(2024, 2, 28), D(2024, 2, 29), None)),
        (D(2024, 3, 1, 12), "昨天", ("昨天", D(2024, 2, 29), D(2024, 3, 1), None)),
        (D(2025, 3, 1, 12), "yesterday", ("yesterday", D(2025, 2, 28), D(2025, 3, 1), None)),
        (D(2024, 3, 1, 12), "last month", ("last month", D(2024, 2, 1), D(2024, 3, 1), None)),
        (D(2026, 3, 18), "February 29", ("February 29", D(2024, 2, 29), D(2024, 3, 1), None)),
        (D(2024, 2, 28), "February 29", ("February 29", D(2020, 2, 29), D(2020, 3, 1), None)),
        (D(2024, 2, 29), "2月29日", ("2月29日", D(2024, 2, 29), D(2024, 3, 1), None)),
        (D(2026, 3, 18), "2024年2月29日", ("2024年2月29日", D(2024, 2, 29), D(2024, 3, 1), None)),
        (D(2024, 3, 31, 10), "the past month", ("the past month", D(2024, 2, 29, 10), None, None)),
        (D(2024, 2, 29, 10), "past year", ("past year", D(2023, 2, 28, 10), None, None)),
        (D(2024, 3, 31, 10), "a month ago", ("a month ago", D(2024, 2, 1), D(2024, 3, 1), None)),
    ],
)
def test_leap_years(as_of: datetime, query: str, expected: Expected) -> None:
    check(query, expected, as_of=us(as_of))


@pytest.mark.parametrize(
    "as_of",
    [D(2026, 3, 16), D(2026, 3, 18, 10), datetime(2026, 3, 22, 23, 59, 59, 999999, tzinfo=UTC)],
)
def test_weeks_are_iso_weeks_monday_to_monday(as_of: datetime) -> None:
    check("this week", ("this week", D(2026, 3, 16), D(2026, 3, 23), None), as_of=us(as_of))
    check("last week", ("last week", D(2026, 3, 9), D(2026, 3, 16), None), as_of=us(as_of))


@settings(max_examples=300, deadline=None)
@given(st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(9998, 1, 1)))
def test_calendar_agrees_with_datetime(naive: datetime) -> None:
    moment = naive.replace(tzinfo=UTC)
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    monday = day - timedelta(days=day.weekday())
    first = day.replace(day=1)
    previous = (first - timedelta(days=1)).replace(day=1)
    as_of = us(moment)
    expectations = {
        "yesterday": (day - timedelta(days=1), day),
        "3 days ago": (day - timedelta(days=3), day - timedelta(days=2)),
        "this week": (monday, monday + timedelta(days=7)),
        "2 weeks ago": (monday - timedelta(days=14), monday - timedelta(days=7)),
        "last month": (previous, first),
        "this year": (first.replace(month=1), first.replace(year=first.year + 1, month=1)),
        "in the past 3 days": (moment - timedelta(days=3), None),
    }
    for query, (start, end) in expectations.items():
        found = find_time(query, as_of)
        assert found is not None
        assert (found.start, found.end) == (us(start), None if end is None else us(end))


# --- robustness and determinism -----------------------------------------------------------


def test_every_search_query_is_read_whole() -> None:
    assert READ_CHARS >= MAX_QUERY_CHARS


def test_only_the_first_read_chars_are_read() -> None:
    long = "x" * 10 + " yesterday " + "y" * 2_000_000
    found = find_time(long, AS_OF)
    assert found is not None
    assert found.spans == ((11, 20),)
    assert find_time("x" * READ_CHARS + " yesterday", AS_OF) is None
    text = "a " * (READ_CHARS // 2 - 3) + "in March 2025"  # cut inside "2025"
    assert find_time(text, AS_OF) == find_time(text[:READ_CHARS], AS_OF)


@pytest.mark.parametrize(
    "text",
    [
        "a" * 1_000_000,
        " " * 1_000_000,
        "1" * 1_000_000,
        "in " * 340_000,
        "in" + " " * 1_000_000 + "March",
        "did I " * 170_000,
        "did I " + "x" * 1_000_000 + " first",
        "三" * 1_000_000,
        "\ud800" * 1_000_000,
        "\uff41" * 1_000_000,
    ],
)
def test_huge_queries_without_time_return_none(text: str) -> None:
    assert find_time(text, AS_OF) is None


@pytest.mark.parametrize(
    ("text", "begin"),
    [
        ("三月" * 500_000, 0),
        ("yesterday " * 100_000, 0),
        ("\ud800 yesterday " * 80_000, 2),
        ("上次" * 500_000, 0),
        ("x" * 4000 + " in March" + " y" * 500_000, 4001),
    ],
)
def test_huge_queries_with_time_return_the_first(text: str, begin: int) -> None:
    found = find_time(text, AS_OF)
    assert found is not None
    assert found.span[0] == begin


def test_lone_surrogates_and_control_characters() -> None:
    found = find_time("\ud800 yesterday \udfff\x00", AS_OF)
    assert found is not None
    assert (found.expression, found.span) == ("yesterday", (2, 11))
    assert without_time("\ud800 yesterday \udfff\x00", found) == "\ud800 \udfff\x00"
    assert find_time("\udfff\ud800\x00\n", AS_OF) is None


@pytest.mark.parametrize(
    "as_of",
    [
        us(datetime.min.replace(tzinfo=UTC)),
        us(datetime.max.replace(tzinfo=UTC)),
        -(10**30),
        10**30,
        0,
        -1,
    ],
)
def test_any_as_of_is_accepted_and_unrepresentable_bounds_are_refused(as_of: int) -> None:
    lowest, highest = us(datetime.min.replace(tzinfo=UTC)), us(datetime.max.replace(tzinfo=UTC))
    for query in ("today", "yesterday", "last week", "in March", "9999 years ago", "最近"):
        found = find_time(query, as_of)
        if found is not None:
            assert all(b is None or lowest <= b <= highest for b in (found.start, found.end))
    found = find_time("what did I buy most recently", as_of)
    assert found is not None
    assert (found.start, found.end, found.order) == (None, None, "newest")
    explicit = find_time("in 2025", as_of)
    assert explicit is not None
    assert (explicit.start, explicit.end) == (us(D(2025, 1, 1)), us(D(2026, 1, 1)))


def test_bounds_at_the_ends_of_datetime() -> None:
    last = us(datetime.max.replace(tzinfo=UTC))
    assert find_time("today", last) is None  # it would end at 10000-01-01
    check("yesterday", ("yesterday", D(9999, 12, 30), D(9999, 12, 31), None), as_of=last)
    first = us(datetime.min.replace(tzinfo=UTC))
    assert find_time("yesterday", first) is None
    check("today", ("today", D(1, 1, 1), D(1, 1, 2), None), as_of=first)


def test_the_result_depends_on_nothing_but_the_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    queries = ["yesterday", "last week", "in March", "最近", "先週", "what did I buy first?"]
    before = [find_time(q, AS_OF) for q in queries]
    monkeypatch.setenv("TZ", "Pacific/Kiritimati")  # UTC+14
    time.tzset()
    try:
        during = [find_time(q, AS_OF) for q in queries]
    finally:
        monkeypatch.undo()
        time.tzset()
    assert during == before
    assert all(r is not None for r in before)
    assert find_time("yesterday", AS_OF + 86_400_000_000) != before[0]


def test_a_day_is_a_utc_day_whatever_the_users_time_zone() -> None:
    # 20:00 on March 17 in California (UTC-8) is 04:00 UTC on March 18
    as_of = us(datetime(2026, 3, 17, 20, tzinfo=UTC) + timedelta(hours=8))
    check("yesterday", ("yesterday", D(2026, 3, 17), D(2026, 3, 18), None), as_of=as_of)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("the  last week", None),  # any whitespace after "the"
        ("at  the latest", None),
        ("lathe last week", ("last week", D(2026, 3, 9), D(2026, 3, 16), None)),
        ("3月前往北京", ("3月", D(2026, 3, 1), D(2026, 4, 1), None)),  # 前往, to go to
        ("十十月", None),
        ("二十十天前", None),
        ("昨天から", ("昨天から", D(2026, 3, 17), None, None)),
        ("上周まで", ("上周まで", None, D(2026, 3, 16), None)),
        ("去了March 2025", ("March 2025", D(2025, 3, 1), D(2025, 4, 1), None)),
        ("Marché", None),
        ("1 days ago", ("1 days ago", D(2026, 3, 17), D(2026, 3, 18), None)),
        ("2 week ago", ("2 week ago", D(2026, 3, 2), D(2026, 3, 9), None)),
    ],
)
def test_edges(query: str, expected: Expected | None) -> None:
    if expected is None:
        assert find_time(query, AS_OF) is None
    else:
        check(query, expected)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("3rd of March", ("3rd of March", D(2026, 3, 3), D(2026, 3, 4), None)),
        ("March 3 2025", ("March 3 2025", D(2025, 3, 3), D(2025, 3, 4), None)),
        ("mid March", ("mid March", D(2026, 3, 1), D(2026, 4, 1), None)),
        ("Sep 2024", ("Sep 2024", D(2024, 9, 1), D(2024, 10, 1), None)),
        ("till 2024", ("till 2024", None, D(2025, 1, 1), None)),
        ("for the past 2 days", ("for the past 2 days", D(2026, 3, 16, 10), None, None)),
        ("上上星期", ("上上星期", D(2026, 3, 2), D(2026, 3, 9), None)),
        ("上上个星期", ("上上个星期", D(2026, 3, 2), D(2026, 3, 9), None)),
        ("这礼拜", ("这礼拜", D(2026, 3, 16), D(2026, 3, 23), None)),
        ("两星期前", ("两星期前", D(2026, 3, 2), D(2026, 3, 9), None)),
        ("三礼拜前", ("三礼拜前", D(2026, 2, 23), D(2026, 3, 2), None)),
        ("最近的三天", ("最近的三天", D(2026, 3, 15, 10), None, None)),
        ("过去三天内", ("过去三天内", D(2026, 3, 15, 10), None, None)),
        ("今年的3月", ("今年的3月", D(2026, 3, 1), D(2026, 4, 1), None)),
        ("2週前", ("2週前", D(2026, 3, 2), D(2026, 3, 9), None)),
        ("3箇月前", ("3箇月前", D(2025, 12, 1), D(2026, 1, 1), None)),
        ("3ケ月前", ("3ケ月前", D(2025, 12, 1), D(2026, 1, 1), None)),
        ("近ごろ", ("近ごろ", D(2026, 2, 16, 10), None, "newest")),
        ("一昨年の3月", ("一昨年の3月", D(2024, 3, 1), D(2024, 4, 1), None)),
        ("昨日から", ("昨日から", D(2026, 3, 17), None, None)),
        ("2025年3月饼", ("2025年", D(2025, 1, 1), D(2026, 1, 1), None)),  # 月饼, mooncakes
        ("he was at first base", None),
        ("\u32c2", None),  # NFKC expands it to 3月: not folded
        ("\ufb01rst time", None),  # the ligature fi: not folded
    ],
)
def test_more_forms(query: str, expected: Expected | None) -> None:
    if expected is None:
        assert find_time(query, AS_OF) is None
    else:
        check(query, expected)


# --- the documentation --------------------------------------------------------------------


def _when(cell: str) -> datetime | None:
    if not cell:
        return None
    return datetime.fromisoformat(cell).replace(tzinfo=UTC)


def _doc_tables() -> tuple[list[tuple[str, Expected]], list[str]]:
    """The example rows of docs/time-expressions.md: (query, expected) and the queries
    of its "Not recognised" tables."""
    found: list[tuple[str, Expected]] = []
    refused: list[str] = []
    header: list[str] = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if not header:
            header = cells
            continue
        if set("".join(cells)) <= set("-"):
            continue
        rows = dict(zip(header, cells, strict=True))
        if header == ["Not recognised", "Why"]:
            refused.append(rows["Not recognised"].strip("`"))
        elif header[-4:] == ["Recognised", "From", "Until", "Order"]:
            query = rows.get("Example", rows.get("Query", "")).strip("`")
            expected: Expected = (
                rows["Recognised"].strip("`"),
                _when(rows["From"]),
                _when(rows["Until"]),
                rows["Order"] or None,
            )
            found.append((query, expected))
    return found, refused


DOC_FOUND, DOC_REFUSED = _doc_tables()


def test_the_documentation_has_examples() -> None:
    assert len(DOC_FOUND) > 150
    assert len(DOC_REFUSED) > 50


@pytest.mark.parametrize(("query", "expected"), DOC_FOUND)
def test_every_documented_example_resolves_as_documented(query: str, expected: Expected) -> None:
    check(query, expected)


@pytest.mark.parametrize("query", DOC_REFUSED)
def test_every_documented_refusal_is_refused(query: str) -> None:
    assert find_time(query, AS_OF) is None


# --- any input ----------------------------------------------------------------------------

PIECES = [
    " ",
    ",",
    "?",
    "'",
    "-",
    "in",
    "on",
    "of",
    "the",
    "since",
    "before",
    "last",
    "this",
    "past",
    "first",
    "time",
    "did",
    "I",
    "buy",
    "may",
    "March",
    "Jan",
    "3",
    "31",
    "2025",
    "rd",
    "week",
    "weeks",
    "days",
    "ago",
    "year",
    "recently",
    "most",
    "at",
    "latest",
    "三",
    "十",
    "二",
    "两",
    "月",
    "日",
    "号",
    "年",
    "天",
    "周",
    "週間",
    "个",
    "前",
    "后",
    "以来",
    "以前",
    "上",
    "本",
    "今",
    "去",
    "最近",
    "一次",
    "第",
    "の",
    "に",
    "から",
    "まで",
    "ヶ",
    "饼",
    "度",
    "\uff13",
    "\ud800",
    "\U0001f389",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=14).map("".join) | st.text(max_size=60),
    st.integers(min_value=-(2**70), max_value=2**70) | st.just(AS_OF),
)
def test_any_text_gives_a_consistent_reference_or_none(text: str, as_of: int) -> None:
    found = find_time(text, as_of)
    assert found == find_time(text, as_of)
    if found is None:
        return
    assert 1 <= len(found.spans) <= 2
    assert found.spans == tuple(sorted(found.spans))
    assert all(0 <= b < e <= len(text) for b, e in found.spans)
    assert all(a[1] <= b[0] for a, b in zip(found.spans, found.spans[1:], strict=False))
    assert found.expressions == tuple(text[b:e] for b, e in found.spans)
    assert found.expression == " ".join(found.expressions)
    assert found.span == (found.spans[0][0], found.spans[-1][1])
    assert found.order in (None, "newest", "oldest")
    assert (found.start, found.end, found.order) != (None, None, None)
    if found.start is not None and found.end is not None:
        assert found.start < found.end
    assert len(without_time(text, found)) <= len(text)
