"""Packing a ranking into the capsule: the pure packing rule (``domain.search.capsule``),
then verification of exactly the memories that enter it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from trueheart_core.domain.claims import ClaimView
from trueheart_core.domain.model import MemoryRecord, MemoryStatus, Scope
from trueheart_core.domain.search.capsule import TokenEstimator, pack
from trueheart_core.domain.search.mentions import NO_MENTIONS, Mentions
from trueheart_core.domain.search.model import (
    CapsuleDecision,
    CapsuleItem,
    MemoryCapsule,
    SearchQuery,
    TimeTrace,
)
from trueheart_core.domain.search.tokenize import tokenize
from trueheart_core.ports import Period, UnitOfWork
from trueheart_core.service import loading, records
from trueheart_core.service.records import scope_key
from trueheart_core.service.search.index import INDEX_CORRUPT
from trueheart_core.service.search.lexical import Facts, Ranking

ClaimViews = Callable[[UnitOfWork, Scope, Sequence[str], datetime], dict[str, ClaimView]]


def capsule(
    uow: UnitOfWork,
    query: SearchQuery,
    estimator: TokenEstimator,
    claim_views: ClaimViews,
    ranking: Ranking,
    time: TimeTrace | None = None,
    period: Period | None = None,
    mentions: Mentions = NO_MENTIONS,
) -> MemoryCapsule:
    """Pack the ranked candidates into the budget, then verify and rebuild only the
    memories that enter the capsule (the cost of the answer, however many candidates
    were priced to fill the budget); with a ``period``, each must be in it or hold what
    ``mentions`` asks of a memory that mentions it."""
    scope, key = query.scope, scope_key(query.scope)
    as_of = records.to_us(query.as_of)
    rows, facts = ranking.rows, ranking.facts
    trace, used = pack(ranking.ranked, query.budget_tokens, query.limit, estimator)
    entries = [e for e in trace if e.decision is CapsuleDecision.INCLUDED]
    edges = loading.edges_by_memory(uow.memories.edges(key, [e.memory_id for e in entries]))
    memories = []
    for entry in entries:
        row = rows[entry.memory_id]
        memory = loading.memory(row, edges[entry.memory_id], scope, "invalid memory record")
        if not _agrees(memory, facts[entry.memory_id], query, as_of):
            loading.corrupt(INDEX_CORRUPT)
        memories.append(memory)
    views = claim_views(uow, scope, [m.memory_id for m in memories], query.as_of)
    items = []
    for entry, memory in zip(entries, memories, strict=True):
        view = views.get(memory.memory_id)
        if view is not None and view.status not in query.claim_statuses:
            loading.corrupt(INDEX_CORRUPT)
        if (
            period is not None
            and not _in_period(memory, view, period)
            and not mentions.held_by(set(tokenize(memory.content)).__contains__)
        ):
            loading.corrupt(INDEX_CORRUPT)
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
        ranking.matched,
        trace,
        ranking.semantic,
        time,
    )


def _in_period(memory: MemoryRecord, view: ClaimView | None, period: Period) -> bool:
    """Whether a verified memory is in the period (a claim by its validity)."""
    start, end = period
    if view is None:
        created = records.to_us(memory.created_at)
        return (start is None or created >= start) and (end is None or created < end)
    valid_from, valid_to = view.claim.valid_from, view.claim.valid_to
    return (start is None or valid_to is None or records.to_us(valid_to) > start) and (
        end is None or valid_from is None or records.to_us(valid_from) < end
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
