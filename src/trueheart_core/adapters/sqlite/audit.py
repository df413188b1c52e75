"""The SQLite audit role (see ``ports.audit``): statements over the unit of work's
connection, and nothing else.

The audit table is kept in the order it is read in: by scope, claimed time and ``seq``,
the write order among a scope's rows of the same claimed time (see ``schema``)."""

from __future__ import annotations

from collections.abc import Iterator

from trueheart_core.adapters.sqlite.session import (
    CHUNK,
    SCOPE_COLUMNS,
    Role,
)
from trueheart_core.ports import AuditRow, ScopeKey

_COLUMNS = "audit_id, action, entity_type, entity_id, occurred_at, reason, metadata, digest, seq"


class SQLiteAudit(Role):
    """The audit role over one transaction."""

    def insert(self, row: AuditRow) -> None:
        sid = self._ensure_scope(row.scope)
        # The next write order of the scope's rows of this claimed time: one probe of the
        # primary key's range.
        self._conn.execute(
            "INSERT INTO audit (scope_id, occurred_at, seq, audit_id, action, entity_type, "
            "entity_id, reason, metadata, digest) SELECT ?1, ?2, IFNULL(MAX(seq), 0) + 1, "
            "?3, ?4, ?5, ?6, ?7, ?8, ?9 FROM audit WHERE scope_id = ?1 AND occurred_at = ?2",
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

    def recent(self, scope: ScopeKey, limit: int) -> list[AuditRow]:
        sid = self._scope_id(scope)
        if sid is None:
            return []
        return [
            AuditRow(r[0], scope, *r[1:])
            for r in self._conn.execute(
                f"SELECT {_COLUMNS} FROM audit WHERE scope_id = ? "
                "ORDER BY occurred_at DESC, seq DESC LIMIT ?",
                (sid, limit),
            )
        ]

    def iter(self, scope: ScopeKey | None) -> Iterator[AuditRow]:
        # Scopes in the order of their IDs' text (their stored numbers differ from store
        # to store), each scope's rows one range of the primary key: the scopes' index
        # drives the walk, so nothing is sorted.
        where, params = "", []
        if scope is not None:
            sid = self._scope_id(scope, thorough=True)
            if sid is None:
                return
            where, params = " WHERE s.scope_id = ?", [sid]
        cursor = self._conn.execute(
            f"SELECT {SCOPE_COLUMNS}, "
            f"{', '.join(f'x.{c.strip()}' for c in _COLUMNS.split(','))} "
            f"FROM scopes s CROSS JOIN audit x ON x.scope_id = s.scope_id{where} "
            "ORDER BY s.tenant_id, s.owner_id, s.subject_id, x.occurred_at, x.seq",
            params,
        )
        while rows := cursor.fetchmany(CHUNK):
            for r in rows:
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
