"""The SQLite operations role (see ``ports.operations``): statements over the unit of work's
connection, and nothing else."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from trueheart_core.adapters.sqlite.search import PENDING_PAIRS
from trueheart_core.adapters.sqlite.session import (
    Role,
    Session,
)
from trueheart_core.errors import RepositoryCorruption
from trueheart_core.ports import ScopeKey

_MEMORY_RIDS = "SELECT rid FROM memories WHERE scope_id = ?"

SCOPED_ROWS: Sequence[tuple[str, str, str]] = (
    # Every row that belongs to a scope and that erasing the scope removes, in the order
    # of removal: ``(artifact, table, condition)``, each ``?`` of the condition being the
    # scope's ID. Postings go first, while the terms and memories that tie them to the
    # scope exist; an entry or posting tied to one of the scope's memories goes even if
    # its own scope column disagrees. A new scoped table is one more line.
    (
        "search_posting",
        "search_postings",
        "term_id IN (SELECT term_id FROM search_terms WHERE scope_id = ?) "
        f"OR doc IN ({_MEMORY_RIDS})",
    ),
    ("search_term", "search_terms", "scope_id = ?"),
    ("search_entry", "search_docs", f"scope_id = ? OR doc IN ({_MEMORY_RIDS})"),
    ("search_statistics", "search_stats", "scope_id = ?"),
    ("claim", "claims", "scope_id = ?"),
    ("extraction_record", "extractions", "scope_id = ?"),
    ("lineage_edge", "lineage", "scope_id = ?"),
    ("vector", "vectors", f"scope_id = ? OR doc IN ({_MEMORY_RIDS})"),
    ("memory", "memories", "scope_id = ?"),
    ("raw_body", "raw_bodies", "scope_id = ?"),
    ("raw_event", "raw_events", "scope_id = ?"),
)

# A memory's pending postings are one row of ``search_pending``; they count as postings,
# one per pair, and go with the scope's first (postings) line.
_PENDING_OF_SCOPE = f"scope_id = ? OR doc IN ({_MEMORY_RIDS})"
_PENDING_COUNT = (
    "SELECT IFNULL(SUM(json_array_length(postings)), 0) FROM search_pending WHERE {where}"
)

_KEPT_ROWS: Sequence[tuple[str, str, str]] = (
    # Rows of a scope that its erasure keeps (body-free evidence), counted only.
    (
        "raw_event_with_body",
        "raw_events e",
        "e.scope_id = ? AND EXISTS (SELECT 1 FROM raw_bodies b "
        "WHERE b.event_id = e.event_id AND b.scope_id = e.scope_id)",
    ),
    ("tombstone", "tombstones", "scope_id = ?"),
    ("audit", "audit", "scope_id = ?"),
)

BODY_COLUMNS: dict[str, tuple[str, ...]] = {
    # Every column of a scoped table that no index holds, and that can hold text or bytes
    # of what the host stored (an erasure without a rewrite overwrites them in place
    # first). By design no index holds body text, so an overwrite touches one cell.
    "raw_events": (
        "source_id",
        "source_type",
        "source_occurred_at",
        "trust",
        "source_metadata",
        "content_hash",
        "ingested_at",
        "clear_for",
        "recall_for",
        "metadata",
        "digest",
    ),
    "raw_bodies": ("content", "digest"),
    "memories": ("content", "dependency_fingerprint", "trust", "metadata", "digest"),
    "lineage": ("trust", "clear_for", "recall_for", "digest"),
    "claims": (
        "subject",
        "predicate",
        "value",
        "valid_from",
        "valid_to",
        "confidence",
        "authority",
        "digest",
    ),
    "extractions": ("extractor", "claim_ids", "spans", "diagnostics", "digest"),
    "vectors": (
        "memory_id",
        "clear_until",
        "recall_until",
        "trust",
        "kind",
        "content_hash",
        "vector",
        "digest",
        "sketch",
        "sketch_scale",
        "sketch_error",
    ),
}


def _blanked(column: str) -> str:
    """An expression of the same stored size as ``column`` that holds none of its bytes:
    text becomes as many ``0`` characters as it has bytes, bytes become zero bytes, and
    numbers and NULL stay (they are fixed-size and carry no text)."""
    octets = f"length(CAST({column} AS BLOB))"
    return (
        f"{column} = CASE typeof({column}) "
        f"WHEN 'text' THEN substr(hex(zeroblob({octets})), 1, {octets}) "
        f"WHEN 'blob' THEN zeroblob(length({column})) ELSE {column} END"
    )


_WHOLE_STORE: dict[str, str] = {
    # Whole-store counts: every row of the table (receipts with a body need the join).
    "raw_event_with_body": "EXISTS (SELECT 1 FROM raw_bodies b "
    "WHERE b.event_id = e.event_id AND b.scope_id = e.scope_id)",
}


class SQLiteOperations(Role):
    """The operations role over one transaction."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        # Set by a bulk erasure: the repository rewrites the file after the commit.
        self.rewrite_requested = False

    def storage_is_consistent(self) -> bool:
        # integrity_check also proves that every index matches its table; only its verdict
        # is kept, since its messages name pages and rows.
        return self._conn.execute("PRAGMA integrity_check(1)").fetchall() == [("ok",)]

    def count_rows(self, scope: ScopeKey | None, *, from_tables: bool = False) -> dict[str, int]:
        if scope is not None and from_tables:
            sid = self._scope_id(scope, thorough=True)
            if sid is None:
                return dict.fromkeys([a for a, _, _ in (*SCOPED_ROWS, *_KEPT_ROWS)], 0)
            return self._table_counts(sid, self._scope_terms(sid))
        sid = None if scope is None else self._scope_id(scope)
        counts: dict[str, int] = {}
        for artifact, table, condition in (*SCOPED_ROWS, *_KEPT_ROWS):
            if scope is not None and sid is None:
                counts[artifact] = 0
                continue
            if scope is None:
                where = _WHOLE_STORE.get(artifact, "1 = 1")
                params: list[Any] = []
            else:
                where, params = condition, [sid] * condition.count("?")
            (count,) = self._conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE {where}", params
            ).fetchone()
            counts[artifact] = int(count)
        # A scope's pending rows are one range of the table's key.
        pending_where = "1 = 1" if scope is None else "scope_id = ?"
        if scope is None or sid is not None:
            (pending,) = self._conn.execute(
                _PENDING_COUNT.format(where=pending_where), [sid] * pending_where.count("?")
            ).fetchone()
            counts["search_posting"] += int(pending)
        return counts

    def held_scopes(self, tenant_id: str | None, owner_id: str | None) -> list[ScopeKey]:
        where, params = "", []
        for column, value in (("tenant_id", tenant_id), ("owner_id", owner_id)):
            if value is not None:
                where += f" AND s.{column} = ?"
                params.append(value)
        rows = self._conn.execute(
            "SELECT s.tenant_id, s.owner_id, s.subject_id FROM scopes s "
            "WHERE (EXISTS (SELECT 1 FROM memories m INDEXED BY memories_by_id "
            "WHERE m.scope_id = s.scope_id) OR EXISTS (SELECT 1 FROM raw_events e "
            f"WHERE e.scope_id = s.scope_id)){where} "
            "ORDER BY s.tenant_id, s.owner_id, s.subject_id",
            params,
        ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def count_memories(self, scope: ScopeKey | None) -> list[tuple[object, object, int]]:
        where, params = "", []
        if scope is not None:
            sid = self._scope_id(scope)
            if sid is None:
                return []
            where, params = " WHERE scope_id = ?", [sid]
        # The recall index holds scope, status and kind: the count never reads a row.
        return [
            (status, kind, int(count))
            for status, kind, count in self._conn.execute(
                "SELECT status, kind, COUNT(*) FROM memories INDEXED BY memories_recall_clear"
                f"{where} GROUP BY status, kind",
                params,
            )
        ]

    def removal_counts(self, scope: ScopeKey, memory_ids: Sequence[str]) -> dict[str, int]:
        sid = self._scope_id(scope)
        found = dict.fromkeys(
            ("memory", "lineage_edge", "claim", "search_entry", "search_term", "vector"), 0
        )
        if sid is None or not memory_ids:
            return found
        ids = list(memory_ids)
        rids = [
            r[0]
            for r in self._in_chunks(
                "SELECT rid FROM memories WHERE scope_id = ? AND memory_id IN ({marks})", [sid], ids
            )
        ]
        found["memory"] = len(rids)
        for artifact, sql in (
            ("lineage_edge", "SELECT COUNT(*) FROM lineage WHERE scope_id = ? AND memory_id"),
            ("claim", "SELECT COUNT(*) FROM claims WHERE scope_id = ? AND claim_id"),
        ):
            rows = self._in_chunks(sql + " IN ({marks})", [sid], ids)
            found[artifact] = sum(int(r[0]) for r in rows)
        rows = self._in_chunks("SELECT COUNT(*) FROM search_docs WHERE doc IN ({marks})", [], rids)
        found["search_entry"] = sum(int(r[0]) for r in rows)
        rows = self._in_chunks("SELECT COUNT(*) FROM vectors WHERE doc IN ({marks})", [], rids)
        found["vector"] = sum(int(r[0]) for r in rows)
        # A term goes when every memory of the scope holding it goes with these; its
        # pending postings count with its stored document frequency.
        held = Counter(
            r[0]
            for r in self._in_chunks(
                "SELECT term_id FROM search_postings WHERE doc IN ({marks})", [], rids
            )
        )
        held.update(
            r[0]
            for r in self._in_chunks(
                f"SELECT term_id FROM ({PENDING_PAIRS}) WHERE doc IN ({{marks}})", [], rids
            )
        )
        terms = self._in_chunks(
            "SELECT term_id, df FROM search_terms WHERE term_id IN ({marks})", [], sorted(held)
        )
        # Pending rows only ever add to a term's frequency: they are read only for the
        # terms that would go by their merged postings alone.
        going = {term_id: df for term_id, df in terms if df <= held[term_id]}
        waiting: Counter[object] = Counter()
        if going:
            waiting.update(
                r[0]
                for r in self._conn.execute(
                    f"SELECT term_id FROM ({PENDING_PAIRS} WHERE x.scope_id = ?) "
                    "WHERE term_id IN (SELECT value FROM json_each(?))",
                    (sid, json.dumps(sorted(going))),
                )
            )
        found["search_term"] = sum(
            1 for term_id, df in going.items() if df + waiting[term_id] <= held[term_id]
        )
        return found

    def scope_event_ids(self, scope: ScopeKey, *, thorough: bool = True) -> list[str]:
        return self._ids("SELECT event_id FROM raw_events{} WHERE scope_id = ?", scope, thorough)

    def scope_memory_fingerprints(
        self, scope: ScopeKey, *, thorough: bool = True
    ) -> list[tuple[str, object]]:
        return self._ids(
            "SELECT memory_id, dependency_fingerprint FROM memories{} WHERE scope_id = ?",
            scope,
            thorough,
        )

    def scope_claim_ids(self, scope: ScopeKey, *, thorough: bool = True) -> list[str]:
        return self._ids("SELECT claim_id FROM claims{} WHERE scope_id = ?", scope, thorough)

    def request_rewrite(self) -> None:
        self.rewrite_requested = True

    def erase_scope(self, scope: ScopeKey, *, rewrite: bool = True) -> dict[str, int]:
        sid = self._scope_id(scope, thorough=True)
        if sid is None:
            return {artifact: 0 for artifact, _, _ in SCOPED_ROWS}
        if not rewrite:
            # Through the scope's indexes: blanks first, so that the page merges of the
            # deletions copy only blanks (``secure_delete`` zeroes the deleted cells).
            self._blank(sid)
            removed = self._delete_scope(sid)
            left = self.count_rows(scope)
            if any(left[artifact] for artifact, _, _ in SCOPED_ROWS):
                raise RepositoryCorruption(
                    "erasure incomplete: stored rows and their indexes disagree"
                )
            return removed
        terms = self._scope_terms(sid)
        removed = self._delete_scope(sid)
        left = self._table_counts(sid, terms)
        (stray,) = self._conn.execute(
            "SELECT COUNT(*) FROM search_pending NOT INDEXED WHERE scope_id = ?", (sid,)
        ).fetchone()
        if stray or any(left[artifact] for artifact, _, _ in SCOPED_ROWS):
            raise RepositoryCorruption(
                "erasure incomplete: a damaged index hides rows of the scope "
                "(rebuild the indexes, then erase again)"
            )
        # Removing many rows merges b-tree pages, which can leave stale copies of cells
        # in the pages SQLite rebuilds: the repository rewrites the file after commit.
        self.rewrite_requested = any(removed.values())
        return removed

    def rebuild_storage_indexes(self) -> int:
        names = [
            name
            for (name,) in self._conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY name"
            )
        ]
        self._conn.execute("REINDEX")
        return len(names)

    def _blank(self, sid: int) -> None:
        """Overwrite in place every body column of the scope's rows with as many blank
        bytes: each row keeps its size, so SQLite rewrites its cell where it is."""
        for table, columns in BODY_COLUMNS.items():
            condition = next(c for _, t, c in SCOPED_ROWS if t == table)
            self._conn.execute(
                f"UPDATE {table} SET {', '.join(_blanked(c) for c in columns)} WHERE {condition}",
                [sid] * condition.count("?"),
            )

    def _delete_scope(self, sid: int) -> dict[str, int]:
        """Delete every removable row of the scope; the rows removed per artifact."""
        params = [sid] * _PENDING_OF_SCOPE.count("?")
        (pending,) = self._conn.execute(
            _PENDING_COUNT.format(where=_PENDING_OF_SCOPE), params
        ).fetchone()
        self._conn.execute(f"DELETE FROM search_pending WHERE {_PENDING_OF_SCOPE}", params)
        removed = {"search_posting": int(pending)}
        for artifact, table, condition in SCOPED_ROWS:
            cursor = self._conn.execute(
                f"DELETE FROM {table} WHERE {condition}", [sid] * condition.count("?")
            )
            removed[artifact] = removed.get(artifact, 0) + cursor.rowcount
        return removed

    def _ids(self, sql: str, scope: ScopeKey, thorough: bool) -> list[Any]:
        # Erasure plans with these: read from the tables when ``thorough``, so that no
        # row a damaged index lost escapes its tombstone; else through the scope index.
        sid = self._scope_id(scope, thorough=True)
        if sid is None:
            return []
        sql = sql.format(" NOT INDEXED" if thorough else "")
        return [tuple(r) if len(r) > 1 else r[0] for r in self._conn.execute(sql, (sid,))]

    def _scope_terms(self, sid: int) -> list[int]:
        """The scope's term IDs, read from the table (not its scope index)."""
        return [
            r[0]
            for r in self._conn.execute(
                "SELECT term_id FROM search_terms NOT INDEXED WHERE scope_id = ?", (sid,)
            )
        ]

    def _table_counts(self, sid: int, terms: Sequence[int]) -> dict[str, int]:
        """Every count of :meth:`count_rows` for the scope, read from the tables: each
        table scanned for the scope's ID, and postings looked up by the primary key of
        their table for the given terms (postings have no scope column)."""
        counts: dict[str, int] = {}
        for artifact, table, _ in (*SCOPED_ROWS, *_KEPT_ROWS):
            if artifact == "search_posting":
                rows = self._in_chunks(
                    "SELECT COUNT(*) FROM search_postings WHERE term_id IN ({marks})", [], terms
                )
                (pending,) = self._conn.execute(
                    "SELECT IFNULL(SUM(json_array_length(postings)), 0) "
                    "FROM search_pending NOT INDEXED WHERE scope_id = ?",
                    (sid,),
                ).fetchone()
                counts[artifact] = sum(int(r[0]) for r in rows) + int(pending)
                continue
            name = table.split()[0]
            alias = table.split()[1] if " " in table else name
            where = f"{alias}.scope_id = ?"
            params = [sid]
            if artifact == "raw_event_with_body":
                # One pass over each table: the bodies' IDs are gathered once.
                where += (
                    f" AND {alias}.event_id IN "
                    "(SELECT event_id FROM raw_bodies NOT INDEXED WHERE scope_id = ?)"
                )
                params.append(sid)
            (count,) = self._conn.execute(
                f"SELECT COUNT(*) FROM {table} NOT INDEXED WHERE {where}", params
            ).fetchone()
            counts[artifact] = int(count)
        return counts
