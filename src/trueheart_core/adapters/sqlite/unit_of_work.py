"""The SQLite unit of work: primitive reads and writes in SQL, and nothing else.

Each method is one or a few statements over the schema of ``schema.py``. No lifecycle
decision is made here: rows go in and come out exactly as the service hands them over.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from trueheart_core.adapters.sqlite.claims import ClaimStatements
from trueheart_core.adapters.sqlite.connection import changed
from trueheart_core.adapters.sqlite.operations import OperationStatements
from trueheart_core.adapters.sqlite.search import SearchStatements, hex_set
from trueheart_core.adapters.sqlite.vectors import VectorStatements
from trueheart_core.errors import RepositoryCorruption
from trueheart_core.ports import (
    AuditRow,
    BodyRow,
    EdgeRow,
    EventRow,
    MemoryRow,
    RecallCandidate,
    ScopeKey,
    TombstoneRow,
)

_CHUNK = 500
_EVENT_COLUMNS = (
    "{a}.event_id, {a}.source_id, {a}.source_type, {a}.source_occurred_at, {a}.trust, "
    "{a}.source_metadata, {a}.content_hash, {a}.ingested_at, {a}.raw_expires_at, "
    "{a}.clear_for, {a}.recall_for, {a}.status, {a}.metadata, {a}.digest, "
    "EXISTS (SELECT 1 FROM raw_bodies b WHERE b.event_id = {a}.event_id "
    "AND b.scope_id = {a}.scope_id)"
)
_MEMORY_COLUMNS = (
    "{a}.memory_id, {a}.content, {a}.dependency_fingerprint, {a}.kind, {a}.trust, "
    "{a}.created_at, {a}.clear_until, {a}.recall_until, {a}.status, {a}.metadata, {a}.digest"
)
_EVENT_E = _EVENT_COLUMNS.format(a="e")
_EVENT_X = _EVENT_COLUMNS.format(a="x")
_MEMORY_M = _MEMORY_COLUMNS.format(a="m")
_MEMORY_X = _MEMORY_COLUMNS.format(a="x")
_SCOPE_JOIN = "JOIN scopes s ON s.scope_id = {alias}.scope_id"
_SCOPE_COLUMNS = "s.tenant_id, s.owner_id, s.subject_id"


def _event(scope: ScopeKey, r: Sequence[Any]) -> EventRow:
    (eid, sid, stype, occurred, trust, smeta, chash, ingested, expires, clear, recall) = r[:11]
    status, metadata, digest, has_body = r[11:15]
    return EventRow(
        scope,
        eid,
        sid,
        stype,
        occurred,
        trust,
        smeta,
        chash,
        ingested,
        expires,
        clear,
        recall,
        status,
        metadata,
        digest,
        bool(has_body),
    )


def _memory(scope: ScopeKey, r: Sequence[Any]) -> MemoryRow:
    return MemoryRow(scope, *r)


def _key(r: Sequence[Any]) -> ScopeKey:
    return (r[0], r[1], r[2])


class SQLiteUnitOfWork(SearchStatements, ClaimStatements, VectorStatements, OperationStatements):
    """One SQLite transaction: primitive reads and writes (see ``ports.UnitOfWork``)."""

    def __init__(self, conn: sqlite3.Connection, scope_ids: dict[ScopeKey, int]) -> None:
        self._conn = conn
        self._known = scope_ids
        self._new: dict[ScopeKey, int] = {}
        self.committed = False
        # Set by a bulk erasure: the repository rewrites the file after the commit.
        self.rewrite_requested = False

    def commit(self) -> None:
        self._conn.execute("COMMIT")
        self.committed = True
        self._known.update(self._new)

    # --- scopes ---------------------------------------------------------------------------

    def _scope_id(self, scope: ScopeKey, *, thorough: bool = False) -> int | None:
        """The scope's row ID, found by its unique index and checked against the row the
        index names (a damaged index must not lead one scope's call into another's
        rows). ``thorough`` also reads the table itself when the index has no entry, for
        subject erasure, which must not take a lost index entry for an empty scope (it
        looks the scope up first, so the tombstones and audit row it then writes use the
        ID found). Elsewhere a missing scope only ends in ``EntityNotFound`` or an empty
        answer, and the lookup stays one index probe."""
        found = self._known.get(scope) or self._new.get(scope)
        if found is not None:
            return found
        row = self._conn.execute(
            "SELECT scope_id FROM scopes WHERE tenant_id = ? AND owner_id = ? AND subject_id = ?",
            scope,
        ).fetchone()
        if row is None and thorough:
            row = self._conn.execute(
                "SELECT scope_id FROM scopes NOT INDEXED "
                "WHERE tenant_id = ? AND owner_id = ? AND subject_id = ?",
                scope,
            ).fetchone()
        if row is None:
            return None
        sid = row[0]
        stored = self._conn.execute(
            "SELECT tenant_id, owner_id, subject_id FROM scopes WHERE scope_id = ?", (sid,)
        ).fetchone()
        if type(sid) is not int or stored is None or tuple(stored) != tuple(scope):
            raise RepositoryCorruption("invalid scope record")
        # Committed scope rows never change, so their IDs can be remembered at once.
        self._known[scope] = sid
        return sid

    def _ensure_scope(self, scope: ScopeKey) -> int:
        found = self._scope_id(scope)
        if found is not None:
            return found
        cursor = self._conn.execute(
            "INSERT INTO scopes (tenant_id, owner_id, subject_id) VALUES (?, ?, ?)", scope
        )
        assert cursor.lastrowid is not None
        self._new[scope] = cursor.lastrowid
        return cursor.lastrowid

    def _scan(self, sql: str, scope: ScopeKey | None, order: str) -> Iterator[Sequence[Any]]:
        """Rows of ``sql`` (selecting a scope key first) in chunks by rowid-like ``order``."""
        where = ""
        params: list[Any] = []
        if scope is not None:
            sid = self._scope_id(scope, thorough=True)
            if sid is None:
                return
            where = " AND x.scope_id = ?"
            params.append(sid)
        last: Any = None
        while True:
            bound = "" if last is None else f" AND x.{order} > ?"
            rows = self._conn.execute(
                f"{sql} WHERE 1 = 1{where}{bound} ORDER BY x.{order} LIMIT {_CHUNK}",
                [*params, *([] if last is None else [last])],
            ).fetchall()
            for row in rows:
                yield row[1:]
            if len(rows) < _CHUNK:
                return
            last = rows[-1][0]

    # --- raw events -------------------------------------------------------------------------

    def get_events(self, scope: ScopeKey, event_ids: Sequence[str]) -> dict[str, EventRow]:
        sid = self._scope_id(scope)
        if sid is None or not event_ids:
            return {}
        found: dict[str, EventRow] = {}
        for start in range(0, len(event_ids), _CHUNK):
            chunk = list(event_ids[start : start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            for r in self._conn.execute(
                f"SELECT {_EVENT_E} FROM raw_events e "
                f"WHERE e.scope_id = ? AND e.event_id IN ({marks})",
                [sid, *chunk],
            ):
                found[r[0]] = _event(scope, r)
        return found

    def event_id_elsewhere(self, event_id: str, scope: ScopeKey) -> bool:
        sid = self._scope_id(scope)
        row = self._conn.execute(
            "SELECT 1 FROM raw_events WHERE event_id = ? AND scope_id IS NOT ? LIMIT 1",
            (event_id, sid),
        ).fetchone()
        return row is not None

    def insert_event(self, row: EventRow, body: BodyRow) -> None:
        sid = self._ensure_scope(row.scope)
        self._conn.execute(
            "INSERT INTO raw_events (scope_id, event_id, source_id, source_type, "
            "source_occurred_at, trust, source_metadata, content_hash, ingested_at, "
            "raw_expires_at, clear_for, recall_for, status, metadata, digest) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
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
            ),
        )
        self._conn.execute(
            "INSERT INTO raw_bodies (scope_id, event_id, content, digest) VALUES (?, ?, ?, ?)",
            (sid, body.event_id, body.content, body.digest),
        )

    def expirable_events(self, as_of: int, limit: int) -> list[EventRow]:
        rows = self._conn.execute(
            f"SELECT {_SCOPE_COLUMNS}, {_EVENT_E} FROM raw_events e "
            "INDEXED BY raw_events_expiry "
            f"{_SCOPE_JOIN.format(alias='e')} "
            "WHERE e.status = 'active' AND e.raw_expires_at <= ? "
            "ORDER BY e.raw_expires_at LIMIT ?",
            (as_of, limit),
        ).fetchall()
        return [_event(_key(r), r[3:]) for r in rows]

    def expire_event(self, row: EventRow) -> None:
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

    def delete_event(self, scope: ScopeKey, event_id: str) -> None:
        self.delete_extraction(scope, event_id)
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

    def iter_events(self, scope: ScopeKey | None) -> Iterator[EventRow]:
        sql = (
            f"SELECT x.rid, {_SCOPE_COLUMNS}, {_EVENT_X} FROM raw_events x "
            f"{_SCOPE_JOIN.format(alias='x')}"
        )
        for r in self._scan(sql, scope, "rid"):
            yield _event(_key(r), r[3:])

    def iter_bodies(self, scope: ScopeKey | None) -> Iterator[BodyRow]:
        sql = (
            f"SELECT x.rid, {_SCOPE_COLUMNS}, x.event_id, x.content, x.digest "
            f"FROM raw_bodies x {_SCOPE_JOIN.format(alias='x')}"
        )
        for r in self._scan(sql, scope, "rid"):
            yield BodyRow(_key(r), r[3], r[4], r[5])

    # --- memories and lineage ---------------------------------------------------------------

    def get_memory(self, scope: ScopeKey, memory_id: str) -> MemoryRow | None:
        sid = self._scope_id(scope)
        if sid is None:
            return None
        r = self._conn.execute(
            f"SELECT {_MEMORY_M} FROM memories m WHERE m.memory_id = ? AND m.scope_id = ?",
            (memory_id, sid),
        ).fetchone()
        return None if r is None else _memory(scope, r)

    def memory_id_elsewhere(self, memory_id: str, scope: ScopeKey) -> bool:
        sid = self._scope_id(scope)
        row = self._conn.execute(
            "SELECT 1 FROM memories WHERE memory_id = ? AND scope_id IS NOT ? LIMIT 1",
            (memory_id, sid),
        ).fetchone()
        return row is not None

    def get_memories(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[MemoryRow]:
        sid = self._scope_id(scope)
        if sid is None or not memory_ids:
            return []
        found: list[MemoryRow] = []
        for start in range(0, len(memory_ids), _CHUNK):
            chunk = list(memory_ids[start : start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            found.extend(
                _memory(scope, r)
                for r in self._conn.execute(
                    f"SELECT {_MEMORY_M} FROM memories m "
                    f"WHERE m.scope_id = ? AND m.memory_id IN ({marks})",
                    [sid, *chunk],
                )
            )
        return found

    def get_edges(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[EdgeRow]:
        sid = self._scope_id(scope)
        if sid is None or not memory_ids:
            return []
        edges: list[EdgeRow] = []
        for start in range(0, len(memory_ids), _CHUNK):
            chunk = list(memory_ids[start : start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            edges.extend(
                EdgeRow(scope, *r)
                for r in self._conn.execute(
                    "SELECT memory_id, event_id, trust, clear_for, recall_for, digest "
                    f"FROM lineage WHERE scope_id = ? AND memory_id IN ({marks})",
                    [sid, *chunk],
                )
            )
        return edges

    def dependent_memory_ids(self, scope: ScopeKey, event_id: str) -> list[str]:
        sid = self._scope_id(scope)
        if sid is None:
            return []
        return [
            r[0]
            for r in self._conn.execute(
                "SELECT memory_id FROM lineage WHERE event_id = ? AND scope_id = ?",
                (event_id, sid),
            )
        ]

    def insert_memory(self, row: MemoryRow, edges: Sequence[EdgeRow]) -> None:
        sid = self._ensure_scope(row.scope)
        self._conn.execute(
            "INSERT INTO memories (scope_id, memory_id, content, dependency_fingerprint, kind, "
            "trust, created_at, clear_until, recall_until, status, metadata, digest) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                sid,
                row.memory_id,
                row.content,
                row.dependency_fingerprint,
                row.kind,
                row.trust,
                row.created_at,
                row.clear_until,
                row.recall_until,
                row.status,
                row.metadata,
                row.digest,
            ),
        )
        self._conn.executemany(
            "INSERT INTO lineage (scope_id, memory_id, event_id, trust, clear_for, recall_for, "
            "digest) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (sid, e.memory_id, e.event_id, e.trust, e.clear_for, e.recall_for, e.digest)
                for e in edges
            ],
        )

    def update_memory(self, row: MemoryRow) -> None:
        sid = self._scope_id(row.scope)
        changed(
            self._conn.execute(
                "UPDATE memories SET status = ?, digest = ? WHERE memory_id = ? AND scope_id = ?",
                (row.status, row.digest, row.memory_id, sid),
            ),
            1,
        )
        rid = None if sid is None else self._memory_rid(sid, row.memory_id)
        if rid is not None:
            self.set_vector_active(rid, row.status == "active")

    def delete_memory(self, scope: ScopeKey, memory_id: str) -> None:
        self.unindex_memory(scope, memory_id)
        self.delete_claim(scope, memory_id)
        sid = self._scope_id(scope)
        rid = None if sid is None else self._memory_rid(sid, memory_id)
        if rid is not None:
            self.delete_vector_of(rid)
        self._conn.execute(
            "DELETE FROM lineage WHERE scope_id = ? AND memory_id = ?", (sid, memory_id)
        )
        changed(
            self._conn.execute(
                "DELETE FROM memories WHERE memory_id = ? AND scope_id = ?", (memory_id, sid)
            ),
            1,
        )

    @staticmethod
    def _kind_filter(kinds: Sequence[str]) -> tuple[str, list[Any]]:
        if not kinds:
            return "", []
        # Any number of kinds travels as one JSON parameter.
        return " AND hex(m.kind) IN (SELECT value FROM json_each(?))", [hex_set(kinds)]

    def recall_clear(
        self,
        scope: ScopeKey,
        as_of: int,
        kinds: Sequence[str],
        limit: int,
        rounding_shift: int,
    ) -> list[MemoryRow]:
        sid = self._scope_id(scope)
        if sid is None:
            return []
        kind_sql, kind_params = self._kind_filter(kinds)
        rows = self._conn.execute(
            f"SELECT {_MEMORY_M} FROM memories m INDEXED BY memories_recall_clear "
            "WHERE m.scope_id = ? AND m.status = 'active' AND m.created_at <= ? "
            "AND m.recall_until > ? "
            "AND m.clear_until + ((m.recall_until - m.clear_until) >> ?) >= ?"
            f"{kind_sql} ORDER BY m.created_at DESC, m.memory_id ASC LIMIT ?",
            [sid, as_of, as_of, rounding_shift, as_of, *kind_params, limit],
        ).fetchall()
        return [_memory(scope, r) for r in rows]

    def recall_fading(
        self,
        scope: ScopeKey,
        as_of: int,
        kinds: Sequence[str],
        rounding_shift: int,
        limit: int,
        exact_span: int,
    ) -> list[RecallCandidate]:
        sid = self._scope_id(scope)
        if sid is None:
            return []
        kind_sql, kind_params = self._kind_filter(kinds)
        fading = (
            "SELECT m.memory_id, m.created_at, m.clear_until, m.recall_until "
            "FROM memories m INDEXED BY memories_recall_fade "
            "WHERE m.scope_id = ? AND m.status = 'active' AND m.recall_until > ? "
            "AND m.created_at <= ? "
            "AND m.clear_until + ((m.recall_until - m.clear_until) >> ?) < ?"
            f"{kind_sql}"
        )
        params = [sid, as_of, as_of, rounding_shift, as_of, *kind_params]
        ranked = self._conn.execute(
            f"{fading} AND m.recall_until - m.clear_until < ? "
            "ORDER BY CAST(m.recall_until - ? AS REAL) / (m.recall_until - m.clear_until) DESC, "
            "m.created_at DESC, m.memory_id ASC LIMIT ?",
            [*params, exact_span, as_of, limit],
        ).fetchall()
        long_fades = self._conn.execute(
            f"{fading} AND m.recall_until - m.clear_until >= ?", [*params, exact_span]
        ).fetchall()
        return [RecallCandidate(*r) for r in ranked + long_fades]

    def iter_memories(self, scope: ScopeKey | None) -> Iterator[MemoryRow]:
        sql = (
            f"SELECT x.rid, {_SCOPE_COLUMNS}, {_MEMORY_X} FROM memories x "
            f"{_SCOPE_JOIN.format(alias='x')}"
        )
        for r in self._scan(sql, scope, "rid"):
            yield _memory(_key(r), r[3:])

    def iter_edges(self, scope: ScopeKey | None) -> Iterator[EdgeRow]:
        # WITHOUT ROWID table: page through it by primary key instead of rowid.
        params: list[Any] = []
        where = ""
        if scope is not None:
            sid = self._scope_id(scope)
            if sid is None:
                return
            where = " AND x.scope_id = ?"
            params.append(sid)
        last: tuple[Any, Any, Any] | None = None
        while True:
            bound = "" if last is None else " AND (x.scope_id, x.memory_id, x.event_id) > (?, ?, ?)"
            rows = self._conn.execute(
                f"SELECT x.scope_id, x.memory_id, x.event_id, {_SCOPE_COLUMNS}, x.trust, "
                "x.clear_for, x.recall_for, x.digest FROM lineage x "
                f"{_SCOPE_JOIN.format(alias='x')} WHERE 1 = 1{where}{bound} "
                f"ORDER BY x.scope_id, x.memory_id, x.event_id LIMIT {_CHUNK}",
                [*params, *(last or ())],
            ).fetchall()
            for r in rows:
                yield EdgeRow((r[3], r[4], r[5]), r[1], r[2], r[6], r[7], r[8], r[9])
            if len(rows) < _CHUNK:
                return
            last = (rows[-1][0], rows[-1][1], rows[-1][2])

    # --- tombstones ---------------------------------------------------------------------------

    def _scoped_tombstones(self, scope: ScopeKey, column: str, value: str) -> list[TombstoneRow]:
        sid = self._scope_id(scope)
        if sid is None:
            return []
        return [
            TombstoneRow(scope, *r)
            for r in self._conn.execute(
                "SELECT entity_type, entity_id, fingerprint, deleted_at, reason, digest "
                f"FROM tombstones WHERE {column} = ? AND scope_id = ?",
                (value, sid),
            )
        ]

    def get_tombstones(self, scope: ScopeKey, entity_id: str) -> list[TombstoneRow]:
        return self._scoped_tombstones(scope, "entity_id", entity_id)

    def tombstone_elsewhere(
        self, entity_id: str, entity_type: str, scope: ScopeKey
    ) -> TombstoneRow | None:
        r = self._conn.execute(
            f"SELECT {_SCOPE_COLUMNS}, t.entity_type, t.entity_id, t.fingerprint, "
            f"t.deleted_at, t.reason, t.digest FROM tombstones t "
            f"{_SCOPE_JOIN.format(alias='t')} "
            "WHERE t.entity_id = ? AND t.entity_type = ? AND t.scope_id IS NOT ? LIMIT 1",
            (entity_id, entity_type, self._scope_id(scope)),
        ).fetchone()
        return None if r is None else TombstoneRow(_key(r), *r[3:])

    def tombstones_for_fingerprint(self, scope: ScopeKey, fingerprint: str) -> list[TombstoneRow]:
        return self._scoped_tombstones(scope, "fingerprint", fingerprint)

    def insert_tombstone(self, row: TombstoneRow) -> None:
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

    def iter_tombstones(self, scope: ScopeKey | None) -> Iterator[TombstoneRow]:
        sql = (
            f"SELECT x.seq, {_SCOPE_COLUMNS}, x.entity_type, x.entity_id, x.fingerprint, "
            f"x.deleted_at, x.reason, x.digest FROM tombstones x {_SCOPE_JOIN.format(alias='x')}"
        )
        for r in self._scan(sql, scope, "seq"):
            yield TombstoneRow(_key(r), *r[3:])

    # --- audit --------------------------------------------------------------------------------

    def insert_audit(self, row: AuditRow) -> None:
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

    def recent_audit(self, scope: ScopeKey, limit: int) -> list[AuditRow]:
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

    def iter_audit(self, scope: ScopeKey | None) -> Iterator[AuditRow]:
        sql = (
            f"SELECT x.seq, {_SCOPE_COLUMNS}, x.audit_id, x.action, x.entity_type, x.entity_id, "
            f"x.occurred_at, x.reason, x.metadata, x.digest, x.seq "
            f"FROM audit x {_SCOPE_JOIN.format(alias='x')}"
        )
        for r in self._scan(sql, scope, "seq"):
            yield AuditRow(r[3], _key(r), *r[4:])

    # --- storage ----------------------------------------------------------------------------

    def storage_is_consistent(self) -> bool:
        # integrity_check also proves that every index matches its table; only its verdict
        # is kept, since its messages name pages and rows.
        return self._conn.execute("PRAGMA integrity_check(1)").fetchall() == [("ok",)]
