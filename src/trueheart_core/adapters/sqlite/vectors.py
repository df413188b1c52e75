"""The SQLite vectors role (see ``ports.vectors``): statements over the unit of work's
connection, and nothing else.

Vectors are a kept table (see ``schema``): a vector that goes, or is replaced, is
overwritten in place and marked ``erased``; a changed vector row is a new row at the
table's end."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from trueheart_core.adapters.sqlite.filters import eligibility_filters
from trueheart_core.adapters.sqlite.search import SQLiteSearch
from trueheart_core.adapters.sqlite.session import (
    CHUNK,
    SCOPE_COLUMNS,
    Role,
    Session,
    blanked,
)
from trueheart_core.errors import RepositoryCorruption
from trueheart_core.ports import (
    ScopeKey,
    SpaceRow,
    VectorEntry,
    VectorFacts,
    VectorHit,
    VectorRow,
    VectorState,
)

_FETCH = 500
VECTOR_TEXT = ("memory_id", "kind", "content_hash", "vector", "digest", "sketch")
"""The columns of a vector row that hold what a memory's body yields (or its text),
which erasing the vector overwrites in place."""
ERASE_VECTOR = f"{', '.join(blanked(c) for c in VECTOR_TEXT)}, erased = 1"
_ROW_COLUMNS = (
    "doc, scope_id, space_id, active, created_at, memory_id, clear_until, recall_until, "
    "trust, kind, content_hash, vector, digest, sketch, sketch_scale, sketch_error"
)


class SQLiteVectors(Role):
    """The vectors role over one transaction."""

    def __init__(self, session: Session, search: SQLiteSearch) -> None:
        super().__init__(session)
        self._session = session
        self._search = search

    def current_space(self) -> SpaceRow | None:
        row = self._conn.execute(
            "SELECT space_id, identity, dimensions, normalized FROM semantic_spaces "
            "ORDER BY space_id DESC LIMIT 1"
        ).fetchone()
        return None if row is None else SpaceRow(row[0], row[1], row[2], row[3])

    def register_space(self, identity: str, dimensions: int, normalized: bool) -> int:
        cursor = self._conn.execute(
            "INSERT INTO semantic_spaces (identity, dimensions, normalized) VALUES (?, ?, ?)",
            (identity, dimensions, int(normalized)),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def put(self, row: VectorRow) -> None:
        sid = self._scope_id(row.scope)
        found = None
        if sid is not None:
            found = self._conn.execute(
                "SELECT rid, status, created_at, clear_until, recall_until, trust, kind "
                "FROM memories WHERE memory_id = ? AND scope_id = ? AND erased IS NOT 1",
                (row.memory_id, sid),
            ).fetchone()
        if found is None:
            raise RepositoryCorruption("invalid vector")
        rid, status, *copied = found
        self.delete_of(rid)
        self._conn.execute(
            f"INSERT INTO vectors ({_ROW_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rid,
                sid,
                row.space_id,
                int(status == "active"),
                copied[0],
                row.memory_id,
                *copied[1:],
                row.content_hash,
                row.vector,
                row.digest,
                row.sketch,
                row.sketch_scale,
                row.sketch_error,
            ),
        )

    def keys(self, scope: ScopeKey, memory_ids: Sequence[str]) -> dict[str, tuple[object, object]]:
        sid = self._scope_id(scope)
        if sid is None or not memory_ids:
            return {}
        found: dict[str, tuple[object, object]] = {}
        for start in range(0, len(memory_ids), CHUNK):
            chunk = list(memory_ids[start : start + CHUNK])
            marks = ",".join("?" * len(chunk))
            for memory_id, space_id, content_hash in self._conn.execute(
                "SELECT m.memory_id, v.space_id, v.content_hash FROM memories m "
                "JOIN vectors v ON v.doc = m.rid AND v.erased IS NOT 1 "
                f"WHERE m.memory_id IN ({marks}) AND m.scope_id = ? AND m.erased IS NOT 1",
                [*chunk, sid],
            ):
                found[memory_id] = (space_id, content_hash)
        return found

    def states(self, scope: ScopeKey, after: str | None, limit: int) -> list[VectorState]:
        sid = self._scope_id(scope)
        if sid is None:
            return []
        sql = (
            "SELECT m.memory_id, m.kind, m.content, v.space_id, v.content_hash "
            "FROM memories m INDEXED BY memories_by_status "
            "LEFT JOIN vectors v ON v.doc = m.rid AND v.erased IS NOT 1 "
            "WHERE m.scope_id = ? AND m.status = 'active' AND m.erased IS NOT 1"
        )
        params: list[Any] = [sid]
        if after is not None:
            sql += " AND m.memory_id > ?"
            params.append(after)
        sql += " ORDER BY m.memory_id LIMIT ?"
        params.append(limit)
        return [VectorState(*r) for r in self._conn.execute(sql, params)]

    def scan(
        self,
        scope: ScopeKey,
        space_id: int,
        as_of: int,
        kinds: Sequence[str],
        min_trust: int | None,
        claim_statuses: Sequence[str],
        limit: int | None,
        chunk: int,
        created_from: int | None = None,
        created_until: int | None = None,
        handles: Sequence[int] | None = None,
        claim_kind: str = "claim",
    ) -> Iterator[list[VectorHit]]:
        sid = self._scope_id(scope)
        if sid is None or (limit is not None and limit <= 0) or chunk <= 0:
            return
        bounded = created_from is not None or created_until is not None
        period = (created_from, created_until) if bounded else None
        filters, extra = eligibility_filters(
            as_of, kinds, min_trust, claim_statuses, claim_kind, d="v", period=period
        )
        columns = "v.vid, v.sketch, v.sketch_scale, v.sketch_error"
        if handles is not None:
            # Row-ID look-ups; the unary + keeps the planner off the scope's scan index.
            for start in range(0, len(handles), CHUNK):
                part = list(handles[start : start + CHUNK])
                marks = ",".join("?" * len(part))
                yield self._conn.execute(
                    f"SELECT {columns} FROM vectors v WHERE v.vid IN ({marks}) "
                    "AND +v.scope_id = ? AND +v.space_id = ? AND +v.active = 1 AND +v.erased IS "
                    "NOT 1 "
                    f"AND +v.created_at <= ? AND v.recall_until > ?{filters}",
                    [*part, sid, space_id, as_of, as_of, *extra],
                ).fetchall()
            return
        # One index range: the scope's active vectors of the space, newest first from
        # as_of; every other filter reads the vector's own row. The cursor is read a
        # chunk at a time, so only one chunk of rows is held at once.
        cursor = self._conn.execute(
            f"SELECT {columns} FROM vectors v INDEXED BY vectors_scan "
            "WHERE v.scope_id = ? AND v.space_id = ? AND v.active = 1 AND v.erased IS NOT 1 "
            "AND v.created_at <= ? "
            f"AND v.recall_until > ?{filters} "
            "ORDER BY v.created_at DESC, v.vid DESC LIMIT ?",
            [sid, space_id, as_of, as_of, *extra, -1 if limit is None else limit],
        )
        while rows := cursor.fetchmany(chunk):
            yield rows

    def facts(self, scope: ScopeKey, handles: Sequence[int]) -> list[VectorFacts]:
        sid = self._scope_id(scope)
        if sid is None or not handles:
            return []
        found: list[VectorFacts] = []
        # Row-ID look-ups; the unary + keeps the planner off the scope's scan index.
        for start in range(0, len(handles), CHUNK):
            chunk = list(handles[start : start + CHUNK])
            marks = ",".join("?" * len(chunk))
            found.extend(
                self._conn.execute(
                    "SELECT vid, memory_id, created_at, clear_until, recall_until, vector "
                    f"FROM vectors WHERE vid IN ({marks}) AND +scope_id = ? AND +erased IS NOT 1",
                    [*chunk, sid],
                ).fetchall()
            )
        return found

    def generation(self, scope: ScopeKey) -> int:
        sid = self._scope_id(scope)
        if sid is None:
            return 0
        row = self._conn.execute(
            "SELECT generation FROM vector_generations WHERE scope_id = ?", (sid,)
        ).fetchone()
        if row is None:
            return 0
        if type(row[0]) is not int:
            raise RepositoryCorruption("invalid semantic index")
        return int(row[0])

    def load(self, scope: ScopeKey, space_id: int, chunk: int) -> Iterator[list[VectorEntry]]:
        sid = self._scope_id(scope)
        if sid is None or chunk <= 0:
            return
        # The scope's vectors of the space in row order (the order they lie in the
        # table), found through the scan index.
        cursor = self._conn.execute(
            "SELECT vid, vector, active, created_at, recall_until, trust, kind FROM vectors "
            "WHERE vid IN (SELECT vid FROM vectors INDEXED BY vectors_scan "
            "WHERE scope_id = ? AND space_id = ? AND erased IS NOT 1) ORDER BY vid",
            (sid, space_id),
        )
        while rows := cursor.fetchmany(chunk):
            yield rows

    def lexical_matches(
        self, scope: ScopeKey, terms: Sequence[int], memory_ids: Sequence[str]
    ) -> int:
        sid = self._scope_id(scope)
        if sid is None or not terms or not memory_ids:
            return 0
        return self._search.holding(sid, terms, memory_ids)

    def iter(self, scope: ScopeKey | None) -> Iterator[VectorRow]:
        where, params = "", []
        if scope is not None:
            sid = self._scope_id(scope)
            if sid is None:
                return
            where, params = " AND v.scope_id = ?", [sid]
        # Read so that a row edited behind the library's back reads as one that fails
        # its digest rather than fails the read (text that is no UTF-8 could not even
        # be decoded): a vector or sketch stored as anything but bytes reads as no
        # vector, the content hash and digest are read as bytes and decoded here.
        cursor = self._conn.execute(
            f"SELECT {SCOPE_COLUMNS}, "
            "CASE WHEN m.scope_id = v.scope_id THEN m.memory_id ELSE '' END, "
            "v.space_id, CAST(v.content_hash AS BLOB), "
            "CASE WHEN typeof(v.vector) = 'blob' AND typeof(v.sketch) IN ('blob', 'null') "
            "THEN v.vector END, CAST(v.digest AS BLOB), "
            "CASE WHEN typeof(v.sketch) = 'blob' THEN v.sketch END, "
            "v.sketch_scale, v.sketch_error "
            "FROM vectors v JOIN scopes s ON s.scope_id = v.scope_id "
            "LEFT JOIN memories m ON m.rid = v.doc AND m.erased IS NOT 1 WHERE v.erased IS NOT "
            f"1{where} "
            "ORDER BY v.vid",
            params,
        )
        while rows := cursor.fetchmany(_FETCH):
            for r in rows:
                yield VectorRow(
                    (r[0], r[1], r[2]), r[3], r[4], _decoded(r[5]), r[6], _decoded(r[7]), *r[8:]
                )

    def disagreeing(self, scope: ScopeKey | None) -> list[tuple[ScopeKey, str]]:
        where, params = "", []
        if scope is not None:
            sid = self._scope_id(scope)
            if sid is None:
                return []
            where, params = " AND v.scope_id = ?", [sid]
        rows = self._conn.execute(
            f"SELECT {SCOPE_COLUMNS}, m.memory_id FROM vectors v "
            "JOIN memories m ON m.rid = v.doc AND m.erased IS NOT 1 "
            "JOIN scopes s ON s.scope_id = v.scope_id WHERE v.erased IS NOT 1 "
            "AND (v.memory_id IS NOT m.memory_id OR v.scope_id IS NOT m.scope_id "
            "OR v.created_at IS NOT m.created_at OR v.clear_until IS NOT m.clear_until "
            "OR v.recall_until IS NOT m.recall_until OR v.trust IS NOT m.trust "
            "OR v.kind IS NOT m.kind OR v.active IS NOT (m.status = 'active'))"
            f"{where} ORDER BY v.vid",
            params,
        ).fetchall()
        return [((r[0], r[1], r[2]), r[3]) for r in rows]

    def repair_copies(
        self, sketch: Callable[[bytes], tuple[bytes, float, float] | None]
    ) -> tuple[int, int, int]:
        # A vector of another scope than its memory's is no vector of that memory.
        removed = self._conn.execute(
            f"UPDATE vectors SET {ERASE_VECTOR} WHERE erased IS NOT 1 AND NOT EXISTS "
            "(SELECT 1 FROM memories m WHERE m.rid = doc AND m.erased IS NOT 1 "
            "AND m.scope_id = vectors.scope_id)"
        ).rowcount
        # A copy that disagrees with its memory is replaced by a row with the memory's
        # values at the table's end (a rewritten row could change size).
        stale = self._conn.execute(
            "SELECT v.vid, m.memory_id, m.created_at, m.clear_until, m.recall_until, m.trust, "
            "m.kind, m.status = 'active' FROM vectors v "
            "JOIN memories m ON m.rid = v.doc AND m.erased IS NOT 1 WHERE v.erased IS NOT 1 AND "
            "(v.memory_id IS NOT m.memory_id OR v.created_at IS NOT m.created_at "
            "OR v.clear_until IS NOT m.clear_until OR v.recall_until IS NOT m.recall_until "
            "OR v.trust IS NOT m.trust OR v.kind IS NOT m.kind "
            "OR v.active IS NOT (m.status = 'active')) ORDER BY v.vid"
        ).fetchall()
        for vid, memory_id, created_at, clear_until, recall_until, trust, kind, active in stale:
            self._replace(
                vid,
                memory_id=memory_id,
                created_at=created_at,
                clear_until=clear_until,
                recall_until=recall_until,
                trust=trust,
                kind=kind,
                active=int(active),
            )
        return len(stale), int(removed), self._repair_sketches(sketch)

    def _repair_sketches(self, sketch: Callable[[bytes], tuple[bytes, float, float] | None]) -> int:
        """Replace every vector row whose sketch is not the one ``sketch`` computes from
        its vector; pages of rows by row ID, so no cursor is open while rows change."""
        repaired = 0
        after = 0
        while rows := self._conn.execute(
            "SELECT vid, vector, sketch, sketch_scale, sketch_error FROM vectors "
            "WHERE vid > ? AND erased IS NOT 1 ORDER BY vid LIMIT ?",
            (after, _FETCH),
        ).fetchall():
            after = rows[-1][0]
            for vid, vector, *stored in rows:
                expected = sketch(vector)
                wanted = [None, None, None] if expected is None else list(expected)
                if not _same(stored, wanted):
                    self._replace(
                        vid, sketch=wanted[0], sketch_scale=wanted[1], sketch_error=wanted[2]
                    )
                    repaired += 1
        return repaired

    def _replace(self, vid: int, **changes: object) -> None:
        """Erase the vector row ``vid`` and append a copy of it with ``changes``. The
        copy is made by the statement, not through Python: a column edited behind the
        library's back (text that is no UTF-8) could not be read back to be written."""
        names = [c.strip() for c in _ROW_COLUMNS.split(",")]
        chosen = [name for name in names if name in changes]
        # The copy holds its memory's row ID negated until the row it copies is erased:
        # only one row of a memory may be held (``vectors_by_doc``).
        values = ", ".join(
            "?" if name in changes else "-doc" if name == "doc" else name for name in names
        )
        copy = self._conn.execute(
            f"INSERT INTO vectors ({_ROW_COLUMNS}) SELECT {values} FROM vectors WHERE vid = ?",
            [*(changes[name] for name in chosen), vid],
        ).lastrowid
        self._conn.execute(f"UPDATE vectors SET {ERASE_VECTOR} WHERE vid = ?", (vid,))
        self._conn.execute("UPDATE vectors SET doc = -doc WHERE vid = ?", (copy,))

    def iter_spaces(self) -> Iterator[SpaceRow]:
        for r in self._conn.execute(
            "SELECT space_id, identity, dimensions, normalized FROM semantic_spaces "
            "ORDER BY space_id"
        ).fetchall():
            yield SpaceRow(r[0], r[1], r[2], r[3])

    def set_active(self, rid: int, active: bool) -> None:
        """Keep the copied status of a memory's vector in step with the memory (0 and 1
        are stored in no bytes: the row keeps its size)."""
        self._conn.execute(
            "UPDATE vectors SET active = ? WHERE doc = ? AND erased IS NOT 1", (int(active), rid)
        )

    def discard(self, scope: ScopeKey, memory_id: str) -> int:
        sid = self._scope_id(scope)
        if sid is None:
            return 0
        return int(
            self._conn.execute(
                f"UPDATE vectors SET {ERASE_VECTOR} WHERE erased IS NOT 1 AND scope_id = ? "
                "AND doc IN (SELECT rid FROM memories WHERE scope_id = ? AND memory_id = ? "
                "AND erased IS NOT 1)",
                (sid, sid, memory_id),
            ).rowcount
        )

    def delete_of(self, rid: int) -> None:
        """Erase the vector of the memory with this rowid (part of erasing it)."""
        self._conn.execute(
            f"UPDATE vectors SET {ERASE_VECTOR} WHERE doc = ? AND erased IS NOT 1", (rid,)
        )


def _decoded(value: Any) -> Any:
    """A text column read as bytes, as the text it holds (``""`` when it is no UTF-8);
    anything else (``None``) as it is."""
    if not isinstance(value, bytes):
        return value
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return ""


def _same(stored: Sequence[object], wanted: Sequence[object]) -> bool:
    """Whether stored sketch columns are exactly the wanted values (types included)."""
    return all(type(a) is type(b) and a == b for a, b in zip(stored, wanted, strict=True))
