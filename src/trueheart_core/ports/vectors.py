"""The vectors role of a unit of work: :class:`VectorStore`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from trueheart_core.ports.rows import (
    ScopeKey,
    SpaceRow,
    VectorEntry,
    VectorFacts,
    VectorHit,
    VectorRow,
    VectorState,
)


class VectorStore(Protocol):
    """Semantic vectors: registered vector spaces and one vector per memory. A backend without
    vectors has none of this role (``UnitOfWork.vectors`` is ``None``).

    Every method runs inside the unit of work's transaction and may raise
    ``RepositoryBusy``, ``RepositoryCorruption`` or ``RepositoryReadOnly``; driver errors
    never escape.
    """

    def current_space(self) -> SpaceRow | None:
        """The current (most recently registered) space, or ``None``."""
        ...

    def register_space(self, identity: str, dimensions: int, normalized: bool) -> int:
        """Register a new current space and return its ``space_id``. Vectors of earlier
        spaces stay until replaced; they are stale and never scanned."""
        ...

    def put(self, row: VectorRow) -> None:
        """Store the vector of an existing memory of ``row.scope`` with its sketch,
        replacing the one it had. Raises ``RepositoryCorruption`` if the memory does not
        exist."""
        ...

    def keys(self, scope: ScopeKey, memory_ids: Sequence[str]) -> dict[str, tuple[object, object]]:
        """``(space_id, content_hash)`` of the vectors of those of ``memory_ids`` that
        have one in ``scope``."""
        ...

    def states(self, scope: ScopeKey, after: str | None, limit: int) -> list[VectorState]:
        """The scope's active memories with ``memory_id > after`` (all when ``None``),
        in ``memory_id`` order, at most ``limit``, each with its vector's space and
        content hash (``None`` when it has no vector)."""
        ...

    def scan(
        self,
        scope: ScopeKey,
        space_id: int,
        as_of: int,
        kinds: Sequence[str],
        min_trust: int | None,
        claim_statuses: Sequence[str],
        limit: int | None,
        chunk: int,
        created_from: int | None = None,
        created_until: int | None = None,
        handles: Sequence[int] | None = None,
    ) -> Iterator[list[VectorHit]]:
        """Vectors of ``space_id`` whose memories are searchable in ``scope`` at
        ``as_of`` (active, ``created_at <= as_of < recall_until``), of the given kinds
        (empty: all) and minimum trust, in the period from ``created_from`` to
        ``created_until`` when either is given (microseconds, see
        :data:`~trueheart_core.ports.rows.Period`: a memory by its ``created_at``, a
        claim by its validity), and, for claims,
        with a status at ``as_of`` in ``claim_statuses`` (as ``search_candidates``
        filters them). Newest first (``created_at`` descending, then the latest written
        first), at most ``limit`` (``None``: all of them), as lists of at most ``chunk``
        hits, each read when the caller asks for it from the unit's snapshot: a caller
        holds one list at a time, and the iterator is only valid inside the unit of
        work. Each hit carries the vector's sketch as stored, not the vector.

        With ``handles``, only those of the vectors with these handles that meet the
        same conditions, in any order and lists of any size (``limit`` and the order
        do not apply): whether candidates found by other means are eligible."""
        ...

    def facts(self, scope: ScopeKey, handles: Sequence[int]) -> list[VectorFacts]:
        """The memory ID, tie-break columns and stored vector of the vectors of ``scope``
        with these handles (only the candidates that are compared exactly need them),
        in any order."""
        ...

    def generation(self, scope: ScopeKey) -> int:
        """The scope's vector generation: a number stored with the scope that moves on,
        in the same transaction, with every change of any of the scope's vector rows
        (stored, replaced, its copies or status rewritten, its sketch rewritten,
        removed), and never returns to an earlier value once such a change committed.
        Two reads of this store that see the same generation of a scope see the same
        vector rows of it. 0 for a scope that never had a vector."""
        ...

    def load(self, scope: ScopeKey, space_id: int, chunk: int) -> Iterator[list[VectorEntry]]:
        """Every vector of ``space_id`` in ``scope`` (whatever its status or times) with
        its handle and filter columns, in any order, as lists of at most ``chunk``
        entries read one after the other from the unit's snapshot: what a copy of the
        scope's vectors kept in memory holds. Only valid inside the unit of work."""
        ...

    def lexical_matches(
        self, scope: ScopeKey, terms: Sequence[int], memory_ids: Sequence[str]
    ) -> int:
        """How many of ``memory_ids`` have a search index entry holding at least one of
        the term keys ``terms`` in ``scope``."""
        ...

    def iter(self, scope: ScopeKey | None) -> Iterator[VectorRow]:
        """Every stored vector (of one scope, or all) with its sketch, for verification.
        A vector whose memory is gone has an empty ``memory_id``."""
        ...

    def disagreeing(self, scope: ScopeKey | None) -> list[tuple[ScopeKey, str]]:
        """Vectors (of one scope, or all) whose copies of their memory's ID, times,
        trust, kind or status differ from the memory row: ``(scope, memory_id)``."""
        ...

    def repair_copies(
        self, sketch: Callable[[bytes], tuple[bytes, float, float] | None]
    ) -> tuple[int, int, int]:
        """Rewrite every vector's copies of its memory's ID, times, trust, kind and
        status from the memory row where they differ, remove the vectors whose memory
        no longer exists in the vector's scope (those :meth:`iter` gives an empty
        ``memory_id``), and rewrite every sketch that differs from what ``sketch``
        computes from the stored vector (``None``: no sketch); returns ``(rewritten,
        removed, sketches rewritten)``."""
        ...

    def discard(self, scope: ScopeKey, memory_id: str) -> int:
        """Remove the vectors of the memory ``memory_id`` of ``scope`` (as :meth:`iter`
        names it), whatever they hold, as an erasure removes them; returns how many.
        The memory then has no vector, and a later projection computes one again."""
        ...

    def iter_spaces(self) -> Iterator[SpaceRow]:
        """Every registered space, for verification."""
        ...
