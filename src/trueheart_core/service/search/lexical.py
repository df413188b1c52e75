"""The lexical ranking: BM25 over the scope's index, from the weights the service
computes (``domain.search.ranking``), evaluated by the search role of the port.

The query's content words (its stop words left out, ``domain.search.stopwords``) are
looked up first, with their English inflections (``domain.search.spelling``); the words
among them that the scope holds in no form are then corrected: their corrections are
looked up the same way. The inflections and corrections the scope holds are weighted
down. One statement scores them all together. The lexical *ceiling* of the query, which
hybrid fusion measures evidence against, is computed from the same look-ups."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trueheart_core.domain import policy
from trueheart_core.domain.search import ranking
from trueheart_core.domain.search.capsule import Ranked
from trueheart_core.domain.search.model import SearchQuery, SemanticTrace
from trueheart_core.domain.search.spelling import (
    MAX_CORRECTIONS_PER_QUERY,
    correction_bound,
    corrections,
    inflections,
)
from trueheart_core.domain.search.stopwords import STOP_WORDS, content_words, named_stop_words
from trueheart_core.domain.search.tokenize import term_key, tokenize, unspaced
from trueheart_core.ports import MemoryRow, Period, ScopeKey, SearchCandidate, UnitOfWork
from trueheart_core.service import loading, records
from trueheart_core.service.records import scope_key
from trueheart_core.service.search.index import INDEX_CORRUPT


def checked(candidate: SearchCandidate) -> SearchCandidate:
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


def _ceiling(
    docs: int,
    words: Mapping[int, str],
    weight_of: Mapping[int, float],
    fixes_of: Mapping[int, set[int]],
) -> float:
    """What a memory of average length that holds every word of the query once would
    score: each word the scope holds at its idf, each word it lacks at the best weight
    of its corrections, or, when none is held, at the highest idf; except the character
    bigrams of unspaced scripts that the scope lacks, which count nothing (a bigram
    across a word boundary of a Chinese or Japanese question is rarely in a statement,
    so its absence says nothing about the memories)."""
    parts = []
    for term, word in sorted(words.items()):
        if term in weight_of:
            parts.append(weight_of[term])
            continue
        found = [weight_of[fix] for fix in sorted(fixes_of.get(term, ())) if fix in weight_of]
        if found:
            parts.append(max(found))
        elif not any(map(unspaced, word)):
            parts.append(ranking.idf(docs, 0))
    return math.fsum(parts)


def frequencies(uow: UnitOfWork, key: ScopeKey, docs: int, terms: list[int]) -> dict[int, int]:
    """How many of the scope's searchable memories hold each of these term keys (absent:
    none), checked."""
    found = uow.search.term_frequencies(key, terms) if terms and docs else {}
    for df in found.values():
        if type(df) is not int or not 0 <= df <= docs:
            loading.corrupt(INDEX_CORRUPT)
    return found


def term_weights(
    uow: UnitOfWork, key: ScopeKey, docs: int, terms: list[int], factor: float
) -> list[tuple[int, float]]:
    """``(term, factor * idf)`` of each of these term keys that the scope holds."""
    held = frequencies(uow, key, docs, terms)
    return [(term, factor * ranking.idf(docs, held[term])) for term in terms if held.get(term)]


def _weights(
    uow: UnitOfWork, key: ScopeKey, docs: int, words: Mapping[int, str]
) -> tuple[list[tuple[int, float]], dict[int, set[int]]]:
    """The weights of a query's words and of the variants of them that the scope holds,
    and the keys of the variants of each word the scope lacks (for the ceiling).

    Every word's inflections count ``INFLECTION_WEIGHT`` times their idf, but no more
    than that times the word's own (the highest idf when the scope lacks it): a form of
    a word is evidence of it, never better evidence than the word itself. The other
    corrections of a word the scope lacks count ``CORRECTION_WEIGHT`` times their idf.
    A term that is both (a form of one word, a correction of another) counts at the
    better of its weights. The words and their inflections are looked up together; the
    corrections of the words found missing then. Within ``MAX_CORRECTIONS_PER_QUERY``
    look-ups of variants, inflections first, each in the query's order."""
    budget = MAX_CORRECTIONS_PER_QUERY
    forms_of: dict[int, set[int]] = {}
    for term_id, term in words.items():
        spelt = inflections(term)
        if len(spelt) > budget:
            continue
        budget -= len(spelt)
        forms_of[term_id] = {term_key(form) for form in spelt if form not in STOP_WORDS}
    inflected = set().union(*forms_of.values()) - words.keys()
    held = frequencies(uow, key, docs, sorted(words.keys() | inflected))
    weights = [(term, ranking.idf(docs, held[term])) for term in sorted(words) if held.get(term)]
    idf_of = dict(weights)
    missing = {term_id: term for term_id, term in words.items() if docs and term_id not in idf_of}
    # A word the scope holds only in other forms is taken as meant, as one it holds:
    # its forms found it, and a word one edit away is then more likely another word
    # (``cook`` where the memories say "cooked": not ``book``).
    unheld = {
        term_id: term
        for term_id, term in missing.items()
        if not any(held.get(form) for form in forms_of.get(term_id, ()))
    }
    edits_of: dict[int, set[int]] = {}
    for term_id, term in unheld.items():
        bound = correction_bound(term)
        if bound > budget:
            continue
        budget -= bound
        edits = {term_key(fix) for fix in corrections(term) if fix not in STOP_WORDS}
        edits_of[term_id] = edits - forms_of.get(term_id, set())
    edited = set().union(*edits_of.values()) - words.keys()
    held.update(frequencies(uow, key, docs, sorted(edited - inflected)))
    weight_of: dict[int, float] = {}
    for term_id, forms in forms_of.items():
        cap = ranking.INFLECTION_WEIGHT * idf_of.get(term_id, ranking.idf(docs, 0))
        for form in forms & inflected:
            if held.get(form):
                weight = min(ranking.INFLECTION_WEIGHT * ranking.idf(docs, held[form]), cap)
                weight_of[form] = max(weight, weight_of.get(form, 0.0))
    for fix in edited:
        if held.get(fix):
            weight = ranking.CORRECTION_WEIGHT * ranking.idf(docs, held[fix])
            weight_of[fix] = max(weight, weight_of.get(fix, 0.0))
    fixes_of = {t: forms_of.get(t, set()) | edits_of.get(t, set()) for t in missing}
    return weights + sorted(weight_of.items()), fixes_of


