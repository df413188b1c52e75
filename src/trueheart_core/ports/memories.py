"""The memories role of a unit of work: :class:`MemoryStore`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from trueheart_core.ports.rows import (
    EdgeRow,
    EventRow,
    MemoryRow,
    RecallCandidate,
    ScopeKey,
    TombstoneRow,
)


class MemoryStore(Protocol):
    """Memories and their lineage edges: the derived records the service recalls, lists and governs.

    Every method runs inside the unit of work's transaction and may raise
    ``RepositoryBusy``, ``RepositoryCorruption`` or ``RepositoryReadOnly``; driver errors
    never escape.
    """

    def get(self, scope: ScopeKey, memory_id: str) -> MemoryRow | None:
        """The memory with this ID in the exact scope. Served by an index."""

    def id_elsewhere(self, memory_id: str, scope: ScopeKey) -> bool:
        """Whether a memory with this ID exists in any *other* scope. Served by an index."""

    def get_many(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[MemoryRow]:
        """The memories with these IDs in the exact scope, in no particular order."""

    def edges(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[EdgeRow]:
        """Every lineage edge of these memories in the exact scope."""

    def with_lineage(
        self, scope: ScopeKey, memory_id: str
    ) -> tuple[MemoryRow | None, list[EdgeRow], dict[str, EventRow]]:
        """The memory with this ID in the exact scope (as :meth:`get` gives it; None,
        with nothing else, when there is none), its lineage edges (as :meth:`edges` gives
        them), and the receipts of the source events they name, by event ID (a source
        whose receipt is gone is absent; as ``EventStore.get`` gives them), read
        together: governing a memory checks all three."""

    def before_insert(
        self, scope: ScopeKey, memory_id: str, fingerprint: str, source_ids: Sequence[str]
    ) -> tuple[list[TombstoneRow], list[TombstoneRow], MemoryRow | None, dict[str, EventRow]]:
        """What a new memory is checked against, in the exact scope, read together (on a
        server, in one round trip): the tombstones of its ID (as ``TombstoneStore.get``
        gives them) and the memory tombstones carrying its dependency fingerprint, each
        set found through its index; the memory already stored under
        its ID (as :meth:`get`; None when there is none); and the receipts of its
        sources by event ID (as ``EventStore.get``; a missing one is absent)."""

    def dependents(self, scope: ScopeKey, event_id: str) -> list[str]:
        """IDs of the memories with an edge to this event in the exact scope (indexed)."""

    def insert(self, row: MemoryRow, edges: Sequence[EdgeRow]) -> None:
        """Store a new memory and its lineage edges."""

    def update(self, row: MemoryRow) -> None:
        """Store a changed status (and its new digest) of an existing memory."""

    def delete(self, scope: ScopeKey, memory_id: str) -> None:
        """Remove a memory, all of its lineage edges, its search entries (as
        :meth:`SearchIndex.unindex` does) and its claim fields if it is a claim."""

    def recall_clear(
        self,
        scope: ScopeKey,
        as_of: int,
        kinds: Sequence[str],
        limit: int,
        rounding_shift: int,
    ) -> list[MemoryRow]:
        """Up to ``limit`` active memories of full clarity at ``as_of``, best first.

        Selects ``status = 'active'``, ``created_at <= as_of < recall_until``, the kind in
        ``kinds`` when it is non-empty, and
        ``clear_until + ((recall_until - clear_until) >> rounding_shift) >= as_of`` (the
        memories whose clarity is exactly 1.0, including fades so long that the float
        ratio rounds to 1.0: ``domain.policy.fully_clear``, built in SQL by
        ``adapters.sql.expressions.fully_clear``). Ordered by ``created_at`` descending,
        then ``memory_id`` ascending in code-point order. Walks an index and stops at
        ``limit``.
        """

    def recall_fading(
        self,
        scope: ScopeKey,
        as_of: int,
        kinds: Sequence[str],
        rounding_shift: int,
        limit: int,
        exact_span: int,
    ) -> list[RecallCandidate]:
        """The fading memories that can rank among the best ``limit``: a superset of them
        drawn from the complement of :meth:`MemoryStore.recall_clear` (same eligibility,
        clarity condition negated), read from an index without loading memory rows.

        Of the memories whose fade span ``recall_until - clear_until`` is below
        ``exact_span``, it returns the best ``limit`` by
        ``(recall_until - as_of) / (recall_until - clear_until)`` in double precision
        (exact, and equal to Python's integer division, while both operands are below
        2**53), then ``created_at`` descending, then ``memory_id`` ascending. It adds every
        fading memory with a longer span, unordered, for the caller to rank exactly.
        """

    def iter(self, scope: ScopeKey | None) -> Iterator[MemoryRow]:
        """Every memory (of one scope, or of the whole store), in storage order."""

    def iter_edges(self, scope: ScopeKey | None) -> Iterator[EdgeRow]:
        """Every lineage edge (of one scope, or of the whole store), in storage order."""

    def page(
        self,
        scope: ScopeKey,
        statuses: Sequence[str],
        kinds: Sequence[str],
        after: str | None,
        limit: int,
        *,
        descending: bool = False,
    ) -> list[MemoryRow]:
        """Up to ``limit`` memories of the exact scope whose status is in ``statuses``
        and (when ``kinds`` is non-empty) whose kind is in ``kinds``, with ``memory_id``
        greater than ``after`` (if given), in ``memory_id`` code-point order; with
        ``descending``, those with ``memory_id`` less than ``after``, in the reverse
        order. Walks an index of the scope in that order and stops at ``limit``."""
