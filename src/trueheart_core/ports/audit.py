"""The audit role of a unit of work: :class:`AuditLog`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from trueheart_core.ports.rows import AuditRow, ScopeKey


class AuditLog(Protocol):
    """The body-free audit log, written in the same transaction as the change it records.

    Every method runs inside the unit of work's transaction and may raise
    ``RepositoryBusy``, ``RepositoryCorruption`` or ``RepositoryReadOnly``; driver errors
    never escape.
    """

    def insert(self, row: AuditRow) -> None:
        """Append an audit row; its write order is assigned here."""

    def recent(self, scope: ScopeKey, limit: int) -> list[AuditRow]:
        """The first ``limit`` audit rows of the scope by ``occurred_at`` descending, then
        write order descending. Walks an index and stops at ``limit``."""

    def iter(self, scope: ScopeKey | None) -> Iterator[AuditRow]:
        """Every audit row (of one scope, or of the whole store), in write order."""

    def repeated_ids(self, scope: ScopeKey | None) -> Iterator[tuple[ScopeKey, object]]:
        """Each audit ID that more than one audit row holds (among one scope's rows, or
        the whole store's), once, with the scope of one of those rows.

        The audit log has no index by ID, so this is one grouped read of the rows that
        the engine sorts or hashes within its own memory bounds (spilling to disk), not
        a look-up per row nor a set of IDs in the process."""
