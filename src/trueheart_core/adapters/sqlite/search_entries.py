"""The SQLite search index read entry by entry and whole (see ``ports.search``): the
entries of given memories, which removal counts, the vectors role and ``docs_for``
read, and the iterations and counts that verification and rebuilds go through
(``iter_docs``, ``iter_terms``, ``iter_stats``, ``orphan_postings``).

:class:`SearchEntries` is a base of ``search.SQLiteSearch``, like the
:class:`~trueheart_core.adapters.sqlite.search_queries.SearchQueries` it extends."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from trueheart_core.adapters.sqlite.pending import ENTRY_COLUMNS, PENDING_PAIRS
from trueheart_core.adapters.sqlite.search_queries import SearchQueries
from trueheart_core.adapters.sqlite.session import CHUNK, SCOPE_COLUMNS
from trueheart_core.ports import (
    ScopeKey,
    SearchDocRow,
    SearchStatsRow,
    SearchTermRow,
)

_FETCH = 500


def term_int(stored: object) -> object:
    """A stored term key as the port's integer (anything else is passed on for the
    service's checks)."""
    if isinstance(stored, bytes) and len(stored) == 8:
        return int.from_bytes(stored, "big", signed=True)
    return stored


class SearchEntries(SearchQueries):
    """The reads of stored entries, terms and statistics, as they are rather than
    scored, over one transaction."""

    def holding(self, sid: int, terms: Sequence[int], memory_ids: Sequence[str]) -> int:
        """How many of these memories of the scope have a searchable entry that holds at
        least one of these term keys."""
        term_ids = sorted(set(self._lookup(sid, terms).values()))
        if not term_ids:
            return 0
        live = self.entries(sid, memory_ids)
        return sum(1 for pairs in live.values() if any(t in term_ids for t, _ in pairs[1]))

    def entries(
        self, sid: int, memory_ids: Sequence[str]
    ) -> dict[str, tuple[tuple[Any, ...], tuple[tuple[int, int], ...]]]:
        """The searchable entry of each of these memories that has one: its entry columns
        and ``(term_id, tf)`` pairs, pending or merged."""
        found: dict[str, tuple[tuple[Any, ...], tuple[tuple[int, int], ...]]] = {}
        for start in range(0, len(memory_ids), CHUNK):
            chunk = list(memory_ids[start : start + CHUNK])
            marks = ",".join("?" * len(chunk))
            for memory_id, rid in self._conn.execute(
                "SELECT memory_id, rid FROM memories "
                f"WHERE memory_id IN ({marks}) AND scope_id = ? AND erased IS NOT 1",
                [*chunk, sid],
            ).fetchall():
                waiting = self.pending.row(sid, rid)
                if waiting is not None:
                    if waiting.change > 0:
                        found[memory_id] = (waiting.entry, waiting.pairs)
                    continue
                merged = self.pending.merged_entry(rid)
                if merged is not None and merged[0] == sid:
                    found[memory_id] = (merged[1], self.pending.merged_pairs(rid))
        return found

    def docs_for(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[SearchDocRow]:
        sid = self._scope_id(scope)
        if sid is None or not memory_ids:
            return []
        found = self.entries(sid, memory_ids)
        keys = self._keys(sorted({t for _, pairs in found.values() for t, _ in pairs}), sid)
        docs = []
        for memory_id, (entry, pairs) in found.items():
            terms = sorted((keys.get(term_id, term_id), tf) for term_id, tf in pairs)
            length, created_at, clear_until, recall_until, trust, kind = entry
            docs.append(
                SearchDocRow(
                    scope,
                    memory_id,
                    length,
                    created_at,
                    clear_until,
                    recall_until,
                    trust,
                    kind,
                    tuple(terms),
                )
            )
        return docs

    def _keys(self, term_ids: Sequence[int], sid: int) -> dict[int, Any]:
        """The key of each of these live terms of the scope."""
        found: dict[int, Any] = {}
        for start in range(0, len(term_ids), CHUNK):
            chunk = list(term_ids[start : start + CHUNK])
            marks = ",".join("?" * len(chunk))
            for term_id, term in self._conn.execute(
                # By row ID: the look-up index would walk the scope's terms instead.
                f"SELECT term_id, term FROM search_terms NOT INDEXED WHERE term_id IN ({marks}) "
                "AND scope_id = ? AND erased IS NOT 1",
                [*chunk, sid],
            ):
                found[term_id] = term_int(term)
        return found

    def iter_docs(self, scope: ScopeKey | None) -> Iterator[SearchDocRow]:
        clause = self._scope_clause(scope, "d.scope_id")
        if clause is None:
            return
        where, params = clause
        pending_where = where.replace("d.scope_id", "x.scope_id")
        # Merged entries without a pending removal, and pending additions.
        for r in self._rows(
            f"SELECT {SCOPE_COLUMNS}, CASE WHEN m.scope_id = d.scope_id "
            "AND m.erased IS NOT 1 THEN m.memory_id END, "
            f"{', '.join(f'd.{c.strip()}' for c in ENTRY_COLUMNS.split(','))} "
            "FROM search_docs d JOIN scopes s ON s.scope_id = d.scope_id "
            "LEFT JOIN memories m ON m.rid = d.doc "
            f"WHERE NOT EXISTS (SELECT 1 FROM search_pending r WHERE r.scope_id = d.scope_id "
            f"AND r.doc = d.doc AND r.change = -1){where} "
            f"UNION ALL SELECT {SCOPE_COLUMNS}, CASE WHEN m.scope_id = x.scope_id "
            "AND m.erased IS NOT 1 THEN m.memory_id END, "
            f"{', '.join(f'x.{c.strip()}' for c in ENTRY_COLUMNS.split(','))} "
            "FROM search_pending x JOIN scopes s ON s.scope_id = x.scope_id "
            f"LEFT JOIN memories m ON m.rid = x.doc WHERE x.change = 1{pending_where}",
            [*params, *params],
        ):
            yield SearchDocRow((r[0], r[1], r[2]), *r[3:])

    def iter_terms(self, scope: ScopeKey | None) -> Iterator[SearchTermRow]:
        # A term's document frequency and postings are the merged ones with the pending
        # rows applied. A term left by a pending removal alone waits for the merge that
        # erases it, and is not reported. The store is read a scope at a time, so that
        # each scope's pending changes are summed once, beside its own terms.
        if scope is not None:
            sid = self._scope_id(scope)
            if sid is not None:
                yield from self._scope_terms(sid)
            return
        for (sid,) in self._conn.execute(
            "SELECT DISTINCT scope_id FROM search_terms INDEXED BY search_terms_lookup "
            "WHERE erased IS NOT 1 ORDER BY scope_id"
        ).fetchall():
            yield from self._scope_terms(sid)

    def _scope_terms(self, sid: int) -> Iterator[SearchTermRow]:
        """:meth:`iter_terms` of one scope. Its pending changes (fewer than
        ``PENDING_BOUND`` rows) are summed by term once and looked up per term here:
        joined in the statement, they would be read again for every term."""
        self.pending.check_readable(sid)
        changes = {
            term_id: (n, least)
            for term_id, n, least in self._rows(
                "SELECT v.term_id, SUM(v.change), MIN(v.change) "
                f"FROM ({PENDING_PAIRS}) v WHERE v.scope_id = ? GROUP BY v.term_id",
                [sid],
            )
        }
        for r in self._rows(
            f"SELECT {SCOPE_COLUMNS}, x.term, IFNULL(f.df, 0), "
            "(SELECT COUNT(*) FROM search_postings p WHERE p.term_id = x.term_id), "
            "(SELECT COUNT(*) FROM search_terms y INDEXED BY search_terms_lookup "
            "WHERE y.scope_id = x.scope_id AND y.erased IS NOT 1 "
            "AND substr(y.term, 7, 2) = substr(x.term, 7, 2) AND y.term = x.term "
            "AND y.term_id < x.term_id), x.term_id "
            "FROM search_terms x JOIN scopes s ON s.scope_id = x.scope_id "
            "LEFT JOIN search_df f ON f.term_id = x.term_id "
            "WHERE x.erased IS NOT 1 AND x.scope_id = ? ORDER BY x.term_id",
            [sid],
        ):
            n, least = changes.get(r[7], (0, 0))
            # A damaged frequency (not an integer) is reported as it is stored.
            df = r[4] + n if type(r[4]) is int else r[4]
            postings = r[5] + n
            if df == 0 and postings == 0 and least < 0:
                continue
            yield SearchTermRow((r[0], r[1], r[2]), term_int(r[3]), df, postings, r[6])  # type: ignore[arg-type]

    def iter_stats(self, scope: ScopeKey | None) -> Iterator[SearchStatsRow]:
        clause = self._scope_clause(scope, "x.scope_id")
        if clause is None:
            return
        where, params = clause
        actual = (
            "SELECT scope_id, COUNT(*) AS n, SUM(length) AS total FROM search_docs x "
            f"WHERE 1 = 1{where} GROUP BY scope_id"
        )
        for r in self._rows(
            f"WITH a AS MATERIALIZED ({actual}) "
            f"SELECT {SCOPE_COLUMNS}, x.docs, x.length, IFNULL(a.n, 0), IFNULL(a.total, 0) "
            "FROM search_stats x JOIN scopes s ON s.scope_id = x.scope_id "
            f"LEFT JOIN a ON a.scope_id = x.scope_id WHERE 1 = 1{where} "
            f"UNION ALL SELECT {SCOPE_COLUMNS}, 0, 0, a.n, a.total FROM a "
            "JOIN scopes s ON s.scope_id = a.scope_id WHERE NOT EXISTS ("
            "SELECT 1 FROM search_stats t WHERE t.scope_id = a.scope_id)",
            [*params, *params],
        ):
            yield SearchStatsRow((r[0], r[1], r[2]), *r[3:])

    def orphan_postings(self, scope: ScopeKey | None) -> int:
        if scope is None:
            # A posting belongs to a scope through its term; one whose term is gone
            # belongs to none, and the whole-store check counts it.
            (count,) = self._conn.execute(
                "SELECT COUNT(*) FROM search_postings p "
                "LEFT JOIN search_terms t ON t.term_id = p.term_id AND t.erased IS NOT 1 "
                "WHERE t.term_id IS NULL OR NOT EXISTS (SELECT 1 FROM search_docs d "
                "WHERE d.doc = p.doc AND d.scope_id = t.scope_id)"
            ).fetchone()
        else:
            sid = self._scope_id(scope)
            if sid is None:
                return 0
            # Within a scope: the postings of its terms whose memory is not one of its
            # entries, and the postings of its entries whose term is gone or another
            # scope's; each read through the scope's own terms and entries.
            (count,) = self._conn.execute(
                "SELECT (SELECT COUNT(*) FROM search_terms t INDEXED BY search_terms_lookup "
                "JOIN search_postings p ON p.term_id = t.term_id WHERE t.scope_id = ?1 "
                "AND t.erased IS NOT 1 AND NOT EXISTS (SELECT 1 FROM search_docs d "
                "WHERE d.doc = p.doc AND d.scope_id = ?1)) "
                "+ (SELECT COUNT(*) FROM search_docs d INDEXED BY search_docs_by_scope "
                "JOIN search_postings p INDEXED BY search_postings_by_doc ON p.doc = d.doc "
                "LEFT JOIN search_terms t ON t.term_id = p.term_id AND t.erased IS NOT 1 "
                "WHERE d.scope_id = ?1 AND (t.term_id IS NULL OR t.scope_id IS NOT ?1))",
                (sid,),
            ).fetchone()
        # A pending addition without its memory (or with an entry merged beside it) or
        # naming a term its scope lacks, or a pending removal without its merged entry,
        # is one too (a removal may name a term an erasure took out meanwhile); and so is
        # a second pending row of one memory (the write buffer and ``search_waiting``
        # each holding one).
        pending = self._scope_clause(scope, "x.scope_id")
        assert pending is not None
        self.pending.check_readable(None if scope is None else self._scope_id(scope))
        (waiting,) = self._conn.execute(
            f"SELECT COUNT(*) FROM search_pending x WHERE 1 = 1{pending[0]} AND ("
            "(x.change = 1 AND (NOT EXISTS (SELECT 1 FROM memories m WHERE m.rid = x.doc "
            "AND m.scope_id = x.scope_id AND m.erased IS NOT 1) "
            "OR EXISTS (SELECT 1 FROM search_docs d WHERE d.doc = x.doc))) "
            "OR (x.change = -1 AND NOT EXISTS (SELECT 1 FROM search_docs d "
            "WHERE d.doc = x.doc AND d.scope_id = x.scope_id)) "
            f"OR (x.change = 1 AND EXISTS (SELECT 1 FROM ({PENDING_PAIRS}) v "
            "WHERE v.scope_id = x.scope_id AND v.doc = x.doc AND NOT EXISTS "
            "(SELECT 1 FROM search_terms t "
            "WHERE t.term_id = v.term_id AND t.scope_id = v.scope_id AND t.erased IS NOT 1))))",
            pending[1],
        ).fetchone()
        (twice,) = self._conn.execute(
            "SELECT COUNT(*) FROM (SELECT 1 FROM search_pending x "
            f"WHERE 1 = 1{pending[0]} GROUP BY x.scope_id, x.doc HAVING COUNT(*) > 1)",
            pending[1],
        ).fetchone()
        return int(count) + int(waiting) + int(twice)

    def _rows(self, sql: str, params: Sequence[Any]) -> Iterator[Sequence[Any]]:
        cursor = self._conn.execute(sql, params)
        while rows := cursor.fetchmany(_FETCH):
            yield from rows

    def _scope_clause(self, scope: ScopeKey | None, column: str) -> tuple[str, list[Any]] | None:
        """A ``WHERE`` fragment for one scope; ``None`` when the scope holds nothing."""
        if scope is None:
            return "", []
        sid = self._scope_id(scope)
        if sid is None:
            return None
        return f" AND {column} = ?", [sid]
