"""The SQLite events role (see ``ports.events``): statements over the unit of work's
connection, and nothing else."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from trueheart_core.adapters.sqlite.audit import SQLiteAudit
from trueheart_core.adapters.sqlite.claims import SQLiteClaims
from trueheart_core.adapters.sqlite.connection import changed
from trueheart_core.adapters.sqlite.session import (
    CHUNK,
    EVENT_E,
    EVENT_X,
    SCOPE_COLUMNS,
    SCOPE_JOIN,
    Role,
    Session,
    event_row,
    key_of,
)
from trueheart_core.ports import AuditRow, BodyRow, EventRow, ScopeKey

_INSERT = (
    "INSERT INTO raw_events (scope_id, event_id, source_id, source_type, "
    "source_occurred_at, trust, source_metadata, content_hash, ingested_at, "
    "raw_expires_at, clear_for, recall_for, status, metadata, digest) "
)


class SQLiteEvents(Role):
    """The events role over one transaction."""

    def __init__(self, session: Session, claims: SQLiteClaims, audit: SQLiteAudit) -> None:
        super().__init__(session)
        self._claims = claims
        self._audit = audit

    def get(self, scope: ScopeKey, event_ids: Sequence[str]) -> dict[str, EventRow]:
        sid = self._scope_id(scope)
        if sid is None or not event_ids:
            return {}
        found: dict[str, EventRow] = {}
        for start in range(0, len(event_ids), CHUNK):
            chunk = list(event_ids[start : start + CHUNK])
            marks = ",".join("?" * len(chunk))
            for r in self._conn.execute(
                f"SELECT {EVENT_E} FROM raw_events e "
                f"WHERE e.scope_id = ? AND e.event_id IN ({marks})",
                [sid, *chunk],
            ):
                found[r[0]] = event_row(scope, r)
        return found

    def id_elsewhere(self, event_id: str, scope: ScopeKey) -> bool:
        sid = self._scope_id(scope)
        row = self._conn.execute(
            "SELECT 1 FROM raw_events WHERE event_id = ? AND scope_id IS NOT ? LIMIT 1",
            (event_id, sid),
        ).fetchone()
        return row is not None

    def insert(self, row: EventRow, body: BodyRow | None) -> None:
        sid = self._ensure_scope(row.scope)
        self._conn.execute(
            f"{_INSERT}VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            _values(sid, row),
        )
        if body is not None:
            self.insert_body(body)

    def insert_if_new(self, row: EventRow, body: BodyRow, audit: AuditRow) -> bool:
        sid = self._ensure_scope(row.scope)
        # One statement: the receipt goes in only when neither a receipt nor a tombstone
        # of this ID is in the scope (both found through their ID indexes).
        cursor = self._conn.execute(
            f"{_INSERT}SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? "
            "WHERE NOT EXISTS (SELECT 1 FROM raw_events WHERE event_id = ? AND scope_id = ?) "
            "AND NOT EXISTS (SELECT 1 FROM tombstones WHERE entity_id = ? AND scope_id = ?)",
            (*_values(sid, row), row.event_id, sid, row.event_id, sid),
        )
        if cursor.rowcount != 1:
            return False
        self.insert_body(body)
        self._audit.insert(audit)
        return True

    def insert_body(self, body: BodyRow) -> None:
        self._conn.execute(
            "INSERT INTO raw_bodies (scope_id, event_id, content, digest) VALUES (?, ?, ?, ?)",
            (self._ensure_scope(body.scope), body.event_id, body.content, body.digest),
        )

    def expirable(self, as_of: int, limit: int) -> list[EventRow]:
        rows = self._conn.execute(
            f"SELECT {SCOPE_COLUMNS}, {EVENT_E} FROM raw_events e "
            "INDEXED BY raw_events_expiry "
            f"{SCOPE_JOIN.format(alias='e')} "
            "WHERE e.status = 'active' AND e.raw_expires_at <= ? "
            "ORDER BY e.raw_expires_at LIMIT ?",
            (as_of, limit),
        ).fetchall()
        return [event_row(key_of(r), r[3:]) for r in rows]

    def expire(self, row: EventRow) -> None:
        sid = self._scope_id(row.scope)
        changed(
            self._conn.execute(
                "DELETE FROM raw_bodies WHERE event_id = ? AND scope_id = ?", (row.event_id, sid)
            ),
            1,
        )
        changed(
            self._conn.execute(
                "UPDATE raw_events SET status = ?, digest = ? WHERE event_id = ? AND scope_id = ?",
                (row.status, row.digest, row.event_id, sid),
            ),
            1,
        )

    def delete(self, scope: ScopeKey, event_id: str) -> None:
        self._claims.delete_extraction(scope, event_id)
        sid = self._scope_id(scope)
        self._conn.execute(
            "DELETE FROM raw_bodies WHERE event_id = ? AND scope_id = ?", (event_id, sid)
        )
        changed(
            self._conn.execute(
                "DELETE FROM raw_events WHERE event_id = ? AND scope_id = ?", (event_id, sid)
            ),
            1,
        )

    def iter(self, scope: ScopeKey | None) -> Iterator[EventRow]:
        sql = (
            f"SELECT x.rid, {SCOPE_COLUMNS}, {EVENT_X} FROM raw_events x "
            f"{SCOPE_JOIN.format(alias='x')}"
        )
        for r in self._scan(sql, scope, "rid"):
            yield event_row(key_of(r), r[3:])

    def iter_bodies(self, scope: ScopeKey | None) -> Iterator[BodyRow]:
        sql = (
            f"SELECT x.rid, {SCOPE_COLUMNS}, x.event_id, x.content, x.digest "
            f"FROM raw_bodies x {SCOPE_JOIN.format(alias='x')}"
        )
        for r in self._scan(sql, scope, "rid"):
            yield BodyRow(key_of(r), r[3], r[4], r[5])


def _values(sid: int, row: EventRow) -> tuple[object, ...]:
    """The stored columns of a receipt, in the order of ``_INSERT``."""
    return (
        sid,
        row.event_id,
        row.source_id,
        row.source_type,
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
    )
