"""The SQLite operations role (see ``ports.operations``): statements over the unit of work's
connection, and nothing else.

Every count and every whole-scope erasure reads through the scope's own indexes, so it
costs what the scope holds. The rows of the kept tables (see ``schema``) are erased in
place; the rest (lineage edges, extraction records, the merged and pending search rows)
hold no text of the host's and are deleted. A damaged index must not hide a row from an
erasure: the IDs that the scope's audit rows name are looked up by ID as well, and a
receipt or memory that is found so but not through the scope's index is erased too."""

from __future__ import annotations

from collections.abc import Sequence

from trueheart_core.adapters.sqlite import buffer
from trueheart_core.adapters.sqlite.claims import ERASE_CLAIM
from trueheart_core.adapters.sqlite.events import (
    COUNT_BODIES_WITHOUT_RECEIPT,
    ERASE_BODIES_WITHOUT_RECEIPT,
    ERASE_BODY,
    ERASE_RECEIPT,
    receipt_lost,
)
from trueheart_core.adapters.sqlite.memories import (
    ERASE_MEMORY,
    edge_probe,
    source_ids,
)
from trueheart_core.adapters.sqlite.scope_statements import (
    ARTIFACTS,
    ERASE_SCOPE,
    ERASED_TEXT,
    KEPT_TABLES,
    SCOPE_COUNTS,
    SCOPE_INDEXED,
    SCOPED_TABLES,
    STORE_COUNTS,
    STORED_ORDER,
)
from trueheart_core.adapters.sqlite.search import SQLiteSearch
from trueheart_core.adapters.sqlite.session import CHUNK, Role, Session, holds_text
from trueheart_core.adapters.sqlite.vectors import ERASE_VECTOR
from trueheart_core.errors import RepositoryCorruption
from trueheart_core.ports import ScopeKey


