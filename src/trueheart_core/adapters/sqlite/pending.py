"""The search index's pending changes: what a write does to the index, kept as one row of
its scope until the scope holds :data:`PENDING_BOUND` of them, and the merge that moves
them into the merged tables.

A pending row (``search_pending``: a view of the rows that wait in ``search_waiting``,
keyed by scope and memory row ID, and in the write buffer, see ``buffer``) is either an entry
that becomes searchable (``change = 1``: its filter columns and its ``(term_id, tf)``
pairs) or a merged entry that stops being searchable (``change = -1``: a copy of it).
So a write changes one page of the index: a memory made or restored adds a row, a
memory sealed adds a removal (or drops its own pending row). The merged tables
(``search_docs``, ``search_postings``, ``search_df``, ``search_stats``) change only when
a scope's rows are merged, and when an erasure removes an entry at once. Every answer
of the index is the merged tables with the scope's pending rows applied: at most
``PENDING_BOUND - 1`` rows, integers only.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trueheart_core.adapters.sqlite import buffer
from trueheart_core.adapters.sqlite.session import CHUNK, Session, blanked
from trueheart_core.errors import RepositoryCorruption

_SEARCHED_TERMS = 32
"""Up to this many terms, :meth:`PendingIndex.changes` searches each pending row's text
for each term; beyond, it parses each row once."""
LARGE_ROW = 1024
"""A memory of more distinct terms than this is merged as soon as it is written."""
PENDING_BOUND = 64
"""How many pending rows a scope may hold before the write that reaches this many merges
them into the merged tables."""
PENDING_PAIRS = (
    "SELECT x.scope_id AS scope_id, x.doc AS doc, x.change AS change, "
    "j.value ->> 0 AS term_id, j.value ->> 1 AS tf "
    "FROM search_pending x, json_each(x.postings) j"
)
"""The pending postings as rows ``(scope_id, doc, change, term_id, tf)`` (for the reads
that go through all of them: searches, counts and checks)."""
ENTRY_COLUMNS = "length, created_at, clear_until, recall_until, trust, kind"
_ENTRY_D = ", ".join(f"d.{column.strip()}" for column in ENTRY_COLUMNS.split(","))
ERASE_TERM = f"{blanked('term')}, erased = 1"


@dataclass(frozen=True, slots=True)
class Pending:
    """One pending row: its memory row ID, its change, its entry columns and postings."""

    doc: int
    change: int
    entry: tuple[Any, ...]
    pairs: tuple[tuple[int, int], ...]


def pairs_of(text: object) -> tuple[tuple[int, int], ...]:
    """The ``(term_id, tf)`` pairs of a pending row: a JSON list of integer pairs; any
    other value fails closed."""
    try:
        pairs = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        pairs = None
    if type(pairs) is not list:
        raise RepositoryCorruption("invalid search index")
    found = []
    for pair in pairs:
        if type(pair) is not list or len(pair) != 2:
            raise RepositoryCorruption("invalid search index")
        term_id, tf = pair
        if type(term_id) is not int or type(tf) is not int or term_id <= 0 or tf <= 0:
            raise RepositoryCorruption("invalid search index")
        found.append((term_id, tf))
    return tuple(found)


def pending_of(r: Sequence[Any]) -> Pending:
    """The pending row read as ``(doc, change, entry columns..., postings)``: its change
    is 1 or -1 and its postings integer pairs; any other value fails closed."""
    change = r[1]
    if type(change) is not int or change not in (1, -1):
        raise RepositoryCorruption("invalid search index")
    return Pending(r[0], change, tuple(r[2:8]), pairs_of(r[8]))


def pairs_text(pairs: Sequence[tuple[int, int]]) -> str:
    """The JSON text of integer pairs, as ``json.dumps`` writes it without spaces
    (built directly: this runs on every write)."""
    return "[" + ",".join([f"[{int(term_id)},{int(tf)}]" for term_id, tf in pairs]) + "]"


def delete_scope(session: Session, sid: int) -> None:
    """Delete every pending row of the scope ``sid``, wherever it waits."""
    session.conn.execute("DELETE FROM search_waiting WHERE scope_id = ?", (sid,))
    session.conn.execute(
        f"DELETE FROM write_buffer WHERE scope_id = ? AND {buffer.PENDING_ROW}", (sid,)
    )
    buffer.removed(session)


class PendingIndex:
    """The pending rows of the search index and their merge, over one transaction."""

    def __init__(self, session: Session) -> None:
        self._conn = session.conn
        self._session = session

    def rows(self, sid: int) -> list[Pending]:
        """Every pending row of the scope."""
        return [
            pending_of(r)
            for r in self._conn.execute(
                f"SELECT doc, change, {ENTRY_COLUMNS}, postings FROM search_pending "
                "WHERE scope_id = ?",
                (sid,),
            )
        ]

    def check_readable(self, sid: int | None) -> None:
        """Fail closed with ``RepositoryCorruption`` when a pending row of the scope (of
        the store: ``None``) is one that the statements summing pending rows cannot read:
        postings that are not JSON text (SQLite's JSON functions would stop the statement
        with a driver error) or a change that is not 1 or -1. The checks of
        ``verify_integrity`` report such a scope's index as unreadable."""
        where, params = ("", ()) if sid is None else (" AND scope_id = ?", (sid,))
        if self._conn.execute(
            "SELECT 1 FROM search_pending WHERE (typeof(postings) IS NOT 'text' "
            "OR NOT json_valid(postings) OR change IS NOT 1 AND change IS NOT -1)"
            f"{where} LIMIT 1",
            params,
        ).fetchone():
            raise RepositoryCorruption("invalid search index")

    def row(self, sid: int, doc: int) -> Pending | None:
        r = self._conn.execute(
            f"SELECT doc, change, {ENTRY_COLUMNS}, postings FROM search_pending "
            "WHERE scope_id = ? AND doc = ?",
            (sid, doc),
        ).fetchone()
        return None if r is None else pending_of(r)

    def add(
        self,
        sid: int,
        doc: int,
        change: int,
        entry: Sequence[Any],
        pairs: str,
        *,
        fresh: bool = False,
    ) -> None:
        """Append a pending row to the write buffer. ``fresh``: ``doc`` is a memory row
        this transaction has just inserted, which no pending row can hold yet; one in
        ``search_waiting`` (damage) refuses the write (in the buffer, the key of
        ``search_waiting`` refuses it when the buffer is moved)."""
        cursor = self._conn.execute(
            f"INSERT INTO write_buffer (scope_id, doc, change, {ENTRY_COLUMNS}, postings) "
            "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10"
            + (
                " WHERE NOT EXISTS (SELECT 1 FROM search_waiting WHERE scope_id = ?1 AND doc = ?2)"
                if fresh
                else ""
            ),
            (sid, doc, change, *entry, pairs),
        )
        if cursor.rowcount != 1:
            raise RepositoryCorruption("invalid search index")
        buffer.appended(self._session)
        self._counted(sid, 1, int(change < 0))

    def drop(self, sid: int, waiting: Pending) -> None:
        """Remove the scope's pending row ``waiting`` (as read in this transaction)."""
        key = (sid, waiting.doc)
        waited = self._conn.execute(
            "DELETE FROM search_waiting WHERE scope_id = ? AND doc = ?", key
        ).rowcount
        buffered = self._conn.execute(
            f"DELETE FROM write_buffer WHERE scope_id = ? AND doc = ? AND {buffer.PENDING_ROW}",
            key,
        ).rowcount
        buffer.removed(self._session, buffered)
        gone = waited + buffered
        self._counted(sid, -gone, -gone * int(waiting.change < 0))

    def count(self, sid: int) -> int:
        """How many pending rows the scope holds."""
        return self.counts(sid)[0]

    def counts(self, sid: int) -> tuple[int, int]:
        """How many pending rows the scope holds, and how many of them are removals
        (remembered from the connection's own writes, see ``Session.recall``)."""
        known = self._session.recall(("pending", sid))
        if type(known) is tuple:
            return known[0], known[1]
        waiting, removals = self._conn.execute(
            "SELECT COUNT(*), IFNULL(SUM(change < 0), 0) FROM search_pending WHERE scope_id = ?",
            (sid,),
        ).fetchone()
        self._session.remember(("pending", sid), (int(waiting), int(removals)))
        return int(waiting), int(removals)

    def _counted(self, sid: int, rows: int, removals: int) -> None:
        known = self._session.recall(("pending", sid))
        if type(known) is tuple:
            self._session.remember(("pending", sid), (known[0] + rows, known[1] + removals))

    def changes(self, sid: int, term_ids: Sequence[int]) -> Counter[int]:
        """The net change the scope's pending rows make to each of these terms'
        document frequencies (absent: none). A term ``t`` is in a row's postings when
        they hold ``[t,`` (a term ID opens a pair; a frequency never does).

        For a few terms each row's text is searched once per term; for more, each row
        is parsed once (its cost follows the rows' size, not the terms times the rows'
        size: a memory of thousands of distinct words, sealed or forgotten beside
        pending rows of as many)."""
        found: Counter[int] = Counter()
        wanted = sorted(set(term_ids))
        if len(wanted) > _SEARCHED_TERMS:
            chosen = set(wanted)
            for change, postings in self._conn.execute(
                "SELECT change, postings FROM search_pending WHERE scope_id = ?", (sid,)
            ):
                if type(change) is not int:
                    continue
                for term_id, _ in pairs_of(postings):
                    if term_id in chosen:
                        found[term_id] += change
            return found
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start : start + CHUNK]
            values = ", ".join("(?, ?)" for _ in chunk)
            for term_id, change in self._conn.execute(
                f"WITH v (term_id, pattern) AS (VALUES {values}) "
                "SELECT v.term_id, x.change FROM v JOIN search_pending x "
                "ON x.scope_id = ? AND instr(x.postings, v.pattern) > 0",
                [*(value for t in chunk for value in (t, f"[{t},")), sid],
            ):
                if type(change) is int:
                    found[term_id] += change
        return found

    def live_frequencies(self, sid: int, term_ids: Sequence[int]) -> dict[int, int]:
        """Each term's document frequency with the scope's pending rows applied."""
        merged = self.merged_frequencies(term_ids)
        pending = self.changes(sid, term_ids)
        return {term_id: merged.get(term_id, 0) + pending[term_id] for term_id in term_ids}

    def unheld(
        self,
        sid: int,
        held: dict[int, int],
        removals: int | None = None,
        merged: dict[int, int] | None = None,
    ) -> set[int]:
        """Those of these terms that no entry but the ``held[t]`` given ones holds. Only
        a term whose merged frequency the scope's pending removals (``removals``, when
        the caller has counted them) could bring that low needs its pending changes
        read: a common term is settled by one look-up (none, when the caller has read
        the merged frequencies, ``merged``)."""
        if not held:
            return set()
        if merged is None:
            merged = self.merged_frequencies(list(held))
        if removals is None:
            (removals,) = self._conn.execute(
                "SELECT COUNT(*) FROM search_pending WHERE scope_id = ? AND change < 0", (sid,)
            ).fetchone()
        doubtful = [t for t, n in held.items() if merged.get(t, 0) - int(removals) <= n]
        pending = self.changes(sid, doubtful)
        return {t for t in doubtful if merged.get(t, 0) + pending[t] <= held[t]}

    def merged_frequencies(self, term_ids: Sequence[int]) -> dict[int, int]:
        found: dict[int, int] = {}
        ordered = sorted(set(term_ids))
        for start in range(0, len(ordered), CHUNK):
            chunk = ordered[start : start + CHUNK]
            marks = ",".join("?" * len(chunk))
            for term_id, df in self._conn.execute(
                f"SELECT term_id, df FROM search_df WHERE term_id IN ({marks})", chunk
            ):
                found[term_id] = df
        return found

    def merged_entry(self, doc: int) -> tuple[int, tuple[Any, ...]] | None:
        """``(scope_id, entry columns)`` of a merged entry."""
        r = self._conn.execute(
            f"SELECT scope_id, {ENTRY_COLUMNS} FROM search_docs WHERE doc = ?", (doc,)
        ).fetchone()
        return None if r is None else (r[0], tuple(r[1:]))

    def withdrawn(self, sid: int, doc: int) -> int | None:
        """Queue the removal of the merged entry ``doc`` of scope ``sid`` (a seal): its
        copy appended to the write buffer as a removal, built by SQLite from the merged
        rows in one statement. Returns how many of its terms no other entry holds, or
        None, having changed nothing, when the general path must decide: a pending row
        of ``doc`` waits, no merged entry of the scope is ``doc``, or one of its
        postings is not a pair of positive integers."""
        cursor = self._conn.execute(
            f"INSERT INTO write_buffer (scope_id, doc, change, {ENTRY_COLUMNS}, postings) "
            f"SELECT d.scope_id, d.doc, -1, {_ENTRY_D}, (SELECT json_group_array("
            "json_array(p.term_id, p.tf)) FROM search_postings p "
            "INDEXED BY search_postings_by_doc WHERE p.doc = d.doc) "
            "FROM search_docs d WHERE d.doc = ?2 AND d.scope_id = ?1 "
            "AND NOT EXISTS (SELECT 1 FROM search_pending WHERE scope_id = ?1 AND doc = ?2) "
            "AND NOT EXISTS (SELECT 1 FROM search_postings p INDEXED BY search_postings_by_doc "
            "WHERE p.doc = d.doc AND (typeof(p.term_id) IS NOT 'integer' "
            "OR typeof(p.tf) IS NOT 'integer' OR p.term_id <= 0 OR p.tf <= 0))",
            (sid, doc),
        )
        if cursor.rowcount != 1:
            return None
        buffer.appended(self._session)
        self._counted(sid, 1, 1)
        # With the removal pending, a term of the entry that no other entry holds has a
        # merged frequency the scope's removals (this one included) could bring to 0.
        _, removals = self.counts(sid)
        doubtful: dict[int, int] = dict(
            self._conn.execute(
                "SELECT p.term_id, IFNULL(f.df, 0) FROM search_postings p "
                "INDEXED BY search_postings_by_doc LEFT JOIN search_df f "
                "ON f.term_id = p.term_id WHERE p.doc = ? AND IFNULL(f.df, 0) <= ?",
                (doc, removals),
            )
        )
        if not doubtful:
            return 0
        pending = self.changes(sid, list(doubtful))
        return sum(1 for term_id, df in doubtful.items() if df + pending[term_id] <= 0)

    def merged_with_postings(
        self, doc: int
    ) -> tuple[tuple[int, tuple[Any, ...]] | None, tuple[tuple[int, int], ...], dict[int, int]]:
        """:meth:`merged_entry` of ``doc``, its :meth:`merged_pairs`, and the merged
        frequency of each of its terms (absent: none), in one statement (a seal needs
        all three)."""
        entry: tuple[int, tuple[Any, ...]] | None = None
        pairs: list[tuple[int, int]] = []
        frequencies: dict[int, int] = {}
        for r in self._conn.execute(
            f"SELECT d.scope_id, {_ENTRY_D}, p.term_id, p.tf, f.df FROM search_docs d "
            "LEFT JOIN search_postings p INDEXED BY search_postings_by_doc ON p.doc = d.doc "
            "LEFT JOIN search_df f ON f.term_id = p.term_id WHERE d.doc = ? ORDER BY p.term_id",
            (doc,),
        ):
            if entry is None:
                entry = (r[0], tuple(r[1:7]))
            term_id, tf, df = r[7:]
            if term_id is not None:
                pairs.append((term_id, tf))
                if df is not None:
                    frequencies[term_id] = df
        return entry, tuple(pairs), frequencies

    def merged_pairs(self, doc: int) -> tuple[tuple[int, int], ...]:
        return tuple(
            (term_id, tf)
            for term_id, tf in self._conn.execute(
                "SELECT term_id, tf FROM search_postings INDEXED BY search_postings_by_doc "
                "WHERE doc = ? ORDER BY term_id",
                (doc,),
            )
        )

    def merge(self, sid: int) -> None:
        """Apply every pending row of the scope to the merged tables, and remove the
        rows; a term no merged entry holds any longer goes (see :meth:`erase_unheld`)."""
        rows = self.rows(sid)
        docs = length = 0
        added: Counter[int] = Counter()
        postings: list[tuple[int, int, int]] = []
        for row in rows:
            for term_id, _ in row.pairs:
                added[term_id] += row.change
            if row.change > 0:
                postings.extend((term_id, row.doc, tf) for term_id, tf in row.pairs)
            docs += row.change
            length += row.change * int(row.entry[0])
        self._conn.executemany(
            f"INSERT INTO search_docs (doc, scope_id, {ENTRY_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(row.doc, sid, *row.entry) for row in rows if row.change > 0],
        )
        self._conn.executemany(
            "INSERT INTO search_postings (term_id, doc, tf) VALUES (?, ?, ?)", postings
        )
        removed = [(row.doc,) for row in rows if row.change <= 0]
        self._conn.executemany("DELETE FROM search_docs WHERE doc = ?", removed)
        self._conn.executemany("DELETE FROM search_postings WHERE doc = ?", removed)
        # A term that an erasure took out meanwhile (with what postings it had left) has
        # no frequency to keep, and its postings just merged go with it.
        gone = self._erased(sorted(added))
        for term_id in gone:
            del added[term_id]
        self._conn.executemany(
            "INSERT INTO search_df (term_id, df) VALUES (?, ?) "
            "ON CONFLICT (term_id) DO UPDATE SET df = df + excluded.df",
            sorted(added.items()),
        )
        self._stats(sid, docs, length)
        delete_scope(self._session, sid)
        self._session.remember(("pending", sid), (0, 0))
        # Only the terms of a removal can be left unheld: a term an addition holds has a
        # merged posting now.
        removals = {term_id for row in rows if row.change <= 0 for term_id, _ in row.pairs}
        self.erase_unheld(sid, removals | gone)

    def remove_merged(
        self,
        sid: int,
        doc: int,
        entry: Sequence[Any],
        pairs: Sequence[tuple[int, int]] | None = None,
    ) -> set[int]:
        """Remove a merged entry at once (an erasure): its postings, its share of the
        frequencies and statistics; the terms it held. ``pairs``: its
        :meth:`merged_pairs`, when the caller has read them in this transaction."""
        if pairs is None:
            pairs = self.merged_pairs(doc)
        self._conn.execute("DELETE FROM search_postings WHERE doc = ?", (doc,))
        self._conn.executemany(
            "UPDATE search_df SET df = df - 1 WHERE term_id = ?",
            [(term_id,) for term_id, _ in pairs],
        )
        self._conn.execute("DELETE FROM search_docs WHERE doc = ?", (doc,))
        self._stats(sid, -1, -int(entry[0]))
        return {term_id for term_id, _ in pairs}

    def _erased(self, term_ids: Sequence[int]) -> set[int]:
        """Those of these term IDs whose term row is erased (or missing)."""
        live: set[int] = set()
        for start in range(0, len(term_ids), CHUNK):
            chunk = list(term_ids[start : start + CHUNK])
            marks = ",".join("?" * len(chunk))
            live.update(
                r[0]
                for r in self._conn.execute(
                    f"SELECT term_id FROM search_terms WHERE term_id IN ({marks}) "
                    "AND erased IS NOT 1",
                    chunk,
                )
            )
        return set(term_ids) - live

    def _stats(self, sid: int, docs: int, length: int) -> None:
        if not docs and not length:
            return
        self._conn.execute(
            "INSERT INTO search_stats (scope_id, docs, length) VALUES (?, ?, ?) "
            "ON CONFLICT (scope_id) DO UPDATE SET docs = docs + excluded.docs, "
            "length = length + excluded.length",
            (sid, docs, length),
        )
        self._conn.execute("DELETE FROM search_stats WHERE scope_id = ? AND docs <= 0", (sid,))

    def erase_unheld(self, sid: int, term_ids: set[int]) -> int:
        """Erase those of these terms of the scope that no entry holds any longer, merged
        or pending: the term row is overwritten in place, its frequency row goes. How
        many went."""
        if not term_ids:
            return 0
        unheld = sorted(self.unheld(sid, dict.fromkeys(term_ids, 0)))
        if unheld:
            self._session.forget()  # the erased terms' IDs
        for start in range(0, len(unheld), CHUNK):
            chunk = unheld[start : start + CHUNK]
            marks = ",".join("?" * len(chunk))
            self._conn.execute(f"DELETE FROM search_df WHERE term_id IN ({marks})", chunk)
            # Postings of merged entries whose removal is pending: they go with the term.
            self._conn.execute(f"DELETE FROM search_postings WHERE term_id IN ({marks})", chunk)
            self._conn.execute(
                f"UPDATE search_terms SET {ERASE_TERM} "
                f"WHERE term_id IN ({marks}) AND scope_id = ? AND erased IS NOT 1",
                [*chunk, sid],
            )
        return len(unheld)
