"""The SQLite search role (see ``ports.search``): statements over the unit of work's
connection, and nothing else.

Terms are stored once per scope, as the 8-byte key of their text, in a kept table (see
``schema``): a term that no memory of its scope holds any longer is overwritten in place
and marked ``erased``. A write changes the index through one pending row of its scope
(see ``pending``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from trueheart_core.adapters.sql import scores
from trueheart_core.adapters.sql.expressions import (
    SQLITE,
    Param,
    bm25_term,
    created_in,
    time_order,
)
from trueheart_core.adapters.sqlite import buffer
from trueheart_core.adapters.sqlite.filters import eligibility_filters
from trueheart_core.adapters.sqlite.pending import (
    ENTRY_COLUMNS,
    ERASE_TERM,
    LARGE_ROW,
    PENDING_BOUND,
    PENDING_PAIRS,
    PendingIndex,
    pairs_text,
)
from trueheart_core.adapters.sqlite.schema import key_blob
from trueheart_core.adapters.sqlite.session import (
    CHUNK,
    SCOPE_COLUMNS,
    Role,
    Session,
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

_FETCH = 500
_LOOKUP = (
    "search_terms t INDEXED BY search_terms_lookup ON t.scope_id = ? AND t.erased IS NOT 1 "
    "AND substr(t.term, 7, 2) = substr({key}, 7, 2) AND t.term = {key}"
)
"""Terms of a scope found by key: one probe of the look-up index's two-byte bucket."""


def term_int(stored: object) -> object:
    """A stored term key as the port's integer (anything else is passed on for the
    service's checks)."""
    if isinstance(stored, bytes) and len(stored) == 8:
        return int.from_bytes(stored, "big", signed=True)
    return stored


