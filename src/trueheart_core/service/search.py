"""Search: keeping the lexical index in step with memories, and answering queries.

Service-layer functions over one unit of work. The index holds exactly the active
memories; every change of a memory's searchability happens in the transaction of the
change itself (materialize, seal, restore; forget and delete remove entries through
``UnitOfWork.delete_memory``). The tokenisation, ranking and packing rules live in the
pure ``retrieval`` modules.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import islice

from trueheart_core.domain import policy
from trueheart_core.domain.claims import ClaimView
from trueheart_core.domain.model import MemoryRecord, MemoryStatus, Scope
from trueheart_core.domain.search import ranking
from trueheart_core.domain.search.capsule import Ranked, TokenEstimator, pack
from trueheart_core.domain.search.model import (
    CapsuleDecision,
    CapsuleItem,
    MemoryCapsule,
    SearchQuery,
    SemanticTrace,
)
from trueheart_core.domain.search.tokenize import TOKENIZER_ID, term_counts, term_key, tokenize
from trueheart_core.ports import (
    MemoryRow,
    ScopeKey,
    SearchCandidate,
    SearchDocRow,
    UnitOfWork,
)
from trueheart_core.service import loading, records
from trueheart_core.service.records import RowInvalid, scope_key

_CHUNK = 500
_INDEX_CORRUPT = "invalid search index"


def doc_row(record: MemoryRecord) -> SearchDocRow:
    """The search entry of a memory: its length, term frequencies and filter columns."""
    length, counts = term_counts(record.content)
    return SearchDocRow(
        scope_key(record.scope),
        record.memory_id,
        length,
        records.to_us(record.created_at),
        records.to_us(record.clear_until),
        records.to_us(record.recall_until),
        int(record.trust),
        record.kind,
        tuple(sorted(counts.items())),
    )


def index_is_current(uow: UnitOfWork) -> bool:
    """Whether the index was built by these tokenisation rules."""
    return uow.search.tokenizer() == TOKENIZER_ID


def ensure_index(uow: UnitOfWork) -> None:
    """In a writing unit: rebuild an index built by other rules (or never built, as in a
    store upgraded from a version without search) before it is changed."""
    if not index_is_current(uow):
        rebuild(uow)


def rebuild(uow: UnitOfWork) -> int:
    """Replace the whole index with one computed from the memory rows; returns how many
    memories it holds. Active memories whose row does not verify are left out (and
    reported by ``verify_integrity``)."""
    uow.search.clear()
    indexed = 0
    for chunk in _chunks(uow.memories.iter(None)):
        by_scope: dict[ScopeKey, list[MemoryRow]] = {}
        for row in chunk:
            if row.status == MemoryStatus.ACTIVE.value:
                by_scope.setdefault(row.scope, []).append(row)
        for key, rows in by_scope.items():
            edges = loading.edges_by_memory(uow.memories.edges(key, [r.memory_id for r in rows]))
            for row in rows:
                try:
                    record = records.memory_from_row(row, edges[row.memory_id])
                except RowInvalid:
                    continue
                uow.search.index(doc_row(record))
                indexed += 1
    uow.search.set_tokenizer(TOKENIZER_ID)
    return indexed


def _chunks(rows: Iterator[MemoryRow]) -> Iterator[list[MemoryRow]]:
    while chunk := list(islice(rows, _CHUNK)):
        yield chunk


def _checked(candidate: SearchCandidate) -> SearchCandidate:
    times = (candidate.created_at, candidate.clear_until, candidate.recall_until)
    if (
        not isinstance(candidate.memory_id, str)
        or not all(type(t) is int for t in times)
        or not isinstance(candidate.score, float)
        or not math.isfinite(candidate.score)
        or candidate.score <= 0.0
    ):
        loading.corrupt(_INDEX_CORRUPT)
    return candidate


ClaimViews = Callable[[UnitOfWork, Scope, Sequence[str], datetime], dict[str, ClaimView]]


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


def lexical(uow: UnitOfWork, query: SearchQuery, window: int) -> Lexical:
    """Rank the scope's eligible memories by BM25 against the query's terms."""
    key = scope_key(query.scope)
    as_of = records.to_us(query.as_of)
    terms = sorted({term_key(term) for term in tokenize(query.text)})
    docs, total_length = uow.search.statistics(key)
    if type(docs) is not int or type(total_length) is not int or docs < 0:
        loading.corrupt(_INDEX_CORRUPT)
    frequencies = uow.search.term_frequencies(key, terms) if terms and docs else {}
    weights = []
    for term in terms:
        df = frequencies.get(term, 0)
        if type(df) is not int or not 0 <= df <= docs:
            loading.corrupt(_INDEX_CORRUPT)
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
        loading.corrupt(_INDEX_CORRUPT)
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


def search(
    uow: UnitOfWork, query: SearchQuery, estimator: TokenEstimator, claim_views: ClaimViews
) -> MemoryCapsule:
    """Rank the scope's eligible memories against the query and pack the best of them.

    The index must be current (see :func:`index_is_current`). Every memory that enters
    the capsule is loaded from its row and verified; an index entry that disagrees with
    its row fails closed.
    """
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
            loading.corrupt(_INDEX_CORRUPT)
        clarity = policy.clarity_us(as_of, candidate.clear_until, candidate.recall_until)
        ranked.append(Ranked(candidate.memory_id, row.content, candidate.score, clarity))
    facts = {c.memory_id: Facts(c.created_at, c.clear_until, c.recall_until) for c in chosen}
    return capsule(uow, query, estimator, claim_views, ranked, rows, facts, found.matched, None)


def capsule(
    uow: UnitOfWork,
    query: SearchQuery,
    estimator: TokenEstimator,
    claim_views: ClaimViews,
    ranked: Sequence[Ranked],
    rows: Mapping[str, MemoryRow],
    facts: Mapping[str, Facts],
    matched: int,
    semantic: SemanticTrace | None,
) -> MemoryCapsule:
    """Pack the ranked candidates into the budget, then verify and rebuild only the
    memories that enter the capsule (the cost of the answer, however many candidates
    were priced to fill the budget)."""
    scope, key = query.scope, scope_key(query.scope)
    as_of = records.to_us(query.as_of)
    trace, used = pack(ranked, query.budget_tokens, query.limit, estimator)
    entries = [e for e in trace if e.decision is CapsuleDecision.INCLUDED]
    edges = loading.edges_by_memory(uow.memories.edges(key, [e.memory_id for e in entries]))
    memories = []
    for entry in entries:
        row = rows[entry.memory_id]
        memory = loading.memory(row, edges[entry.memory_id], scope, "invalid memory record")
        if not _agrees(memory, facts[entry.memory_id], query, as_of):
            loading.corrupt(_INDEX_CORRUPT)
        memories.append(memory)
    views = claim_views(uow, scope, [m.memory_id for m in memories], query.as_of)
    items = []
    for entry, memory in zip(entries, memories, strict=True):
        view = views.get(memory.memory_id)
        if view is not None and view.status not in query.claim_statuses:
            loading.corrupt(_INDEX_CORRUPT)
        items.append(
            CapsuleItem(memory, entry.rank, entry.score, entry.clarity, entry.tokens, view)
        )
    return MemoryCapsule(
        scope,
        query.as_of,
        tuple(items),
        query.budget_tokens,
        used,
        query.limit,
        estimator.name,
        matched,
        trace,
        semantic,
    )


def _agrees(memory: MemoryRecord, candidate: Facts, query: SearchQuery, as_of: int) -> bool:
    """Whether a verified memory is what its index entry said, and eligible."""
    created = records.to_us(memory.created_at)
    recall_until = records.to_us(memory.recall_until)
    return (
        memory.status is MemoryStatus.ACTIVE
        and created == candidate.created_at
        and records.to_us(memory.clear_until) == candidate.clear_until
        and recall_until == candidate.recall_until
        and created <= as_of < recall_until
        and (not query.kinds or memory.kind in query.kinds)
        and (query.min_trust is None or memory.trust >= query.min_trust)
    )