def statistics(uow: UnitOfWork, key: ScopeKey) -> tuple[int, int]:
    """The scope's number of searchable memories and their total length, checked."""
    docs, total_length = uow.search.statistics(key)
    if type(docs) is not int or type(total_length) is not int or docs < 0:
        loading.corrupt(INDEX_CORRUPT)
    return docs, total_length


def scored(
    uow: UnitOfWork,
    query: SearchQuery,
    weights: Sequence[tuple[int, float]],
    scope: tuple[int, int],
    window: int,
    period: Period | None = None,
) -> tuple[int, list[SearchCandidate]]:
    """BM25 over these weighted terms in the query's scope (whose :func:`statistics` are
    ``scope``), under the query's filters: how many memories match, and the best
    ``window`` (ties at the edge included), from the port."""
    docs, total_length = scope
    return uow.search.candidates(
        scope_key(query.scope),
        weights,
        ranking.BM25_K1,
        ranking.BM25_B,
        ranking.average_length(docs, total_length),
        records.to_us(query.as_of),
        query.kinds,
        None if query.min_trust is None else int(query.min_trust),
        window,
        [status.value for status in query.claim_statuses],
        period=period,
    )


@dataclass(frozen=True, slots=True)
class Lexical:
    """The lexical side of a search: the query's term keys and the keys of the
    corrections it scored, how many eligible memories share one of them, the best
    candidates in the total order (at least the window; more when scores tie at its
    edge), and the query's ``ceiling``: the sum of the ``idf`` of its distinct words
    (a word the scope lacks at the highest idf), which is what a memory of average
    length holding every word once would score."""

    terms: list[int]
    matched: int
    candidates: list[SearchCandidate]
    ceiling: float = 0.0


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


def lexical(
    uow: UnitOfWork,
    query: SearchQuery,
    window: int,
    text: str | None = None,
    period: Period | None = None,
) -> Lexical:
    """Rank the scope's eligible memories (those in ``period`` only, when given) by BM25
    against the query's content words (of ``text``, by default the query's text,
    without its stop words), their inflections, and the corrections the scope holds of
    the words it does not hold."""
    text = query.text if text is None else text
    key = scope_key(query.scope)
    as_of = records.to_us(query.as_of)
    words = content_words({term_key(term): term for term in tokenize(text)}, named_stop_words(text))
    docs, total_length = statistics(uow, key)
    weights, fixes_of = _weights(uow, key, docs, words)
    ceiling = _ceiling(docs, words, dict(weights), fixes_of)
    terms = sorted({*words, *(term for term, _ in weights)})
    matched, found = 0, list[SearchCandidate]()
    if weights:
        matched, found = scored(uow, query, weights, (docs, total_length), window, period)
    if type(matched) is not int or matched < len(found) or matched > docs:
        loading.corrupt(INDEX_CORRUPT)
    candidates = [checked(c) for c in found]
    candidates.sort(
        key=lambda c: ranking.order_key(
            c.score,
            policy.clarity_us(as_of, c.clear_until, c.recall_until),
            c.created_at,
            c.memory_id,
        )
    )
    return Lexical(terms, matched, candidates, ceiling)


def ranked(
    uow: UnitOfWork, query: SearchQuery, text: str | None = None, period: Period | None = None
) -> Ranking:
    """The lexical ranking's window, with the rows of its candidates."""
    as_of = records.to_us(query.as_of)
    window = ranking.candidate_window(query.limit)
    found = lexical(uow, query, window, text, period)
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
