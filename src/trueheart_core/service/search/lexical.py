"""The lexical ranking: BM25 over the scope's index, from the weights the service
computes (``domain.search.ranking``), evaluated by the search role of the port."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trueheart_core.domain import policy
from trueheart_core.domain.search import ranking
from trueheart_core.domain.search.capsule import Ranked
from trueheart_core.domain.search.model import SearchQuery, SemanticTrace
from trueheart_core.domain.search.tokenize import term_key, tokenize
from trueheart_core.ports import MemoryRow, SearchCandidate, UnitOfWork
from trueheart_core.service import loading, records
from trueheart_core.service.records import scope_key
from trueheart_core.service.search.index import INDEX_CORRUPT


def _checked(candidate: SearchCandidate) -> SearchCandidate:
    times = (candidate.created_at, candidate.clear_until, candidate.recall_until)
    if (
        not isinstance(candidate.memory_id, str)
        or not all(type(t) is int for t in times)
        or not isinstance(candidate.score, float)
        or not math.isfinite(candidate.score)
        or candidate.score <= 0.0
    ):
        loading.corrupt(INDEX_CORRUPT)
    return candidate


@dataclass(frozen=True, slots=True)
class Lexical:
    """The lexical side of a search: the query's term keys, how many eligible memories
    share one of them, and the best candidates in the total order (at least the window;
    more when scores tie at its edge)."""

    terms: list[int]
    matched: int
    candidates: list[SearchCandidate]


@dataclass(frozen=True, slots=True)
class Facts:
    """What an index said about a candidate, checked against its row when it is used."""

    created_at: int
    clear_until: int
    recall_until: int


@dataclass(frozen=True, slots=True)
class Ranking:
    """A ranked window on its way to the capsule: the candidates in order, their stored
    rows (not verified yet), what the index said of each, the exact number of matches
    and, for a hybrid search, the semantic trace."""

    ranked: Sequence[Ranked]
    rows: Mapping[str, MemoryRow]
    facts: Mapping[str, Facts]
    matched: int
    semantic: SemanticTrace | None = None


def lexical(uow: UnitOfWork, query: SearchQuery, window: int) -> Lexical:
    """Rank the scope's eligible memories by BM25 against the query's terms."""
    key = scope_key(query.scope)
    as_of = records.to_us(query.as_of)
    terms = sorted({term_key(term) for term in tokenize(query.text)})
    docs, total_length = uow.search.statistics(key)
    if type(docs) is not int or type(total_length) is not int or docs < 0:
        loading.corrupt(INDEX_CORRUPT)
    frequencies = uow.search.term_frequencies(key, terms) if terms and docs else {}
    weights = []
    for term in terms:
        df = frequencies.get(term, 0)
        if type(df) is not int or not 0 <= df <= docs:
            loading.corrupt(INDEX_CORRUPT)
        if df:
            weights.append((term, ranking.idf(docs, df)))
    matched, found = 0, list[SearchCandidate]()
    if weights:
        matched, found = uow.search.candidates(
            key,
            weights,
            ranking.BM25_K1,
            ranking.BM25_B,
            ranking.average_length(docs, total_length),
            as_of,
            query.kinds,
            None if query.min_trust is None else int(query.min_trust),
            window,
            [status.value for status in query.claim_statuses],
        )
    if type(matched) is not int or matched < len(found) or matched > docs:
        loading.corrupt(INDEX_CORRUPT)
    candidates = [_checked(c) for c in found]
    candidates.sort(
        key=lambda c: ranking.order_key(
            c.score,
            policy.clarity_us(as_of, c.clear_until, c.recall_until),
            c.created_at,
            c.memory_id,
        )
    )
    return Lexical(terms, matched, candidates)


def ranked(uow: UnitOfWork, query: SearchQuery) -> Ranking:
    """The lexical ranking's window, with the rows of its candidates."""
    as_of = records.to_us(query.as_of)
    window = ranking.candidate_window(query.limit)
    found = lexical(uow, query, window)
    chosen = found.candidates[:window]
    rows = {
        row.memory_id: row
        for row in uow.memories.get_many(scope_key(query.scope), [c.memory_id for c in chosen])
    }
    ranked = []
    for candidate in chosen:
        row = rows.get(candidate.memory_id)
        if row is None or not isinstance(row.content, str):
            loading.corrupt(INDEX_CORRUPT)
        clarity = policy.clarity_us(as_of, candidate.clear_until, candidate.recall_until)
        ranked.append(Ranked(candidate.memory_id, row.content, candidate.score, clarity))
    facts = {c.memory_id: Facts(c.created_at, c.clear_until, c.recall_until) for c in chosen}
    return Ranking(ranked, rows, facts, found.matched)
