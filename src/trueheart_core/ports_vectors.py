"""The vector capability: what semantic projection needs from storage.

A unit of work that stores vectors implements :class:`SupportsVectors` besides
:class:`~trueheart_core.ports.UnitOfWork`. The service checks for it before any
semantic operation; adapters without it simply cannot be configured with an embedder.
Whatever the capability, an adapter that holds vectors must remove a memory's vector in
``UnitOfWork.delete_memory`` (forget, delete and cascade), in the same transaction, and
keep it out of scans while ``UnitOfWork.update_memory`` has the memory sealed.

Rows follow the conventions of :mod:`trueheart_core.ports`: primitive values, times in
microseconds, unvalidated when read back.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from trueheart_core.ports import ScopeKey

__all__ = [
    "SpaceRow",
    "SupportsVectors",
    "VectorFacts",
    "VectorHit",
    "VectorRow",
    "VectorState",
]


@dataclass(frozen=True, slots=True)
class SpaceRow:
    """A registered vector space: the identity, dimensions and normalisation of the
    embedder that made its vectors. The one with the highest ``space_id`` is current."""

    space_id: int
    identity: str
    dimensions: int
    normalized: bool


@dataclass(frozen=True, slots=True)
class VectorRow:
    """One memory's vector as stored: its space, the SHA-256 of the content it was
    computed from, the packed vector (see :mod:`trueheart_core.domain.semantic.vectors`) and
    the row digest."""

    scope: ScopeKey
    memory_id: str
    space_id: int
    content_hash: str
    vector: bytes
    digest: str


VectorHit = tuple[int, bytes]
"""A vector read by the semantic scan: ``(handle, vector)``. The handle names the
vector row within the unit of work (see ``SupportsVectors.vector_facts``). A plain tuple:
a scan reads up to its cap of them, and that is the cost of a hybrid search."""

VectorFacts = tuple[int, str, int, int, int]
"""``(handle, memory_id, created_at, clear_until, recall_until)`` of a scanned vector."""


@dataclass(frozen=True, slots=True)
class VectorState:
    """An active memory and the vector it has, if any (for status and repair)."""

    memory_id: str
    kind: str
    content: str
    space_id: int | None
    content_hash: str | None


@runtime_checkable
class SupportsVectors(Protocol):
    """Storage of one vector per memory, in registered vector spaces."""

    def current_space(self) -> SpaceRow | None:
        """The current (most recently registered) space, or ``None``."""
        ...

    def register_space(self, identity: str, dimensions: int, normalized: bool) -> int:
        """Register a new current space and return its ``space_id``. Vectors of earlier
        spaces stay until replaced; they are stale and never scanned."""
        ...

    def put_vector(self, row: VectorRow) -> None:
        """Store the vector of an existing memory of ``row.scope``, replacing the one it
        had. Raises ``RepositoryCorruption`` if the memory does not exist."""
        ...

    def vector_keys(
        self, scope: ScopeKey, memory_ids: Sequence[str]
    ) -> dict[str, tuple[object, object]]:
        """``(space_id, content_hash)`` of the vectors of those of ``memory_ids`` that
        have one in ``scope``."""
        ...

    def vector_states(self, scope: ScopeKey, after: str | None, limit: int) -> list[VectorState]:
        """The scope's active memories with ``memory_id > after`` (all when ``None``),
        in ``memory_id`` order, at most ``limit``, each with its vector's space and
        content hash (``None`` when it has no vector)."""
        ...

    def scan_vectors(
        self,
        scope: ScopeKey,
        space_id: int,
        as_of: int,
        kinds: Sequence[str],
        min_trust: int | None,
        claim_statuses: Sequence[str],
        limit: int,
        components: Sequence[int] | None = None,
        dimensions: int = 0,
    ) -> list[VectorHit]:
        """Vectors of ``space_id`` whose memories are searchable in ``scope`` at
        ``as_of`` (active, ``created_at <= as_of < recall_until``), of the given kinds
        (empty: all) and minimum trust, and, for claims, with a status at ``as_of`` in
        ``claim_statuses`` (as ``search_candidates`` filters them). Newest first
        (``created_at`` descending, then the latest written first), at most ``limit``.

        With ``components`` (0-based positions below ``dimensions``), each hit's vector
        holds only those float32 components, concatenated in that order, or is empty
        when the stored vector is not ``4 * dimensions`` bytes long: a sparse query
        reads a few bytes of each vector instead of all of them."""
        ...

    def vector_facts(self, scope: ScopeKey, handles: Sequence[int]) -> list[VectorFacts]:
        """The memory ID and filter columns of the scanned vectors with these handles
        (only matches need them), in any order."""
        ...

    def lexical_matches(
        self, scope: ScopeKey, terms: Sequence[int], memory_ids: Sequence[str]
    ) -> int:
        """How many of ``memory_ids`` have a search index entry holding at least one of
        the term keys ``terms`` in ``scope``."""
        ...

    def iter_vectors(self, scope: ScopeKey | None) -> Iterator[VectorRow]:
        """Every stored vector (of one scope, or all), for verification. A vector whose
        memory is gone has an empty ``memory_id``."""
        ...

    def disagreeing_vectors(self, scope: ScopeKey | None) -> list[tuple[ScopeKey, str]]:
        """Vectors (of one scope, or all) whose copies of their memory's ID, times,
        trust, kind or status differ from the memory row: ``(scope, memory_id)``."""
        ...

    def repair_vector_copies(self) -> tuple[int, int]:
        """Rewrite every vector's copies of its memory's ID, times, trust, kind and
        status from the memory row where they differ, and remove the vectors whose memory
        no longer exists; returns ``(rewritten, removed)``."""
        ...

    def iter_spaces(self) -> Iterator[SpaceRow]:
        """Every registered space, for verification."""
        ...
