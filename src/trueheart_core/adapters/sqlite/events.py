"""The SQLite events role (see ``ports.events``): statements over the unit of work's
connection, and nothing else.

Receipts and bodies are kept tables (see ``schema``): erasing one overwrites it in place
and marks it ``erased``; no statement here deletes either. A body's row ID is its
receipt's."""

from __future__ import annotations

import sqlite3
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
    blanked,
    event_row,
    key_of,
    stored_status,
)
from trueheart_core.errors import RepositoryCorruption
from trueheart_core.ports import AuditRow, BodyRow, EventRow, ScopeKey

_INSERT = (
    "INSERT INTO raw_events (scope_id, event_id, source_id, source_type, "
    "source_occurred_at, trust, source_metadata, content_hash, ingested_at, "
    "raw_expires_at, clear_for, recall_for, status, metadata, digest) "
)
RECEIPT_TEXT = (
    "source_id",
    "source_type",
    "source_metadata",
    "content_hash",
    "clear_for",
    "recall_for",
    "metadata",
    "digest",
)
"""The columns of a receipt that hold text of the host's (or derived from it), which
erasing the receipt overwrites in place. The event ID stays, as it does in the
tombstone that erasing it writes."""
BODY_TEXT = ("content", "digest")
ERASE_RECEIPT = f"{', '.join(blanked(c) for c in RECEIPT_TEXT)}, erased = 1"
ERASE_BODY = f"{', '.join(blanked(c) for c in BODY_TEXT)}, erased = 1"

# A body is found through its receipt (they share a row ID), and the bodies table has no
# scope index of its own. When damage has lost a receipt row, its body can only be found
# by reading the whole table. That is done only when the scope's audit log names an
# event that has neither a receipt row (erased receipts keep theirs until ``compact``)
# nor a tombstone (which ``compact`` leaves for each receipt it removes).
_RECEIPT_LOST = (
    "SELECT 1 FROM audit a WHERE a.scope_id = ?1 AND a.entity_type = 'raw_event' "
    "AND NOT EXISTS (SELECT 1 FROM raw_events e INDEXED BY raw_events_by_id "
    "WHERE e.event_id = a.entity_id AND e.scope_id = ?1) "
    "AND NOT EXISTS (SELECT 1 FROM tombstones t INDEXED BY tombstones_by_id "
    "WHERE t.entity_id = a.entity_id AND t.scope_id = ?1 AND t.entity_type = 'raw_event') "
    "LIMIT 1"
)
_WITHOUT_RECEIPT = (
    "erased IS NOT 1 AND scope_id = ?1 "
    "AND NOT EXISTS (SELECT 1 FROM raw_events e WHERE e.rid = raw_bodies.rid)"
)
ERASE_BODIES_WITHOUT_RECEIPT = f"UPDATE raw_bodies SET {ERASE_BODY} WHERE {_WITHOUT_RECEIPT}"
COUNT_BODIES_WITHOUT_RECEIPT = f"SELECT COUNT(*) FROM raw_bodies WHERE {_WITHOUT_RECEIPT}"
"""Erase or count the scope's (``?1``) bodies whose receipt row is gone: a read of the
whole bodies table, for when :func:`receipt_lost` says so."""


