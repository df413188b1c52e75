"""The PostgreSQL operations role (see ``ports.operations``): counts, whole-scope erasure,
the scope listing, and the server's own consistency check and index rebuild.

Every scoped table's primary key leads with the scope's three IDs, so a scope's rows
are one range of each table's key: the plain statements below select a scope through
those indexes. What must not rely on an index (the thorough reads of an erasure plan,
the counts of a receipt, and the deletion and check of an erasure with ``rewrite``)
runs with the planner's index, bitmap and index-only scans switched off for the
statement (:meth:`PostgresOperations._tables_only`): the server then reads the table's
heap itself, so that a row a damaged index lost is still found.

Erasure removes rows with ``DELETE``. PostgreSQL keeps a deleted row's bytes in its
heap page (and its index entries in their pages) until ``VACUUM`` prunes them, and a
TOASTed value likewise in the TOAST table: the role records in
``Session.touched_tables`` the tables an erasure deleted from and, when the erasure asks
for a rewrite, in ``meta`` (in the same transaction) that those tables are owed one, for
the repository to run after the commit (``VACUUM FULL``, which writes every live row
into new files). There is no in-place overwrite: an ``UPDATE``
writes a new version of the row and leaves the old one where it was, so blanking the
rows first would add copies instead of removing any.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from trueheart_core.adapters.postgres.schema import REWRITE_TABLES, TABLES, quote
from trueheart_core.adapters.postgres.session import (
    KEY,
    TERMS_BY_KEY,
    Role,
    dec,
    key_of,
    same_scope,
    scoped,
)
from trueheart_core.errors import RepositoryCorruption
from trueheart_core.ports import ScopeKey

SCOPED_ROWS: Sequence[tuple[str, str]] = (
    # Every table of rows that belong to a scope and that erasing the scope removes, as
    # ``(artifact, table)``, in the order of removal (the artifact names of the SQLite
    # adapter's counts). Tombstones, audit rows, the scope's own row and its vector
    # generation are kept. A new scoped table is one more line.
    ("search_posting", "search_postings"),
    ("search_term", "search_terms"),
    ("search_entry", "search_docs"),
    ("search_statistics", "search_stats"),
    ("claim", "claims"),
    ("extraction_record", "extractions"),
    ("lineage_edge", "lineage"),
    ("vector", "vectors"),
    ("memory", "memories"),
    ("raw_body", "raw_bodies"),
    ("raw_event", "raw_events"),
)

KEPT_ROWS: Sequence[tuple[str, str]] = (
    # Rows of a scope that its erasure keeps (body-free evidence): counted only.
    ("tombstone", "tombstones"),
    ("audit", "audit"),
)

KEPT_TABLES = frozenset({"scopes", "tombstones", "audit", "vector_generations"})
"""The tables with rows of a scope that erasing it keeps: the scope's own row, its
body-free evidence, and the counter of its vector rows (which must never go back)."""

_WITH_BODY = (
    "SELECT COUNT(*) FROM raw_events e WHERE {where}EXISTS (SELECT 1 FROM raw_bodies b "
    "WHERE " + same_scope("b", "e") + " AND b.event_id = e.event_id)"
)
"""Receipts that still hold a body (``raw_event_with_body``)."""

_PLANNER_INDEX_SETTINGS = ("enable_indexscan", "enable_bitmapscan", "enable_indexonlyscan")


class PostgresOperations(Role):
    """The operations role over one transaction."""

    def storage_is_consistent(self) -> bool:
        """Every receipt and memory names a scope that has its row in ``scopes`` (see
        :meth:`_scope_lost`), and the server's own check of every table and index of the
        schema passes.

        With the ``amcheck`` extension installed in the database (and this role allowed
        to run it), every heap and TOAST table is checked with ``verify_heapam`` (page
        and tuple structure, TOAST pointers), and every B-tree index of the schema and
        of its TOAST tables with ``bt_index_check(index, heapallindexed => true)``,
        which also proves that every row of the table has its index entries. Without
        it, each table is read in full by a sequential scan, which proves only that
        every heap page's header is readable. The extension is never created here
        (that needs privileges and a writable transaction; the operator or the
        repository installs it).

        ``verify_heapam`` reports damage as rows (``False`` here); ``bt_index_check``
        reports it by raising, which the repository translates into
        ``RepositoryCorruption``, as for any read of damaged storage.
        """
        if self._scope_lost() or self._foreign_rewrite():
            return False
        namespace = self._amcheck_schema()
        if namespace is None:
            for table in TABLES:
                self._s.one(f"SELECT COUNT(*) FROM {table}")
            return True
        amcheck = quote(namespace)
        tables = self._relations("r")
        (damaged,) = self._s.one(
            f"SELECT COUNT(*) FROM unnest(%s::oid[]) AS t(oid), "
            f"LATERAL {amcheck}.verify_heapam(t.oid::regclass, check_toast => true)",
            [tables + self._toast_tables(tables)],
        ) or (0,)
        if damaged:
            return False
        indexes = self._relations("i")
        self._s.one(
            f"SELECT COUNT({amcheck}.bt_index_check(i.oid::regclass, true)) "
            "FROM unnest(%s::oid[]) AS i(oid)",
            [indexes + self._toast_indexes(tables)],
        )
        return True

    def _scope_lost(self) -> bool:
        """Whether a receipt or a memory names a scope that has no row in ``scopes`` (the
        row lost, or changed behind the library's back): ``scopes()`` lists a scope by
        its row, so it would leave that one out. Every write records its scope first."""
        return any(
            self._s.one(
                f"SELECT 1 FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM scopes s WHERE "
                f"{same_scope('s', 't')}) LIMIT 1"
            )
            for table in ("raw_events", "memories")
        )

    def _foreign_rewrite(self) -> bool:
        """Whether the rewrite the store owes names a table that is not one of its own
        (``meta`` changed behind the library's back): the erasure rewrite leaves such a
        name alone, and it is damage all the same."""
        (foreign,) = self._s.one(
            "SELECT EXISTS (SELECT 1 FROM meta, unnest(rewrite_tables) AS t "
            "WHERE NOT t = ANY(%s::text[]))",
            [list(REWRITE_TABLES)],
        ) or (False,)
        return bool(foreign)

    def count_rows(self, scope: ScopeKey | None, *, from_tables: bool = False) -> dict[str, int]:
        if from_tables:
            with self._tables_only():
                return self._counts(scope)
        return self._counts(scope)

    def held_scopes(self, tenant_id: str | None, owner_id: str | None) -> list[ScopeKey]:
        where, params = "", []
        for column, value in (("tenant_id", tenant_id), ("owner_id", owner_id)):
            if value is not None:
                where += f" AND s.{column} = %s"
                params.append(value.encode("utf-8"))
        rows = self._s.all(
            f"SELECT {KEY} FROM scopes s WHERE (EXISTS (SELECT 1 FROM memories m WHERE "
            + same_scope("m", "s")
            + ") OR EXISTS (SELECT 1 FROM raw_events e WHERE "
            + same_scope("e", "s")
            + f")){where} ORDER BY {KEY}",
            params,
        )
        return [key_of(r) for r in rows]

    def count_memories(self, scope: ScopeKey | None) -> list[tuple[object, object, int]]:
        where: str = ""
        params: tuple[bytes, ...] = ()
        if scope is not None:
            where, params = f" WHERE {scoped()}", self._s.key(scope)
        # memories_recall_clear holds scope, status and kind: an index-only scan serves it.
        return [
            (status, dec(kind), int(count))
            for status, kind, count in self._s.all(
                f"SELECT status, kind, COUNT(*) FROM memories{where} GROUP BY status, kind",
                params,
            )
        ]

    def removal_counts(self, scope: ScopeKey, memory_ids: Sequence[str]) -> dict[str, int]:
        found = dict.fromkeys(
            ("memory", "lineage_edge", "claim", "search_entry", "search_term", "vector"), 0
        )
        key = self._s.key(scope)
        ids = sorted({memory_id.encode("utf-8") for memory_id in memory_ids})
        held: Counter[int] = Counter()
        artifacts = (
            ("memory", "memories", "memory_id"),
            ("lineage_edge", "lineage", "memory_id"),
            ("claim", "claims", "claim_id"),
            ("search_entry", "search_docs", "memory_id"),
            ("vector", "vectors", "memory_id"),
        )
        counts = ", ".join(
            f"(SELECT COUNT(*) FROM {table} WHERE {scoped()} AND {column} = ANY(%s))"
            for _, table, column in artifacts
        )
        for chunk in self._s.chunks(ids):
            # One round trip: the rows of each table, and the postings (read through
            # their index by memory).
            counted, postings = self._s.many(
                (
                    (f"SELECT {counts}", (*key, chunk) * len(artifacts)),
                    (
                        f"SELECT term FROM search_postings WHERE {scoped()} "
                        "AND memory_id = ANY(%s)",
                        (*key, chunk),
                    ),
                )
            )
            for (artifact, _, _), count in zip(artifacts, counted[0], strict=True):
                found[artifact] += int(count)
            held.update(int(term) for (term,) in postings)
        # A term goes when every memory of the scope that holds it goes with these.
        for chunk in self._s.chunks(sorted(held)):
            for term, df in self._s.all(TERMS_BY_KEY, (chunk, *key)):
                if int(df) <= held[int(term)]:
                    found["search_term"] += 1
        return found

    def scope_event_ids(self, scope: ScopeKey, *, thorough: bool = True) -> list[str]:
        return [
            dec(r[0]) for r in self._scope_rows("SELECT event_id FROM raw_events", scope, thorough)
        ]

    def scope_memory_fingerprints(
        self, scope: ScopeKey, *, thorough: bool = True
    ) -> list[tuple[str, object]]:
        rows = self._scope_rows(
            "SELECT memory_id, dependency_fingerprint FROM memories", scope, thorough
        )
        return [(dec(r[0]), r[1]) for r in rows]

    def scope_claim_ids(self, scope: ScopeKey, *, thorough: bool = True) -> list[str]:
        return [dec(r[0]) for r in self._scope_rows("SELECT claim_id FROM claims", scope, thorough)]

    def erase_scope(self, scope: ScopeKey, *, rewrite: bool = True) -> dict[str, int]:
        """Delete the scope's rows of every table of ``SCOPED_ROWS``, one statement each.

        With ``rewrite`` the deletions and the check after them read the heaps, not the
        indexes (a damaged index cannot hide a row from either), and the repository is
        asked to rewrite the touched tables after the commit (``VACUUM FULL``). Without
        it, rows are found through the scope's key and checked the same way; the removed
        row versions stay in their pages until the server's own vacuum prunes them
        (which leaves their bytes in free page space until it is reused) or ``compact``
        rewrites the tables (see the PostgreSQL erasure tests for what is measured).
        A rewrite needs the role that owns the tables: without it, this raises
        ``RepositoryReadOnly`` before anything is deleted.
        """
        if rewrite:
            self._s.require_owner()
            with self._tables_only():
                removed = self._delete_scope(scope)
                left = self._counts(scope)
        else:
            removed = self._delete_scope(scope)
            left = self._counts(scope)
        if any(left[artifact] for artifact, _ in SCOPED_ROWS):
            raise RepositoryCorruption(
                "erasure incomplete: stored rows and their indexes disagree"
                + (" (rebuild the indexes, then erase again)" if not rewrite else "")
            )
        touched = {table for artifact, table in SCOPED_ROWS if removed[artifact]}
        self._s.touched_tables |= touched
        if rewrite and touched:
            self._s.owe_rewrite(self._s.touched_tables)
        return removed

    def request_rewrite(self) -> None:
        self._s.require_owner()
        self._s.owe_rewrite(REWRITE_TABLES)

    def rebuild_storage_indexes(self) -> int:
        """``REINDEX TABLE`` each table of the schema (its TOAST table's index with it);
        the number of indexes rebuilt."""
        tables = self._relations("r")
        count = len(self._relations("i")) + len(self._toast_indexes(tables))
        for table in TABLES:
            self._s.execute(f"REINDEX TABLE {table}")
        return count

    # --- helpers ----------------------------------------------------------------------

    @contextmanager
    def _tables_only(self) -> Iterator[None]:
        """Within the block, plan every statement without index scans (each table is
        read by a sequential scan of its heap); the settings are put back after it. On
        an error the transaction is rolled back, which undoes the settings too."""
        settings = ", ".join(f"current_setting('{name}')" for name in _PLANNER_INDEX_SETTINGS)
        before = self._s.one(f"SELECT {settings}") or ()
        self._configure(dict.fromkeys(_PLANNER_INDEX_SETTINGS, "off"))
        yield
        self._configure(dict(zip(_PLANNER_INDEX_SETTINGS, before, strict=True)))

    def _configure(self, values: dict[str, object]) -> None:
        """Set planner settings for the rest of the transaction (``SET LOCAL``)."""
        calls = ", ".join("set_config(%s, %s, true)" for _ in values)
        params: list[object] = []
        for name, value in values.items():
            params += [name, str(value)]
        self._s.one(f"SELECT {calls}", params)

    def _counts(self, scope: ScopeKey | None) -> dict[str, int]:
        """Every count of :meth:`count_rows` with the planner settings in force."""
        where = "" if scope is None else f"WHERE {scoped()}"
        params: tuple[bytes, ...] = () if scope is None else self._s.key(scope)
        counts: dict[str, int] = {}
        for artifact, table in (*SCOPED_ROWS, *KEPT_ROWS):
            (count,) = self._s.one(f"SELECT COUNT(*) FROM {table} {where}", params) or (0,)
            counts[artifact] = int(count)
        with_body = _WITH_BODY.format(where="" if scope is None else f"{scoped('e')} AND ")
        (count,) = self._s.one(with_body, params) or (0,)
        counts["raw_event_with_body"] = int(count)
        return counts

    def _delete_scope(self, scope: ScopeKey) -> dict[str, int]:
        """Delete every removable row of the scope; the rows removed per artifact."""
        key = self._s.key(scope)
        return {
            artifact: max(self._s.execute(f"DELETE FROM {table} WHERE {scoped()}", key).rowcount, 0)
            for artifact, table in SCOPED_ROWS
        }

    def _scope_rows(self, select: str, scope: ScopeKey, thorough: bool) -> list[tuple[Any, ...]]:
        """The rows of ``select`` of the exact scope, read from the heap when
        ``thorough`` (erasure plans with these, so that no row a damaged index lost
        escapes its tombstone), else through the scope's key."""
        sql, key = f"{select} WHERE {scoped()}", self._s.key(scope)
        if thorough:
            with self._tables_only():
                return self._s.all(sql, key)
        return self._s.all(sql, key)

    def _relations(self, kind: str) -> list[int]:
        """The OIDs of the schema's tables (``kind`` ``r``) or of their indexes (``i``),
        in name order. Our schema is the first of the search path, where every role's
        unqualified names resolve."""
        if kind == "r":
            sql = (
                "SELECT c.oid FROM pg_class c "
                "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' "
                "AND c.relname = ANY(%s) ORDER BY c.relname"
            )
        else:
            sql = (
                "SELECT i.indexrelid FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
                "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' "
                "AND c.relname = ANY(%s) ORDER BY i.indexrelid::regclass::text"
            )
        return [int(r[0]) for r in self._s.all(sql, [list(TABLES)])]

    def _toast_tables(self, tables: list[int]) -> list[int]:
        return [
            int(r[0])
            for r in self._s.all(
                "SELECT reltoastrelid FROM pg_class WHERE oid = ANY(%s::oid[]) "
                "AND reltoastrelid <> 0 ORDER BY reltoastrelid",
                [tables],
            )
        ]

    def _toast_indexes(self, tables: list[int]) -> list[int]:
        return [
            int(r[0])
            for r in self._s.all(
                "SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = ANY(%s::oid[]) "
                "ORDER BY i.indexrelid",
                [self._toast_tables(tables)],
            )
        ]

    def _amcheck_schema(self) -> str | None:
        """The schema of the installed ``amcheck`` extension when this role may run both
        of its checks, else ``None``."""
        row = self._s.one(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'amcheck'"
        )
        if row is None:
            return None
        namespace = str(row[0])
        amcheck = quote(namespace)
        allowed = self._s.one(
            "SELECT has_function_privilege(%s, 'EXECUTE') "
            "AND has_function_privilege(%s, 'EXECUTE')",
            (
                f"{amcheck}.bt_index_check(regclass, boolean)",
                f"{amcheck}.verify_heapam(regclass, boolean, boolean, text, bigint, bigint)",
            ),
        )
        return namespace if allowed is not None and allowed[0] else None
