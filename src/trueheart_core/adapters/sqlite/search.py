"""The SQLite search role (see ``ports.search``): statements over the unit of work's
connection, and nothing else."""

from __future__ import annotations

import json
from collections import Counter
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
PENDING_BOUND = 64
"""How many memories of a scope may wait in ``search_pending`` before the write that
reaches this many merges them into the term-keyed postings."""
PENDING_PAIRS = (
    "SELECT x.scope_id AS scope_id, x.doc AS doc, j.value ->> 0 AS term_id, "
    "j.value ->> 1 AS tf FROM search_pending x, json_each(x.postings) j"
)
"""The pending postings as rows ``(scope_id, doc, term_id, tf)``."""
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


def _pairs(text: object) -> list[tuple[int, int]]:
    """The ``(term_id, tf)`` pairs of a pending row: a JSON list of integer pairs."""
    try:
        pairs = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        pairs = None
    if not isinstance(pairs, list) or not all(
        isinstance(pair, list)
        and len(pair) == 2
        and all(type(value) is int and value > 0 for value in pair)
        for pair in pairs
    ):
        raise RepositoryCorruption("invalid search index")
    return [(pair[0], pair[1]) for pair in pairs]


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
        tables = ("search_pending", "search_postings", "search_terms", "search_docs")
        for table in (*tables, "search_stats"):
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
        # The memory's postings wait in one row of its scope; the term-keyed postings
        # and the document frequencies are changed only by a merge (see ``_merge``).
        pairs = sorted((ids[term], tf) for term, tf in doc.terms)
        self._conn.execute(
            "INSERT INTO search_pending (scope_id, doc, postings) VALUES (?, ?, ?)",
            (sid, rid, json.dumps(pairs, separators=(",", ":"))),
        )
        self._conn.execute(
            "INSERT INTO search_stats (scope_id, docs, length) VALUES (?, 1, ?) "
            "ON CONFLICT (scope_id) DO UPDATE SET docs = docs + 1, "
            "length = length + excluded.length",
            (sid, doc.length),
        )
        (waiting,) = self._conn.execute(
            "SELECT COUNT(*) FROM search_pending WHERE scope_id = ?", (sid,)
        ).fetchone()
        if waiting >= PENDING_BOUND:
            self._merge(sid)

    def _merge(self, sid: int) -> None:
        """Move every pending posting of the scope into ``search_postings`` and count it
        in its term's stored document frequency."""
        postings = sorted(
            (term_id, doc, tf) for doc, pairs in self._pending(sid) for term_id, tf in pairs
        )
        self._conn.executemany(
            "INSERT INTO search_postings (term_id, doc, tf) VALUES (?, ?, ?)", postings
        )
        added = Counter(term_id for term_id, _, _ in postings)
        self._conn.executemany(
            "UPDATE search_terms SET df = df + ? WHERE term_id = ?",
            [(count, term_id) for term_id, count in sorted(added.items())],
        )
        self._conn.execute("DELETE FROM search_pending WHERE scope_id = ?", (sid,))

    def _pending(self, sid: int, doc: int | None = None) -> list[tuple[int, list[tuple[int, int]]]]:
        """The scope's pending rows (or the one of ``doc``, whatever its scope column) as
        ``(doc, [(term_id, tf)])``; a row that is not a list of integer pairs fails
        closed."""
        if doc is None:
            rows = self._conn.execute(
                "SELECT doc, postings FROM search_pending WHERE scope_id = ?", (sid,)
            )
        else:
            rows = self._conn.execute(
                "SELECT doc, postings FROM search_pending WHERE doc = ?", (doc,)
            )
        return [(row_doc, _pairs(text)) for row_doc, text in rows]

    def _waiting(self, sid: int, term_ids: set[int]) -> dict[int, int]:
        """How many pending rows of the scope hold each of these terms (absent: none)."""
        rows = self._conn.execute(
            f"SELECT term_id FROM ({PENDING_PAIRS} WHERE x.scope_id = ?) "
            "WHERE term_id IN (SELECT value FROM json_each(?))",
            (sid, json.dumps(sorted(term_ids))),
        ).fetchall()
        return dict(Counter(term_id for (term_id,) in rows if type(term_id) is int))

    def _drop_unheld(self, sid: int, term_ids: set[int]) -> None:
        """Delete those of these terms that neither a merged nor a pending posting of
        the scope holds any longer."""
        ordered = sorted(term_ids)
        # Only a term without merged postings can be unheld: most removals find none, and
        # read no pending row.
        spent = {
            term_id
            for start in range(0, len(ordered), CHUNK)
            for (term_id,) in self._conn.execute(
                "SELECT term_id FROM search_terms WHERE df <= 0 AND term_id IN "
                f"({','.join('?' * len(ordered[start : start + CHUNK]))})",
                ordered[start : start + CHUNK],
            ).fetchall()
        }
        if not spent:
            return
        unheld = sorted(spent - set(self._waiting(sid, spent)))
        for start in range(0, len(unheld), CHUNK):
            chunk = unheld[start : start + CHUNK]
            marks = ",".join("?" * len(chunk))
            self._conn.execute(
                f"DELETE FROM search_terms WHERE df <= 0 AND term_id IN ({marks})", chunk
            )

    def unindex(self, scope: ScopeKey, memory_id: str) -> None:
        sid = self._scope_id(scope)
        rid = None if sid is None else self._memory_rid(sid, memory_id)
        if sid is None or rid is None:
            return
        found = self._conn.execute(
            "SELECT length FROM search_docs WHERE doc = ? AND scope_id = ?", (rid, sid)
        ).fetchone()
        touched = {term_id for _, pairs in self._pending(sid, rid) for term_id, _ in pairs}
        # Pending postings too are removed by memory: nothing may outlive it.
        self._conn.execute("DELETE FROM search_pending WHERE doc = ?", (rid,))
        terms_of_doc = "SELECT term_id FROM search_postings WHERE doc = ?"
        touched.update(
            term_id for (term_id,) in self._conn.execute(terms_of_doc, (rid,)).fetchall()
        )
        self._conn.execute(
            f"UPDATE search_terms SET df = df - 1 WHERE term_id IN ({terms_of_doc})", (rid,)
        )
        # Postings are removed by memory even without an entry: nothing may outlive it.
        self._conn.execute("DELETE FROM search_postings WHERE doc = ?", (rid,))
        self._drop_unheld(sid, touched)
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
        if not first:
            return {}
        # Pending postings count too: at most ``PENDING_BOUND - 1`` rows to read.
        waiting = self._waiting(sid, {term_id for term_id, _ in first.values()})
        return {term: df + waiting.get(term_id, 0) for term, (term_id, df) in first.items()}

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
        filters, extra = eligibility_filters(
            as_of, kinds, min_trust, claim_statuses, claim_kind, period=period
        )
        params: list[Any] = [p for pair in weights for p in pair]
        params.append(sid)
        branch_params = [*term.params, sid, sid, as_of, as_of, *extra]
        params += [*branch_params, *branch_params]
        params.append(window - 1)

        def branch(postings: str) -> str:
            return (
                f"SELECT p.doc AS doc, {term.sql} AS part "
                "FROM q CROSS JOIN search_terms t INDEXED BY search_terms_lookup "
                "ON t.scope_id = ? AND t.bucket = q.term & 65535 AND t.term = q.term "
                f"JOIN {postings} p ON p.term_id = t.term_id "
                "JOIN search_docs d ON d.doc = p.doc "
                f"WHERE d.scope_id = ? AND d.created_at <= ? AND d.recall_until > ?{filters}"
            )

        # CROSS JOIN keeps the query terms outermost: each term's merged postings are one
        # range of the primary key, and nothing else of the scope is read but its
        # pending rows (fewer than ``PENDING_BOUND``). A memory's postings are either
        # all merged or all pending, so each sum adds the terms of one branch.
        rows = self._conn.execute(
            f"WITH q (term, weight) AS (VALUES {values}), "
            f"w AS MATERIALIZED ({PENDING_PAIRS} WHERE x.scope_id = ?), "
            "scored AS MATERIALIZED ("
            "SELECT doc, SUM(part) AS score FROM ("
            f"{branch('search_postings')} UNION ALL {branch('w')}) "
            "GROUP BY doc) "
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
                        "WHERE p.doc = ? AND t.scope_id = ? UNION ALL "
                        f"SELECT t.term, w.tf FROM ({PENDING_PAIRS} "
                        "WHERE x.scope_id = ? AND x.doc = ?) w "
                        "JOIN search_terms t ON t.term_id = w.term_id "
                        "WHERE t.scope_id = w.scope_id ORDER BY 1",
                        (r[0], sid, sid, r[0]),
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
        # A term's document frequency is its stored (merged) one plus its pending
        # postings, which count among its postings too.
        for r in self._rows(
            f"WITH w AS MATERIALIZED (SELECT v.term_id AS term_id, COUNT(*) AS n "
            f"FROM ({PENDING_PAIRS} WHERE 1 = 1{where}) v GROUP BY v.term_id) "
            f"SELECT {SCOPE_COLUMNS}, x.term, x.df + IFNULL(w.n, 0), "
            "(SELECT COUNT(*) FROM search_postings p WHERE p.term_id = x.term_id) "
            "+ IFNULL(w.n, 0), "
            "(SELECT COUNT(*) FROM search_terms y INDEXED BY search_terms_lookup "
            "WHERE y.scope_id = x.scope_id AND y.bucket = x.bucket AND y.term = x.term "
            "AND y.term_id < x.term_id) "
            "FROM search_terms x JOIN scopes s ON s.scope_id = x.scope_id "
            f"LEFT JOIN w ON w.term_id = x.term_id WHERE 1 = 1{where} ORDER BY x.term_id",
            [*params, *params],
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
        if scope is None:
            # A posting belongs to a scope through its term; one whose term is gone
            # belongs to none, and the whole-store check counts it.
            (count,) = self._conn.execute(
                "SELECT COUNT(*) FROM search_postings p "
                "LEFT JOIN search_terms t ON t.term_id = p.term_id "
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
                "AND NOT EXISTS (SELECT 1 FROM search_docs d "
                "WHERE d.doc = p.doc AND d.scope_id = ?1)) "
                "+ (SELECT COUNT(*) FROM search_docs d INDEXED BY search_docs_by_scope "
                "JOIN search_postings p INDEXED BY search_postings_by_doc ON p.doc = d.doc "
                "LEFT JOIN search_terms t ON t.term_id = p.term_id WHERE d.scope_id = ?1 "
                "AND (t.term_id IS NULL OR t.scope_id IS NOT ?1))",
                (sid,),
            ).fetchone()
        # A pending row without its entry, or naming a term its scope lacks, is one too.
        pending = self._scope_clause(scope, "x.scope_id")
        assert pending is not None
        (waiting,) = self._conn.execute(
            f"SELECT COUNT(*) FROM search_pending x WHERE 1 = 1{pending[0]} AND (NOT EXISTS ("
            "SELECT 1 FROM search_docs d WHERE d.doc = x.doc AND d.scope_id = x.scope_id) "
            f"OR EXISTS (SELECT 1 FROM ({PENDING_PAIRS}) v WHERE v.scope_id = x.scope_id "
            "AND v.doc = x.doc AND NOT EXISTS (SELECT 1 FROM search_terms t "
            "WHERE t.term_id = v.term_id AND t.scope_id = v.scope_id)))",
            pending[1],
        ).fetchone()
        return int(count) + int(waiting)

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