def receipt_lost(conn: sqlite3.Connection, sid: int) -> bool:
    """Whether damage may have left bodies of scope ``sid`` that no receipt leads to: its
    audit log names an event with neither a receipt row nor a tombstone. False for a
    sound store; costs what the scope's audit log holds."""
    return conn.execute(_RECEIPT_LOST, (sid,)).fetchone() is not None


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
                f"WHERE e.event_id IN ({marks}) AND e.scope_id = ? AND e.erased IS NOT 1",
                [*chunk, sid],
            ):
                found[r[0]] = event_row(scope, r)
        return found

    def id_elsewhere(self, event_id: str, scope: ScopeKey) -> bool:
        sid = self._scope_id(scope)
        row = self._conn.execute(
            "SELECT 1 FROM raw_events WHERE event_id = ? AND scope_id IS NOT ? AND erased IS NOT 1 "
            "LIMIT 1",
            (event_id, sid),
        ).fetchone()
        return row is not None

    def insert(self, row: EventRow, body: BodyRow | None) -> None:
        sid = self._ensure_scope(row.scope)
        cursor = self._conn.execute(
            f"{_INSERT}VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            _values(sid, row),
        )
        if body is not None:
            assert cursor.lastrowid is not None
            self._insert_body(cursor.lastrowid, sid, body)

    def insert_if_new(
        self, row: EventRow, body: BodyRow, audit: AuditRow, *, committing: bool = False
    ) -> bool:
        # ``committing`` changes nothing here: a commit costs no round trip.
        sid = self._ensure_scope(row.scope)
        # One statement: the receipt goes in only when neither a receipt nor a tombstone
        # of this ID is in the scope (both found through their ID indexes; the ID of an
        # erased receipt has its tombstone).
        cursor = self._conn.execute(
            f"{_INSERT}SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? "
            "WHERE NOT EXISTS (SELECT 1 FROM raw_events WHERE event_id = ? AND scope_id = ? "
            "AND erased IS NOT 1) "
            "AND NOT EXISTS (SELECT 1 FROM tombstones WHERE entity_id = ? AND scope_id = ?)",
            (*_values(sid, row), row.event_id, sid, row.event_id, sid),
        )
        if cursor.rowcount != 1:
            return False
        assert cursor.lastrowid is not None
        self._insert_body(cursor.lastrowid, sid, body)
        self._audit.insert(audit)
        return True

    def insert_body(self, body: BodyRow) -> None:
        sid = self._ensure_scope(body.scope)
        found = self._conn.execute(
            "SELECT rid FROM raw_events WHERE event_id = ? AND scope_id = ? AND erased IS NOT 1",
            (body.event_id, sid),
        ).fetchone()
        if found is None:
            raise RepositoryCorruption("invalid raw event record")
        self._insert_body(int(found[0]), sid, body)

    def _insert_body(self, rid: int, sid: int, body: BodyRow) -> None:
        self._conn.execute(
            "INSERT INTO raw_bodies (rid, scope_id, content, digest) VALUES (?, ?, ?, ?)",
            (rid, sid, body.content, body.digest),
        )

    def expirable(self, as_of: int, limit: int) -> list[EventRow]:
        rows = self._conn.execute(
            f"SELECT {SCOPE_COLUMNS}, {EVENT_E} FROM raw_events e "
            "INDEXED BY raw_events_expiry "
            f"{SCOPE_JOIN.format(alias='e')} "
            "WHERE e.status = 0 AND e.erased IS NOT 1 AND e.raw_expires_at <= ? "
            "ORDER BY e.raw_expires_at, e.event_id LIMIT ?",
            (as_of, limit),
        ).fetchall()
        return [event_row(key_of(r), r[3:]) for r in rows]

    def expire(self, row: EventRow) -> None:
        rid = self._rid(row.scope, row.event_id)
        changed(
            self._conn.execute(
                f"UPDATE raw_bodies SET {ERASE_BODY} WHERE rid = ? AND erased IS NOT 1", (rid,)
            ),
            1,
        )
        # 0 becomes 1 and the digest keeps its length: the row keeps its size.
        changed(
            self._conn.execute(
                "UPDATE raw_events SET status = ?, digest = ? WHERE rid = ? AND erased IS NOT 1",
                (stored_status(row.status), row.digest, rid),
            ),
            1,
        )

    def delete(self, scope: ScopeKey, event_id: str) -> None:
        self._claims.delete_extraction(scope, event_id)
        rid = self._rid(scope, event_id)
        self._conn.execute(
            f"UPDATE raw_bodies SET {ERASE_BODY} WHERE rid = ? AND erased IS NOT 1", (rid,)
        )
        changed(
            self._conn.execute(
                f"UPDATE raw_events SET {ERASE_RECEIPT} WHERE rid = ? AND erased IS NOT 1", (rid,)
            ),
            1,
        )

    def _rid(self, scope: ScopeKey, event_id: str) -> int | None:
        sid = self._scope_id(scope)
        found = self._conn.execute(
            "SELECT rid FROM raw_events WHERE event_id = ? AND scope_id = ? AND erased IS NOT 1",
            (event_id, sid),
        ).fetchone()
        return None if found is None else int(found[0])

    def iter(self, scope: ScopeKey | None) -> Iterator[EventRow]:
        sql = (
            f"SELECT x.rid, {SCOPE_COLUMNS}, {EVENT_X} FROM raw_events x "
            f"{SCOPE_JOIN.format(alias='x')}"
        )
        for r in self._scan(sql, scope, "rid"):
            yield event_row(key_of(r), r[3:])

    def iter_bodies(self, scope: ScopeKey | None) -> Iterator[BodyRow]:
        # A body is named by its receipt; one whose receipt is missing (damage) is
        # named by no event ID, for verification to report. A scope's bodies are found
        # through its receipts, unless its audit log says a receipt is lost: then, as
        # for the whole store, the bodies table itself is read.
        sid = None if scope is None else self._scope_id(scope, thorough=True)
        if scope is None or (sid is not None and receipt_lost(self._conn, sid)):
            sql = (
                f"SELECT x.rid, {SCOPE_COLUMNS}, IFNULL(e.event_id, ''), x.content, x.digest "
                "FROM raw_bodies x JOIN scopes s ON s.scope_id = x.scope_id "
                "LEFT JOIN raw_events e ON e.rid = x.rid AND e.scope_id = x.scope_id"
            )
        else:
            sql = (
                f"SELECT x.rid, {SCOPE_COLUMNS}, x.event_id, b.content, b.digest "
                "FROM raw_events x INDEXED BY raw_events_by_scope "
                "JOIN raw_bodies b ON b.rid = x.rid AND b.erased IS NOT 1 "
                f"{SCOPE_JOIN.format(alias='x')}"
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
        stored_status(row.status),
        row.metadata,
        row.digest,
    )
