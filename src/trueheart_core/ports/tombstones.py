"""The tombstones role of a unit of work: :class:`TombstoneStore`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from trueheart_core.ports.rows import ScopeKey, TombstoneRow


class TombstoneStore(Protocol):
    """Tombstones: the body-free records that stop a deleted ID (or dependency fingerprint) from
    coming back.

    Every method runs inside the unit of work's transaction and may raise
    ``RepositoryBusy``, ``RepositoryCorruption`` or ``RepositoryReadOnly``; driver errors
    never escape.
    """

    def get(self, scope: ScopeKey, entity_id: str) -> list[TombstoneRow]:
        """The tombstones (of either type) with this entity ID in the exact scope (indexed)."""

    def elsewhere(self, entity_id: str, entity_type: str, scope: ScopeKey) -> TombstoneRow | None:
        """One tombstone of this type and ID in any *other* scope, if any (indexed)."""

    def insert(self, row: TombstoneRow) -> None:
        """Store a tombstone."""

    def iter(self, scope: ScopeKey | None) -> Iterator[TombstoneRow]:
        """Every tombstone (of one scope, or of the whole store), in write order."""
