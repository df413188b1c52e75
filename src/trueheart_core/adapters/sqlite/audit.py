"""The SQLite audit role (see ``ports.audit``): statements over the unit of work's
connection, and nothing else.

The audit table is kept in the order it is read in: by scope, claimed time and ``seq``,
the write order among a scope's rows of the same claimed time (see ``schema``)."""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import Any

from trueheart_core.adapters.sqlite import buffer
from trueheart_core.adapters.sqlite.session import (
    CHUNK,
    SCOPE_COLUMNS,
    Role,
)
from trueheart_core.ports import AuditRow, ScopeKey


def _place(r: Sequence[Any]) -> tuple[tuple[int, Any], ...]:
    """Where a row of :meth:`SQLiteAudit.iter` goes: by scope, claimed time and write
    order, compared as SQLite compares them (NULL, then numbers, then text by code
    point, then bytes), so that a damaged value sorts where SQLite put it and never
    fails a comparison."""
    return tuple(_sortable(r[i]) for i in (0, 1, 2, 7, 11))


def _sortable(value: object) -> tuple[int, Any]:
    if value is None:
        return (0, 0)
    if isinstance(value, int | float):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, bytes(value))  # type: ignore[call-overload]


SEQ_LIMIT = 1 << 62
"""Write orders are integers from 1 below this; a stored one outside is damage."""
_COLUMNS = "audit_id, action, entity_type, entity_id, occurred_at, reason, metadata, digest, seq"


class SQLiteAudit(Role):
    """The audit role over one transaction."""

    def insert(self, row: AuditRow) -> None:
        sid = self._ensure_scope(row.scope)
        # The next write order among the scope's rows of this claimed time: one probe of
        # the clustered key's range, and the buffer's few rows. Only numbers below the
        # largest sound write order count (text and bytes sort above every number): a
        # damaged one neither collides with the next nor lends it its type.
        self._conn.execute(
            "INSERT INTO write_buffer (scope_id, occurred_at, seq, audit_id, action, "
            "entity_type, entity_id, reason, metadata, digest) VALUES (?1, ?2, 1 + MAX(0, "
            "CAST(IFNULL((SELECT MAX(seq) FROM audit_log WHERE scope_id = ?1 "
            f"AND occurred_at = ?2 AND seq < {SEQ_LIMIT}), 0) AS INTEGER), "
            "CAST(IFNULL((SELECT MAX(seq) FROM write_buffer WHERE "
            f"{buffer.AUDIT_ROW} AND scope_id = ?1 AND occurred_at = ?2 AND seq < {SEQ_LIMIT}), "
            "0) AS INTEGER)), ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            (
                sid,
                row.occurred_at,
                row.audit_id,
                row.action,
                row.entity_type,
                row.entity_id,
                row.reason,
                row.metadata,
                row.digest,
            ),
        )
        buffer.appended(self._session)

    def recent(self, scope: ScopeKey, limit: int) -> list[AuditRow]:
        sid = self._scope_id(scope)
        if sid is None:
            return []
        return [
            AuditRow(r[0], scope, *r[1:])
            # Two sorted inputs merged, stopped at the limit: the clustered rows walked
            # backwards along their key, and the scope's few buffered rows sorted.
            for r in self._conn.execute(
                f"SELECT {_COLUMNS} FROM audit_log WHERE scope_id = ?1 "
                f"UNION ALL SELECT {_COLUMNS} FROM write_buffer WHERE {buffer.AUDIT_ROW} "
                "AND scope_id = ?1 ORDER BY occurred_at DESC, seq DESC LIMIT ?2",
                (sid, limit),
            )
        ]

    def iter(self, scope: ScopeKey | None) -> Iterator[AuditRow]:
        # Scopes in the order of their IDs' text (their stored numbers differ from store
        # to store), each scope's rows one range of the primary key: the scopes' index
        # drives the walk, so nothing is sorted. The buffer's few rows are read first,
        # sorted alike, and merged in.
        where, params = "", []
        if scope is not None:
            sid = self._scope_id(scope, thorough=True)
            if sid is None:
                return
            where, params = " WHERE s.scope_id = ?", [sid]
        columns = ", ".join(f"x.{c.strip()}" for c in _COLUMNS.split(","))
        order = " ORDER BY s.tenant_id, s.owner_id, s.subject_id, x.occurred_at, x.seq"
        buffered = self._conn.execute(
            f"SELECT {SCOPE_COLUMNS}, {columns} FROM scopes s CROSS JOIN write_buffer x "
            f"ON x.scope_id = s.scope_id AND {buffer.AUDIT_ROW}{where}{order}",
            params,
        ).fetchall()
        cursor = self._conn.execute(
            f"SELECT {SCOPE_COLUMNS}, {columns} "
            f"FROM scopes s CROSS JOIN audit_log x ON x.scope_id = s.scope_id{where}{order}",
            params,
        )

        def stored() -> Iterator[Any]:
            while rows := cursor.fetchmany(CHUNK):
                yield from rows

        for r in heapq.merge(stored(), buffered, key=_place):
            yield AuditRow(r[3], (r[0], r[1], r[2]), *r[4:])

    def repeated_ids(self, scope: ScopeKey | None) -> Iterator[tuple[ScopeKey, object]]:
        # SQLite groups through a temporary b-tree, which spills to a temporary file
        # beyond its cache. A scope's rows are one range of the primary key.
        if scope is not None:
            sid = self._scope_id(scope, thorough=True)
            if sid is None:
                return
            cursor = self._conn.execute(
                "SELECT audit_id FROM audit WHERE scope_id = ? "
                "GROUP BY audit_id HAVING count(*) > 1",
                (sid,),
            )
            while rows := cursor.fetchmany(CHUNK):
                for (audit_id,) in rows:
                    yield scope, audit_id
            return
        # A row whose scope's own row is lost still counts (its scope comes back NULL,
        # for the caller's check to refuse).
        cursor = self._conn.execute(
            f"SELECT {SCOPE_COLUMNS}, d.audit_id FROM (SELECT audit_id, min(scope_id) AS "
            "scope_id FROM audit GROUP BY audit_id HAVING count(*) > 1) d "
            "LEFT JOIN scopes s ON s.scope_id = d.scope_id"
        )
        while rows := cursor.fetchmany(CHUNK):
            for r in rows:
                yield (r[0], r[1], r[2]), r[3]
