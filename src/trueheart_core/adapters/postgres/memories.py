"""The PostgreSQL memories role (see ``ports.memories``): statements over the unit of
work's connection, and nothing else.

Recall's clarity conditions and fade ratio come from ``adapters.sql.expressions`` in the
``POSTGRESQL`` dialect, the same rules the SQLite adapter evaluates, so both backends
select and order the same memories."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from trueheart_core.adapters.postgres.claims import PostgresClaims
from trueheart_core.adapters.postgres.events import PostgresEvents, receipts, receipts_read
from trueheart_core.adapters.postgres.scans import scan
from trueheart_core.adapters.postgres.session import (
    CHUNK,
    EVENT_E,
    KEY,
    MEMORY_COLUMNS,
    MEMORY_M,
    Role,
    Session,
    dec,
    enc,
    event_row,
    memory_row,
    same_scope,
    scoped,
)
from trueheart_core.adapters.postgres.tombstones import memory_read, memory_sets
from trueheart_core.adapters.sql.expressions import (
    POSTGRESQL,
    Param,
    fade_ratio,
    fading,
    fully_clear,
)
from trueheart_core.ports import (
    EdgeRow,
    EventRow,
    MemoryRow,
    RecallCandidate,
    ScopeKey,
    TombstoneRow,
)

_MEMORY_X = MEMORY_COLUMNS.format(a="x")
_EDGE_COLUMNS = "x.memory_id, x.event_id, x.trust, x.clear_for, x.recall_for, x.digest"
_MEMORY_WIDTH = MEMORY_M.count(",") + 1
_EVENT_AT = _MEMORY_WIDTH + _EDGE_COLUMNS.count(",") + 1
"""Where a row of ``with_lineage`` holds the edge's columns, and the receipt's."""


class _SearchEntries(Protocol):
    """What a memory's removal needs of the search role (``PostgresSearch``)."""

    def discard(self, scope: ScopeKey, memory_id: str, /) -> None: ...


class _VectorRows(Protocol):
    """What a memory's change needs of the vectors role (``PostgresVectors``)."""

    def set_active(self, scope: ScopeKey, memory_id: str, active: bool, /) -> None: ...

    def delete_of(self, scope: ScopeKey, memory_id: str, /) -> None: ...


def _edge(scope: ScopeKey, r: Sequence[Any]) -> EdgeRow:
    """An :class:`EdgeRow` from the columns of ``_EDGE_COLUMNS``."""
    return EdgeRow(scope, dec(r[0]), dec(r[1]), r[2], r[3], r[4], r[5])


def _kind_filter(kinds: Sequence[str]) -> tuple[str, list[Any]]:
    """The condition on ``m.kind`` (none when ``kinds`` is empty); any number of kinds
    travels as one array parameter."""
    if not kinds:
        return "", []
    return " AND m.kind = ANY(%s)", [[enc(kind) for kind in kinds]]


