"""The SQLite audit role (see ``ports.audit``): statements over the unit of work's
connection, and nothing else."""

from __future__ import annotations

from collections.abc import Iterator

from trueheart_core.adapters.sqlite.session import (
    SCOPE_COLUMNS,
    SCOPE_JOIN,
    Role,
    key_of,
)
from trueheart_core.ports import AuditRow, ScopeKey


class SQLiteAudit(Role):
    """The audit role over one transaction."""

    def insert(self, row: AuditRow) -> None:
        self._conn.execute(
            "INSERT INTO audit (scope_id, audit_id, action, entity_type, entity_id, occurred_at, "
            "reason, metadata, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                self._ensure_scope(row.scope),
                row.audit_id,
                row.action,
                row.entity_type,
                row.entity_id,
                row.occurred_at,
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
                "SELECT audit_id, action, entity_type, entity_id, occurred_at, reason, metadata, "
                "digest, seq FROM audit INDEXED BY audit_recent WHERE scope_id = ? "
                "ORDER BY occurred_at DESC, seq DESC LIMIT ?",
                (sid, limit),
            )
        ]

    def iter(self, scope: ScopeKey | None) -> Iterator[AuditRow]:
        sql = (
            f"SELECT x.seq, {SCOPE_COLUMNS}, x.audit_id, x.action, x.entity_type, x.entity_id, "
            f"x.occurred_at, x.reason, x.metadata, x.digest, x.seq "
            f"FROM audit x {SCOPE_JOIN.format(alias='x')}"
        )
        for r in self._scan(sql, scope, "seq"):
            yield AuditRow(r[3], key_of(r), *r[4:])
