"""The PostgreSQL audit role (see ``ports.audit``): statements over the unit of work's
connection, and nothing else."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from trueheart_core.adapters.postgres.scans import scan
from trueheart_core.adapters.postgres.session import KEY, Role, dec, enc_opt, key_of, scoped
from trueheart_core.ports import AuditRow, ScopeKey

_COLUMNS = (
    "x.audit_id, x.action, x.entity_type, x.entity_id, x.occurred_at, x.reason, "
    "x.metadata, x.digest, x.seq"
)


def _audit(scope: ScopeKey, r: Sequence[Any]) -> AuditRow:
    """An :class:`AuditRow` from the columns of ``_COLUMNS``."""
    return AuditRow(r[0], scope, r[1], r[2], dec(r[3]), r[4], dec(r[5]), r[6], r[7], r[8])


class PostgresAudit(Role):
    """The audit role over one transaction."""

    def insert(self, row: AuditRow) -> None:
        # ``seq`` is an identity column: the sequence assigns the write order.
        self._s.ensure_scope(row.scope)
        self._s.write(
            f"INSERT INTO audit ({KEY}, audit_id, action, entity_type, entity_id, "
            "occurred_at, reason, metadata, digest) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                *self._s.key(row.scope),
                row.audit_id,
                row.action,
                row.entity_type,
                enc_opt(row.entity_id),
                row.occurred_at,
                enc_opt(row.reason),
                row.metadata,
                row.digest,
            ),
        )

    def recent(self, scope: ScopeKey, limit: int) -> list[AuditRow]:
        # ``audit_recent`` holds this order, so the scan stops at ``limit``.
        return [
            _audit(scope, r)
            for r in self._s.all(
                f"SELECT {_COLUMNS} FROM audit x WHERE {scoped('x')} "
                "ORDER BY x.occurred_at DESC, x.seq DESC LIMIT %s",
                (*self._s.key(scope), limit),
            )
        ]

    def iter(self, scope: ScopeKey | None) -> Iterator[AuditRow]:
        # ``seq`` is drawn from one sequence for the whole store: write order everywhere.
        for key, r in scan(self._s, _COLUMNS, "audit", "x.seq", scope, by_scope=False):
            yield _audit(key, r)

    def repeated_ids(self, scope: ScopeKey | None) -> Iterator[tuple[ScopeKey, object]]:
        # The server groups within ``work_mem`` and spills to disk beyond it. A scope's
        # rows are one range of ``audit_recent``.
        if scope is not None:
            for r in self._s.stream(
                f"SELECT x.audit_id FROM audit x WHERE {scoped('x')} "
                "GROUP BY x.audit_id HAVING count(*) > 1",
                self._s.key(scope),
            ):
                yield scope, r[0]
            return
        for r in self._s.stream(
            "SELECT DISTINCT ON (x.audit_id) x.tenant_id, x.owner_id, x.subject_id, "
            "x.audit_id FROM audit x WHERE x.audit_id IN (SELECT audit_id FROM audit "
            "GROUP BY audit_id HAVING count(*) > 1) ORDER BY x.audit_id, x.seq"
        ):
            yield key_of(r), r[3]