class PostgresMemories(Role):
    """The memories role over one transaction."""

    def __init__(
        self,
        session: Session,
        search: _SearchEntries,
        claims: PostgresClaims,
        vectors: _VectorRows,
        events: PostgresEvents,
    ) -> None:
        super().__init__(session)
        self._search = search
        self._claims = claims
        self._vectors = vectors
        self._events = events

    def get(self, scope: ScopeKey, memory_id: str) -> MemoryRow | None:
        r = self._s.one(*self._get_read(scope, memory_id))
        return None if r is None else memory_row(scope, r)

    def _get_read(self, scope: ScopeKey, memory_id: str) -> tuple[str, tuple[Any, ...]]:
        return (
            f"SELECT {MEMORY_M} FROM memories m WHERE {scoped('m')} AND m.memory_id = %s",
            (*self._s.key(scope), enc(memory_id)),
        )

    def before_insert(
        self, scope: ScopeKey, memory_id: str, fingerprint: str, source_ids: Sequence[str]
    ) -> tuple[list[TombstoneRow], list[TombstoneRow], MemoryRow | None, dict[str, EventRow]]:
        reads = [
            memory_read(self._s, scope, memory_id, fingerprint),
            self._get_read(scope, memory_id),
        ]
        ids = [enc(event_id) for event_id in source_ids]
        together = 0 < len(ids) <= CHUNK
        if together:
            reads.append(receipts_read(self._s, scope, ids))
        answers = self._s.many(reads)
        by_id, by_fingerprint = memory_sets(scope, answers[0])
        existing = memory_row(scope, answers[1][0]) if answers[1] else None
        found = receipts(scope, answers[2]) if together else self._events.get(scope, source_ids)
        return by_id, by_fingerprint, existing, found

    def id_elsewhere(self, memory_id: str, scope: ScopeKey) -> bool:
        # Through ``memories_by_id``: the ID in every scope, the exact one left out.
        return (
            self._s.one(
                f"SELECT 1 FROM memories WHERE memory_id = %s AND ({KEY}) <> (%s, %s, %s) LIMIT 1",
                (enc(memory_id), *self._s.key(scope)),
            )
            is not None
        )

    def get_many(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[MemoryRow]:
        found: list[MemoryRow] = []
        for chunk in self._s.chunks([enc(memory_id) for memory_id in memory_ids]):
            found.extend(
                memory_row(scope, r)
                for r in self._s.all(
                    f"SELECT {MEMORY_M} FROM memories m WHERE {scoped('m')} "
                    "AND m.memory_id = ANY(%s)",
                    (*self._s.key(scope), chunk),
                )
            )
        return found

    def edges(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[EdgeRow]:
        found: list[EdgeRow] = []
        for chunk in self._s.chunks([enc(memory_id) for memory_id in memory_ids]):
            found.extend(
                _edge(scope, r)
                for r in self._s.all(
                    f"SELECT {_EDGE_COLUMNS} FROM lineage x WHERE {scoped('x')} "
                    "AND x.memory_id = ANY(%s)",
                    (*self._s.key(scope), chunk),
                )
            )
        return found

    def with_lineage(
        self, scope: ScopeKey, memory_id: str
    ) -> tuple[MemoryRow | None, list[EdgeRow], dict[str, EventRow]]:
        edges: list[EdgeRow] = []
        sources: dict[str, EventRow] = {}
        rows = self._s.all(
            f"SELECT {MEMORY_M}, {_EDGE_COLUMNS}, {EVENT_E} FROM memories m "
            f"LEFT JOIN lineage x ON {same_scope('x', 'm')} AND x.memory_id = m.memory_id "
            f"LEFT JOIN raw_events e ON {same_scope('e', 'x')} AND e.event_id = x.event_id "
            f"WHERE {scoped('m')} AND m.memory_id = %s",
            (*self._s.key(scope), enc(memory_id)),
        )
        if not rows:
            return None, edges, sources
        for r in rows:
            if r[_MEMORY_WIDTH] is None:
                continue
            edges.append(_edge(scope, r[_MEMORY_WIDTH:_EVENT_AT]))
            if r[_EVENT_AT] is not None:
                source = event_row(scope, r[_EVENT_AT:])
                sources[source.event_id] = source
        return memory_row(scope, rows[0][:_MEMORY_WIDTH]), edges, sources

    def dependents(self, scope: ScopeKey, event_id: str) -> list[str]:
        return [
            dec(r[0])
            for r in self._s.all(
                f"SELECT memory_id FROM lineage WHERE {scoped()} AND event_id = %s",
                (*self._s.key(scope), enc(event_id)),
            )
        ]

    def insert(self, row: MemoryRow, edges: Sequence[EdgeRow]) -> None:
        self._s.ensure_scope(row.scope)
        key = self._s.key(row.scope)
        self._s.write(
            f"INSERT INTO memories ({KEY}, memory_id, content, dependency_fingerprint, kind, "
            "trust, created_at, clear_until, recall_until, status, metadata, digest) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                *key,
                enc(row.memory_id),
                enc(row.content),
                row.dependency_fingerprint,
                enc(row.kind),
                row.trust,
                row.created_at,
                row.clear_until,
                row.recall_until,
                row.status,
                row.metadata,
                row.digest,
            ),
        )
        for e in edges:
            self._s.write(
                f"INSERT INTO lineage ({KEY}, memory_id, event_id, trust, clear_for, "
                "recall_for, digest) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    *key,
                    enc(e.memory_id),
                    enc(e.event_id),
                    e.trust,
                    e.clear_for,
                    e.recall_for,
                    e.digest,
                ),
            )

    def update(self, row: MemoryRow) -> None:
        self._s.write(
            f"UPDATE memories SET status = %s, digest = %s WHERE {scoped()} AND memory_id = %s",
            (row.status, row.digest, *self._s.key(row.scope), enc(row.memory_id)),
            rows=1,
        )
        self._vectors.set_active(row.scope, row.memory_id, row.status == "active")

    def delete(self, scope: ScopeKey, memory_id: str) -> None:
        self._search.discard(scope, memory_id)
        self._claims.delete_claim(scope, memory_id)
        self._vectors.delete_of(scope, memory_id)
        key = self._s.key(scope)
        stored = enc(memory_id)
        self._s.touched_tables.update(("lineage", "memories"))
        self._s.write(f"DELETE FROM lineage WHERE {scoped()} AND memory_id = %s", (*key, stored))
        self._s.write(
            f"DELETE FROM memories WHERE {scoped()} AND memory_id = %s", (*key, stored), rows=1
        )

    def recall_clear(
        self,
        scope: ScopeKey,
        as_of: int,
        kinds: Sequence[str],
        limit: int,
        rounding_shift: int,
    ) -> list[MemoryRow]:
        # ``memories_recall_clear`` holds this order, so the walk stops at ``limit``.
        kind_sql, kind_params = _kind_filter(kinds)
        clear = fully_clear(
            POSTGRESQL, "m.clear_until", "m.recall_until", Param(as_of), Param(rounding_shift)
        )
        rows = self._s.all(
            f"SELECT {MEMORY_M} FROM memories m WHERE {scoped('m')} "
            "AND m.status = 'active' AND m.created_at <= %s AND m.recall_until > %s "
            f"AND {clear.sql}{kind_sql} ORDER BY m.created_at DESC, m.memory_id ASC LIMIT %s",
            [*self._s.key(scope), as_of, as_of, *clear.params, *kind_params, limit],
        )
        return [memory_row(scope, r) for r in rows]

    def recall_fading(
        self,
        scope: ScopeKey,
        as_of: int,
        kinds: Sequence[str],
        rounding_shift: int,
        limit: int,
        exact_span: int,
    ) -> list[RecallCandidate]:
        # Index-only reads of ``memories_recall_fade``: the short fades ranked by their
        # double precision ratio (exact below ``exact_span``), the long ones unordered.
        kind_sql, kind_params = _kind_filter(kinds)
        fades = fading(
            POSTGRESQL, "m.clear_until", "m.recall_until", Param(as_of), Param(rounding_shift)
        )
        ratio = fade_ratio(POSTGRESQL, "m.clear_until", "m.recall_until", Param(as_of))
        select = (
            "SELECT m.memory_id, m.created_at, m.clear_until, m.recall_until "
            f"FROM memories m WHERE {scoped('m')} AND m.status = 'active' "
            f"AND m.recall_until > %s AND m.created_at <= %s AND {fades.sql}{kind_sql}"
        )
        params = [*self._s.key(scope), as_of, as_of, *fades.params, *kind_params]
        ranked, long_fades = self._s.many(
            (
                (
                    f"{select} AND m.recall_until - m.clear_until < %s "
                    f"ORDER BY {ratio.sql} DESC, m.created_at DESC, m.memory_id ASC LIMIT %s",
                    [*params, exact_span, *ratio.params, limit],
                ),
                (f"{select} AND m.recall_until - m.clear_until >= %s", [*params, exact_span]),
            )
        )
        return [RecallCandidate(dec(r[0]), r[1], r[2], r[3]) for r in ranked + long_fades]

    def iter(self, scope: ScopeKey | None) -> Iterator[MemoryRow]:
        for key, r in scan(self._s, _MEMORY_X, "memories", "x.memory_id", scope):
            yield memory_row(key, r)

    def iter_edges(self, scope: ScopeKey | None) -> Iterator[EdgeRow]:
        for key, r in scan(self._s, _EDGE_COLUMNS, "lineage", "x.memory_id, x.event_id", scope):
            yield _edge(key, r)

    def page(
        self,
        scope: ScopeKey,
        statuses: Sequence[str],
        kinds: Sequence[str],
        after: str | None,
        limit: int,
        *,
        descending: bool = False,
    ) -> list[MemoryRow]:
        # Walks the primary key (or ``memories_by_status`` for one status) in
        # ``memory_id`` byte order, which is code-point order (backwards: ``descending``).
        if not statuses:
            return []
        sql = f"SELECT {MEMORY_M} FROM memories m WHERE {scoped('m')}"
        params: list[Any] = list(self._s.key(scope))
        if len(statuses) == 1:
            sql += " AND m.status = %s"
            params.append(statuses[0])
        else:
            sql += " AND m.status = ANY(%s)"
            params.append(list(statuses))
        if after is not None:
            sql += f" AND m.memory_id {'<' if descending else '>'} %s"
            params.append(enc(after))
        kind_sql, kind_params = _kind_filter(kinds)
        sql += f"{kind_sql} ORDER BY m.memory_id {'DESC' if descending else 'ASC'} LIMIT %s"
        return [memory_row(scope, r) for r in self._s.all(sql, [*params, *kind_params, limit])]
