"""The PostgreSQL tombstones role (see ``ports.tombstones``): statements over the unit
of work's connection, and nothing else."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from trueheart_core.adapters.postgres.scans import scan
from trueheart_core.adapters.postgres.session import (
    KEY,
    Role,
    Session,
    dec,
    enc,
    enc_opt,
    key_of,
    scoped,
)
from trueheart_core.ports import ScopeKey, TombstoneRow

_COLUMNS = "x.entity_type, x.entity_id, x.fingerprint, x.deleted_at, x.reason, x.digest"


def _tombstone(scope: ScopeKey, r: Sequence[Any]) -> TombstoneRow:
    """A :class:`TombstoneRow` from the columns of ``_COLUMNS``."""
    return TombstoneRow(scope, r[0], dec(r[1]), r[2], r[3], dec(r[4]), r[5])


def memory_read(
    session: Session, scope: ScopeKey, memory_id: str, fingerprint: str
) -> tuple[str, tuple[Any, ...]]:
    """The statement that reads the two sets of tombstones a new memory is checked
    against (see ``MemoryStore.before_insert``; the memories role sends it with its own
    reads, in one round trip): its rows are read by :func:`memory_sets`."""
    key = session.key(scope)
    return (
        f"SELECT 0, x.seq, {_COLUMNS} FROM tombstones x WHERE {scoped('x')} "
        f"AND x.entity_id = %s UNION ALL SELECT 1, x.seq, {_COLUMNS} FROM tombstones x "
        f"WHERE {scoped('x')} AND x.fingerprint = %s ORDER BY 1, 2",
        (*key, enc(memory_id), *key, fingerprint),
    )


def memory_sets(
    scope: ScopeKey, rows: Iterable[Sequence[Any]]
) -> tuple[list[TombstoneRow], list[TombstoneRow]]:
    """The rows of :func:`memory_read` as the tombstones of the memory's ID and those
    carrying its fingerprint."""
    by_id: list[TombstoneRow] = []
    by_fingerprint: list[TombstoneRow] = []
    for r in rows:
        (by_fingerprint if r[0] else by_id).append(_tombstone(scope, r[2:]))
    return by_id, by_fingerprint


class PostgresTombstones(Role):
    """The tombstones role over one transaction."""

    def get(self, scope: ScopeKey, entity_id: str) -> list[TombstoneRow]:
        return [
            _tombstone(scope, r)
            for r in self._s.all(
                f"SELECT {_COLUMNS} FROM tombstones x WHERE {scoped('x')} "
                "AND x.entity_id = %s ORDER BY x.seq",
                (*self._s.key(scope), enc(entity_id)),
            )
        ]

    def elsewhere(self, entity_id: str, entity_type: str, scope: ScopeKey) -> TombstoneRow | None:
        # Through ``tombstones_by_id``: the ID's tombstones of every scope, the exact
        # scope's left out.
        r = self._s.one(
            f"SELECT x.tenant_id, x.owner_id, x.subject_id, {_COLUMNS} FROM tombstones x "
            "WHERE x.entity_id = %s AND x.entity_type = %s "
            f"AND ({KEY}) <> (%s, %s, %s) LIMIT 1",
            (enc(entity_id), entity_type, *self._s.key(scope)),
        )
        return None if r is None else _tombstone(key_of(r), r[3:])

    def insert(self, row: TombstoneRow) -> None:
        self._s.ensure_scope(row.scope)
        self._s.write(
            f"INSERT INTO tombstones ({KEY}, entity_type, entity_id, fingerprint, deleted_at, "
            "reason, digest) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                *self._s.key(row.scope),
                row.entity_type,
                enc(row.entity_id),
                row.fingerprint,
                row.deleted_at,
                enc_opt(row.reason),
                row.digest,
            ),
        )

    def iter(self, scope: ScopeKey | None) -> Iterator[TombstoneRow]:
        # ``seq`` is drawn from one sequence for the whole store: write order everywhere.
        for key, r in scan(self._s, _COLUMNS, "tombstones", "x.seq", scope, by_scope=False):
            yield _tombstone(key, r)
