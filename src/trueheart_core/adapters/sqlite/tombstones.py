"""The SQLite tombstones role (see ``ports.tombstones``): statements over the unit of work's
connection, and nothing else."""

from __future__ import annotations

from collections.abc import Iterator

from trueheart_core.adapters.sqlite.session import (
    SCOPE_COLUMNS,
    SCOPE_JOIN,
    Role,
    key_of,
)
from trueheart_core.ports import ScopeKey, TombstoneRow

_COLUMNS = "entity_type, entity_id, fingerprint, deleted_at, reason, digest"


class SQLiteTombstones(Role):
    """The tombstones role over one transaction."""

    def get(self, scope: ScopeKey, entity_id: str) -> list[TombstoneRow]:
        return self._scoped_tombstones(scope, "entity_id", entity_id)

    def elsewhere(self, entity_id: str, entity_type: str, scope: ScopeKey) -> TombstoneRow | None:
        r = self._conn.execute(
            f"SELECT {SCOPE_COLUMNS}, t.entity_type, t.entity_id, t.fingerprint, "
            f"t.deleted_at, t.reason, t.digest FROM tombstones t "
            f"{SCOPE_JOIN.format(alias='t')} "
            "WHERE t.entity_id = ? AND t.entity_type = ? AND t.scope_id IS NOT ? LIMIT 1",
            (entity_id, entity_type, self._scope_id(scope)),
        ).fetchone()
        return None if r is None else TombstoneRow(key_of(r), *r[3:])

    def for_memory(
        self, scope: ScopeKey, memory_id: str, fingerprint: str
    ) -> tuple[list[TombstoneRow], list[TombstoneRow]]:
        """The two sets of tombstones a new memory is checked against (see
        ``MemoryStore.before_insert``): those of its ID, and the memory tombstones
        carrying its fingerprint, each found through its index, in one statement."""
        by_id: list[TombstoneRow] = []
        by_fingerprint: list[TombstoneRow] = []
        sid = self._scope_id(scope)
        if sid is not None:
            for r in self._conn.execute(
                f"SELECT 0, {_COLUMNS} FROM tombstones WHERE entity_id = ?1 AND scope_id = ?3 "
                f"UNION ALL SELECT 1, {_COLUMNS} FROM tombstones "
                "WHERE fingerprint = ?2 AND scope_id = ?3",
                (memory_id, fingerprint, sid),
            ):
                (by_fingerprint if r[0] else by_id).append(TombstoneRow(scope, *r[1:]))
        return by_id, by_fingerprint

    def insert(self, row: TombstoneRow) -> None:
        self._conn.execute(
            "INSERT INTO tombstones (scope_id, entity_type, entity_id, fingerprint, deleted_at, "
            "reason, digest) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                self._ensure_scope(row.scope),
                row.entity_type,
                row.entity_id,
                row.fingerprint,
                row.deleted_at,
                row.reason,
                row.digest,
            ),
        )

    def iter(self, scope: ScopeKey | None) -> Iterator[TombstoneRow]:
        sql = (
            f"SELECT x.seq, {SCOPE_COLUMNS}, x.entity_type, x.entity_id, x.fingerprint, "
            f"x.deleted_at, x.reason, x.digest FROM tombstones x {SCOPE_JOIN.format(alias='x')}"
        )
        for r in self._scan(sql, scope, "seq", live=False):
            yield TombstoneRow(key_of(r), *r[3:])

    def _scoped_tombstones(self, scope: ScopeKey, column: str, value: str) -> list[TombstoneRow]:
        sid = self._scope_id(scope)
        if sid is None:
            return []
        return [
            TombstoneRow(scope, *r)
            for r in self._conn.execute(
                f"SELECT {_COLUMNS} FROM tombstones WHERE {column} = ? AND scope_id = ?",
                (value, sid),
            )
        ]
