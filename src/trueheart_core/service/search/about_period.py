"""The answer to a question about a period that names nothing else ("what did I do
yesterday?", "what happened last week?", "yesterday"): the memories about the period,
whatever they say, in time order.

Such a question holds no word to rank by: its words, once the time expression is left
out, are stop words or open words (``domain.search.stopwords.asks_only_when``). The
memories about the period are the memories created in it (a claim among them only when
its validity overlaps the period: ``SearchIndex.in_period``, which walks an index of
the scope in time order and stops at the window), and the memories that mention it
(``domain.search.mentions``), found as the best window of a search for the words that
name it. Claims valid in the period but recorded outside it are left out: finding them
would read every claim of the scope. They are ranked by ``created_at`` (newest first, or oldest
first when the question asks), then ``memory_id``; their score is 0.0, since no
relevance was measured.
"""

from __future__ import annotations

from collections.abc import Iterable

from trueheart_core.domain import policy
from trueheart_core.domain.search import ranking
from trueheart_core.domain.search.capsule import Ranked
from trueheart_core.domain.search.mentions import Mentions
from trueheart_core.domain.search.model import SearchQuery
from trueheart_core.domain.search.tokenize import term_key
from trueheart_core.ports import Period, RecallCandidate, ScopeKey, UnitOfWork
from trueheart_core.service import loading, records
from trueheart_core.service.records import scope_key
from trueheart_core.service.search.index import INDEX_CORRUPT
from trueheart_core.service.search.lexical import (
    Facts,
    Ranking,
    checked,
    scored,
    statistics,
    term_weights,
)

__all__ = ["SCORE", "ranked"]

SCORE = 0.0
"""The score of every memory in the answer: nothing was ranked by relevance."""


def _facts(candidate: object) -> Facts:
    """What the index said of a memory in the period, checked."""
    if not isinstance(candidate, RecallCandidate) or not isinstance(candidate.memory_id, str):
        loading.corrupt(INDEX_CORRUPT)
    times = (candidate.created_at, candidate.clear_until, candidate.recall_until)
    if not all(type(t) is int for t in times):
        loading.corrupt(INDEX_CORRUPT)
    return Facts(*times)


def mentioning(
    uow: UnitOfWork, key: ScopeKey, mentions: Mentions, memory_ids: Iterable[str]
) -> set[str]:
    """Those of these memories whose index entry holds what ``mentions`` asks."""
    wanted = set(memory_ids)
    keys = {word: term_key(word) for word in mentions.words()}
    found = set()
    for doc in uow.search.docs_for(key, sorted(wanted)):
        held = {term for term, _ in doc.terms}
        holding = {word for word, term in keys.items() if term in held}
        if doc.memory_id in wanted and mentions.held_by(holding.__contains__):
            found.add(doc.memory_id)
    return found


MENTION_READ_LIMIT = 4096
"""The most memories holding a name of the period that one question reads when most of
them lack the company it needs (the verb "may" beside no number)."""


def _mentioning(
    uow: UnitOfWork, query: SearchQuery, key: ScopeKey, mentions: Mentions, window: int
) -> dict[str, Facts]:
    """The eligible memories, of every time, that mention the period: the best ``window``
    of a BM25 search for the names of ``mentions`` (ties at the edge included); when
    some of them lack the company a name needs, read on, four times as many at a time up
    to :data:`MENTION_READ_LIMIT`, until ``window`` of them hold what it asks."""
    if not mentions:
        return {}
    scope = statistics(uow, key)
    names = sorted({term_key(name) for name in mentions.names()})
    weights = term_weights(uow, key, scope[0], names, 1.0)
    if not weights:
        return {}
    size = window
    while True:
        matched, found = scored(uow, query, weights, scope, size)
        facts = {
            c.memory_id: Facts(c.created_at, c.clear_until, c.recall_until)
            for c in map(checked, found)
        }
        if not mentions.need_company():
            return facts
        kept = mentioning(uow, key, mentions, facts)
        if len(kept) >= window or len(found) >= matched or size >= MENTION_READ_LIMIT:
            return {memory_id: facts[memory_id] for memory_id in kept}
        size = min(size * 4, MENTION_READ_LIMIT)


def ranked(
    uow: UnitOfWork, query: SearchQuery, period: Period, mentions: Mentions, newest: bool
) -> Ranking:
    """The window of the memories about ``period`` (created in it, or holding what
    ``mentions`` it), newest first or (``newest`` false) oldest first, with their rows;
    ``matched`` counts the memories found before the window was cut."""
    key = scope_key(query.scope)
    as_of = records.to_us(query.as_of)
    window = ranking.candidate_window(query.limit)
    found = uow.search.in_period(
        key,
        period,
        as_of,
        query.kinds,
        None if query.min_trust is None else int(query.min_trust),
        [status.value for status in query.claim_statuses],
        newest,
        window,
    )
    if not isinstance(found, list) or len(found) > window:
        loading.corrupt(INDEX_CORRUPT)
    facts = {candidate.memory_id: _facts(candidate) for candidate in found}
    if len(facts) != len(found):
        loading.corrupt(INDEX_CORRUPT)
    for memory_id, fact in _mentioning(uow, query, key, mentions, window).items():
        facts.setdefault(memory_id, fact)
    ordered = sorted(facts, key=lambda memory_id: (-facts[memory_id].created_at, memory_id))
    if not newest:
        ordered.reverse()
    chosen = ordered[:window]
    rows = {row.memory_id: row for row in uow.memories.get_many(key, chosen)}
    items = []
    for memory_id in chosen:
        row = rows.get(memory_id)
        if row is None or not isinstance(row.content, str):
            loading.corrupt(INDEX_CORRUPT)
        fact = facts[memory_id]
        clarity = policy.clarity_us(as_of, fact.clear_until, fact.recall_until)
        items.append(Ranked(memory_id, row.content, SCORE, clarity))
    return Ranking(items, rows, {memory_id: facts[memory_id] for memory_id in chosen}, len(facts))
