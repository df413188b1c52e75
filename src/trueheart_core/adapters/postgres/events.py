"""The PostgreSQL events role (see ``ports.events``): statements over the unit of work's
connection, and nothing else."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from trueheart_core.adapters.postgres.claims import PostgresClaims
from trueheart_core.adapters.postgres.scans import scan
from trueheart_core.adapters.postgres.schema import SCHEMA_VERSION
from trueheart_core.adapters.postgres.session import (
    EVENT_COLUMNS,
    EVENT_E,
    KEY,
    Role,
    Session,
    dec,
    enc,
    enc_opt,
    event_row,
    key_of,
    scoped,
)
from trueheart_core.ports import AuditRow, BodyRow, EventRow, ScopeKey

_EVENT_X = EVENT_COLUMNS.format(a="x")


def receipts_read(
    session: Session, scope: ScopeKey, encoded_ids: list[bytes]
) -> tuple[str, tuple[Any, ...]]:
    """The statement that reads the receipts of these events (their IDs encoded, at
    most ``CHUNK``); its rows are read by :func:`receipts`."""
    return (
        f"SELECT {EVENT_E} FROM raw_events e WHERE {scoped('e')} AND e.event_id = ANY(%s)",
        (*session.key(scope), encoded_ids),
    )


def receipts(scope: ScopeKey, rows: Iterable[Sequence[Any]]) -> dict[str, EventRow]:
    """The rows of :func:`receipts_read`, by event ID."""
    found: dict[str, EventRow] = {}
    for r in rows:
        row = event_row(scope, r)
        found[row.event_id] = row
    return found


class PostgresEvents(Role):
    """The events role over one transaction."""

    def __init__(self, session: Session, claims: PostgresClaims) -> None:
        super().__init__(session)
        self._claims = claims

    def get(self, scope: ScopeKey, event_ids: Sequence[str]) -> dict[str, EventRow]:
        found: dict[str, EventRow] = {}
        for chunk in self._s.chunks([enc(event_id) for event_id in event_ids]):
            found.update(receipts(scope, self._s.all(*receipts_read(self._s, scope, chunk))))
        return found

    def id_elsewhere(self, event_id: str, scope: ScopeKey) -> bool:
        # Through ``raw_events_by_id``: the ID in every scope, the exact one left out.
        return (
            self._s.one(
                f"SELECT 1 FROM raw_events WHERE event_id = %s AND ({KEY}) <> (%s, %s, %s) LIMIT 1",
                (enc(event_id), *self._s.key(scope)),
            )
            is not None
        )

    def insert(self, row: EventRow, body: BodyRow | None) -> None:
        self._s.ensure_scope(row.scope)
        self._s.write(
            f"INSERT INTO raw_events ({KEY}, event_id, source_id, source_type, "
            "source_occurred_at, trust, source_metadata, content_hash, ingested_at, "
            "raw_expires_at, clear_for, recall_for, status, metadata, digest) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                *self._s.key(row.scope),
                enc(row.event_id),
                enc(row.source_id),
                enc(row.source_type),
                row.source_occurred_at,
                row.trust,
                row.source_metadata,
                row.content_hash,
                row.ingested_at,
                row.raw_expires_at,
                row.clear_for,
                row.recall_for,
                row.status,
                row.metadata,
                row.digest,
            ),
        )
        if body is not None:
            self.insert_body(body)

    def insert_if_new(
        self, row: EventRow, body: BodyRow, audit: AuditRow, *, committing: bool = False
    ) -> bool:
        self._s.ensure_scope(row.scope)
        key = self._s.key(row.scope)
        event_id = enc(row.event_id)
        # One statement: the receipt goes in only when neither a receipt nor a tombstone
        # of this ID is in the scope (the scope's lock is held, so no writer of the scope
        # runs meanwhile); the body and the audit row go in with it, or not at all. It
        # also checks the stored version itself: when the unit commits in the same round
        # trip, the unit's own check of the version (made once the round trip returns)
        # comes too late to keep a store of another version unchanged.
        found = (self._s.one_and_commit if committing else self._s.one)(
            f"WITH e AS (INSERT INTO raw_events ({KEY}, event_id, source_id, source_type, "
            "source_occurred_at, trust, source_metadata, content_hash, ingested_at, "
            "raw_expires_at, clear_for, recall_for, status, metadata, digest) "
            "SELECT %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s "
            f"WHERE NOT EXISTS (SELECT 1 FROM raw_events x WHERE {scoped('x')} "
            "AND x.event_id = %s) "
            f"AND NOT EXISTS (SELECT 1 FROM tombstones t WHERE {scoped('t')} "
            "AND t.entity_id = %s) "
            "AND EXISTS (SELECT 1 FROM meta WHERE schema_version = %s "
            "AND tableoid::bigint = %s) RETURNING 1), "
            f"b AS (INSERT INTO raw_bodies ({KEY}, event_id, content, digest) "
            "SELECT %s, %s, %s, %s, %s, %s FROM e), "
            f"a AS (INSERT INTO audit ({KEY}, audit_id, action, entity_type, entity_id, "
            "occurred_at, reason, metadata, digest) "
            "SELECT %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s FROM e) "
            "SELECT COUNT(*) FROM e",
            (
                *key,
                event_id,
                enc(row.source_id),
                enc(row.source_type),
                row.source_occurred_at,
                row.trust,
                row.source_metadata,
                row.content_hash,
                row.ingested_at,
                row.raw_expires_at,
                row.clear_for,
                row.recall_for,
                row.status,
                row.metadata,
                row.digest,
                *key,
                event_id,
                *key,
                event_id,
                SCHEMA_VERSION,
                self._s.store_oid,
                *key,
                event_id,
                enc(body.content),
                body.digest,
                *key,
                audit.audit_id,
                audit.action,
                audit.entity_type,
                enc_opt(audit.entity_id),
                audit.occurred_at,
                enc_opt(audit.reason),
                audit.metadata,
                audit.digest,
            ),
        )
        stored = found is not None and found[0] == 1
        if committing and not stored:
            self._s.begin_again()
        return stored

    def insert_body(self, body: BodyRow) -> None:
        self._s.ensure_scope(body.scope)
        self._s.write(
            f"INSERT INTO raw_bodies ({KEY}, event_id, content, digest) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            (*self._s.key(body.scope), enc(body.event_id), enc(body.content), body.digest),
        )

    def expirable(self, as_of: int, limit: int) -> list[EventRow]:
        # ``raw_events_expiry`` holds only active receipts (the ones with a body), in
        # deadline and then event-ID order, so the walk stops at ``limit``.
        rows = self._s.all(
            f"SELECT e.tenant_id, e.owner_id, e.subject_id, {EVENT_E} FROM raw_events e "
            "WHERE e.status = 'active' AND e.raw_expires_at <= %s "
            "ORDER BY e.raw_expires_at, e.event_id LIMIT %s",
            (as_of, limit),
        )
        return [event_row(key_of(r), r[3:]) for r in rows]

    def expire(self, row: EventRow) -> None:
        key = self._s.key(row.scope)
        event_id = enc(row.event_id)
        self._s.touched_tables.add("raw_bodies")
        self._s.write(
            f"DELETE FROM raw_bodies WHERE {scoped()} AND event_id = %s", (*key, event_id), rows=1
        )
        self._s.write(
            f"UPDATE raw_events SET status = %s, digest = %s WHERE {scoped()} AND event_id = %s",
            (row.status, row.digest, *key, event_id),
            rows=1,
        )

    def delete(self, scope: ScopeKey, event_id: str) -> None:
        self._claims.delete_extraction(scope, event_id)
        key = self._s.key(scope)
        stored = enc(event_id)
        self._s.touched_tables.update(("raw_bodies", "raw_events"))
        self._s.write(f"DELETE FROM raw_bodies WHERE {scoped()} AND event_id = %s", (*key, stored))
        self._s.write(
            f"DELETE FROM raw_events WHERE {scoped()} AND event_id = %s", (*key, stored), rows=1
        )

    def iter(self, scope: ScopeKey | None) -> Iterator[EventRow]:
        for key, r in scan(self._s, _EVENT_X, "raw_events", "x.event_id", scope):
            yield event_row(key, r)

    def iter_bodies(self, scope: ScopeKey | None) -> Iterator[BodyRow]:
        for key, r in scan(
            self._s, "x.event_id, x.content, x.digest", "raw_bodies", "x.event_id", scope
        ):
            yield BodyRow(key, dec(r[0]), dec(r[1]), r[2])
