"""The events role of a unit of work: :class:`EventStore`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from trueheart_core.ports.rows import AuditRow, BodyRow, EventRow, ScopeKey


class EventStore(Protocol):
    """Raw events: receipts (body-free metadata) and their bodies, kept apart so that a body can be
    removed while its receipt stays.

    Every method runs inside the unit of work's transaction and may raise
    ``RepositoryBusy``, ``RepositoryCorruption`` or ``RepositoryReadOnly``; driver errors
    never escape.
    """

    def get(self, scope: ScopeKey, event_ids: Sequence[str]) -> dict[str, EventRow]:
        """Receipts with these IDs in the exact scope, keyed by ID (missing IDs absent).

        ``has_body`` tells whether the body row is present. Served by an index.
        """

    def id_elsewhere(self, event_id: str, scope: ScopeKey) -> bool:
        """Whether a receipt with this ID exists in any *other* scope. Served by an index."""

    def insert(self, row: EventRow, body: BodyRow | None) -> None:
        """Store a new receipt and its body; ``None`` stores the receipt alone (an
        import restores an expired receipt so, and an active one's body with
        :meth:`EventStore.insert_body`)."""

    def insert_if_new(
        self, row: EventRow, body: BodyRow, audit: AuditRow, *, committing: bool = False
    ) -> bool:
        """Store a new receipt with its body and its audit row (of the same scope),
        unless the exact scope already holds a receipt, or a tombstone of any entity
        type, with this event ID; whether they were stored.

        ``False`` leaves the store as it was: the caller then reads what is there (a
        replay, a tombstone) and decides. It is the common case of an ingest done in as
        few statements as the backend allows; a backend may implement it as those two
        look-ups and :meth:`insert` followed by the audit role's insert.

        ``committing`` says that this is the unit's first statement and that, after
        ``True``, the caller commits the unit at once without changing anything else in
        it: a backend may then commit in the same round trip as the insert, and the
        unit's ``commit`` has nothing left to do. After ``False`` the unit goes on as
        usual; a backend that committed its (empty) transaction begins a new one for
        the rest of the unit, whose reads see the store as it is then.
        """

    def insert_body(self, body: BodyRow) -> None:
        """Store the body of a receipt of the same scope and ID stored without one."""

    def expirable(self, as_of: int, limit: int) -> list[EventRow]:
        """Up to ``limit`` receipts, in any scope, whose body is present and
        ``raw_expires_at <= as_of``, earliest deadline first and, for one deadline, by
        event ID in code-point order (then in any order among scopes that share the ID):
        the order expiry writes its audit rows in, the same on every backend.

        Read from an index that holds only receipts with a body, so the cost grows with
        the number of such rows, not with the database. Expiring the returned rows
        removes them from the next call's answer.
        """

    def expire(self, row: EventRow) -> None:
        """Remove the body of ``row`` and store ``row`` (its new status and digest)."""

    def delete(self, scope: ScopeKey, event_id: str) -> None:
        """Remove the receipt, the body (if any) and the extraction record (if any) of
        one event."""

    def iter(self, scope: ScopeKey | None) -> Iterator[EventRow]:
        """Every receipt (of one scope, or of the whole store), in storage order."""

    def iter_bodies(self, scope: ScopeKey | None) -> Iterator[BodyRow]:
        """Every stored body (of one scope, or of the whole store), in storage order."""
