"""The SQLite search role (see ``ports.search``): statements over the unit of work's
connection, and nothing else.

Terms are stored once per scope, as the 8-byte key of their text, in a kept table (see
``schema``): a term that no memory of its scope holds any longer is overwritten in place
and marked ``erased``. A write changes the index through one pending row of its scope
(see ``pending``).

This module holds the role's writes (``index``, ``unindex``, ``clear``, the tokenizer).
Its reads are in ``search_queries`` (what a search reads) and ``search_entries`` (entries
as they are, and what verification reads), base classes of :class:`SQLiteSearch` rather
than objects it delegates to: the role stays one object, and a write (the hot path the
write benchmark measures) makes no call that one object would not make."""

from __future__ import annotations

from collections.abc import Sequence

from trueheart_core.adapters.sqlite import buffer
from trueheart_core.adapters.sqlite.migrations import key_blob
from trueheart_core.adapters.sqlite.pending import (
    ERASE_TERM,
    LARGE_ROW,
    PENDING_BOUND,
    pairs_text,
)
from trueheart_core.adapters.sqlite.search_entries import SearchEntries
from trueheart_core.errors import RepositoryCorruption
from trueheart_core.ports import ScopeKey, SearchDocRow


class SQLiteSearch(SearchEntries):
    """The search role over one transaction: the writes, over the reads it inherits."""

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