class SQLiteSearch(Role):
    """The search role over one transaction."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.pending = PendingIndex(session)

    def tokenizer(self) -> object:
        known = self._session.recall("tokenizer")
        if type(known) is str:
            return known
        row = self._conn.execute("SELECT tokenizer FROM search_meta WHERE singleton = 1").fetchone()
        found = None if row is None else row[0]
        if type(found) is str:
            self._session.remember("tokenizer", found)
        return found

    def set_tokenizer(self, identity: str) -> None:
        self._conn.execute("DELETE FROM search_meta")
        self._conn.execute(
            "INSERT INTO search_meta (singleton, tokenizer) VALUES (1, ?)", (identity,)
        )
        self._session.remember("tokenizer", identity)

    def clear(self) -> None:
        self._session.forget()
        self._conn.execute(f"UPDATE search_terms SET {ERASE_TERM} WHERE erased IS NOT 1")
        for table in ("search_waiting", "search_postings", "search_docs", "search_df"):
            self._conn.execute(f"DELETE FROM {table}")
        self._conn.execute(f"DELETE FROM write_buffer WHERE {buffer.PENDING_ROW}")
        buffer.removed(self._session)
        self._conn.execute("DELETE FROM search_stats")

    # --- writes -----------------------------------------------------------------------

    def index(self, doc: SearchDocRow) -> None:
        sid = self._ensure_scope(doc.scope)
        # A memory row this transaction has just inserted has no entry, merged or
        # pending (its row ID is new: a pending row already holding it is damage).
        rid = None if doc.memory_id is None else self._session.take_fresh(sid, doc.memory_id)
        fresh = rid is not None
        waiting = None
        if rid is None:
            rid = None if doc.memory_id is None else self._memory_rid(sid, doc.memory_id)
            if rid is None:
                raise RepositoryCorruption("invalid search index")
            waiting = self.pending.row(sid, rid)
            if waiting is not None and waiting.change >= 0:
                raise RepositoryCorruption("invalid search index")
        ids = self._known_ids(sid, [term for term, _ in doc.terms])
        stale: set[int] = set()
        if waiting is not None:
            # A removal of the merged entry not merged yet: the entry is searchable again
            # as it stands, unless an erasure meanwhile took a term it held (the last
            # other holder forgotten while it was sealed) and that term's postings with
            # it. Then the entry is removed now and written anew.
            self.pending.drop(sid, waiting)
            if self._merged_whole(rid, doc, ids):
                return
            merged = self.pending.merged_entry(rid)
            if merged is not None:
                stale = self.pending.remove_merged(sid, rid, merged[1])
        for term, _ in doc.terms:
            if term not in ids:
                cursor = self._conn.execute(
                    "INSERT INTO search_terms (scope_id, term) VALUES (?, ?)",
                    (sid, key_blob(term)),
                )
                assert cursor.lastrowid is not None
                ids[term] = cursor.lastrowid
                self._session.remember((sid, term), cursor.lastrowid)
        entry = (doc.length, doc.created_at, doc.clear_until, doc.recall_until, doc.trust, doc.kind)
        self.pending.add(
            sid, rid, 1, entry, pairs_text(sorted((ids[t], f) for t, f in doc.terms)), fresh=fresh
        )
        # Terms of a removed stale entry that the new one does not hold (damage only).
        self.pending.erase_unheld(sid, stale)
        # A memory of many distinct words is merged at once (with the rows waiting
        # before it): no pending row holds more than ``LARGE_ROW`` pairs, so a merge
        # never moves more than its own memory's pairs and ``PENDING_BOUND`` small rows.
        if len(doc.terms) > LARGE_ROW or self.pending.count(sid) >= PENDING_BOUND:
            self.pending.merge(sid)

    def _merged_whole(self, rid: int, doc: SearchDocRow, ids: dict[int, int]) -> bool:
        """Whether the merged entry of ``rid`` still holds a posting of every term of
        ``doc`` (whose term IDs ``ids`` are), with its frequency, and no other."""
        if len(ids) != len(doc.terms):
            return False
        expected = tuple(sorted((ids[term], tf) for term, tf in doc.terms))
        return self.pending.merged_pairs(rid) == expected

    def unindex(self, scope: ScopeKey, memory_id: str, *, erasing: bool = False) -> tuple[int, int]:
        """Remove a memory's entry (see the port), and erase every term that no entry
        holds any longer. A merged entry is removed at once when ``erasing``; otherwise
        (a seal) through a pending row, and its terms wait for the merge."""
        sid = self._scope_id(scope)
        rid = None if sid is None else self._memory_rid(sid, memory_id)
        if sid is None or rid is None:
            return 0, 0
        if not erasing:
            terms = self.pending.withdrawn(sid, rid)
            if terms is not None:
                if self.pending.count(sid) >= PENDING_BOUND:
                    self.pending.merge(sid)
                return 1, terms
        waiting = self.pending.row(sid, rid)
        merged, pairs, frequencies = self.pending.merged_with_postings(rid)
        if merged is not None and merged[0] != sid:
            raise RepositoryCorruption("invalid search index")
        touched: set[int] = set()
        entries = waiting_terms = 0
        if waiting is not None:
            self.pending.drop(sid, waiting)
            touched.update(term_id for term_id, _ in waiting.pairs)
            entries = int(waiting.change > 0)
        if merged is not None and (erasing or waiting is None):
            entries = 1
            if erasing:
                touched |= self.pending.remove_merged(sid, rid, merged[1], pairs)
            else:
                # Read before the removal is pending, as ``removal_counts`` reads it; the
                # removal then adds one row (the memory has none waiting).
                rows, removals = self.pending.counts(sid)
                held = dict.fromkeys(dict(pairs), 1)
                waiting_terms = len(self.pending.unheld(sid, held, removals, frequencies))
                self.pending.add(sid, rid, -1, merged[1], pairs_text(pairs))
                if rows + 1 >= PENDING_BOUND:
                    self.pending.merge(sid)
        # The terms only this entry held go with it (those of a merged entry removed
        # by a seal wait for the merge, which erases them).
        return entries, self.pending.erase_unheld(sid, touched) + waiting_terms

    # --- reads ------------------------------------------------------------------------

    def statistics(self, scope: ScopeKey) -> tuple[int, int]:
        sid = self._scope_id(scope)
        if sid is None:
            return (0, 0)
        # A search reads the pending rows through their text (and sums their changes):
        # one it cannot read would be left out, not refused.
        self.pending.check_readable(sid)
        row = self._conn.execute(
            "SELECT IFNULL((SELECT docs FROM search_stats WHERE scope_id = ?1), 0) "
            "+ IFNULL((SELECT SUM(change) FROM search_pending WHERE scope_id = ?1), 0), "
            "IFNULL((SELECT length FROM search_stats WHERE scope_id = ?1), 0) "
            "+ IFNULL((SELECT SUM(change * length) FROM search_pending WHERE scope_id = ?1), 0)",
            (sid,),
        ).fetchone()
        return (0, 0) if row is None else (row[0], row[1])

    def term_frequencies(self, scope: ScopeKey, terms: Sequence[int]) -> dict[int, int]:
        sid = self._scope_id(scope)
        if sid is None or not terms:
            return {}
        first = self._lookup(sid, terms)
        if not first:
            return {}
        # The merged frequency with the scope's pending rows applied: at most
        # ``PENDING_BOUND - 1`` rows to read.
        live = self.pending.live_frequencies(sid, list(first.values()))
        return {term: live[term_id] for term, term_id in first.items() if live[term_id] > 0}

    def _lookup(self, sid: int, terms: Sequence[int]) -> dict[int, int]:
        """The term ID of each of these keys held in the scope (the first, should a key
        be stored twice: verification reports it)."""
        # The keys drive the join, one probe of the look-up index each: a search asks for
        # hundreds of corrections at once, most of them held by no memory.
        first: dict[int, int] = {}
        for start in range(0, len(terms), CHUNK):
            keys = {key_blob(term): term for term in terms[start : start + CHUNK]}
            values = ", ".join("(?)" for _ in keys)
            for term_id, stored in self._conn.execute(
                f"WITH k (term) AS (VALUES {values}) SELECT t.term_id, t.term "
                f"FROM k CROSS JOIN {_LOOKUP.format(key='k.term')}",
                [*keys, sid],
            ):
                key = keys[stored]
                if key not in first or term_id < first[key]:
                    first[key] = term_id
        return first

    def _known_ids(self, sid: int, terms: Sequence[int]) -> dict[int, int]:
        """The ``term_id`` of each of these term keys in the scope (absent: none yet):
        those this connection has met (see ``Session.recall``) without a look-up."""
        recall = self._session.recall
        ids: dict[int, int] = {}
        missing: list[int] = []
        for term in terms:
            known = recall((sid, term))
            if type(known) is int:
                ids[term] = known
            else:
                missing.append(term)
        if missing:
            found = self._lookup(sid, missing)
            for term, term_id in found.items():
                self._session.remember((sid, term), term_id)
            ids.update(found)
        return ids

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
        merged_term = bm25_term(
            SQLITE, "p.tf", "d.length", "t.weight", Param(k1), Param(b), Param(average_length)
        )
        pending_term = bm25_term(
            SQLITE, "w.tf", "w.length", "t.weight", Param(k1), Param(b), Param(average_length)
        )
        merged_filters, merged_extra = eligibility_filters(
            as_of, kinds, min_trust, claim_statuses, claim_kind, d="d", period=period
        )
        pending_filters, pending_extra = eligibility_filters(
            as_of, kinds, min_trust, claim_statuses, claim_kind, d="w", period=period
        )
        params: list[Any] = [p for term, weight in weights for p in (key_blob(term), weight)]
        params += [sid, sid, sid]
        params += [*merged_term.params, sid, as_of, as_of, *merged_extra]
        params += [*pending_term.params, as_of, as_of, *pending_extra]
        params += [window - 1, scores.SLACK_FACTOR]
        # CROSS JOIN keeps the query terms outermost: each term's merged postings are one
        # range of the primary key, and each posting's entry one probe (with filters the
        # planner would otherwise walk the scope's entries); besides them only the
        # scope's pending rows (fewer than ``PENDING_BOUND``) are read, and of a row only
        # the pair of each query term it holds: a term ``t`` opens a pair as ``[t,`` (the
        # test ``PendingIndex.changes`` makes), and its frequency is the integer after
        # it. A row's other pairs are never parsed, however many the memory holds. A
        # memory's postings are either all merged or all pending, so each sum adds the
        # terms of one branch; a merged entry with a pending removal is left out. Those
        # sums only cut the candidates (with slack): the terms' scores of the memories
        # kept come back one row each and are added exactly (``scores.from_parts``).
        rows = self._conn.execute(
            f"WITH q (term, weight) AS (VALUES {values}), "
            "t AS MATERIALIZED (SELECT t.term_id AS term_id, q.weight AS weight "
            f"FROM q CROSS JOIN {_LOOKUP.format(key='q.term')}), "
            "w AS MATERIALIZED (SELECT doc, length, created_at, clear_until, recall_until, "
            "trust, kind, term_id, "
            "CAST(substr(postings, at + length(term_id) + 2) AS INTEGER) AS tf FROM ("
            "SELECT x.doc AS doc, x.length AS length, "
            "x.created_at AS created_at, x.clear_until AS clear_until, "
            "x.recall_until AS recall_until, x.trust AS trust, x.kind AS kind, "
            "t.term_id AS term_id, x.postings AS postings, "
            "instr(x.postings, '[' || t.term_id || ',') AS at "
            "FROM search_pending x CROSS JOIN t "
            "WHERE x.scope_id = ? AND x.change = 1) WHERE at > 0), "
            "gone AS MATERIALIZED (SELECT doc FROM search_pending "
            "WHERE scope_id = ? AND change = -1), "
            "parts AS MATERIALIZED ("
            f"SELECT p.doc AS doc, {merged_term.sql} AS part, d.created_at AS created_at, "
            "d.clear_until AS clear_until, d.recall_until AS recall_until "
            "FROM t CROSS JOIN search_postings p ON p.term_id = t.term_id "
            "CROSS JOIN search_docs d ON d.doc = p.doc "
            "WHERE d.scope_id = ? AND d.created_at <= ? AND d.recall_until > ? "
            f"AND p.doc NOT IN gone{merged_filters} "
            f"UNION ALL SELECT w.doc, {pending_term.sql}, w.created_at, w.clear_until, "
            "w.recall_until FROM t JOIN w ON w.term_id = t.term_id "
            f"WHERE w.created_at <= ? AND w.recall_until > ?{pending_filters}), "
            "scored AS MATERIALIZED (SELECT doc, SUM(part) AS score FROM parts GROUP BY doc), "
            "kept AS MATERIALIZED (SELECT doc FROM scored WHERE score >= IFNULL("
            "(SELECT score FROM scored ORDER BY score DESC LIMIT 1 OFFSET ?) * ?, -1e308)) "
            "SELECT m.memory_id, r.part, r.created_at, r.clear_until, r.recall_until, "
            "(SELECT COUNT(*) FROM scored) "
            "FROM parts r JOIN memories m ON m.rid = r.doc WHERE r.doc IN kept",
            params,
        ).fetchall()
        if not rows:
            return 0, []
        return rows[0][5], scores.from_parts(rows, window)

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
        sid = self._scope_id(scope)
        if sid is None or limit <= 0:
            return []
        filters, extra = eligibility_filters(
            as_of, kinds, min_trust, claim_statuses, claim_kind, d="x", period=period, doc="rid"
        )
        order = time_order(newest)
        bounds = created_in(period, SQLITE)
        selected = "SELECT x.memory_id, x.created_at, x.clear_until, x.recall_until"
        eligible = (
            "x.status = 'active' AND x.erased IS NOT 1 AND x.created_at <= ? "
            f"AND x.recall_until > ?{filters} ORDER BY {order} LIMIT ?"
        )
        # The memories created in the period: a walk of the recall index in the order
        # asked, which stops at the limit (a claim among them is kept by its validity).
        rows = self._conn.execute(
            f"{selected} FROM memories x INDEXED BY memories_recall_clear "
            f"WHERE x.scope_id = ?{bounds.sql} AND {eligible}",
            [sid, *bounds.params, as_of, as_of, *extra, limit],
        ).fetchall()
        return [RecallCandidate(*row) for row in rows]

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
