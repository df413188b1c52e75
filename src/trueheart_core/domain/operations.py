"""The DTOs of operating a store: erasure receipts, statistics, index rebuilds, backups.

Frozen, slotted and body-free: they hold counts, IDs, scopes, times and sizes, never a
body. Like the DTOs of ``domain``, they validate in ``__post_init__`` and survive
``pickle`` and ``copy.deepcopy``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime

from trueheart_core.domain import validation as v
from trueheart_core.domain.model import ArtifactClass, Scope, _Reducible, _set
from trueheart_core.errors import ValidationError

__all__ = [
    "ArtifactCounts",
    "BackupReport",
    "ErasureReceipt",
    "IndexRebuildReport",
    "StoreStats",
]


def _count(field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(field, "must be a non-negative int")
    return value


def _optional_count(field: str, value: object) -> int | None:
    return None if value is None else _count(field, value)


def _sorted_ids(field: str, value: object) -> tuple[str, ...]:
    """IDs an erasure read from the store, as stored: plain text, but not held to the
    rules of IDs given to a write, since a damaged row is erased (and tombstoned) with
    the ID it holds, and the receipt of a committed erasure must say so."""
    if type(value) is not tuple or not all(type(entry) is str for entry in value):
        raise ValidationError(field, "must be a tuple of str")
    ids: tuple[str, ...] = value
    if list(ids) != sorted(set(ids)):
        raise ValidationError(field, "must be sorted and without duplicates")
    return ids


@dataclass(frozen=True, slots=True)
class ArtifactCounts(_Reducible):
    """How many stored artifacts of each :class:`ArtifactClass` there are (or were
    removed). One field per class, named by its value; index with a class:
    ``counts[ArtifactClass.MEMORY]``."""

    raw_event: int = 0
    raw_body: int = 0
    memory: int = 0
    claim: int = 0
    lineage_edge: int = 0
    extraction_record: int = 0
    search_entry: int = 0
    search_term: int = 0
    vector: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):
            _count(f.name, getattr(self, f.name))

    def __getitem__(self, artifact: ArtifactClass) -> int:
        if not isinstance(artifact, ArtifactClass):
            raise ValidationError("artifact", "must be an ArtifactClass")
        value: int = getattr(self, artifact.value)
        return value

    def items(self) -> tuple[tuple[ArtifactClass, int], ...]:
        """``(class, count)`` pairs in :class:`ArtifactClass` order."""
        return tuple((artifact, self[artifact]) for artifact in ArtifactClass)

    @property
    def total(self) -> int:
        """The sum of every count."""
        return sum(count for _, count in self.items())


@dataclass(frozen=True, slots=True)
class ErasureReceipt(_Reducible):
    """What :meth:`TrueHeart.erase_subject` erased (or, in a dry run, would erase).

    ``erased`` counts the rows removed per artifact class (in a dry run: the rows that
    exist and would be removed). ``event_ids``, ``memory_ids`` and ``claim_ids`` are the
    IDs erased (and tombstoned, for events and memories), sorted. ``remaining`` counts
    what the scope still holds, read in a new transaction after the erasure committed;
    it is ``None`` in a dry run, and when that count could not be read because the
    store stayed busy past its timeout (the erasure itself is committed, and was
    checked complete in its own transaction). Body-free.
    """

    scope: Scope
    occurred_at: datetime
    dry_run: bool
    erased: ArtifactCounts
    event_ids: tuple[str, ...]
    memory_ids: tuple[str, ...]
    claim_ids: tuple[str, ...]
    remaining: ArtifactCounts | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        object.__setattr__(self, "occurred_at", v.utc("occurred_at", self.occurred_at))
        if not isinstance(self.dry_run, bool):
            raise ValidationError("dry_run", "must be a bool")
        if not isinstance(self.erased, ArtifactCounts):
            raise ValidationError("erased", "must be an ArtifactCounts")
        _set(self, "event_ids", _sorted_ids("event_ids", self.event_ids))
        _set(self, "memory_ids", _sorted_ids("memory_ids", self.memory_ids))
        _set(self, "claim_ids", _sorted_ids("claim_ids", self.claim_ids))
        if self.dry_run and self.remaining is not None:
            raise ValidationError("remaining", "must be None in a dry run")
        if self.remaining is not None and not isinstance(self.remaining, ArtifactCounts):
            raise ValidationError("remaining", "must be an ArtifactCounts or None")

    @property
    def verified(self) -> bool | None:
        """True when nothing of the scope remains after the erasure, False when
        something does, ``None`` for a dry run (nothing was erased) or when the count
        after the erasure could not be read (``remaining`` is ``None``)."""
        if self.remaining is None:
            return None
        return self.remaining.total == 0


@dataclass(frozen=True, slots=True)
class StoreStats(_Reducible):
    """Row counts of the whole store (``scope is None``) or of one scope, and the size of
    the stored data.

    ``storage_bytes`` is the total size of the store's storage and ``storage_detail`` its
    parts in the backend's own terms (``(name, bytes)`` pairs); both are ``None`` / empty
    when the backend cannot tell (an in-memory store). ``database_bytes`` and
    ``wal_bytes`` are the SQLite parts (the database file and its write-ahead log),
    ``None`` on other backends and for an in-memory store.

    ``events_with_body`` counts receipts whose body is still stored; ``memories_by_kind``
    holds ``(kind, count)`` pairs sorted by kind. Search counts are the index's rows:
    entries (one per searchable memory), terms (one per distinct term of a scope) and
    postings (one per term of an entry). Body-free.
    """

    scope: Scope | None
    events: int
    events_with_body: int
    memories: int
    active_memories: int
    sealed_memories: int
    memories_by_kind: tuple[tuple[str, int], ...]
    claims: int
    extraction_records: int
    tombstones: int
    audit_records: int
    search_entries: int
    search_terms: int
    search_postings: int
    vectors: int
    database_bytes: int | None
    wal_bytes: int | None
    storage_bytes: int | None = None
    storage_detail: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        if self.scope is not None and not isinstance(self.scope, Scope):
            raise ValidationError("scope", "must be a Scope or None")
        for f in fields(self):
            if f.name in ("scope", "memories_by_kind", "storage_detail"):
                continue
            if f.name in ("database_bytes", "wal_bytes", "storage_bytes"):
                _optional_count(f.name, getattr(self, f.name))
            else:
                _count(f.name, getattr(self, f.name))
        kinds = self.memories_by_kind
        if not isinstance(kinds, tuple) or not all(
            isinstance(pair, tuple) and len(pair) == 2 for pair in kinds
        ):
            raise ValidationError("memories_by_kind", "must be a tuple of (kind, count)")
        for kind, count in kinds:
            v.text("memories_by_kind", kind)
            _count("memories_by_kind", count)
        if [kind for kind, _ in kinds] != sorted({kind for kind, _ in kinds}):
            raise ValidationError("memories_by_kind", "must be sorted by kind")
        detail = self.storage_detail
        if not isinstance(detail, tuple) or not all(
            isinstance(pair, tuple) and len(pair) == 2 for pair in detail
        ):
            raise ValidationError("storage_detail", "must be a tuple of (part, bytes)")
        for part, size in detail:
            v.text("storage_detail", part)
            _count("storage_detail", size)

    @property
    def events_without_body(self) -> int:
        """Receipts whose body expired (or is otherwise absent)."""
        return self.events - self.events_with_body


@dataclass(frozen=True, slots=True)
class IndexRebuildReport(_Reducible):
    """What :meth:`TrueHeart.rebuild_indexes` changed.

    Search entries are compared whole (scope, memory, length, times, trust, kind and
    term frequencies): an entry that differed from the one recomputed from its memory
    counts once as removed and once as added, and an entry without a memory as removed.
    Term rows are compared by scope, key and document frequency in the same way.
    ``claim_keys_repaired`` counts claim rows whose subject and predicate index keys
    did not match their texts; ``storage_indexes_rebuilt`` counts the storage engine's
    own indexes, rebuilt from their tables. Vectors are kept (no model is called):
    ``vector_copies_repaired`` counts vectors whose copies of their memory's ID, times,
    trust, kind or status were rewritten from the memory row,
    ``vectors_without_memory_removed`` vectors whose memory no longer exists, and
    ``vector_sketches_rebuilt`` vectors whose sketch was missing (a store upgraded from
    schema 4) or not the one their vector gives, and ``damaged_vectors_removed``
    vectors of existing memories that failed their digest, had the wrong size or named
    no known space (only the embedder can compute them again: ``sync_semantic`` does,
    as for any memory without a vector).
    """

    search_entries_before: int
    search_entries_after: int
    search_entries_added: int
    search_entries_removed: int
    search_terms_before: int
    search_terms_after: int
    search_terms_added: int
    search_terms_removed: int
    claim_keys_repaired: int
    storage_indexes_rebuilt: int
    vector_copies_repaired: int = 0
    vectors_without_memory_removed: int = 0
    vector_sketches_rebuilt: int = 0
    damaged_vectors_removed: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):
            _count(f.name, getattr(self, f.name))

    @property
    def changed(self) -> bool:
        """Whether the rebuild changed a search entry, a term row or a claim key."""
        return bool(
            self.search_entries_added
            or self.search_entries_removed
            or self.search_terms_added
            or self.search_terms_removed
            or self.claim_keys_repaired
            or self.vector_copies_repaired
            or self.vectors_without_memory_removed
            or self.vector_sketches_rebuilt
            or self.damaged_vectors_removed
        )


@dataclass(frozen=True, slots=True)
class BackupReport(_Reducible):
    """A finished backup: the absolute path of the copy, its pages and its size in bytes."""

    path: str
    pages: int
    size_bytes: int

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or not self.path:
            raise ValidationError("path", "must be a non-empty string")
        _count("pages", self.pages)
        _count("size_bytes", self.size_bytes)
