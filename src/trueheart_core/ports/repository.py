"""The unit of work, the repository that hands it out, and the capabilities a backend
may or may not have.

A unit of work is one transaction: it rolls back unless :meth:`UnitOfWork.commit` is
called. It offers its reads and writes as roles, one protocol each (events, memories,
tombstones, audit, claims, search index, vectors, store operations): a backend implements
each role over the same transaction. The roles make no lifecycle decisions: validation,
digests, idempotency, tombstone and audit rules all live in the service, so every
backend behaves identically by construction and only has to pass the conformance suite.
"""

from __future__ import annotations

from collections.abc import Collection, MutableMapping
from contextlib import AbstractContextManager
from enum import StrEnum
from typing import Protocol, runtime_checkable

from trueheart_core.ports.audit import AuditLog
from trueheart_core.ports.claims import ClaimStore
from trueheart_core.ports.events import EventStore
from trueheart_core.ports.memories import MemoryStore
from trueheart_core.ports.operations import StoreOperations
from trueheart_core.ports.rows import Operation
from trueheart_core.ports.search import SearchIndex
from trueheart_core.ports.tombstones import TombstoneStore
from trueheart_core.ports.vectors import VectorStore


class UnitOfWork(Protocol):
    """One transaction of the store, with its roles.

    ``vectors`` is ``None`` for a backend without :attr:`Capability.VECTORS`. Roles of one
    unit share its transaction; using a unit after its block has exited is an error.
    """

    @property
    def events(self) -> EventStore: ...

    @property
    def memories(self) -> MemoryStore: ...

    @property
    def tombstones(self) -> TombstoneStore: ...

    @property
    def audit(self) -> AuditLog: ...

    @property
    def claims(self) -> ClaimStore: ...

    @property
    def search(self) -> SearchIndex: ...

    @property
    def vectors(self) -> VectorStore | None: ...

    @property
    def operations(self) -> StoreOperations: ...

    def scratch(self) -> MutableMapping[object, object]:
        """A dictionary that belongs to the open repository, not to this unit, where the
        service keeps data derived from the store in process memory (verified source
        receipts, a copy of a scope's vectors kept with the generation it was read at).
        The repository empties it when it closes and as soon as an erasing unit of work
        commits, so that nothing erased stays in it. Units of several threads may share
        it: what the service keeps there costs a recomputation if lost, never an
        answer."""
        ...

    def commit(self) -> None:
        """Commit the transaction. Without it, leaving the unit's block rolls back."""


class Capability(StrEnum):
    """An ability a backend may or may not have. A repository declares its own in
    :attr:`Repository.capabilities`; the service and the conformance suite ask for a
    capability by name, never by the adapter's type."""

    PERSISTENT = "persistent"
    """The store outlives its repository object: another repository opened on the same
    target sees everything committed."""
    SHARED_ACROSS_PROCESSES = "shared_across_processes"
    """Several processes may open the same store at once."""
    READ_ONLY_OPEN = "read_only_open"
    """The store can be opened for reading only (``read_only=True``)."""
    BACKUP = "backup"
    """An online, consistent copy into a new store (:class:`SupportsBackup`)."""
    STORAGE_SIZES = "storage_sizes"
    """The size of the stored data can be reported (:class:`SupportsStorageSizes`)."""
    VECTORS = "vectors"
    """Units of work store and scan semantic vectors (:class:`SupportsVectors`)."""
    FORENSICS = "forensics"
    """The backend can search the bytes of its own storage (:class:`SupportsForensics`):
    after an erasing call returns, none of the removed bodies is found there."""


class Repository(Protocol):
    """A store that hands out units of work. Safe to share between threads."""

    @property
    def capabilities(self) -> frozenset[Capability]:
        """What this repository can do beyond the unit of work (see :class:`Capability`)."""

    def unit_of_work(
        self, operation: Operation, *, write: bool, erasing: bool = False
    ) -> AbstractContextManager[UnitOfWork]:
        """Open one transaction for ``operation``.

        A writing unit takes the write lock before any read, so contention surfaces as
        ``RepositoryBusy`` before any work is done; a read-only repository raises
        ``RepositoryReadOnly`` here. Leaving the block without :meth:`UnitOfWork.commit`
        rolls everything back. When ``erasing`` is true and the unit committed, the
        adapter removes what the unit deleted from its storage before the block exits,
        as far as its documented erasure guarantee reaches (a backend with
        :attr:`Capability.FORENSICS` proves it: its :meth:`SupportsForensics.residue`
        finds none of the removed bodies afterwards); if it cannot finish, it raises
        instead of returning. Driver errors inside the block surface as library errors
        carrying the operation's fixed diagnostic. Units do not nest: a unit opened on a
        thread that is inside one of this repository's units already (a host callback
        calling back into the store) raises ``ValidationError`` at once.
        """

    def close(self) -> None:
        """Release every resource. Idempotent. Later use raises ``ValidationError``."""


# --- capabilities a repository may offer beyond the unit of work --------------------------


@runtime_checkable
class SupportsBackup(Protocol):
    """A repository that can copy itself, online and consistently, to a new file."""

    def backup(self, target: str) -> tuple[int, int]:
        """Copy the whole store, as of one committed state, into a new database file at
        ``target`` (refused with ``ValidationError`` if it, or a journal or WAL of it,
        exists; nothing is overwritten). Returns ``(pages, bytes)`` of the copy. A copy
        that fails part-way is removed."""


@runtime_checkable
class SupportsForensics(Protocol):
    """A repository that can search the bytes of its own storage, as a forensic examiner
    of it would: the evidence of the erasure guarantee in a backend's own terms."""

    def residue(self, needles: Collection[bytes]) -> frozenset[bytes]:
        """The needles that occur anywhere in the storage this repository keeps (for a
        file store: the database file, its WAL and journal). Reads only."""


@runtime_checkable
class SupportsStorageSizes(Protocol):
    """A repository that can report how many bytes its stored data takes."""

    def storage_sizes(self) -> tuple[tuple[str, int], ...] | None:
        """The bytes of each part of the storage, in the backend's own terms and a fixed
        order (for a SQLite file: ``("database", n)`` and ``("wal", n)``), or ``None``
        when the store keeps nothing that has a size (an in-memory store)."""
