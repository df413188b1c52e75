"""The reads a search makes of the SQLite search index (see ``ports.search``): the
scope's statistics, its terms' document frequencies, the candidates scored against a
query's terms, and the memories of a period; with the look-up of term keys, which the
writes share.

:class:`SearchQueries` is the base of ``search.SQLiteSearch``, inherited rather than
delegated to, so that the role stays one object over one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trueheart_core.adapters.sql import scores
from trueheart_core.adapters.sql.expressions import (
    SQLITE,
    Param,
    bm25_term,
    created_in,
    time_order,
)
from trueheart_core.adapters.sqlite.filters import eligibility_filters
from trueheart_core.adapters.sqlite.migrations import key_blob
from trueheart_core.adapters.sqlite.pending import PendingIndex
from trueheart_core.adapters.sqlite.session import CHUNK, Role, Session
from trueheart_core.ports import (
    Period,
    RecallCandidate,
    ScopeKey,
    SearchCandidate,
)

_LOOKUP = (
    "search_terms t INDEXED BY search_terms_lookup ON t.scope_id = ? AND t.erased IS NOT 1 "
    "AND substr(t.term, 7, 2) = substr({key}, 7, 2) AND t.term = {key}"
)
"""Terms of a scope found by key: one probe of the look-up index's two-byte bucket."""


class SearchQueries(Role):
    """A search's reads over one transaction, and the pending rows every side of the
    role goes through."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.pending = PendingIndex(session)

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