class SQLiteOperations(Role):
    """The operations role over one transaction."""

    def __init__(self, session: Session, search: SQLiteSearch) -> None:
        super().__init__(session)
        self._search = search
        # Set by compaction: the repository rewrites the file after the commit.
        self.rewrite_requested = False

    def storage_is_consistent(self) -> bool:
        # integrity_check also proves that every index matches its table; only its verdict
        # is kept, since its messages name pages and rows.
        if self._conn.execute("PRAGMA integrity_check(1)").fetchall() != [("ok",)]:
            return False
        # A row names its scope by the ID of the scope's row: one whose scope row is lost
        # belongs to no scope the store can name (and no call reaches it).
        if any(
            self._conn.execute(
                f"SELECT 1 FROM {table} WHERE scope_id NOT IN (SELECT scope_id FROM scopes) LIMIT 1"
            ).fetchone()
            for table in SCOPED_TABLES
        ):
            return False
        if any(self._conn.execute(sql).fetchone() for sql in STORED_ORDER):
            return False
        # An erasure overwrites a row's text in the statement that marks it erased: a
        # marked row that holds text had its mark or its text changed behind the
        # library's back, and every read and every erasure passes it by, text and all.
        return not any(
            self._conn.execute(
                f"SELECT 1 FROM {table} WHERE erased = 1 AND ("
                + " OR ".join(f"({holds_text(column)})" for column in columns)
                + ") LIMIT 1"
            ).fetchone()
            for table, columns in ERASED_TEXT.items()
        )

    def count_rows(self, scope: ScopeKey | None, *, from_tables: bool = False) -> dict[str, int]:
        if scope is None:
            return {
                artifact: int(self._conn.execute(sql).fetchone()[0])
                for artifact, sql in STORE_COUNTS.items()
            }
        sid = self._scope_id(scope, thorough=from_tables)
        if sid is None:
            return dict.fromkeys(SCOPE_COUNTS, 0)
        counts = {
            artifact: int(self._conn.execute(sql, (sid,)).fetchone()[0])
            for artifact, sql in SCOPE_COUNTS.items()
        }
        # Receipts and memories of the scope that its index lost count too: this costs
        # what the scope's audit rows hold, so it is done whether asked for or not.
        receipts, memories = self._hidden(sid)
        if receipts or memories:
            counts["raw_event"] += len(receipts)
            counts["memory"] += len(memories)
            if receipts:
                (bodies,) = self._conn.execute(
                    "SELECT COUNT(*) FROM raw_bodies WHERE erased IS NOT 1 AND rid IN "
                    f"({','.join('?' * len(receipts))})",
                    receipts,
                ).fetchone()
                counts["raw_body"] += int(bodies)
                counts["raw_event_with_body"] += int(bodies)
        if receipt_lost(self._conn, sid):
            (bodies,) = self._conn.execute(COUNT_BODIES_WITHOUT_RECEIPT, (sid,)).fetchone()
            counts["raw_body"] += int(bodies)
        return counts

    def held_scopes(self, tenant_id: str | None, owner_id: str | None) -> list[ScopeKey]:
        where, params = "", []
        for column, value in (("tenant_id", tenant_id), ("owner_id", owner_id)):
            if value is not None:
                where += f" AND s.{column} = ?"
                params.append(value)
        rows = self._conn.execute(
            "SELECT s.tenant_id, s.owner_id, s.subject_id FROM scopes s "
            "WHERE (EXISTS (SELECT 1 FROM memories m INDEXED BY memories_by_status "
            "WHERE m.scope_id = s.scope_id AND m.erased IS NOT 1) OR EXISTS (SELECT 1 "
            "FROM raw_events e INDEXED BY raw_events_by_scope "
            f"WHERE e.scope_id = s.scope_id AND e.erased IS NOT 1)){where} "
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
            where, params = " AND scope_id = ?", [sid]
        # The status index holds scope, status and kind: the count never reads a row.
        return [
            (status, kind, int(count))
            for status, kind, count in self._conn.execute(
                "SELECT status, kind, COUNT(*) FROM memories INDEXED BY memories_by_status "
                f"WHERE erased IS NOT 1{where} GROUP BY status, kind",
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
        live = self._in_chunks(
            "SELECT rid, memory_id, sources FROM memories WHERE memory_id IN ({marks}) "
            "AND scope_id = ? AND erased IS NOT 1",
            [],
            ids,
            tail=[sid],
        )
        found["memory"] = len(live)
        rids = [r[0] for r in live]
        # The edges a memory names, each counted if its row is there.
        pairs = [(event_id, r[1]) for r in live for event_id in source_ids(r[2])]
        for start in range(0, len(pairs), CHUNK):
            part = pairs[start : start + CHUNK]
            (n,) = self._conn.execute(
                edge_probe("COUNT(*)", len(part)), [*(v for pair in part for v in pair), sid]
            ).fetchone()
            found["lineage_edge"] += int(n)
        found["claim"] = sum(
            int(n)
            for (n,) in self._in_chunks(
                "SELECT COUNT(*) FROM claims WHERE claim_id IN ({marks}) AND scope_id = ? "
                "AND erased IS NOT 1",
                [],
                ids,
                tail=[sid],
            )
        )
        found["vector"] = sum(
            int(n)
            for (n,) in self._in_chunks(
                "SELECT COUNT(*) FROM vectors WHERE doc IN ({marks}) AND erased IS NOT 1", [], rids
            )
        )
        return self._index_removal(sid, ids, found)

    def _index_removal(self, sid: int, ids: list[str], found: dict[str, int]) -> dict[str, int]:
        """The search entries of these memories, and the terms that no other entry holds."""
        entries = self._search.entries(sid, ids)
        found["search_entry"] = len(entries)
        # A term goes when every entry of the scope holding it goes with these.
        held: dict[int, int] = {}
        for _, pairs in entries.values():
            for term_id, _ in pairs:
                held[term_id] = held.get(term_id, 0) + 1
        found["search_term"] = len(self._search.pending.unheld(sid, held))
        return found

    def scope_event_ids(self, scope: ScopeKey, *, thorough: bool = True) -> list[str]:
        # ``thorough`` costs nothing more here: the audit log's cross-check is always made.
        sid = self._scope_id(scope, thorough=True)
        if sid is None:
            return []
        return [
            r[0]
            for r in self._in_chunks(
                "SELECT event_id FROM raw_events WHERE rid IN ({marks})",
                [],
                self._live_rids(sid, "raw_event"),
            )
        ]

    def scope_memory_fingerprints(
        self, scope: ScopeKey, *, thorough: bool = True
    ) -> list[tuple[str, object]]:
        sid = self._scope_id(scope, thorough=True)
        if sid is None:
            return []
        return [
            (r[0], r[1])
            for r in self._in_chunks(
                "SELECT memory_id, dependency_fingerprint FROM memories WHERE rid IN ({marks})",
                [],
                self._live_rids(sid, "memory"),
            )
        ]

    def scope_claim_ids(self, scope: ScopeKey, *, thorough: bool = True) -> list[str]:
        sid = self._scope_id(scope, thorough=True)
        if sid is None:
            return []
        found = {
            r[0]
            for r in self._conn.execute(
                "SELECT claim_id FROM claims INDEXED BY claims_by_subject "
                "WHERE scope_id = ? AND erased IS NOT 1",
                (sid,),
            )
        }
        # The claim rows of every memory of the scope, found by ID.
        memory_ids = [m for m, _ in self.scope_memory_fingerprints(scope)]
        found.update(
            r[0]
            for r in self._in_chunks(
                "SELECT claim_id FROM claims WHERE claim_id IN ({marks}) AND scope_id = ? "
                "AND erased IS NOT 1",
                [],
                memory_ids,
                tail=[sid],
            )
        )
        return sorted(found)

    def request_rewrite(self) -> None:
        # Compaction: the erased rows of the kept tables go, and the file is rewritten
        # into fresh pages after the commit (deleting rows moves cells between pages;
        # the rewrite leaves no copy of them).
        self._session.forget()
        # A pending removal names its entry's terms by ID, erased ones among them, and a
        # term ID whose row goes may be handed to a new term: every scope's pending rows
        # are merged first, so that no row names an erased term once its row is gone.
        for (sid,) in self._conn.execute("SELECT DISTINCT scope_id FROM search_pending").fetchall():
            self._search.pending.merge(sid)
        for table, condition in KEPT_TABLES:
            self._conn.execute(f"DELETE FROM {table} WHERE {condition}")
        self._conn.execute("UPDATE store_state SET clean = 0 WHERE singleton = 1")
        self.rewrite_requested = True

    def erase_scope(self, scope: ScopeKey, *, rewrite: bool = True) -> dict[str, int]:
        # ``rewrite`` changes nothing here: every row is erased where it lies, which is
        # exact for this schema (see ``schema``).
        sid = self._scope_id(scope, thorough=True)
        if sid is None:
            return dict.fromkeys(ARTIFACTS, 0)
        self._session.recent = None
        receipts, memories = self._hidden(sid)
        removed = dict.fromkeys(ARTIFACTS, 0)
        before = {
            artifact: int(self._conn.execute(SCOPE_COUNTS[artifact], (sid,)).fetchone()[0])
            for artifact in ARTIFACTS
        }
        self._erase_hidden(sid, receipts, memories)
        for _, statement in ERASE_SCOPE:
            self._conn.execute(statement, (sid,))
        buffer.removed(self._session)
        # The scope's terms and pending rows went without the roles that follow them.
        self._session.forget()
        removed.update(before)
        removed["raw_event"] += len(receipts)
        removed["memory"] += len(memories)
        if receipt_lost(self._conn, sid):
            # Bodies that no receipt leads to any longer: nothing else would find them.
            removed["raw_body"] += self._conn.execute(ERASE_BODIES_WITHOUT_RECEIPT, (sid,)).rowcount
        left = {
            artifact: int(self._conn.execute(SCOPE_COUNTS[artifact], (sid,)).fetchone()[0])
            for artifact in ARTIFACTS
        }
        if any(left.values()) or any(self._hidden(sid)):
            raise RepositoryCorruption(
                "erasure incomplete: a damaged index hides rows of the scope "
                "(rebuild the indexes, then erase again)"
            )
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

    # --- the audit log's cross-check -------------------------------------------------------

    def _hidden(self, sid: int) -> tuple[list[int], list[int]]:
        """The row IDs of the scope's live receipts and memories that its scope indexes
        do not hold (see :meth:`_hidden_of`). Empty for a sound store."""
        return self._hidden_of(sid, "raw_event"), self._hidden_of(sid, "memory")

    def _live_rids(self, sid: int, entity_type: str) -> list[int]:
        """The row IDs of the scope's live rows of one kind (``raw_event`` or ``memory``):
        through its scope index, then those the index does not hold (see
        :meth:`_hidden_of`)."""
        table, _, index, _ = SCOPE_INDEXED[entity_type]
        rids = [
            r[0]
            for r in self._conn.execute(
                f"SELECT rid FROM {table} INDEXED BY {index} "
                "WHERE scope_id = ? AND erased IS NOT 1",
                (sid,),
            )
        ]
        return rids + self._hidden_of(sid, entity_type)

    def _hidden_of(self, sid: int, entity_type: str) -> list[int]:
        """The row IDs of the scope's live rows of one kind (``raw_event`` or ``memory``)
        that its scope index does not hold: the IDs its audit rows name, looked up by ID
        (each row checked to be of the scope in the table itself). The look-up is held to
        the ID index: through the scope index, which the planner would otherwise pick, a
        row that index lost would never be found."""
        table, id_column, index, by_id = SCOPE_INDEXED[entity_type]
        return [
            r[0]
            for r in self._conn.execute(
                f"SELECT x.rid FROM audit a JOIN {table} x INDEXED BY {by_id} "
                f"ON x.{id_column} = a.entity_id AND x.scope_id = a.scope_id "
                "AND x.erased IS NOT 1 "
                "WHERE a.scope_id = ?1 AND a.entity_type = ?2 "
                f"AND (SELECT t.scope_id FROM {table} t WHERE t.rid = x.rid) = ?1 "
                f"AND x.rid NOT IN (SELECT rid FROM {table} INDEXED BY {index} "
                "WHERE scope_id = ?1 AND erased IS NOT 1) GROUP BY x.rid",
                (sid, entity_type),
            )
        ]

    def _erase_hidden(self, sid: int, receipts: list[int], memories: list[int]) -> None:
        """Erase receipts and memories of the scope that its indexes lost (and what hangs
        on them), as the whole-scope statements erase the others."""
        for start in range(0, len(memories), CHUNK):
            chunk = memories[start : start + CHUNK]
            marks = ",".join("?" * len(chunk))
            self._conn.execute(
                f"UPDATE claims SET {ERASE_CLAIM} WHERE erased IS NOT 1 AND scope_id = ? AND "
                f"claim_id IN (SELECT memory_id FROM memories WHERE rid IN ({marks}))",
                [sid, *chunk],
            )
            self._conn.execute(
                f"UPDATE vectors SET {ERASE_VECTOR} WHERE erased IS NOT 1 AND doc IN ({marks})",
                chunk,
            )
            self._conn.execute(f"DELETE FROM search_postings WHERE doc IN ({marks})", chunk)
            self._conn.execute(f"DELETE FROM search_docs WHERE doc IN ({marks})", chunk)
            self._conn.execute(f"UPDATE memories SET {ERASE_MEMORY} WHERE rid IN ({marks})", chunk)
        for start in range(0, len(receipts), CHUNK):
            chunk = receipts[start : start + CHUNK]
            marks = ",".join("?" * len(chunk))
            self._conn.execute(
                f"UPDATE raw_bodies SET {ERASE_BODY} WHERE erased IS NOT 1 AND rid IN ({marks})",
                chunk,
            )
            self._conn.execute(
                f"UPDATE raw_events SET {ERASE_RECEIPT} WHERE rid IN ({marks})", chunk
            )
