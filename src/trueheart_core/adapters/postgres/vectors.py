"""The PostgreSQL vectors role (see ``ports.vectors``): statements over the unit of
work's connection, and nothing else.

A vector row copies its memory's times, trust, kind and status, so that a scan reads
one row per vector, through ``vectors_scan`` in the order it answers in. Its ``vid``
(drawn anew each time a vector is stored) is the handle a scan hands out and the
write order that breaks ties of ``created_at``. The scope's generation is kept by the
trigger of ``schema``, in the statement that changes the row; this role only reads it.
Every scan is exact: the semantic search compares sketches and vectors in the service.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any, TypeVar

from trueheart_core.adapters.postgres.search import (
    PostgresSearch,
    eligibility_filters,
    scope_filter,
)
from trueheart_core.adapters.postgres.session import (
    CHUNK,
    KEY,
    Role,
    Session,
    dec,
    enc,
    key_of,
    same_scope,
    scoped,
)
from trueheart_core.adapters.postgres.wire import Result
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

_T = TypeVar("_T")

_COPIES_DIFFER = (
    "(v.created_at IS DISTINCT FROM m.created_at OR v.clear_until IS DISTINCT FROM "
    "m.clear_until OR v.recall_until IS DISTINCT FROM m.recall_until "
    "OR v.trust IS DISTINCT FROM m.trust OR v.kind IS DISTINCT FROM m.kind "
    "OR v.active IS DISTINCT FROM COALESCE(m.status = 'active', FALSE))"
)
"""Whether a vector's copies of its memory's columns differ from the memory row ``m``
(the scope and memory ID are the join's own key, so they cannot)."""
_MEMORY_OF_V = f"{same_scope('m', 'v')} AND m.memory_id = v.memory_id"


def _batches(rows: Iterator[_T], size: int) -> Iterator[list[_T]]:
    """``rows`` in lists of at most ``size``, each read when it is asked for."""
    while batch := list(islice(rows, size)):
        yield batch


class PostgresVectors(Role):
    """The vectors role over one transaction."""

    def __init__(self, session: Session, search: PostgresSearch) -> None:
        super().__init__(session)
        self._search = search

    def current_space(self) -> SpaceRow | None:
        row = self._s.one(
            "SELECT space_id, identity, dimensions, normalized FROM semantic_spaces "
            "ORDER BY space_id DESC LIMIT 1"
        )
        return None if row is None else SpaceRow(row[0], dec(row[1]), row[2], row[3])

    def register_space(self, identity: str, dimensions: int, normalized: bool) -> int:
        # Spaces are few and registered rarely: the next number is read from the table
        # (a concurrent registration fails to serialize, and the caller retries).
        row = self._s.one(
            "INSERT INTO semantic_spaces (space_id, identity, dimensions, normalized) "
            "SELECT COALESCE(MAX(space_id), 0) + 1, %s, %s, %s FROM semantic_spaces "
            "RETURNING space_id",
            (enc(identity), dimensions, normalized),
        )
        assert row is not None
        return int(row[0])

    def put(self, row: VectorRow) -> None:
        key = self._s.key(row.scope)
        memory_id = enc(row.memory_id)
        found = self._s.one(
            "SELECT status, created_at, clear_until, recall_until, trust, kind "
            f"FROM memories WHERE {scoped()} AND memory_id = %s",
            (*key, memory_id),
        )
        if found is None:
            raise RepositoryCorruption("invalid vector")
        status, *copied = found
        # Replaced, not updated: the new row draws a new handle, the latest write order.
        self._s.defer(
            f"DELETE FROM vectors WHERE {scoped()} AND memory_id = %s",
            (*key, memory_id),
            self._touched_vectors,
        )
        self._s.write(
            f"INSERT INTO vectors ({KEY}, memory_id, space_id, active, created_at, "
            "clear_until, recall_until, trust, kind, content_hash, vector, digest, "
            "sketch, sketch_scale, sketch_error) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                *key,
                memory_id,
                row.space_id,
                status == "active",
                *copied,
                row.content_hash,
                row.vector,
                row.digest,
                row.sketch,
                row.sketch_scale,
                row.sketch_error,
            ),
        )

    def keys(self, scope: ScopeKey, memory_ids: Sequence[str]) -> dict[str, tuple[object, object]]:
        key = self._s.key(scope)
        found: dict[str, tuple[object, object]] = {}
        for chunk in self._s.chunks(sorted({enc(m) for m in memory_ids})):
            for memory_id, space_id, content_hash in self._s.all(
                "SELECT v.memory_id, v.space_id, v.content_hash FROM vectors v "
                f"JOIN memories m ON {_MEMORY_OF_V} "
                f"WHERE {scoped('v')} AND v.memory_id = ANY(%s)",
                (*key, chunk),
            ):
                found[dec(memory_id)] = (space_id, content_hash)
        return found

    def states(self, scope: ScopeKey, after: str | None, limit: int) -> list[VectorState]:
        sql = (
            "SELECT m.memory_id, m.kind, m.content, v.space_id, v.content_hash "
            f"FROM memories m LEFT JOIN vectors v ON {_MEMORY_OF_V} "
            f"WHERE {scoped('m')} AND m.status = 'active'"
        )
        params: list[Any] = list(self._s.key(scope))
        if after is not None:
            sql += " AND m.memory_id > %s"
            params.append(enc(after))
        sql += " ORDER BY m.memory_id LIMIT %s"
        params.append(max(limit, 0))
        return [
            VectorState(dec(r[0]), dec(r[1]), dec(r[2]), r[3], r[4])
            for r in self._s.all(sql, params)
        ]

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
        if (limit is not None and limit <= 0) or chunk <= 0:
            return
        bounded = created_from is not None or created_until is not None
        period = (created_from, created_until) if bounded else None
        filters, extra = eligibility_filters(
            as_of, kinds, min_trust, claim_statuses, claim_kind, d="v", period=period
        )
        key = self._s.key(scope)
        columns = "v.vid, v.sketch, v.sketch_scale, v.sketch_error"
        if handles is not None:
            # Look-ups by handle; every condition is checked on the row found.
            for part in self._s.chunks(sorted(set(handles))):
                yield list(
                    self._s.all(
                        f"SELECT {columns} FROM vectors v "
                        f"WHERE v.tenant_id = %s AND v.vid = ANY(CAST(%s AS BIGINT[])) "
                        "AND v.owner_id = %s AND v.subject_id = %s AND v.space_id = %s "
                        "AND v.active AND v.created_at <= %s "
                        f"AND v.recall_until > %s{filters}",
                        (key[0], part, key[1], key[2], space_id, as_of, as_of, *extra),
                    )
                )
            return
        # One range of the scan index: the scope's active vectors of the space, newest
        # first from as_of; every other filter reads the vector's own row. The rows come
        # through a server-side cursor, so only a chunk of them is held at once.
        sql = (
            f"SELECT {columns} FROM vectors v WHERE {scoped('v')} AND v.space_id = %s "
            "AND v.active = TRUE AND v.created_at <= %s "
            f"AND v.recall_until > %s{filters} "
            "ORDER BY v.created_at DESC, v.vid DESC"
        )
        params: list[Any] = [*key, space_id, as_of, as_of, *extra]
        if limit is not None:
            sql += " LIMIT %s"
            params.append(limit)
        yield from _batches(self._s.stream(sql, params), chunk)

    def facts(self, scope: ScopeKey, handles: Sequence[int]) -> list[VectorFacts]:
        key = self._s.key(scope)
        found: list[VectorFacts] = []
        for part in self._s.chunks(sorted(set(handles))):
            for r in self._s.all(
                "SELECT vid, memory_id, created_at, clear_until, recall_until, vector "
                "FROM vectors WHERE tenant_id = %s AND vid = ANY(CAST(%s AS BIGINT[])) "
                "AND owner_id = %s AND subject_id = %s",
                (key[0], part, key[1], key[2]),
            ):
                found.append((r[0], dec(r[1]), r[2], r[3], r[4], r[5]))
        return found

    def generation(self, scope: ScopeKey) -> int:
        row = self._s.one(
            f"SELECT generation FROM vector_generations WHERE {scoped()}", self._s.key(scope)
        )
        if row is None:
            return 0
        if type(row[0]) is not int:
            raise RepositoryCorruption("invalid semantic index")
        return row[0]

    def load(self, scope: ScopeKey, space_id: int, chunk: int) -> Iterator[list[VectorEntry]]:
        if chunk <= 0:
            return
        # In any order (the port asks for none); ``active`` as the integer the port names.
        rows = self._s.stream(
            "SELECT vid, vector, CAST(active AS INTEGER), created_at, recall_until, trust, "
            f"kind FROM vectors WHERE {scoped()} AND space_id = %s",
            (*self._s.key(scope), space_id),
        )
        entries = ((r[0], r[1], r[2], r[3], r[4], r[5], dec(r[6])) for r in rows)
        yield from _batches(entries, chunk)

    def lexical_matches(
        self, scope: ScopeKey, terms: Sequence[int], memory_ids: Sequence[str]
    ) -> int:
        if not terms or not memory_ids:
            return 0
        key = self._s.key(scope)
        wanted = sorted(set(terms))
        total = 0
        for chunk in self._s.chunks(sorted({enc(m) for m in memory_ids})):
            row = self._s.one(
                "SELECT COUNT(*) FROM search_docs d "
                f"WHERE {scoped('d')} AND d.memory_id = ANY(%s) "
                f"AND EXISTS (SELECT 1 FROM memories m WHERE {same_scope('m', 'd')} "
                "AND m.memory_id = d.memory_id) "
                f"AND EXISTS (SELECT 1 FROM search_postings p WHERE {same_scope('p', 'd')} "
                "AND p.memory_id = d.memory_id AND p.term = ANY(CAST(%s AS BIGINT[])))",
                (*key, chunk, wanted),
            )
            total += 0 if row is None else int(row[0])
        return total

    def iter(self, scope: ScopeKey | None) -> Iterator[VectorRow]:
        where, params = scope_filter(self._s, scope, "v")
        for r in self._s.stream(
            "SELECT v.tenant_id, v.owner_id, v.subject_id, v.memory_id, "
            "m.memory_id IS NOT NULL, v.space_id, v.content_hash, v.vector, v.digest, "
            "v.sketch, v.sketch_scale, v.sketch_error "
            f"FROM vectors v LEFT JOIN memories m ON {_MEMORY_OF_V} "
            f"WHERE {where} ORDER BY v.tenant_id, v.vid",
            params,
        ):
            yield VectorRow(key_of(r), dec(r[3]) if r[4] else "", *r[5:])

    def disagreeing(self, scope: ScopeKey | None) -> list[tuple[ScopeKey, str]]:
        where, params = scope_filter(self._s, scope, "v")
        rows = self._s.all(
            "SELECT v.tenant_id, v.owner_id, v.subject_id, v.memory_id FROM vectors v "
            f"JOIN memories m ON {_MEMORY_OF_V} WHERE {where} AND {_COPIES_DIFFER} "
            "ORDER BY v.tenant_id, v.vid",
            params,
        )
        return [(key_of(r), dec(r[3])) for r in rows]

    def repair_copies(
        self, sketch: Callable[[bytes], tuple[bytes, float, float] | None]
    ) -> tuple[int, int, int]:
        removed = self._s.execute(
            f"DELETE FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM memories m "
            f"WHERE {_MEMORY_OF_V})"
        ).rowcount
        rewritten = self._s.execute(
            "UPDATE vectors AS v SET created_at = m.created_at, clear_until = m.clear_until, "
            "recall_until = m.recall_until, trust = m.trust, kind = m.kind, "
            "active = COALESCE(m.status = 'active', FALSE) FROM memories m "
            f"WHERE {_MEMORY_OF_V} AND {_COPIES_DIFFER}"
        ).rowcount
        if removed or rewritten:
            self._s.touched_tables.add("vectors")
        if removed:
            self._removed()
        return int(rewritten), int(removed), self._repair_sketches(sketch)

    def discard(self, scope: ScopeKey, memory_id: str) -> int:
        removed = int(
            self._s.execute(
                f"DELETE FROM vectors WHERE {scoped()} AND memory_id = %s",
                (*self._s.key(scope), enc(memory_id)),
            ).rowcount
        )
        if removed:
            self._s.touched_tables.add("vectors")
            self._removed()
        return removed

    def _removed(self) -> None:
        """After vector rows went in a repair (an erasing unit, a rebuild): their dead
        versions stay in the table's pages until it is rewritten, which the unit owes,
        as an erasure owes the tables it deleted from."""
        if self._s.erasing:
            self._s.owe_rewrite(("vectors",))

    def _repair_sketches(self, sketch: Callable[[bytes], tuple[bytes, float, float] | None]) -> int:
        """Rewrite every sketch that is not the one ``sketch`` computes from its vector;
        pages of rows by handle, so no cursor is open while rows change."""
        repaired = 0
        after: tuple[bytes, int] | None = None
        while True:
            bound = "" if after is None else "WHERE (tenant_id, vid) > (%s, %s) "
            rows = self._s.all(
                "SELECT tenant_id, vid, vector, sketch, sketch_scale, sketch_error "
                f"FROM vectors {bound}ORDER BY tenant_id, vid LIMIT %s",
                (*(after or ()), CHUNK),
            )
            if not rows:
                return repaired
            after = (rows[-1][0], rows[-1][1])
            for tenant, vid, vector, *stored in rows:
                expected = sketch(vector)
                wanted = [None, None, None] if expected is None else list(expected)
                if not _same(stored, wanted):
                    self._s.write(
                        "UPDATE vectors SET sketch = %s, sketch_scale = %s, sketch_error = %s "
                        "WHERE tenant_id = %s AND vid = %s",
                        (*wanted, tenant, vid),
                    )
                    self._s.touched_tables.add("vectors")
                    repaired += 1

    def iter_spaces(self) -> Iterator[SpaceRow]:
        for r in self._s.all(
            "SELECT space_id, identity, dimensions, normalized FROM semantic_spaces "
            "ORDER BY space_id"
        ):
            yield SpaceRow(r[0], dec(r[1]), r[2], r[3])

    def set_active(self, scope: ScopeKey, memory_id: str, active: bool) -> None:
        """Keep the copied status of a memory's vector in step with the memory (a row
        whose copy already agrees is left alone, and its generation with it)."""
        self._s.write(
            f"UPDATE vectors SET active = %s WHERE {scoped()} AND memory_id = %s "
            "AND active IS DISTINCT FROM %s",
            (active, *self._s.key(scope), enc(memory_id), active),
        )

    def delete_of(self, scope: ScopeKey, memory_id: str) -> None:
        """Remove the vector of this memory, if it has one (part of deleting it)."""
        self._s.defer(
            f"DELETE FROM vectors WHERE {scoped()} AND memory_id = %s",
            (*self._s.key(scope), enc(memory_id)),
            self._touched_vectors,
        )

    def _touched_vectors(self, result: Result) -> None:
        """Note the vectors table as changed when the deletion removed a row."""
        if result.rowcount:
            self._s.touched_tables.add("vectors")


def _same(stored: Sequence[object], wanted: Sequence[object]) -> bool:
    """Whether stored sketch columns are exactly the wanted values (types included)."""
    return all(type(a) is type(b) and a == b for a, b in zip(stored, wanted, strict=True))
