"""Chinese and Japanese time expressions of search queries (pure).

:func:`mentions` finds every Chinese or Japanese expression of
``docs/time-expressions.md`` in a query (already folded by ``when``: full-width digits
made ASCII), without resolving it. Simplified and traditional characters are both
accepted. Neither script separates words, so a time word is refused where the
characters around it make it part of another word: 本周 in 日本周边 (Japan's
surroundings), 上月 in 晚上月亮 (the evening moon), 月 in 月饼 (mooncake).

A year, month or day followed by 以前, 之前 or より前 limits ``created_at`` to before
it; by 以来, 至今, 以降 or から, to its start on; by まで, to its end. Followed by a bare
前, 后 or 後 (2025年前三个月, "the first three months of 2025"; 三月以后, "from March
on", inclusive or not) it is not recognised at all.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from trueheart_core.domain.search.when_calendar import (
    RECENT_DAYS,
    Bound,
    Dated,
    Mention,
    Order,
    Period,
    Relative,
    Rolling,
    Unit,
)

__all__ = ["mentions"]

_WORDS: dict[str, tuple[Unit, int]] = {
    "今天": ("day", 0),
    "今日": ("day", 0),
    "昨天": ("day", -1),
    "昨日": ("day", -1),
    "前天": ("day", -2),
    "大前天": ("day", -3),
    "一昨日": ("day", -2),
    "おととい": ("day", -2),
    "本周": ("week", 0),
    "这周": ("week", 0),
    "本星期": ("week", 0),
    "这星期": ("week", 0),
    "这个星期": ("week", 0),
    "这礼拜": ("week", 0),
    "这个礼拜": ("week", 0),
    "今週": ("week", 0),
    "上周": ("week", -1),
    "上星期": ("week", -1),
    "上个星期": ("week", -1),
    "上礼拜": ("week", -1),
    "上个礼拜": ("week", -1),
    "先週": ("week", -1),
    "上上周": ("week", -2),
    "上上星期": ("week", -2),
    "上上个星期": ("week", -2),
    "先々週": ("week", -2),
    "本月": ("month", 0),
    "这月": ("month", 0),
    "这个月": ("month", 0),
    "今月": ("month", 0),
    "上月": ("month", -1),
    "上个月": ("month", -1),
    "先月": ("month", -1),
    "上上个月": ("month", -2),
    "先々月": ("month", -2),
    "今年": ("year", 0),
    "去年": ("year", -1),
    "昨年": ("year", -1),
    "一昨年": ("year", -2),
    "おととし": ("year", -2),
}
"""The relative words; the Chinese ones in simplified characters, with their traditional
spellings (這, 個, 週, 禮) accepted too: 本週, 上個月, 這個禮拜."""

_VARIANTS = {"这": "这這", "个": "个個", "周": "周週", "礼": "礼禮"}

# The characters that make a word of 上, 本 or 前 with the one before it (晚上, 日本,
# 以前), of 周, 月 or 年 with the one after it (周边, 月饼, 年度).
_BEFORE_UP = "晚早马馬身网網路桌楼樓加以向线線天手脸臉墙牆地台头頭"
_BEFORE_BOOK = "日基根书書版成样樣剧劇资資课課账賬脚腳文原"
_BEFORE_FRONT = "眼面以之目当當提"
_AFTER_WEEK = "边邊围圍期年岁歲长長"
_AFTER_MONTH = "饼餅亮光球"
_HAN_DIGITS = {"\u3007": 0, "零": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4}
_HAN_DIGITS |= {"五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_HAN = "[\u3007零一二两兩三四五六七八九十]{1,3}"
_NUMBER = f"(?:[0-9]{{1,3}}|{_HAN})"
_NOT_AFTER_NUMBER = "(?<![0-9\u3007零一二两兩三四五六七八九十百千万萬第年])"
_UNIT = "天|日|週間|[周週]|[个個]?星期|[个個]?[礼禮]拜|[个個]月|[かヶヵカケ箇]月|年"


def _guarded(word: str) -> str:
    first, last = word[0], word[-1]
    pattern = re.escape(word)
    before = {"上": _BEFORE_UP, "本": _BEFORE_BOOK, "前": _BEFORE_FRONT}.get(first)
    if before:
        # Checked after the first character, so that the alternation starts with a
        # literal and the search skips quickly to where one can begin.
        pattern = f"{re.escape(first)}(?<![{before}]{re.escape(first)}){re.escape(word[1:])}"
    after = {"周": _AFTER_WEEK, "週": _AFTER_WEEK, "月": _AFTER_MONTH, "年": "度"}.get(last)
    if after:
        pattern = f"{pattern}(?![{after}])"
    if word.startswith("前天"):
        pattern += "(?![空然])"
    return pattern


def _spellings(word: str) -> list[str]:
    return ["".join(chars) for chars in itertools.product(*(_VARIANTS.get(c, c) for c in word))]


_SPELLED = {spelling: value for word, value in _WORDS.items() for spelling in _spellings(word)}
_RELATIVE = re.compile("|".join(map(_guarded, sorted(_SPELLED, key=len, reverse=True))))
_YEAR_DATE = re.compile(
    rf"(?<![0-9])(?P<year>[0-9]{{4}})年"
    rf"(?:(?P<month>[0-9]{{1,2}}|{_HAN})月份?(?:(?P<day>[0-9]{{1,2}}|{_HAN})[日号號])?)?"
    rf"(?![{_AFTER_MONTH}])"
)
_MONTH_DATE = re.compile(
    rf"(?:(?P<year>今年|去年|昨年|一昨年)[の的]?|{_NOT_AFTER_NUMBER})"
    rf"(?P<month>[0-9]{{1,2}}|{_HAN})月份?(?:(?P<day>[0-9]{{1,2}}|{_HAN})[日号號])?"
    rf"(?![{_AFTER_MONTH}])"
)
_YEAR_OFFSETS = {"今年": 0, "去年": -1, "昨年": -1, "一昨年": -2}
_AGO = re.compile(
    rf"(?<![0-9\u3007零一二两兩三四五六七八九十百千万萬第月])(?P<count>{_NUMBER})"
    rf"(?P<unit>{_UNIT})[之以]?前(?![往进進面方])に?"
)
_ROLLING = re.compile(
    rf"(?:最近|过去|過去|ここ)的?(?P<count>{_NUMBER})(?P<unit>{_UNIT})(?:[间間内內里裡]|以来)?"
)
_RECENTLY = re.compile("最近(?![的邻鄰点點处處])|この頃|このごろ|近頃|近ごろ")
_NEWEST = re.compile(
    f"最后一次|最後一次|最近一次|(?<![{_BEFORE_UP}])上一?次|一番最近|前回|最新|最後に"
)
_OLDEST = re.compile("第一次(?!世界)|最早|首次|初めて|(?:一番)?最初に?")
_SUFFIX = re.compile(
    "(?P<since>以来|至今|以降|から)|(?P<before>以前|之前|より前)|(?P<until>まで)"
    "|(?P<refused>以后|以後|之后|之後|より後|前(?![往进進])|后|後)"
)


def _number(text: str) -> int | None:
    """The value of a number in digits or in Chinese numerals below 100 (三, 十二,
    二十一), or None for a malformed one."""
    if text.isdigit():
        return int(text)
    tens, ten, units = text.partition("十")
    if not ten:
        return _HAN_DIGITS.get(text)
    high = _HAN_DIGITS.get(tens, 0) if tens else 1
    low = _HAN_DIGITS.get(units, 0) if units else 0
    return 10 * high + low if high and (low or not units) else None


def _unit(text: str) -> Unit:
    last = text[-1]
    if last in "天日":
        return "day"
    if last == "月":
        return "month"
    return "year" if last == "年" else "week"


def _bounded(text: str, begin: int, end: int, period: Period, dated: bool) -> Mention | None:
    """The mention of ``period`` at ``[begin, end)`` with the suffix that follows it, or
    None where the suffix makes the period mean something else."""
    suffix = _SUFFIX.match(text, end)
    bound: Bound = "within"
    if suffix is not None:
        if suffix["refused"]:
            return None
        end = suffix.end()
        bound = "since" if suffix["since"] else "before" if suffix["before"] else "until"
    elif dated and text.startswith("に", end):
        end += 1
    return Mention(begin, end, period, bound=bound)


def _dates(text: str) -> Iterator[Mention]:
    for match in itertools.chain(_YEAR_DATE.finditer(text), _MONTH_DATE.finditer(text)):
        year_text, month_text, day_text = match["year"], match["month"], match["day"]
        month = _number(month_text) if month_text else None
        day = _number(day_text) if day_text else None
        if month_text and (month is None or not 1 <= month <= 12):
            continue
        if day_text and (day is None or not 1 <= day <= 31):
            continue
        if year_text is None:
            period = Dated(month=month, day=day)
        elif year_text.isdigit():
            if month is None and text.startswith(("代", "度"), match.end()):
                continue  # 1990年代, the 1990s; 2025年度, a fiscal year
            period = Dated(month=month, day=day, year=int(year_text))
        else:
            period = Dated(month=month, day=day, year_offset=_YEAR_OFFSETS[year_text])
        mention = _bounded(text, match.start(), match.end(), period, dated=True)
        if mention is not None:
            yield mention


def _counted(pattern: re.Pattern[str], text: str) -> Iterator[tuple[re.Match[str], int, Unit]]:
    for match in pattern.finditer(text):
        count = _number(match["count"])
        if count:
            yield match, count, _unit(match["unit"])


def _ordered(pattern: re.Pattern[str], text: str, order: Order) -> Iterator[Mention]:
    for match in pattern.finditer(text):
        yield Mention(match.start(), match.end(), order=order)


def mentions(text: str) -> Iterator[Mention]:
    """Every Chinese or Japanese time expression of ``text``, left to right within each
    kind."""
    for match in _RELATIVE.finditer(text):
        unit, offset = _SPELLED[match[0]]
        mention = _bounded(text, match.start(), match.end(), Relative(unit, offset), False)
        if mention is not None:
            yield mention
    yield from _dates(text)
    for match, count, unit in _counted(_AGO, text):
        yield Mention(match.start(), match.end(), Relative(unit, -count))
    for match, count, unit in _counted(_ROLLING, text):
        yield Mention(match.start(), match.end(), Rolling(unit, count))
    for match in _RECENTLY.finditer(text):
        yield Mention(match.start(), match.end(), Rolling("day", RECENT_DAYS), order="newest")
    yield from _ordered(_NEWEST, text, "newest")
    yield from _ordered(_OLDEST, text, "oldest")
