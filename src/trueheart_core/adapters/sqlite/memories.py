"""The SQLite memories role (see ``ports.memories``): statements over the unit of work's
connection, and nothing else.

Memories are a kept table (see ``schema``): forgetting one overwrites it in place and
marks it ``erased``. A memory row holds the sorted IDs of its sources, through which its
lineage edges (keyed by source event) are found."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from trueheart_core.adapters.sql.expressions import (
    SQLITE,
    Param,
    fade_ratio,
    fading,
    fully_clear,
)
from trueheart_core.adapters.sqlite.claims import SQLiteClaims
from trueheart_core.adapters.sqlite.connection import changed
from trueheart_core.adapters.sqlite.events import SQLiteEvents
from trueheart_core.adapters.sqlite.filters import hex_set
from trueheart_core.adapters.sqlite.search import SQLiteSearch
from trueheart_core.adapters.sqlite.session import (
    CHUNK,
    EVENT_E,
    MEMORY_M,
    MEMORY_X,
    SCOPE_COLUMNS,
    SCOPE_JOIN,
    Role,
    Session,
    blanked,
    event_row,
    key_of,
    memory_row,
)
from trueheart_core.adapters.sqlite.tombstones import SQLiteTombstones
from trueheart_core.adapters.sqlite.vectors import SQLiteVectors
from trueheart_core.errors import RepositoryCorruption
from trueheart_core.ports import (
    EdgeRow,
    EventRow,
    MemoryRow,
    RecallCandidate,
    ScopeKey,
    TombstoneRow,
)

MEMORY_TEXT = (
    "content",
    "dependency_fingerprint",
    "kind",
    "metadata",
    "digest",
    "sources",
)
"""The columns of a memory that hold text of the host's (or derived from it), which
erasing the memory overwrites in place. Its ID stays, as in its tombstone."""
ERASE_MEMORY = f"{', '.join(blanked(c) for c in MEMORY_TEXT)}, erased = 1"
_EDGE_SELECTED = "x.memory_id, x.event_id, x.trust, x.clear_for, x.recall_for, x.digest"
_SOURCES = (
    "CASE WHEN typeof(m.sources) IS NOT 'text' OR NOT json_valid(m.sources) THEN '[]' "
    "WHEN json_type(m.sources) IS NOT 'array' THEN '[]' "
    "WHEN EXISTS (SELECT 1 FROM json_each(m.sources) WHERE type IS NOT 'text') THEN '[]' "
    "ELSE m.sources END"
)
"""The source IDs a memory row names, as :func:`source_ids` reads them: its ``sources``
when they are a JSON list of strings, else none (each CASE branch is evaluated only
when the ones before it did not apply, so no JSON function meets text that is not
JSON)."""
_WITH_LINEAGE = (
    f"SELECT {MEMORY_M}, m.rid, m.sources, {_EDGE_SELECTED}, {EVENT_E} FROM memories m "
    f"LEFT JOIN json_each({_SOURCES}) j "
    "LEFT JOIN lineage x ON x.scope_id = m.scope_id AND x.event_id = j.value "
    "AND x.memory_id = m.memory_id "
    "LEFT JOIN raw_events e ON e.event_id = x.event_id AND e.scope_id = x.scope_id "
    "AND e.erased IS NOT 1 "
    "WHERE m.memory_id = ? AND m.scope_id = ? AND m.erased IS NOT 1"
)
"""A memory row, and for each source its row names, the lineage edge (one probe of the
edge's whole key) and the source's live receipt: one row per source, the memory's
columns repeated (one row with no edge when it names none)."""
_MEMORY_WIDTH = MEMORY_M.count(",") + 1
_EDGE_WIDTH = _EDGE_SELECTED.count(",") + 1


def edge_probe(columns: str, pairs: int) -> str:
    """A SELECT of ``columns`` of the lineage rows (alias ``x``) of ``pairs`` (source
    event, memory) pairs, bound in that order and followed by the scope's ID: each pair
    is one probe of the whole key. A row-value ``IN`` would make SQLite walk the scope's
    whole range of the key and test every row; the CROSS JOIN keeps the pairs outside."""
    values = ",".join("(?, ?)" for _ in range(pairs))
    return (
        f"WITH p (event_id, memory_id) AS (VALUES {values}) "
        f"SELECT {columns} FROM p CROSS JOIN lineage AS x "
        "ON x.scope_id = ? AND x.event_id = p.event_id AND x.memory_id = p.memory_id"
    )


def source_ids(text: object) -> list[str]:
    """The source IDs a memory row names (none when the stored value is not a JSON list
    of strings: the memory's lineage then fails its check)."""
    try:
        found = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return []
    if not isinstance(found, list) or not all(isinstance(x, str) for x in found):
        return []
    return found


class SQLiteMemories(Role):
    """The memories role over one transaction."""

    def __init__(
        self,
        session: Session,
        search: SQLiteSearch,
        claims: SQLiteClaims,
        vectors: SQLiteVectors,
        events: SQLiteEvents,
        tombstones: SQLiteTombstones,
    ) -> None:
        super().__init__(session)
        self._search = search
        self._claims = claims
        self._vectors = vectors
        self._events = events
        self._tombstones = tombstones

    def get(self, scope: ScopeKey, memory_id: str) -> MemoryRow | None:
        sid = self._scope_id(scope)
        if sid is None:
            return None
        r = self._conn.execute(
            f"SELECT {MEMORY_M}, m.rid, m.sources FROM memories m "
            "WHERE m.memory_id = ? AND m.scope_id = ? AND m.erased IS NOT 1",
            (memory_id, sid),
        ).fetchone()
        if r is None:
            return None
        self._session.recent = (sid, memory_id, int(r[-2]), r[-1])
        return memory_row(scope, r[:-2])

    def id_elsewhere(self, memory_id: str, scope: ScopeKey) -> bool:
        sid = self._scope_id(scope)
        row = self._conn.execute(
            "SELECT 1 FROM memories WHERE memory_id = ? AND scope_id IS NOT ? AND erased IS NOT 1 "
            "LIMIT 1",
            (memory_id, sid),
        ).fetchone()
        return row is not None

    def get_many(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[MemoryRow]:
        sid = self._scope_id(scope)
        if sid is None or not memory_ids:
            return []
        found: list[MemoryRow] = []
        for start in range(0, len(memory_ids), CHUNK):
            chunk = list(memory_ids[start : start + CHUNK])
            marks = ",".join("?" * len(chunk))
            found.extend(
                memory_row(scope, r)
                for r in self._conn.execute(
                    f"SELECT {MEMORY_M} FROM memories m "
                    f"WHERE m.memory_id IN ({marks}) AND m.scope_id = ? AND m.erased IS NOT 1",
                    [*chunk, sid],
                )
            )
        return found

    def edges(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[EdgeRow]:
        sid = self._scope_id(scope)
        if sid is None or not memory_ids:
            return []
        pairs: list[tuple[str, str]] = []
        recent = self._session.recent
        if len(memory_ids) == 1 and recent is not None and recent[:2] == (sid, memory_ids[0]):
            pairs.extend((event_id, recent[1]) for event_id in source_ids(recent[3]))
            memory_ids = ()
        for start in range(0, len(memory_ids), CHUNK):
            chunk = list(memory_ids[start : start + CHUNK])
            marks = ",".join("?" * len(chunk))
            for memory_id, sources in self._conn.execute(
                "SELECT memory_id, sources FROM memories "
                f"WHERE memory_id IN ({marks}) AND scope_id = ? AND erased IS NOT 1",
                [*chunk, sid],
            ):
                pairs.extend((event_id, memory_id) for event_id in source_ids(sources))
        edges: list[EdgeRow] = []
        for start in range(0, len(pairs), CHUNK):
            part = pairs[start : start + CHUNK]
            edges.extend(
                EdgeRow(scope, *r)
                for r in self._conn.execute(
                    edge_probe(_EDGE_SELECTED, len(part)),
                    [*(value for pair in part for value in pair), sid],
                )
            )
        return edges

    def with_lineage(
        self, scope: ScopeKey, memory_id: str
    ) -> tuple[MemoryRow | None, list[EdgeRow], dict[str, EventRow]]:
        edges: list[EdgeRow] = []
        sources: dict[str, EventRow] = {}
        sid = self._scope_id(scope)
        if sid is None:
            return None, edges, sources
        rows = self._conn.execute(_WITH_LINEAGE, (memory_id, sid)).fetchall()
        if not rows:
            return None, edges, sources
        first = rows[0]
        rid, named = first[_MEMORY_WIDTH : _MEMORY_WIDTH + 2]
        self._session.recent = (sid, memory_id, int(rid), named)
        if isinstance(named, str) and "\\u0000" in named:
            # SQLite's JSON functions cut a string at a NUL, so the join above missed
            # the edge of a source whose ID holds one: the edges are probed by the IDs
            # Python reads, and their sources looked up by ID.
            edges = self.edges(scope, (memory_id,))
            sources = self._events.get(scope, sorted({edge.event_id for edge in edges}))
            return memory_row(scope, first[:_MEMORY_WIDTH]), edges, sources
        edge_at = _MEMORY_WIDTH + 2
        event_at = edge_at + _EDGE_WIDTH
        for r in rows:
            if r[edge_at] is not None:
                edges.append(EdgeRow(scope, *r[edge_at:event_at]))
                if r[event_at] is not None:
                    sources[r[event_at]] = event_row(scope, r[event_at:])
        return memory_row(scope, first[:_MEMORY_WIDTH]), edges, sources

    def before_insert(
        self, scope: ScopeKey, memory_id: str, fingerprint: str, source_ids: Sequence[str]
    ) -> tuple[list[TombstoneRow], list[TombstoneRow], MemoryRow | None, dict[str, EventRow]]:
        sid = self._scope_id(scope)
        if sid is not None and 0 < len(source_ids) <= CHUNK:
            # The usual case, a new memory, costs one statement: it reads the sources and
            # finds that no tombstone of the ID or fingerprint and no live row of the ID
            # is there. When one is, the three look-ups below read what it is.
            marks = ",".join(f"?{n}" for n in range(4, 4 + len(source_ids)))
            rows = self._conn.execute(
                "SELECT EXISTS (SELECT 1 FROM tombstones WHERE entity_id = ?1 AND scope_id = ?2) "
                "OR EXISTS (SELECT 1 FROM tombstones WHERE fingerprint = ?3 AND scope_id = ?2) "
                "OR EXISTS (SELECT 1 FROM memories WHERE memory_id = ?1 AND scope_id = ?2 "
                f"AND erased IS NOT 1), {EVENT_E} FROM (SELECT 1) LEFT JOIN raw_events e "
                f"ON e.event_id IN ({marks}) AND e.scope_id = ?2 AND e.erased IS NOT 1",
                [memory_id, sid, fingerprint, *source_ids],
            ).fetchall()
            if not rows[0][0]:
                return (
                    [],
                    [],
                    None,
                    {r[1]: event_row(scope, r[1:]) for r in rows if r[1] is not None},
                )
        by_id, by_fingerprint = self._tombstones.for_memory(scope, memory_id, fingerprint)
        existing = self.get(scope, memory_id)
        return by_id, by_fingerprint, existing, self._events.get(scope, source_ids)

    def dependents(self, scope: ScopeKey, event_id: str) -> list[str]:
        sid = self._scope_id(scope)
        if sid is None:
            return []
        return [
            r[0]
            for r in self._conn.execute(
                "SELECT memory_id FROM lineage WHERE scope_id = ? AND event_id = ?",
                (sid, event_id),
            )
        ]

    def insert(self, row: MemoryRow, edges: Sequence[EdgeRow]) -> None:
        sid = self._ensure_scope(row.scope)
        self._session.recent = None
        cursor = self._conn.execute(
            "INSERT INTO memories (scope_id, memory_id, content, dependency_fingerprint, kind, "
            "trust, created_at, clear_until, recall_until, status, metadata, digest, sources) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                json.dumps(sorted(e.event_id for e in edges)),
            ),
        )
        if cursor.lastrowid is not None:
            self._session.fresh = (sid, row.memory_id, cursor.lastrowid)
        values = [
            (sid, e.event_id, e.memory_id, e.trust, e.clear_for, e.recall_for, e.digest)
            for e in edges
        ]
        statement = (
            "INSERT INTO lineage (scope_id, event_id, memory_id, trust, clear_for, recall_for, "
            "digest) VALUES (?, ?, ?, ?, ?, ?, ?)"
        )
        # One edge (the usual case) costs less as one statement than as a batch of one.
        if len(values) == 1:
            self._conn.execute(statement, values[0])
        else:
            self._conn.executemany(statement, values)

    def update(self, row: MemoryRow) -> None:
        sid = self._scope_id(row.scope)
        # A status of the same length and a digest of the same length: the row keeps its
        # size, and its cell stays where it is.
        found = self._conn.execute(
            "UPDATE memories SET status = ?, digest = ? "
            "WHERE memory_id = ? AND scope_id = ? AND erased IS NOT 1 RETURNING rid",
            (row.status, row.digest, row.memory_id, sid),
        ).fetchall()
        if len(found) != 1:
            raise RepositoryCorruption("stored rows and their indexes disagree")
        self._vectors.set_active(int(found[0][0]), row.status == "active")

    def delete(self, scope: ScopeKey, memory_id: str) -> None:
        self._session.fresh = self._session.recent = None
        self._search.unindex(scope, memory_id, erasing=True)
        self._claims.delete_claim(scope, memory_id)
        sid = self._scope_id(scope)
        found = self._conn.execute(
            "SELECT rid, sources FROM memories "
            "WHERE memory_id = ? AND scope_id = ? AND erased IS NOT 1",
            (memory_id, sid),
        ).fetchone()
        if found is None:
            raise RepositoryCorruption("stored rows and their indexes disagree")
        rid, sources = int(found[0]), found[1]
        self._vectors.delete_of(rid)
        self._conn.executemany(
            "DELETE FROM lineage WHERE scope_id = ? AND event_id = ? AND memory_id = ?",
            [(sid, event_id, memory_id) for event_id in source_ids(sources)],
        )
        changed(
            self._conn.execute(f"UPDATE memories SET {ERASE_MEMORY} WHERE rid = ?", (rid,)),
            1,
        )

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
        clear = fully_clear(
            SQLITE, "m.clear_until", "m.recall_until", Param(as_of), Param(rounding_shift)
        )
        rows = self._conn.execute(
            f"SELECT {MEMORY_M} FROM memories m INDEXED BY memories_recall_clear "
            "WHERE m.scope_id = ? AND m.status = 'active' AND m.erased IS NOT 1 "
            "AND m.created_at <= ? "
            f"AND m.recall_until > ? AND {clear.sql}"
            f"{kind_sql} ORDER BY m.created_at DESC, m.memory_id ASC LIMIT ?",
            [sid, as_of, as_of, *clear.params, *kind_params, limit],
        ).fetchall()
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
        sid = self._scope_id(scope)
        if sid is None:
            return []
        kind_sql, kind_params = self._kind_filter(kinds)
        fades = fading(
            SQLITE, "m.clear_until", "m.recall_until", Param(as_of), Param(rounding_shift)
        )
        ratio = fade_ratio(SQLITE, "m.clear_until", "m.recall_until", Param(as_of))
        select = (
            "SELECT m.memory_id, m.created_at, m.clear_until, m.recall_until "
            "FROM memories m INDEXED BY memories_recall_fade "
            "WHERE m.scope_id = ? AND m.status = 'active' AND m.erased IS NOT 1 "
            "AND m.recall_until > ? "
            f"AND m.created_at <= ? AND {fades.sql}{kind_sql}"
        )
        params = [sid, as_of, as_of, *fades.params, *kind_params]
        ranked = self._conn.execute(
            f"{select} AND m.recall_until - m.clear_until < ? "
            f"ORDER BY {ratio.sql} DESC, m.created_at DESC, m.memory_id ASC LIMIT ?",
            [*params, exact_span, *ratio.params, limit],
        ).fetchall()
        long_fades = self._conn.execute(
            f"{select} AND m.recall_until - m.clear_until >= ?", [*params, exact_span]
        ).fetchall()
        return [RecallCandidate(*r) for r in ranked + long_fades]

    def iter(self, scope: ScopeKey | None) -> Iterator[MemoryRow]:
        sql = (
            f"SELECT x.rid, {SCOPE_COLUMNS}, {MEMORY_X} FROM memories x "
            f"{SCOPE_JOIN.format(alias='x')}"
        )
        # The scope's index of memories (by status and ID) is not in rowid order.
        listing = (
            "SELECT rid FROM memories INDEXED BY memories_by_status WHERE scope_id = ? "
            "AND erased IS NOT 1 ORDER BY rid"
        )
        for r in self._scan(sql, scope, "rid", listing=listing):
            yield memory_row(key_of(r), r[3:])

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
            # Within a scope the bound leaves the scope out: a row value that starts with
            # the column an equality fixes is not used as a range of the key.
            if last is None:
                bound, after = "", []
            elif params:
                bound, after = " AND (x.event_id, x.memory_id) > (?, ?)", [last[1], last[2]]
            else:
                bound, after = " AND (x.scope_id, x.event_id, x.memory_id) > (?, ?, ?)", list(last)
            rows = self._conn.execute(
                f"SELECT x.scope_id, x.event_id, x.memory_id, {SCOPE_COLUMNS}, x.trust, "
                "x.clear_for, x.recall_for, x.digest FROM lineage x "
                f"{SCOPE_JOIN.format(alias='x')} WHERE 1 = 1{where}{bound} "
                f"ORDER BY x.scope_id, x.event_id, x.memory_id LIMIT {CHUNK}",
                [*params, *after],
            ).fetchall()
            for r in rows:
                yield EdgeRow((r[3], r[4], r[5]), r[2], r[1], r[6], r[7], r[8], r[9])
            if len(rows) < CHUNK:
                return
            last = (rows[-1][0], rows[-1][1], rows[-1][2])

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
        sid = self._scope_id(scope)
        if sid is None or not statuses:
            return []
        # One walk of the status index per status, each stopping at ``limit``; the walks
        # are merged in ID order (code-point order, which is SQLite's order of UTF-8
        # text and Python's of ``str``).
        beyond, order = ("<", "DESC") if descending else (">", "ASC")
        found: list[MemoryRow] = []
        for status in sorted(set(statuses)):
            sql = (
                f"SELECT {MEMORY_M} FROM memories m INDEXED BY memories_by_status "
                "WHERE m.scope_id = ? AND m.status = ? AND m.erased IS NOT 1"
            )
            params: list[Any] = [sid, status]
            if after is not None:
                sql += f" AND m.memory_id {beyond} ?"
                params.append(after)
            if kinds:
                sql += " AND hex(m.kind) IN (SELECT value FROM json_each(?))"
                params.append(hex_set(kinds))
            sql += f" ORDER BY m.memory_id {order} LIMIT ?"
            params.append(limit)
            found.extend(MemoryRow(scope, *r) for r in self._conn.execute(sql, params))
        if len(statuses) > 1:
            found.sort(key=lambda row: row.memory_id, reverse=descending)
        return found[:limit]

    @staticmethod
    def _kind_filter(kinds: Sequence[str]) -> tuple[str, list[Any]]:
        if not kinds:
            return "", []
        # Any number of kinds travels as one JSON parameter.
        return " AND hex(m.kind) IN (SELECT value FROM json_each(?))", [hex_set(kinds)]
