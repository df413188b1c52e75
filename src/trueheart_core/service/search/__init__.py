"""Search: answering a query, and keeping the lexical index in step with the memories.

One search is one pass down and back: :func:`read_time` reads the query's time
expression (before any transaction, so that the embedder sees the query without it);
:func:`answer` ranks the scope's memories (``lexical``: BM25 through the search role;
``hybrid``: that ranking fused with the semantic scan and the reranker), limited to the
period the query names and ordered as it asks, then packs the window into the capsule
and verifies what enters it (``capsule``). A question about a period that names nothing
else ("what did I do yesterday?") is answered by ``about_period`` instead: the memories
about the period, in time order, ranked by nothing. ``index`` keeps the index in step
with every write. The rules (tokenisation, stop words, BM25, time expressions, the result order,
fusion, packing) live in ``domain``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from trueheart_core.domain.search import ranking as rules
from trueheart_core.domain.search.capsule import Ranked, TokenEstimator
from trueheart_core.domain.search.mentions import NO_MENTIONS, Mentions, mentions_of
from trueheart_core.domain.search.model import (
    MemoryCapsule,
    SearchQuery,
    SignalSource,
    TimeOrder,
    TimeTrace,
)
from trueheart_core.domain.search.stopwords import asks_only_when, named_stop_words
from trueheart_core.domain.search.tokenize import tokenize
from trueheart_core.domain.search.when import TimeReference, find_time, without_time
from trueheart_core.ports import Period, UnitOfWork
from trueheart_core.service import records
from trueheart_core.service.records import scope_key
from trueheart_core.service.search import about_period, hybrid, lexical
from trueheart_core.service.search.capsule import ClaimViews, capsule
from trueheart_core.service.search.index import (
    doc_row,
    ensure_index,
    has_memories,
    index_is_current,
    rebuild,
)
from trueheart_core.service.search.lexical import Ranking

__all__ = [
    "PERIOD_EMPTY",
    "TIME_ONLY",
    "ClaimViews",
    "QueryTime",
    "answer",
    "doc_row",
    "ensure_index",
    "has_memories",
    "index_is_current",
    "read_time",
    "rebuild",
]

PERIOD_EMPTY = "time_period_empty"

TIME_ONLY = "time_only"
"""The diagnostic of a question about a period that names nothing else: its answer is
the memories about the period in time order, with no relevance score."""


@dataclass(frozen=True, slots=True)
class QueryTime:
    """What a query says about time; the text that is searched: the query without its
    time expression (the whole query when nothing else is left), since a memory about
    the period need not say so; what a memory holds that ``mentions`` its period
    (``domain.search.mentions``); and whether it asks ``only`` about its period (it
    names one, and nothing but stop words and open words are left beside it,
    ``domain.search.stopwords.asks_only_when``)."""

    reference: TimeReference | None
    text: str
    mentions: Mentions = NO_MENTIONS
    only: bool = False

    @property
    def period(self) -> Period | None:
        """The period the query names, or ``None``."""
        reference = self.reference
        if reference is None or (reference.start is None and reference.end is None):
            return None
        return reference.start, reference.end


def read_time(query: SearchQuery) -> QueryTime:
    """The time expression of a ``time_aware`` query, resolved at its ``as_of``."""
    if not query.time_aware:
        return QueryTime(None, query.text)
    as_of = records.to_us(query.as_of)
    reference = find_time(query.text, as_of)
    if reference is None:
        return QueryTime(None, query.text)
    naming = []
    closed: list[tuple[str, int, int]] = []
    for text in reference.expressions:
        piece = find_time(text, as_of)
        if piece is not None and (piece.start is not None or piece.end is not None):
            naming.append(text)
            if piece.start is not None and piece.end is not None:
                closed.append((text, piece.start, piece.end))
    rest = without_time(query.text, reference)
    # Only a period with both ends is named by its words: "before 2025" names 2025 as
    # the bound, outside the period, and a memory that says 2025 is not about it. A
    # calendar year or month is named by its own words too, however the question says
    # it ("this year": 2026), and a day by its month and number ("yesterday": Dec 5).
    words = tokenize(rest)
    only = bool(naming) and asks_only_when(words, named_stop_words(rest))
    return QueryTime(reference, rest if words else query.text, mentions_of(closed), only)


def answer(
    uow: UnitOfWork,
    query: SearchQuery,
    estimator: TokenEstimator,
    claim_views: ClaimViews,
    semantic: hybrid.SemanticSearch | None = None,
    vector: Sequence[float] | None = None,
    time: QueryTime | None = None,
) -> MemoryCapsule:
    """The capsule of ``query`` (the index must be current, see
    :func:`index_is_current`): hybrid when semantic settings and the query's vector are
    given, lexical otherwise; limited to the period of ``time`` (by default read from
    the query) unless nothing is in it, and ordered as it asks. Every memory that
    enters the capsule is loaded from its row and verified; an index answer that
    disagrees with its row fails closed."""
    time = read_time(query) if time is None else time
    period = time.period
    if time.only and period is not None and time.reference is not None:
        return _about_period(uow, query, estimator, claim_views, time, period)

    def ranked(within: Period | None) -> Ranking:
        if semantic is None or vector is None:
            return lexical.ranked(uow, query, time.text, within)
        return hybrid.ranked(uow, query, semantic, vector, time.text, within)

    diagnostics: tuple[str, ...] = ()
    if period is None:
        found = ranked(None)
    else:
        found = ranked(period)
        # The search over every time is needed only for the memories that mention the
        # period, or to fall back on: a relative period ("last week") with candidates
        # in it costs one ranking, not two.
        if time.mentions or not found.ranked:
            everywhere = ranked(None)
            mentioning = _mentioning(uow, query, everywhere, time.mentions)
            found = _merged(query, found, everywhere, mentioning)
            if not found.ranked:
                found, period, diagnostics = everywhere, None, (PERIOD_EMPTY,)
    trace = None
    reference = time.reference
    if reference is not None:
        order = None if reference.order is None else TimeOrder(reference.order)
        if order is not None:
            found = _ordered(found, order)
        trace = TimeTrace(
            reference.expression,
            None if reference.start is None else records.from_us(reference.start),
            None if reference.end is None else records.from_us(reference.end),
            order,
            period is not None,
            diagnostics,
        )
    return capsule(uow, query, estimator, claim_views, found, trace, period, time.mentions)


def _about_period(
    uow: UnitOfWork,
    query: SearchQuery,
    estimator: TokenEstimator,
    claim_views: ClaimViews,
    time: QueryTime,
    period: Period,
) -> MemoryCapsule:
    """The capsule of a question about a period that names nothing else: the memories
    about the period in time order (the order asked, else newest first), never every
    time."""
    reference = time.reference
    assert reference is not None
    order = None if reference.order is None else TimeOrder(reference.order)
    found = about_period.ranked(uow, query, period, time.mentions, order is not TimeOrder.OLDEST)
    diagnostics = (TIME_ONLY,) if found.ranked else (TIME_ONLY, PERIOD_EMPTY)
    trace = TimeTrace(
        reference.expression,
        None if reference.start is None else records.from_us(reference.start),
        None if reference.end is None else records.from_us(reference.end),
        order,
        True,
        diagnostics,
    )
    return capsule(uow, query, estimator, claim_views, found, trace, period, time.mentions)


def _mentioning(
    uow: UnitOfWork, query: SearchQuery, found: Ranking, mentions: Mentions
) -> frozenset[str]:
    """The candidates of ``found`` whose index entry holds what ``mentions`` asks."""
    if not mentions or not found.ranked:
        return frozenset()
    ids = [item.memory_id for item in found.ranked]
    return frozenset(about_period.mentioning(uow, scope_key(query.scope), mentions, ids))


def _merged(
    query: SearchQuery, within: Ranking, everywhere: Ranking, mentioning: frozenset[str]
) -> Ranking:
    """The candidates of the period, and those of every time that mention it, in score
    order, at most the window. Each ranking is already in its own order, whose
    tie-breaks come before the usual ones (a hybrid ranking's similarity and keyword
    rank): equal scores keep that order, the period's candidates first."""
    held = {item.memory_id for item in within.ranked}
    extra = [
        item
        for item in everywhere.ranked
        if item.memory_id in mentioning and item.memory_id not in held
    ]
    facts = {**everywhere.facts, **within.facts}
    both = [*within.ranked, *extra]
    place = {item.memory_id: index for index, item in enumerate(both)}
    merged = sorted(both, key=lambda item: (-item.score, place[item.memory_id]))[
        : rules.candidate_window(query.limit)
    ]
    rows = {**everywhere.rows, **within.rows}
    kept = {item.memory_id for item in merged}
    return Ranking(
        merged,
        {memory_id: row for memory_id, row in rows.items() if memory_id in kept},
        {memory_id: fact for memory_id, fact in facts.items() if memory_id in kept},
        within.matched + len(extra),
        within.semantic,
    )


def _relevance(item: Ranked) -> float:
    """How relevant a candidate is on a scale linear in each ranking's evidence: the
    BM25 score of a lexical search; in a hybrid one, the lexical share of the ceiling
    (the square root of its contribution) plus the semantic contribution."""
    if not item.signals:
        return item.score
    total = 0.0
    for signal in item.signals:
        if signal.source is SignalSource.LEXICAL:
            total += math.sqrt(signal.contribution)
        elif signal.source is SignalSource.SEMANTIC:
            total += signal.contribution
    return total


def _ordered(found: Ranking, order: TimeOrder) -> Ranking:
    """The ranking with its relevant candidates put first, newest or oldest first."""
    facts = found.facts
    ranked = rules.by_time(
        found.ranked,
        _relevance,
        lambda item: facts[item.memory_id].created_at,
        newest=order is TimeOrder.NEWEST,
    )
    return replace(found, ranked=ranked)
