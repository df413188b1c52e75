"""Keeping the lexical index in step with the memories.

The index holds exactly the active memories; every change of a memory's searchability
happens in the transaction of the change itself (materialize, seal, restore; forget and
delete remove entries through ``MemoryStore.delete``). The tokenisation rules live in
``domain.search.tokenize``.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from trueheart_core.domain.model import MemoryStatus
from trueheart_core.domain.search.tokenize import TOKENIZER_ID, term_counts
from trueheart_core.ports import MemoryRow, ScopeKey, SearchDocRow, UnitOfWork
from trueheart_core.service import loading, records
from trueheart_core.service.records import RowInvalid

_CHUNK = 500
INDEX_CORRUPT = "invalid search index"
"""The diagnostic of every index answer that fails its check."""


def doc_row(row: MemoryRow) -> SearchDocRow:
    """The search entry of a memory, from its stored row (whose digest the caller has
    verified): its length, term frequencies and filter columns."""
    length, counts = term_counts(row.content)
    return SearchDocRow(
        row.scope,
        row.memory_id,
        length,
        row.created_at,
        row.clear_until,
        row.recall_until,
        row.trust,
        row.kind,
        tuple(sorted(counts.items())),
    )


def index_is_current(uow: UnitOfWork) -> bool:
    """Whether the index was built by these tokenisation rules."""
    return uow.search.tokenizer() == TOKENIZER_ID


def has_memories(uow: UnitOfWork) -> bool:
    """Whether the store holds any memory (of any status and scope)."""
    return next(uow.memories.iter(None), None) is not None


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
                    records.memory_from_row(row, edges[row.memory_id])
                except RowInvalid:
                    continue
                uow.search.index(doc_row(row))
                indexed += 1
    uow.search.set_tokenizer(TOKENIZER_ID)
    return indexed


def _chunks(rows: Iterator[MemoryRow]) -> Iterator[list[MemoryRow]]:
    while chunk := list(islice(rows, _CHUNK)):
        yield chunk
