"""The PostgreSQL search role (see ``ports.search``): statements over the unit of
work's connection, and nothing else.

The index is four tables of one scope each row: ``search_docs`` (one entry per
searchable memory, with copies of its times, trust and kind), ``search_postings`` (one
row per term key and memory, named by the term key itself), ``search_terms`` (each
term key's document frequency) and ``search_stats`` (the scope's entry count and total
length). Every change is written where it belongs in the same statement sequence; no
change waits in a buffer, so every read sees the index as it is.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

from trueheart_core.adapters.postgres.session import (
    KEY,
    TERMS_BY_KEY,
    Role,
    Session,
    dec,
    enc,
    key_of,
    same_scope,
    scoped,
)
from trueheart_core.adapters.postgres.wire import Result
from trueheart_core.adapters.sql import scores
from trueheart_core.adapters.sql.expressions import (
    NOT_A_CLAIM,
    POSTGRESQL,
    Fragment,
    Param,
    bm25_term,
    claim_status,
    created_in,
    supersedes_at,
    time_order,
)
from trueheart_core.errors import RepositoryCorruption
from trueheart_core.ports import (
    Period,
    RecallCandidate,
    ScopeKey,
    SearchCandidate,
    SearchDocRow,
    SearchStatsRow,
    SearchTermRow,
)

SEARCH_TABLES = ("search_postings", "search_terms", "search_docs", "search_stats")
"""The tables of the search index."""


def scope_filter(session: Session, scope: ScopeKey | None, alias: str) -> tuple[str, list[Any]]:
    """A condition selecting one scope's rows of ``alias`` (``TRUE`` for the whole
    store), with its parameters (through :meth:`Session.key`, which locks the scope in a
    writing unit)."""
    if scope is None:
        return "TRUE", []
    return scoped(alias), list(session.key(scope))


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
    ``created_at`` and carries its scope and ``memory_id``, for the kind, trust,
    claim-status and period filters of a search, with their parameters.

    The claim status and the superseders that count for it are the shared builders'
    (``adapters.sql.expressions``), evaluated over the memory row and its claim row, so
    that every backend filters claims by the one definition."""
    filters = ""
    params: list[Any] = []
    if min_trust is not None:
        filters += f" AND {d}.trust >= %s"
        params.append(min_trust)
    if kinds:
        filters += f" AND {d}.kind = ANY(%s)"
        params.append(sorted({enc(kind) for kind in kinds}))
    known = supersedes_at(POSTGRESQL, "sm.status", "sm.created_at", Param(as_of))
    superseded = Fragment(
        "EXISTS (SELECT 1 FROM claims s JOIN memories sm"
        f" ON {same_scope('sm', 's')} AND sm.memory_id = s.claim_id"
        f" WHERE {same_scope('s', 'c')} AND s.supersedes = c.claim_id AND {known.sql})",
        known.params,
    )
    status = claim_status(
        POSTGRESQL, "c.claim_id", "c.valid_from", "c.valid_to", superseded, Param(as_of)
    )
    # Memories of the claim kind without a claim row are plain memories.
    filters += (
        f" AND ({d}.kind IS DISTINCT FROM %s OR (SELECT {status.sql}"
        " FROM memories m LEFT JOIN claims c"
        f" ON {same_scope('c', 'm')} AND c.claim_id = m.memory_id"
        f" WHERE {same_scope('m', d)} AND m.memory_id = {d}.memory_id)"
        " = ANY(CAST(%s AS TEXT[])))"
    )
    params += [enc(claim_kind), *status.params, [NOT_A_CLAIM, *claim_statuses]]
    if period is not None:
        clause, extra = _in_period(period, d)
        filters += clause
        params += [enc(claim_kind), *extra]
    return filters, params


def _in_period(period: Period, d: str) -> tuple[str, list[Any]]:
    """The clause of a period: a claim (of the claim kind, with a claim row) is in it
    when its validity overlaps it, any other memory when it was created in it."""
    start, end = period
    created, valid = ["TRUE"], ["TRUE"]
    params: list[Any] = []
    valid_params: list[Any] = []
    if start is not None:
        created.append(f"{d}.created_at >= %s")
        valid.append("(c.valid_to IS NULL OR c.valid_to > %s)")
        params.append(start)
        valid_params.append(start)
    if end is not None:
        created.append(f"{d}.created_at < %s")
        valid.append("(c.valid_from IS NULL OR c.valid_from < %s)")
        params.append(end)
        valid_params.append(end)
    clause = (
        " AND (SELECT CASE WHEN c.claim_id IS NULL OR m.kind IS DISTINCT FROM %s"
        f" THEN {' AND '.join(created)} ELSE {' AND '.join(valid)} END"
        " FROM memories m LEFT JOIN claims c"
        f" ON {same_scope('c', 'm')} AND c.claim_id = m.memory_id"
        f" WHERE {same_scope('m', d)} AND m.memory_id = {d}.memory_id)"
    )
    return clause, [*params, *valid_params]


