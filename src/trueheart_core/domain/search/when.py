"""Time expressions in search queries (pure): what time a query refers to.

Queries refer to time in words ("where did I go hiking in March?", "what did I order
most recently?", "昨天我吃了什么", "先週どこに行った?"), while memories carry it in
their ``created_at``. :func:`find_time` recognises those words and resolves them against
``as_of`` into a :class:`TimeReference`: bounds of ``created_at``, an order
(newest or oldest first), or both; :func:`without_time` gives the query with the words
removed, which is what lexical matching should see. ``docs/time-expressions.md`` lists
every form recognised, in English, Chinese and Japanese, and what each resolves to.

The rules, in short:

1. Text is folded character for character before matching (full-width letters and
   digits become ASCII, compatibility ideographs their unified forms), so offsets in
   the folded text are offsets in the query; English is matched case-insensitively.
2. Every candidate expression is found, then the leftmost, and among those starting at
   the same place the longest, are kept, never two overlapping.
3. The first kept expression that limits ``created_at`` gives the bounds; the first that
   only orders gives the order. "Recently" limits (the last 30 days) and orders
   (newest); its order yields to an explicit one.
4. Only the first :data:`READ_CHARS` characters are read.
5. Everything is in UTC: a day is 00:00 to 00:00 UTC, a week ISO Monday to Monday.
6. Precision over recall: a word that is time only in some company ("May", "first")
   counts only in that company, because a false bound filters the right memory away.

Deterministic: the result depends only on ``text`` and ``as_of_us``, never on the
locale, the machine's time zone or clock. Any ``str`` (empty, huge, with lone
surrogates) and any ``int`` are accepted, and no pattern backtracks more than linearly.
"""

from __future__ import annotations

import functools
import itertools
import unicodedata
from dataclasses import dataclass

from trueheart_core.domain.search import when_cjk, when_en
from trueheart_core.domain.search.when_calendar import Mention, Order, resolve

__all__ = ["READ_CHARS", "TimeReference", "find_time", "without_time"]

READ_CHARS = 4096
"""Only the first this many characters of a query are read for time, as many as the
longest search query holds: a longer text is treated as if it ended there, so that the
work, and the number of candidate expressions, stay bounded whatever the input."""


@dataclass(frozen=True, slots=True)
class TimeReference:
    """The time a query refers to.

    ``start`` (inclusive) and ``end`` (exclusive) bound ``created_at`` in microseconds
    since the Unix epoch, UTC; None is no bound on that side. ``order`` asks for the
    newest or the oldest memories first, or is None. ``expressions`` and ``spans`` are
    the pieces of the query that say so (at most two: one that bounds, one that
    orders), left to right, each exactly as written and as ``[begin, end)`` character
    offsets into the query. ``expression`` joins the pieces with a space and ``span``
    covers them from the first's begin to the last's end.
    """

    expression: str
    start: int | None
    end: int | None
    order: Order | None
    span: tuple[int, int]
    expressions: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]


@functools.cache
def _folding() -> dict[int, str]:
    """The characters of the Basic Multilingual Plane that NFKC maps to one other
    character: full-width ``May 3`` becomes ASCII and no offset moves. Characters NFKC
    expands (``"㋂"``, ``"ﬁ"``) are left as they are."""
    table: dict[int, str] = {}
    for code in itertools.chain(range(0xA0, 0xD800), range(0xE000, 0x10000)):
        folded = unicodedata.normalize("NFKC", chr(code))
        if len(folded) == 1 and folded != chr(code):
            table[code] = folded
    return table


def _resolved(mention: Mention, as_of_us: int) -> tuple[int | None, int | None] | None:
    if mention.period is None:
        return None, None
    return resolve(mention.period, mention.bound, as_of_us)


def find_time(text: str, as_of_us: int) -> TimeReference | None:
    """The time reference of a query, resolved against as_of (microseconds since epoch,
    UTC), or None."""
    read = text[:READ_CHARS]
    folded = read if read.isascii() else read.translate(_folding())
    found = []
    for mention in itertools.chain(when_en.mentions(folded), when_cjk.mentions(folded)):
        bounds = _resolved(mention, as_of_us)
        if bounds is not None:
            found.append((mention, bounds))
    found.sort(key=lambda item: (item[0].begin, item[0].begin - item[0].end))
    kept = []
    reach = 0
    for mention, bounds in found:
        if mention.begin >= reach:
            kept.append((mention, bounds))
            reach = mention.end
    limit = next((item for item in kept if item[0].period is not None), None)
    ordering = next((item for item in kept if item[0].period is None), None)
    if limit is None and ordering is None:
        return None
    pieces = sorted(
        (item[0] for item in (limit, ordering) if item is not None), key=lambda m: m.begin
    )
    start, end = limit[1] if limit is not None else (None, None)
    order = ordering[0].order if ordering is not None else None
    if order is None and limit is not None:
        order = limit[0].order
    expressions = tuple(text[m.begin : m.end] for m in pieces)
    return TimeReference(
        expression=" ".join(expressions),
        start=start,
        end=end,
        order=order,
        span=(pieces[0].begin, pieces[-1].end),
        expressions=expressions,
        spans=tuple((m.begin, m.end) for m in pieces),
    )


def without_time(text: str, reference: TimeReference) -> str:
    """The query with the matched expression removed (what lexical matching should see).

    Every piece of ``reference.spans`` is cut out; the whitespace on both sides of a cut
    is replaced by a single space where text remains on both sides (so that no new word
    is formed across the cut, in Chinese or Japanese either), and by nothing at the
    start or end of the query."""
    kept: list[str] = []
    cursor = 0
    for begin, end in sorted(reference.spans):
        kept.append(text[cursor : max(begin, cursor)])
        cursor = max(cursor, end)
    kept.append(text[cursor:])
    last = len(kept) - 1
    trimmed = [
        piece
        if len(kept) == 1
        else piece.rstrip()
        if i == 0
        else piece.lstrip()
        if i == last
        else piece.strip()
        for i, piece in enumerate(kept)
    ]
    return " ".join(piece for piece in trimmed if piece)
