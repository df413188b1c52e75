"""The SQLite search role (see ``ports.search``): statements over the unit of work's
connection, and nothing else."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from trueheart_core.adapters.sql.expressions import (
    NOT_A_CLAIM,
    SQLITE,
    Fragment,
    Param,
    bm25_term,
    claim_status,
    supersedes_at,
)
from trueheart_core.adapters.sqlite.session import (
    CHUNK,
    SCOPE_COLUMNS,
    Role,
)
from trueheart_core.errors import RepositoryCorruption
from trueheart_core.ports import (
    Period,
    ScopeKey,
    SearchCandidate,
    SearchDocRow,
    SearchStatsRow,
    SearchTermRow,
)

_FETCH = 500
_BUCKET = 0xFFFF  # the bits of a term key that the lookup index holds
_MEMORY_COLUMNS = (
    "m.memory_id, m.content, m.dependency_fingerprint, m.kind, m.trust, "
    "m.created_at, m.clear_until, m.recall_until, m.status, m.metadata, m.digest"
)


def hex_set(values: Sequence[str]) -> str:
    """Texts as one JSON parameter of their upper-case UTF-8 hex. SQLite's JSON
    functions stop at a NUL character, so text is compared through ``hex()``."""
    return json.dumps(sorted({value.encode("utf-8").hex().upper() for value in values}))


def eligibility_filters(
    as_of: int,
    kinds: Sequence[str],
    min_trust: int | None,
    claim_statuses: Sequence[str],
    claim_kind: str,
    d: str = "d",
    period: Period | None = None,
) -> tuple[str, list[Any]]:
    """``AND`` clauses over a row ``d`` that copies a memory's ``trust``, ``kind`` and
    ``created_at`` (and names it by ``doc``) for the kind, trust, claim-status and
    period filters of a search, with their parameters."""
    filters = ""
    params: list[Any] = []
    if min_trust is not None:
        filters += f" AND {d}.trust >= ?"
        params.append(min_trust)
    if kinds:
        filters += f" AND hex({d}.kind) IN (SELECT value FROM json_each(?))"
        params.append(hex_set(kinds))
    # A claim's status at as_of decides whether it is a candidate; memories of the
    # claim kind without a claim row are plain memories. The rules are the shared
    # builders'; the superseders are read through their index.
    known = supersedes_at(SQLITE, "sm.status", "sm.created_at", Param(as_of))
    superseded = Fragment(
        "EXISTS (SELECT 1 FROM claims s INDEXED BY claims_by_supersedes"
        " JOIN memories sm ON sm.memory_id = s.claim_id AND sm.scope_id = s.scope_id"
        f" WHERE s.scope_id = c.scope_id AND s.supersedes = c.claim_id AND {known.sql})",
        known.params,
    )
    status = claim_status(
        SQLITE, "c.claim_id", "c.valid_from", "c.valid_to", superseded, Param(as_of)
    )
    filters += (
        f" AND ({d}.kind IS NOT ? OR (SELECT {status.sql}"
        " FROM memories m LEFT JOIN claims c"
        f" ON c.claim_id = m.memory_id AND c.scope_id = m.scope_id WHERE m.rid = {d}.doc)"
        " IN (SELECT value FROM json_each(?)))"
    )
    params += [claim_kind, *status.params]
    params.append(json.dumps([NOT_A_CLAIM, *claim_statuses]))
    if period is not None:
        clause, extra = _in_period(period, d)
        filters += clause
        params += [claim_kind, *extra]
    return filters, params


def _in_period(period: Period, d: str) -> tuple[str, list[Any]]:
    """The clause of a period: a claim (of the claim kind, with a claim row) is in it
    when its validity overlaps it, any other memory when it was created in it."""
    start, end = period
    created, valid, params, valid_params = ["1"], ["1"], [], []
    if start is not None:
        created.append(f"{d}.created_at >= ?")
        valid.append("(c.valid_to IS NULL OR c.valid_to > ?)")
        params.append(start)
        valid_params.append(start)
    if end is not None:
        created.append(f"{d}.created_at < ?")
        valid.append("(c.valid_from IS NULL OR c.valid_from < ?)")
        params.append(end)
        valid_params.append(end)
    clause = (
        " AND (SELECT CASE WHEN c.claim_id IS NULL OR m.kind IS NOT ?"
        f" THEN {' AND '.join(created)} ELSE {' AND '.join(valid)} END"
        " FROM memories m LEFT JOIN claims c"
        f" ON c.claim_id = m.memory_id AND c.scope_id = m.scope_id WHERE m.rid = {d}.doc)"
    )
    return clause, [*params, *valid_params]


class SQLiteSearch(Role):
    """The search role over one transaction."""

    def tokenizer(self) -> object:
        row = self._conn.execute("SELECT tokenizer FROM search_meta WHERE singleton = 1").fetchone()
        return None if row is None else row[0]

    def set_tokenizer(self, identity: str) -> None:
        self._conn.execute("DELETE FROM search_meta")
        self._conn.execute(
            "INSERT INTO search_meta (singleton, tokenizer) VALUES (1, ?)", (identity,)
        )

    def clear(self) -> None:
        for table in ("search_postings", "search_terms", "search_docs", "search_stats"):
            self._conn.execute(f"DELETE FROM {table}")

    def index(self, doc: SearchDocRow) -> None:
        sid = self._ensure_scope(doc.scope)
        rid = None if doc.memory_id is None else self._memory_rid(sid, doc.memory_id)
        if rid is None:
            raise RepositoryCorruption("invalid search index")
        self._conn.execute(
            "INSERT INTO search_docs (doc, scope_id, length, created_at, clear_until, "
            "recall_until, trust, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rid,
                sid,
                doc.length,
                doc.created_at,
                doc.clear_until,
                doc.recall_until,
                doc.trust,
                doc.kind,
            ),
        )
        ids = self.term_ids(sid, [term for term, _ in doc.terms])
        for term, _ in doc.terms:
            if term not in ids:
                cursor = self._conn.execute(
                    "INSERT INTO search_terms (scope_id, bucket, term, df) VALUES (?, ?, ?, 0)",
                    (sid, term & _BUCKET, term),
                )
                assert cursor.lastrowid is not None
                ids[term] = cursor.lastrowid
        self._conn.executemany(
            "INSERT INTO search_postings (term_id, doc, tf) VALUES (?, ?, ?)",
            [(ids[term], rid, tf) for term, tf in doc.terms],
        )
        self._conn.executemany(
            "UPDATE search_terms SET df = df + 1 WHERE term_id = ?",
            [(ids[term],) for term, _ in doc.terms],
        )
        self._conn.execute(
            "INSERT INTO search_stats (scope_id, docs, length) VALUES (?, 1, ?) "
            "ON CONFLICT (scope_id) DO UPDATE SET docs = docs + 1, "
            "length = length + excluded.length",
            (sid, doc.length),
        )

    def unindex(self, scope: ScopeKey, memory_id: str) -> None:
        sid = self._scope_id(scope)
        rid = None if sid is None else self._memory_rid(sid, memory_id)
        if rid is None:
            return
        found = self._conn.execute(
            "SELECT length FROM search_docs WHERE doc = ? AND scope_id = ?", (rid, sid)
        ).fetchone()
        terms_of_doc = "SELECT term_id FROM search_postings WHERE doc = ?"
        self._conn.execute(
            f"UPDATE search_terms SET df = df - 1 WHERE term_id IN ({terms_of_doc})", (rid,)
        )
        self._conn.execute(
            f"DELETE FROM search_terms WHERE df <= 0 AND term_id IN ({terms_of_doc})", (rid,)
        )
        # Postings are removed by memory even without an entry: nothing may outlive it.
        self._conn.execute("DELETE FROM search_postings WHERE doc = ?", (rid,))
        if found is not None:
            self._conn.execute(
                "UPDATE search_stats SET docs = docs - 1, length = length - ? WHERE scope_id = ?",
                (found[0], sid),
            )
            self._conn.execute("DELETE FROM search_stats WHERE scope_id = ? AND docs <= 0", (sid,))
            self._conn.execute("DELETE FROM search_docs WHERE doc = ?", (rid,))

    def statistics(self, scope: ScopeKey) -> tuple[int, int]:
        sid = self._scope_id(scope)
        row = None
        if sid is not None:
            row = self._conn.execute(
                "SELECT docs, length FROM search_stats WHERE scope_id = ?", (sid,)
            ).fetchone()
        return (0, 0) if row is None else (row[0], row[1])

    def term_frequencies(self, scope: ScopeKey, terms: Sequence[int]) -> dict[int, int]:
        sid = self._scope_id(scope)
        if sid is None or not terms:
            return {}
        # The keys drive the join, one probe of the lookup index each: a search asks for
        # hundreds of corrections at once, most of them held by no memory.
        first: dict[int, tuple[int, int]] = {}
        for start in range(0, len(terms), CHUNK):
            chunk = list(terms[start : start + CHUNK])
            values = ", ".join("(?)" for _ in chunk)
            for term_id, term, df in self._conn.execute(
                f"WITH k (term) AS (VALUES {values}) "
                "SELECT t.term_id, t.term, t.df "
                "FROM k CROSS JOIN search_terms t INDEXED BY search_terms_lookup "
                "ON t.scope_id = ? AND t.bucket = k.term & 65535 AND t.term = k.term",
                [*chunk, sid],
            ):
                # A key stored twice is corruption (verify reports it); take the first.
                if term not in first or term_id < first[term][0]:
                    first[term] = (term_id, df)
        return {term: df for term, (_, df) in first.items()}

    def candidates(
        self,
        scope: ScopeKey,
        weights: Sequence[tuple[int, float]],
        k1: float,
        b: float,
        average_length: float,
        as_of: int,
        kinds: Sequence[str],
        min_trust: int | None,
        window: int,
        claim_statuses: Sequence[str] = (),
        claim_kind: str = "claim",
        period: Period | None = None,
    ) -> tuple[int, list[SearchCandidate]]:
        sid = self._scope_id(scope)
        if sid is None or not weights:
            return 0, []
        values = ", ".join("(?, ?)" for _ in weights)
        term = bm25_term(
            SQLITE, "p.tf", "d.length", "q.weight", Param(k1), Param(b), Param(average_length)
        )
        params: list[Any] = [p for pair in weights for p in pair]
        params += [*term.params, sid, sid, as_of, as_of]
        filters, extra = eligibility_filters(
            as_of, kinds, min_trust, claim_statuses, claim_kind, period=period
        )
        params += extra
        params.append(window - 1)
        # CROSS JOIN keeps the query terms outermost: each term's postings are one range
        # of the primary key, and nothing else of the scope is read.
        rows = self._conn.execute(
            f"WITH q (term, weight) AS (VALUES {values}), "
            "scored AS MATERIALIZED ("
            f"SELECT p.doc AS doc, SUM({term.sql}) AS score "
            "FROM q CROSS JOIN search_terms t INDEXED BY search_terms_lookup "
            "ON t.scope_id = ? AND t.bucket = q.term & 65535 AND t.term = q.term "
            "JOIN search_postings p ON p.term_id = t.term_id "
            "JOIN search_docs d ON d.doc = p.doc "
            f"WHERE d.scope_id = ? AND d.created_at <= ? AND d.recall_until > ?{filters} "
            "GROUP BY p.doc) "
            "SELECT m.memory_id, s.score, d.created_at, d.clear_until, d.recall_until, "
            "(SELECT COUNT(*) FROM scored) "
            "FROM scored s JOIN search_docs d ON d.doc = s.doc "
            "JOIN memories m ON m.rid = s.doc "
            "WHERE s.score >= IFNULL("
            "(SELECT score FROM scored ORDER BY score DESC LIMIT 1 OFFSET ?), -1e308)",
            params,
        ).fetchall()
        if not rows:
            return 0, []
        return rows[0][5], [SearchCandidate(*r[:5]) for r in rows]

    def docs_for(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[SearchDocRow]:
        sid = self._scope_id(scope)
        if sid is None or not memory_ids:
            return []
        docs: list[SearchDocRow] = []
        for start in range(0, len(memory_ids), CHUNK):
            chunk = list(memory_ids[start : start + CHUNK])
            marks = ",".join("?" * len(chunk))
            for r in self._conn.execute(
                "SELECT d.doc, m.memory_id, d.length, d.created_at, d.clear_until, "
                "d.recall_until, d.trust, d.kind FROM memories m "
                "JOIN search_docs d ON d.doc = m.rid AND d.scope_id = m.scope_id "
                f"WHERE m.scope_id = ? AND m.memory_id IN ({marks})",
                [sid, *chunk],
            ).fetchall():
                terms = tuple(
                    (t, f)
                    for t, f in self._conn.execute(
                        "SELECT t.term, p.tf FROM search_postings p "
                        "JOIN search_terms t ON t.term_id = p.term_id "
                        "WHERE p.doc = ? AND t.scope_id = ? ORDER BY t.term",
                        (r[0], sid),
                    )
                )
                docs.append(SearchDocRow(scope, r[1], r[2], r[3], r[4], r[5], r[6], r[7], terms))
        return docs

    def iter_docs(self, scope: ScopeKey | None) -> Iterator[SearchDocRow]:
        clause = self._scope_clause(scope, "d.scope_id")
        if clause is None:
            return
        where, params = clause
        for r in self._rows(
            f"SELECT {SCOPE_COLUMNS}, "
            "CASE WHEN m.scope_id = d.scope_id THEN m.memory_id END, "
            "d.length, d.created_at, d.clear_until, d.recall_until, d.trust, d.kind "
            "FROM search_docs d JOIN scopes s ON s.scope_id = d.scope_id "
            f"LEFT JOIN memories m ON m.rid = d.doc WHERE 1 = 1{where} ORDER BY d.doc",
            params,
        ):
            yield SearchDocRow((r[0], r[1], r[2]), *r[3:])

    def iter_terms(self, scope: ScopeKey | None) -> Iterator[SearchTermRow]:
        clause = self._scope_clause(scope, "x.scope_id")
        if clause is None:
            return
        where, params = clause
        for r in self._rows(
            f"SELECT {SCOPE_COLUMNS}, x.term, x.df, "
            "(SELECT COUNT(*) FROM search_postings p WHERE p.term_id = x.term_id), "
            "(SELECT COUNT(*) FROM search_terms y INDEXED BY search_terms_lookup "
            "WHERE y.scope_id = x.scope_id AND y.bucket = x.bucket AND y.term = x.term "
            "AND y.term_id < x.term_id) "
            "FROM search_terms x JOIN scopes s ON s.scope_id = x.scope_id "
            f"WHERE 1 = 1{where} ORDER BY x.term_id",
            params,
        ):
            yield SearchTermRow((r[0], r[1], r[2]), *r[3:])

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
        # A posting belongs to a scope through its term; one whose term is gone belongs
        # to none, and is counted in every check.
        clause = self._scope_clause(scope, "t.scope_id")
        if clause is None:
            return 0
        where, params = clause
        (count,) = self._conn.execute(
            "SELECT COUNT(*) FROM search_postings p "
            "LEFT JOIN search_terms t ON t.term_id = p.term_id "
            f"WHERE (t.term_id IS NULL OR (1 = 1{where} AND NOT EXISTS ("
            "SELECT 1 FROM search_docs d WHERE d.doc = p.doc AND d.scope_id = t.scope_id)))",
            params,
        ).fetchone()
        return int(count)

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

    def term_ids(self, sid: int, terms: Sequence[int]) -> dict[int, int]:
        """The ``term_id`` of each of these term keys in the scope (absent: none yet)."""
        found: dict[int, int] = {}
        for start in range(0, len(terms), CHUNK):
            chunk = list(terms[start : start + CHUNK])
            marks = ",".join("?" * len(chunk))
            wanted = sorted({t & _BUCKET for t in chunk})
            buckets = ",".join("?" * len(wanted))
            for term_id, term in self._conn.execute(
                "SELECT term_id, term FROM search_terms INDEXED BY search_terms_lookup "
                f"WHERE scope_id = ? AND bucket IN ({buckets}) AND term IN ({marks})",
                [sid, *wanted, *chunk],
            ):
                # A key stored twice is corruption (verify reports it); take the first.
                found[term] = min(term_id, found.get(term, term_id))
        return found
