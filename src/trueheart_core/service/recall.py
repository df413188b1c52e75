"""Recall: the scope's active memories at a moment, clearest first.

A service function over one unit of work. Fully clear memories come from the memory
role already in order; fading ones are ranked here, exactly, among the candidates the
role pre-selects (see ``MemoryStore.recall_fading``), so the clarity rule stays in
``domain.policy``.
"""

from __future__ import annotations

import heapq

from trueheart_core.domain import policy
from trueheart_core.domain.model import RecallItem, RecallQuery
from trueheart_core.ports import MemoryRow, ScopeKey, UnitOfWork
from trueheart_core.service import loading, records
from trueheart_core.service.records import scope_key


def recall(uow: UnitOfWork, query: RecallQuery) -> tuple[RecallItem, ...]:
    """Active, unexpired, already-created memories of the exact scope at ``as_of``:
    clarity descending, then ``created_at`` descending, then ``memory_id`` ascending, at
    most ``limit``; every row verified against its digest."""
    scope, key = query.scope, scope_key(query.scope)
    as_of = records.to_us(query.as_of)
    shift = policy.CLARITY_ROUNDING_SHIFT
    rows = uow.memories.recall_clear(key, as_of, query.kinds, query.limit, shift)
    if len(rows) < query.limit:
        rows += _best_fading(uow, key, as_of, query, query.limit - len(rows))
    edges = loading.edges_by_memory(uow.memories.edges(key, [r.memory_id for r in rows]))
    memories = [
        loading.memory(row, edges[row.memory_id], scope, "invalid memory record") for row in rows
    ]
    return tuple(
        RecallItem(m, policy.clarity(query.as_of, m.clear_until, m.recall_until)) for m in memories
    )


def _best_fading(
    uow: UnitOfWork, key: ScopeKey, as_of: int, query: RecallQuery, wanted: int
) -> list[MemoryRow]:
    """The ``wanted`` best memories that are fading at ``as_of``, ranked exactly here
    among the candidates the repository pre-selects."""
    candidates = uow.memories.recall_fading(
        key,
        as_of,
        query.kinds,
        policy.CLARITY_ROUNDING_SHIFT,
        wanted,
        policy.EXACT_FLOAT_SPAN,
    )
    ranked = []
    for c in candidates:
        values = (c.created_at, c.clear_until, c.recall_until)
        if not all(type(x) is int for x in values) or not isinstance(c.memory_id, str):
            loading.corrupt("invalid memory record")
        score = policy.clarity_us(as_of, c.clear_until, c.recall_until)
        ranked.append((-score, -c.created_at, c.memory_id))
    chosen = [memory_id for _, _, memory_id in heapq.nsmallest(wanted, ranked)]
    by_id = {row.memory_id: row for row in uow.memories.get_many(key, chosen)}
    if len(by_id) != len(chosen):
        loading.corrupt("invalid memory record")
    return [by_id[memory_id] for memory_id in chosen]