def _doc(
    scope: ScopeKey,
    memory_id: str | None,
    r: Sequence[Any],
    terms: tuple[tuple[int, int], ...] = (),
) -> SearchDocRow:
    """A :class:`SearchDocRow` from the columns ``length, created_at, clear_until,
    recall_until, trust, kind`` of an entry."""
    return SearchDocRow(scope, memory_id, r[0], r[1], r[2], r[3], r[4], dec(r[5]), terms)


class PostgresSearch(Role):
    """The search role over one transaction."""

    def tokenizer(self) -> object:
        # Read with the schema version when the unit began: it changes only in a unit
        # that holds the store's lock exclusively, which no unit runs beside.
        return self._s.tokenizer

    def set_tokenizer(self, identity: str) -> None:
        # ``meta`` also holds the schema's identity and version: only the one column moves.
        self._s.write("UPDATE meta SET tokenizer = %s WHERE singleton = 1", (identity,), rows=1)
        self._s.tokenizer = identity

    def clear(self) -> None:
        # A change of every scope: no other writer may run meanwhile.
        self._s.lock_store()
        # The rows deleted here stay in the tables' files as dead row versions. A rebuild
        # the host asks for erases (what it removes may be an entry an erasure missed), so
        # the tables are owed the rewrite an erasure's are (a role that cannot run it
        # leaves it owed to the owner's next erasing call); an automatic rebuild (new
        # tokenisation rules, inside an ordinary write) replaces entries of memories
        # that are all still held, and an empty index owes nothing.
        if self._s.erasing:
            held = self._s.one(
                "SELECT " + " OR ".join(f"EXISTS (SELECT 1 FROM {t})" for t in SEARCH_TABLES)
            )
            if held is not None and held[0] is True:
                self._s.owe_rewrite(SEARCH_TABLES)
        for table in SEARCH_TABLES:
            self._s.write(f"DELETE FROM {table}")
        self._s.touched_tables.update(SEARCH_TABLES)

    def index(self, doc: SearchDocRow) -> None:
        if doc.memory_id is None:
            raise RepositoryCorruption("invalid search index")
        # One statement: the entry is made from the memory row it names (none when the
        # memory is missing), and its postings, document frequencies and statistics
        # from the entry. Term keys go in order, so that concurrent writers lock term
        # rows in one order; a key given twice fails on the primary key, as a sound
        # entry never holds one. Without the memory row it divides by zero, which fails
        # the unit (a check made by the statement, so that it can travel with COMMIT).
        pairs = sorted(doc.terms)
        self._s.write(
            "WITH e AS ("
            f"INSERT INTO search_docs ({KEY}, memory_id, length, created_at, clear_until, "
            "recall_until, trust, kind) "
            "SELECT m.tenant_id, m.owner_id, m.subject_id, m.memory_id, "
            "%s, %s, %s, %s, %s, %s "
            f"FROM memories m WHERE {scoped('m')} AND m.memory_id = %s "
            f"RETURNING {KEY}, memory_id, length), "
            "u AS (SELECT * FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS INTEGER[])) "
            "AS u (term, tf)), "
            f"posted AS (INSERT INTO search_postings ({KEY}, term, memory_id, tf) "
            "SELECT e.tenant_id, e.owner_id, e.subject_id, u.term, e.memory_id, u.tf "
            "FROM e CROSS JOIN u), "
            f"counted AS (INSERT INTO search_terms AS t ({KEY}, term, df) "
            "SELECT e.tenant_id, e.owner_id, e.subject_id, u.term, 1 FROM e CROSS JOIN u "
            f"ORDER BY u.term ON CONFLICT ({KEY}, term) DO UPDATE SET df = t.df + 1), "
            f"summed AS (INSERT INTO search_stats AS x ({KEY}, docs, length) "
            "SELECT e.tenant_id, e.owner_id, e.subject_id, 1, e.length FROM e "
            f"ON CONFLICT ({KEY}) DO UPDATE SET docs = x.docs + 1, "
            "length = x.length + excluded.length) "
            "SELECT 1 / (COUNT(*) = 1)::int FROM e",
            (
                doc.length,
                doc.created_at,
                doc.clear_until,
                doc.recall_until,
                doc.trust,
                enc(doc.kind),
                *self._s.key(doc.scope),
                enc(doc.memory_id),
                [term for term, _ in pairs],
                [tf for _, tf in pairs],
            ),
            refusal="invalid search index",
        )

    def unindex(self, scope: ScopeKey, memory_id: str) -> tuple[int, int]:
        sql, params = self._unindexing(scope, memory_id)
        row = self._s.one(sql, params)
        self._note_removal(row)
        return (0, 0) if row is None else (int(row[1]), int(row[2]))

    def discard(self, scope: ScopeKey, memory_id: str) -> None:
        """:meth:`unindex` in the unit's next round trip, for a memory's removal, which
        reports what it removed from counts read before."""
        sql, params = self._unindexing(scope, memory_id)
        self._s.defer(sql, params, self._unindexed)

    def _unindexing(self, scope: ScopeKey, memory_id: str) -> tuple[str, tuple[Any, ...]]:
        """The statement that removes a memory's entry, and its parameters; its row is
        ``(postings, entries, terms)`` removed."""
        key = self._s.key(scope)
        mid = enc(memory_id)
        # One statement, whose parts all read the snapshot before it: postings go by
        # memory even without an entry (nothing may outlive it); a term row or the
        # statistics row that would count nothing afterwards goes, any other is
        # lowered (each row is changed by one part only). The term rows are found one
        # key probe per removed posting (``held``: a lateral subquery with a limit,
        # which the planner keeps as the inner side of a loop over ``gone``) and then
        # changed by their row address: a semi-join of the scope's terms with ``gone``
        # is planned as a loop over both when the tables have no statistics yet (a new
        # store), which costs the scope's terms times the memory's. No other write can
        # change these rows meanwhile: every write of the scope holds its lock.
        return (
            "WITH gone AS ("
            f"DELETE FROM search_postings WHERE {scoped()} AND memory_id = %s RETURNING term), "
            "held AS ("
            "SELECT h.ctid AS row_address, h.df FROM gone g CROSS JOIN LATERAL ("
            f"SELECT t.ctid, t.df FROM search_terms t WHERE {scoped('t')} AND t.term = g.term "
            "LIMIT 1) h), "
            "dropped AS ("
            "DELETE FROM search_terms t "
            "WHERE t.ctid = ANY(ARRAY(SELECT row_address FROM held WHERE df <= 1)) RETURNING 1), "
            "lowered AS ("
            "UPDATE search_terms t SET df = t.df - 1 "
            "WHERE t.ctid = ANY(ARRAY(SELECT row_address FROM held WHERE df > 1))), "
            "entry AS ("
            f"DELETE FROM search_docs WHERE {scoped()} AND memory_id = %s RETURNING length), "
            "emptied AS ("
            f"DELETE FROM search_stats x WHERE {scoped('x')} AND x.docs <= 1 "
            "AND EXISTS (SELECT 1 FROM entry)), "
            "reduced AS ("
            "UPDATE search_stats x SET docs = x.docs - 1, "
            "length = x.length - (SELECT length FROM entry) "
            f"WHERE {scoped('x')} AND x.docs > 1 AND EXISTS (SELECT 1 FROM entry)) "
            "SELECT (SELECT COUNT(*) FROM gone), (SELECT COUNT(*) FROM entry), "
            "(SELECT COUNT(*) FROM dropped)",
            (*key, mid, *key, *key, mid, *key, *key),
        )

    def _unindexed(self, result: Result) -> None:
        self._note_removal(result.fetchone())

    def _note_removal(self, row: tuple[Any, ...] | None) -> None:
        """Note the tables an entry's removal changed."""
        if row is not None and row[0]:
            self._s.touched_tables.update(("search_postings", "search_terms"))
        if row is not None and row[1]:
            self._s.touched_tables.update(("search_docs", "search_stats"))

    def statistics(self, scope: ScopeKey) -> tuple[int, int]:
        row = self._s.one(
            f"SELECT docs, length FROM search_stats WHERE {scoped()}", self._s.key(scope)
        )
        return (0, 0) if row is None else (row[0], row[1])

    def term_frequencies(self, scope: ScopeKey, terms: Sequence[int]) -> dict[int, int]:
        key = self._s.key(scope)
        found: dict[int, int] = {}
        # One probe of the primary key per key: most keys asked for are held by no memory.
        for chunk in self._s.chunks(sorted(set(terms))):
            for term, df in self._s.all(TERMS_BY_KEY, (chunk, *key)):
                found[term] = df
        return found

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
        if not weights:
            return 0, []
        term = bm25_term(
            POSTGRESQL, "p.tf", "d.length", "q.weight", Param(k1), Param(b), Param(average_length)
        )
        filters, extra = eligibility_filters(
            as_of, kinds, min_trust, claim_statuses, claim_kind, period=period
        )
        key = self._s.key(scope)
        # The query terms drive the join: each term's postings are one range of the
        # primary key. A memory's running sum and list of its terms' scores, in term-key
        # order, are taken at its last term; the sums (rounded at every addition) only
        # cut the candidates, with slack, and the lists are added exactly
        # (``scores.from_groups``). The parts are read once, in one pass.
        rows = self._s.all(
            "WITH q (term, weight) AS ("
            "SELECT * FROM unnest(CAST(%s AS BIGINT[]), CAST(%s AS DOUBLE PRECISION[]))), "
            "parts AS ("
            f"SELECT d.memory_id, q.term, {term.sql} AS part, "
            "d.created_at, d.clear_until, d.recall_until "
            f"FROM q JOIN search_postings p ON {scoped('p')} AND p.term = q.term "
            f"JOIN search_docs d ON {same_scope('d', 'p')} AND d.memory_id = p.memory_id "
            f"WHERE d.created_at <= %s AND d.recall_until > %s{filters}), "
            "running AS ("
            "SELECT memory_id, created_at, clear_until, recall_until, "
            "SUM(part) OVER w AS score, array_agg(part) OVER w AS found, "
            "lead(term) OVER w AS later FROM parts "
            "WINDOW w AS (PARTITION BY memory_id ORDER BY term "
            "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)), "
            "scored AS MATERIALIZED ("
            "SELECT memory_id, score, found, created_at, clear_until, recall_until "
            "FROM running WHERE later IS NULL) "
            "SELECT s.memory_id, s.found, s.created_at, s.clear_until, s.recall_until, "
            "(SELECT COUNT(*) FROM scored) FROM scored s "
            "WHERE s.score >= COALESCE((SELECT score FROM scored "
            "ORDER BY score DESC LIMIT 1 OFFSET %s) * %s, "
            "CAST('-Infinity' AS DOUBLE PRECISION)) "
            f"AND EXISTS (SELECT 1 FROM memories m WHERE {scoped('m')} "
            "AND m.memory_id = s.memory_id)",
            (
                [t for t, _ in weights],
                [float(w) for _, w in weights],
                *term.params,
                *key,
                as_of,
                as_of,
                *extra,
                max(window - 1, 0),
                scores.SLACK_FACTOR,
                *key,
            ),
        )
        if not rows:
            return 0, []
        return rows[0][5], scores.from_groups(((dec(r[0]), *r[1:5]) for r in rows), window)

    def in_period(
        self,
        scope: ScopeKey,
        period: Period,
        as_of: int,
        kinds: Sequence[str],
        min_trust: int | None,
        claim_statuses: Sequence[str],
        newest: bool,
        limit: int,
        claim_kind: str = "claim",
    ) -> list[RecallCandidate]:
        if limit <= 0:
            return []
        key = self._s.key(scope)
        filters, extra = eligibility_filters(
            as_of, kinds, min_trust, claim_statuses, claim_kind, d="x", period=period
        )
        order = time_order(newest)
        bounds = created_in(period, POSTGRESQL)
        selected = "SELECT x.memory_id, x.created_at, x.clear_until, x.recall_until"
        eligible = (
            "x.status = 'active' AND x.created_at <= %s "
            f"AND x.recall_until > %s{filters} ORDER BY {order} LIMIT %s"
        )
        # The memories created in the period: ``memories_recall_clear`` holds this order
        # (read backwards for the oldest first), so the walk stops at the limit.
        rows = self._s.all(
            f"{selected} FROM memories x WHERE {scoped('x')}{bounds.sql} AND {eligible}",
            [*key, *bounds.params, as_of, as_of, *extra, limit],
        )
        return [RecallCandidate(dec(r[0]), *r[1:4]) for r in rows]

    def docs_for(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[SearchDocRow]:
        key = self._s.key(scope)
        docs: list[SearchDocRow] = []
        for chunk in self._s.chunks(sorted({enc(m) for m in memory_ids})):
            terms: dict[bytes, list[tuple[int, int]]] = defaultdict(list)
            for mid, term, tf in self._s.all(
                "SELECT memory_id, term, tf FROM search_postings "
                f"WHERE {scoped()} AND memory_id = ANY(%s) ORDER BY memory_id, term",
                (*key, chunk),
            ):
                terms[bytes(mid)].append((term, tf))
            for r in self._s.all(
                "SELECT d.memory_id, d.length, d.created_at, d.clear_until, d.recall_until, "
                "d.trust, d.kind FROM search_docs d "
                f"JOIN memories m ON {same_scope('m', 'd')} AND m.memory_id = d.memory_id "
                f"WHERE {scoped('d')} AND d.memory_id = ANY(%s) ORDER BY d.memory_id",
                (*key, chunk),
            ):
                docs.append(_doc(scope, dec(r[0]), r[1:], tuple(terms.get(bytes(r[0]), ()))))
        return docs

    def iter_docs(self, scope: ScopeKey | None) -> Iterator[SearchDocRow]:
        where, params = scope_filter(self._s, scope, "d")
        for r in self._s.stream(
            f"SELECT d.tenant_id, d.owner_id, d.subject_id, d.memory_id, "
            "m.memory_id IS NOT NULL, d.length, d.created_at, d.clear_until, "
            "d.recall_until, d.trust, d.kind FROM search_docs d "
            f"LEFT JOIN memories m ON {same_scope('m', 'd')} AND m.memory_id = d.memory_id "
            f"WHERE {where} ORDER BY d.tenant_id, d.owner_id, d.subject_id, d.memory_id",
            params,
        ):
            yield _doc(key_of(r), dec(r[3]) if r[4] else None, r[5:])

    def iter_terms(self, scope: ScopeKey | None) -> Iterator[SearchTermRow]:
        where, params = scope_filter(self._s, scope, "t")
        # The primary key holds each term key once per scope: no row has duplicates.
        for r in self._s.stream(
            "SELECT t.tenant_id, t.owner_id, t.subject_id, t.term, t.df, "
            "(SELECT COUNT(*) FROM search_postings p "
            f"WHERE {same_scope('p', 't')} AND p.term = t.term) "
            f"FROM search_terms t WHERE {where} "
            "ORDER BY t.tenant_id, t.owner_id, t.subject_id, t.term",
            params,
        ):
            yield SearchTermRow(key_of(r), r[3], r[4], r[5], 0)

    def iter_stats(self, scope: ScopeKey | None) -> Iterator[SearchStatsRow]:
        stored, stored_params = scope_filter(self._s, scope, "x")
        actual, actual_params = scope_filter(self._s, scope, "d")
        # Stored statistics next to recomputed ones, and recomputed ones of a scope that
        # has entries but no stored row.
        for r in self._s.stream(
            f"WITH a AS (SELECT {KEY}, COUNT(*) AS n, SUM(length) AS total "
            f"FROM search_docs d WHERE {actual} GROUP BY {KEY}), "
            f"x AS (SELECT {KEY}, docs, length FROM search_stats x WHERE {stored}) "
            "SELECT COALESCE(x.tenant_id, a.tenant_id), COALESCE(x.owner_id, a.owner_id), "
            "COALESCE(x.subject_id, a.subject_id), COALESCE(x.docs, 0), "
            "COALESCE(x.length, 0), COALESCE(a.n, 0), COALESCE(a.total, 0) "
            f"FROM x FULL JOIN a ON {same_scope('x', 'a')} ORDER BY 1, 2, 3",
            [*actual_params, *stored_params],
        ):
            yield SearchStatsRow(key_of(r), *(int(v) for v in r[3:7]))

    def orphan_postings(self, scope: ScopeKey | None) -> int:
        # A posting names its scope, its memory and its term key: it is an orphan when
        # its scope has no entry for the memory or no row for the term.
        where, params = scope_filter(self._s, scope, "p")
        row = self._s.one(
            f"SELECT COUNT(*) FROM search_postings p WHERE {where} AND ("
            f"NOT EXISTS (SELECT 1 FROM search_docs d WHERE {same_scope('d', 'p')} "
            "AND d.memory_id = p.memory_id) "
            f"OR NOT EXISTS (SELECT 1 FROM search_terms t WHERE {same_scope('t', 'p')} "
            "AND t.term = p.term))",
            params,
        )
        return 0 if row is None else int(row[0])
