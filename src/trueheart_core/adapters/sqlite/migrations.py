"""The SQLite schema's history: the statements of each version's migration.

Version ``n``'s statements take a database from version ``n - 1`` to ``n``; a new store
runs them all, from version 1 (so a new store and an upgraded one are built alike, and
the catalog check compares each with the same definitions). ``schema`` applies them and
checks the result.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

_V1: Sequence[str] = (
    """CREATE TABLE scopes (
        scope_id INTEGER PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        owner_id TEXT NOT NULL,
        subject_id TEXT NOT NULL,
        UNIQUE (tenant_id, owner_id, subject_id))""",
    """CREATE TABLE raw_events (
        rid INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        event_id TEXT NOT NULL,
        source_id, source_type, source_occurred_at, trust, source_metadata,
        content_hash, ingested_at, raw_expires_at, clear_for, recall_for,
        status, metadata, digest,
        UNIQUE (event_id, scope_id))""",
    # Expiry reads only receipts that still have a body, in deadline order.
    """CREATE INDEX raw_events_expiry ON raw_events (raw_expires_at)
        WHERE status = 'active'""",
    """CREATE TABLE raw_bodies (
        rid INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        event_id TEXT NOT NULL,
        content, digest,
        UNIQUE (event_id, scope_id))""",
    """CREATE TABLE memories (
        rid INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        memory_id TEXT NOT NULL,
        content, dependency_fingerprint, kind, trust,
        created_at, clear_until, recall_until, status, metadata, digest,
        UNIQUE (memory_id, scope_id))""",
    # Recall of fully clear memories walks this index newest first and stops at LIMIT;
    # the trailing columns let it filter without touching table rows.
    """CREATE INDEX memories_recall_clear ON memories (
        scope_id, status, created_at DESC, memory_id, clear_until, recall_until, kind)""",
    # Fading memories are those still recallable: a range on recall_until.
    """CREATE INDEX memories_recall_fade ON memories (
        scope_id, status, recall_until, clear_until, created_at, memory_id, kind)""",
    """CREATE TABLE lineage (
        scope_id INTEGER NOT NULL,
        memory_id TEXT NOT NULL,
        event_id TEXT NOT NULL,
        trust, clear_for, recall_for, digest,
        PRIMARY KEY (scope_id, memory_id, event_id)) WITHOUT ROWID""",
    "CREATE INDEX lineage_by_event ON lineage (event_id, scope_id)",
    """CREATE TABLE tombstones (
        seq INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        entity_type, entity_id, fingerprint, deleted_at, reason, digest)""",
    "CREATE INDEX tombstones_by_id ON tombstones (entity_id, scope_id, entity_type)",
    """CREATE INDEX tombstones_by_fingerprint ON tombstones (scope_id, fingerprint)
        WHERE fingerprint IS NOT NULL""",
    """CREATE TABLE audit (
        seq INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        audit_id, action, entity_type, entity_id, occurred_at, reason, metadata, digest)""",
    # Newest first by claimed time, then by write order: an index walk that stops at LIMIT.
    "CREATE INDEX audit_recent ON audit (scope_id, occurred_at DESC, seq DESC)",
)

_V2: Sequence[str] = (
    # Paged listing walks memories of a scope in memory_id order, optionally by status.
    "CREATE INDEX memories_by_id ON memories (scope_id, memory_id)",
    "CREATE INDEX memories_by_status ON memories (scope_id, status, memory_id)",
    # The lexical search index. ``tokenizer`` names the rules the index was built with;
    # an empty name means "not built yet", which is what an upgraded store starts with.
    """CREATE TABLE search_meta (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        tokenizer TEXT NOT NULL)""",
    "INSERT INTO search_meta (singleton, tokenizer) VALUES (1, '')",
    # One row per searchable (active) memory; ``doc`` is the memory's rowid. The copied
    # columns let a search filter candidates without reading memory rows.
    """CREATE TABLE search_docs (
        doc INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        length INTEGER NOT NULL,
        created_at, clear_until, recall_until, trust, kind)""",
    """CREATE TABLE search_stats (
        scope_id INTEGER PRIMARY KEY,
        docs INTEGER NOT NULL,
        length INTEGER NOT NULL)""",
    # A term is stored once per scope, as its 64-bit key, in one row of this rowid table,
    # which grows at its end; every other search row names the term by ``term_id``. The
    # lookup index holds only 16 bits of the key. SQLite can leave stale copies of cells
    # in unused page space when it reorganises a b-tree page, which happens constantly in
    # b-trees keyed in random order: keeping the key out of every such b-tree means such
    # a copy cannot tell which term it stood for once the term's row is gone.
    """CREATE TABLE search_terms (
        term_id INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        bucket INTEGER NOT NULL,
        term INTEGER NOT NULL,
        df INTEGER NOT NULL)""",
    "CREATE INDEX search_terms_lookup ON search_terms (scope_id, bucket)",
    """CREATE TABLE search_postings (
        term_id INTEGER NOT NULL,
        doc INTEGER NOT NULL,
        tf INTEGER NOT NULL,
        PRIMARY KEY (term_id, doc)) WITHOUT ROWID""",
    "CREATE INDEX search_postings_by_doc ON search_postings (doc)",
)

_V3: Sequence[str] = (
    # A claim's structured fields, next to the memory row that carries it (same ID and
    # scope). Times are integer microseconds or NULL; confidence is a REAL.
    """CREATE TABLE claims (
        rid INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        claim_id TEXT NOT NULL,
        subject, predicate, value, valid_from, valid_to, confidence, authority, supersedes,
        digest,
        subject_key INTEGER NOT NULL,
        predicate_key INTEGER NOT NULL,
        UNIQUE (claim_id, scope_id))""",
    # Subjects and predicates are body text: the index holds 64-bit hashes of them, so a
    # stale copy of an index cell (see the search terms) cannot hold their words.
    "CREATE INDEX claims_by_subject ON claims (scope_id, subject_key, predicate_key)",
    """CREATE INDEX claims_by_supersedes ON claims (scope_id, supersedes)
        WHERE supersedes IS NOT NULL""",
    # One body-free record per event ingested with extraction.
    """CREATE TABLE extractions (
        rid INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        event_id TEXT NOT NULL,
        extractor, claim_ids, spans, diagnostics, digest,
        UNIQUE (event_id, scope_id))""",
)

_V4: Sequence[str] = (
    # Registered vector spaces; the highest space_id is current. Identities are model
    # names, never text of the store.
    """CREATE TABLE semantic_spaces (
        space_id INTEGER PRIMARY KEY,
        identity TEXT NOT NULL,
        dimensions INTEGER NOT NULL,
        normalized INTEGER NOT NULL)""",
    # One vector per memory (``doc`` is the memory's rowid). A vector is derived from a
    # body, so like bodies it lives in a rowid table that grows at its end; the indexes
    # hold integers only. The memory's ID, times, trust, kind and whether it is active
    # are copied here (as search entries copy them) so that the semantic scan reads one
    # row per vector.
    """CREATE TABLE vectors (
        vid INTEGER PRIMARY KEY,
        doc INTEGER NOT NULL,
        scope_id INTEGER NOT NULL,
        space_id INTEGER NOT NULL,
        active INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        memory_id, clear_until, recall_until, trust, kind, content_hash, vector, digest)""",
    "CREATE UNIQUE INDEX vectors_by_doc ON vectors (doc)",
    # The semantic scan walks a scope's active vectors of one space newest first and
    # stops at its cap.
    """CREATE INDEX vectors_scan ON vectors (
        scope_id, space_id, active, created_at DESC, vid DESC)""",
)


def _generation_bump(scope: str) -> str:
    """The statements of a trigger that moves the generation of the scope ``scope``
    names (``NEW.scope_id`` or ``OLD.scope_id``) on."""
    return (
        f"INSERT OR IGNORE INTO vector_generations (scope_id, generation) VALUES ({scope}, 0); "
        "UPDATE vector_generations SET generation = generation + 1 "
        f"WHERE scope_id = {scope};"
    )


_V5: Sequence[str] = (
    # A vector's sketch (one signed byte per component), its scale and the bound of its
    # residual's norm: what the semantic scan compares first. Derived from the vector;
    # vectors stored before version 5 have none until the indexes are rebuilt.
    "ALTER TABLE vectors ADD COLUMN sketch",
    "ALTER TABLE vectors ADD COLUMN sketch_scale",
    "ALTER TABLE vectors ADD COLUMN sketch_error",
    # A counter per scope that every change of the scope's vector rows moves on, in the
    # same transaction (these triggers): a process that keeps a scope's vectors in memory
    # knows them current while the counter it read them at is the stored one. Integers
    # only; a scope's row is never deleted, so its counter never goes back.
    """CREATE TABLE vector_generations (
        scope_id INTEGER PRIMARY KEY,
        generation INTEGER NOT NULL)""",
    f"""CREATE TRIGGER vectors_inserted AFTER INSERT ON vectors BEGIN
        {_generation_bump("NEW.scope_id")} END""",
    f"""CREATE TRIGGER vectors_updated AFTER UPDATE ON vectors BEGIN
        {_generation_bump("OLD.scope_id")} {_generation_bump("NEW.scope_id")} END""",
    f"""CREATE TRIGGER vectors_deleted AFTER DELETE ON vectors BEGIN
        {_generation_bump("OLD.scope_id")} END""",
)

_V6: Sequence[str] = (
    # -- search index layout --
    # A memory's postings are written first as one row of its scope: its (term_id, tf)
    # pairs as a JSON list of integers, never a term key; a scope's rows are merged into
    # ``search_postings`` (and its terms' ``df``) when they reach a small bound, by the
    # write that reaches it. Searches read a scope's few pending rows beside the merged
    # postings; a term's document frequency is its ``df`` plus its pending postings.
    # Keyed by ``doc`` (the memory's rowid), so a new memory's row goes at the end of the
    # table; the scope index holds integers only.
    """CREATE TABLE search_pending (
        doc INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        postings TEXT NOT NULL)""",
    "CREATE INDEX search_pending_by_scope ON search_pending (scope_id)",
    # -- scope indexes --
    # Every table that belongs to a scope can be read by scope without reading the rest
    # of the store: per-scope statistics, verification and erasure cost what the scope
    # holds. Each index holds integers only (the scope's ID and the row's key).
    "CREATE INDEX raw_events_by_scope ON raw_events (scope_id)",
    "CREATE INDEX raw_bodies_by_scope ON raw_bodies (scope_id)",
    "CREATE INDEX extractions_by_scope ON extractions (scope_id)",
    "CREATE INDEX tombstones_by_scope ON tombstones (scope_id)",
    "CREATE INDEX search_docs_by_scope ON search_docs (scope_id)",
)

# Schema version 7: erasure in place, and writes that change fewer b-trees.
#
# Rows that hold what the host stored (receipts, bodies, memories, claims, vectors and
# search terms) live in tables that are only ever appended to: a row is never deleted
# and never changes its stored size, except by ``compact()``, which rewrites the file.
# Erasing a row overwrites its stored text and bytes in place with blanks of the same
# size and sets ``erased``; the indexes that reads go through leave erased rows out.
# SQLite moves a cell only when a page is split or merged, and an append never moves an
# existing cell, so no page can hold a stale copy of such a row: the overwrite reaches
# every copy (and a truncating checkpoint the WAL). Statuses that change are stored as
# values of one size (the receipt's as 0 or 1); hashes of body text as 8-byte BLOBs.
#
# Each table is built anew and filled from the old one, in row order, so that every row
# holds every column (a column added by ``ALTER TABLE`` is missing from older rows, and
# writing it would grow them). The old tables' pages are freed, and so zeroed
# (``secure_delete``). The search index is emptied and rebuilt on first use.
_RAW_EVENTS_V7 = """CREATE TABLE raw_events_v7 (
        rid INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        event_id TEXT NOT NULL,
        source_id, source_type, source_occurred_at, trust, source_metadata,
        content_hash, ingested_at, raw_expires_at, clear_for, recall_for,
        status, metadata, digest,
        erased INTEGER NOT NULL DEFAULT 0)"""
_EVENT_COLUMNS = (
    "rid, scope_id, event_id, source_id, source_type, source_occurred_at, trust, "
    "source_metadata, content_hash, ingested_at, raw_expires_at, clear_for, recall_for"
)
_MEMORY_COLUMNS = (
    "rid, scope_id, memory_id, content, dependency_fingerprint, kind, trust, created_at, "
    "clear_until, recall_until, status, metadata, digest"
)
_CLAIM_COLUMNS = (
    "rid, scope_id, claim_id, subject, predicate, value, valid_from, valid_to, confidence, "
    "authority, supersedes, digest"
)
_VECTOR_COLUMNS = (
    "vid, doc, scope_id, space_id, active, created_at, memory_id, clear_until, "
    "recall_until, trust, kind, content_hash, vector, digest, sketch, sketch_scale, "
    "sketch_error"
)


def key_blob(value: Any) -> Any:
    """A 64-bit hash key as stored from version 7: the 8-byte big-endian BLOB of its
    two's complement (the bytes SQLite stores for a large integer). Anything that is not
    such an integer is returned as it is, for the checks to report."""
    if type(value) is int and -(2**63) <= value < 2**63:
        return value.to_bytes(8, "big", signed=True)
    return value


def with_functions(conn: sqlite3.Connection) -> None:
    """The functions the migrations call, on the connection that runs them."""
    conn.create_function("trueheart_key_blob", 1, key_blob, deterministic=True)


def _key_blob(column: str) -> str:
    return f"trueheart_key_blob({column})"


_REBUILT_IN_V7 = (
    "raw_events",
    "raw_bodies",
    "memories",
    "lineage",
    "audit",
    "claims",
    "vectors",
    "search_terms",
    "search_pending",
)
"""The tables version 7 builds anew (as ``<name>_v7``) and then renames into place."""

_V7: Sequence[str] = (
    # -- receipts: the status as 0 (active) or 1 (expired), which are stored in no bytes
    _RAW_EVENTS_V7,
    f"""INSERT INTO raw_events_v7 ({_EVENT_COLUMNS}, status, metadata, digest, erased)
        SELECT {_EVENT_COLUMNS},
        CASE status WHEN 'active' THEN 0 WHEN 'expired' THEN 1 ELSE status END,
        metadata, digest, 0 FROM raw_events ORDER BY rid""",
    # -- bodies: keyed by their receipt's row ID; a body without a receipt is unreachable
    """CREATE TABLE raw_bodies_v7 (
        rid INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        content, digest,
        erased INTEGER NOT NULL DEFAULT 0)""",
    """INSERT INTO raw_bodies_v7 (rid, scope_id, content, digest, erased)
        SELECT e.rid, e.scope_id, b.content, b.digest, 0 FROM raw_bodies b
        JOIN raw_events_v7 e ON e.event_id = b.event_id AND e.scope_id = b.scope_id
        ORDER BY e.rid""",
    # -- memories: with the sorted IDs of their sources, through which their edges are
    # found (so the lineage table needs no second index)
    """CREATE TABLE memories_v7 (
        rid INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        memory_id TEXT NOT NULL,
        content, dependency_fingerprint, kind, trust,
        created_at, clear_until, recall_until, status, metadata, digest,
        sources TEXT NOT NULL,
        erased INTEGER NOT NULL DEFAULT 0)""",
    f"""INSERT INTO memories_v7 ({_MEMORY_COLUMNS}, sources, erased)
        SELECT {_MEMORY_COLUMNS}, (SELECT json_group_array(event_id) FROM (
        SELECT l.event_id FROM lineage l WHERE l.scope_id = m.scope_id
        AND l.memory_id = m.memory_id ORDER BY l.event_id)), 0
        FROM memories m ORDER BY rid""",
    # -- lineage: body-free, keyed for the memories of one source event
    """CREATE TABLE lineage_v7 (
        scope_id INTEGER NOT NULL,
        event_id TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        trust, clear_for, recall_for, digest,
        PRIMARY KEY (scope_id, event_id, memory_id)) WITHOUT ROWID""",
    """INSERT INTO lineage_v7 (scope_id, event_id, memory_id, trust, clear_for,
        recall_for, digest)
        SELECT scope_id, event_id, memory_id, trust, clear_for, recall_for, digest
        FROM lineage""",
    # -- audit: body-free, kept in the order it is read in (newest first, per scope);
    # ``seq`` orders the rows of one scope with the same claimed time by write order
    """CREATE TABLE audit_v7 (
        scope_id INTEGER NOT NULL,
        occurred_at INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        audit_id, action, entity_type, entity_id, reason, metadata, digest,
        PRIMARY KEY (scope_id, occurred_at, seq)) WITHOUT ROWID""",
    """INSERT INTO audit_v7 (scope_id, occurred_at, seq, audit_id, action, entity_type,
        entity_id, reason, metadata, digest)
        SELECT scope_id, occurred_at,
        ROW_NUMBER() OVER (PARTITION BY scope_id, occurred_at ORDER BY seq),
        audit_id, action, entity_type, entity_id, reason, metadata, digest FROM audit""",
    # -- claims: subject and predicate keys as 8-byte BLOBs
    """CREATE TABLE claims_v7 (
        rid INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        claim_id TEXT NOT NULL,
        subject, predicate, value, valid_from, valid_to, confidence, authority, supersedes,
        digest,
        subject_key BLOB NOT NULL,
        predicate_key BLOB NOT NULL,
        erased INTEGER NOT NULL DEFAULT 0)""",
    f"""INSERT INTO claims_v7 ({_CLAIM_COLUMNS}, subject_key, predicate_key, erased)
        SELECT {_CLAIM_COLUMNS}, {_key_blob("subject_key")}, {_key_blob("predicate_key")}, 0
        FROM claims ORDER BY rid""",
    # -- vectors
    """CREATE TABLE vectors_v7 (
        vid INTEGER PRIMARY KEY,
        doc INTEGER NOT NULL,
        scope_id INTEGER NOT NULL,
        space_id INTEGER NOT NULL,
        active INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        memory_id, clear_until, recall_until, trust, kind, content_hash, vector, digest,
        sketch, sketch_scale, sketch_error,
        erased INTEGER NOT NULL DEFAULT 0)""",
    f"""INSERT INTO vectors_v7 ({_VECTOR_COLUMNS}, erased)
        SELECT {_VECTOR_COLUMNS}, 0 FROM vectors ORDER BY vid""",
    # -- the search index: emptied, and rebuilt by the first write or search
    """CREATE TABLE search_terms_v7 (
        term_id INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        term BLOB NOT NULL,
        erased INTEGER NOT NULL DEFAULT 0)""",
    """CREATE TABLE search_df (
        term_id INTEGER PRIMARY KEY,
        df INTEGER NOT NULL)""",
    """CREATE TABLE search_pending_v7 (
        scope_id INTEGER NOT NULL,
        doc INTEGER NOT NULL,
        change INTEGER NOT NULL,
        length INTEGER NOT NULL,
        created_at, clear_until, recall_until, trust, kind,
        postings TEXT NOT NULL,
        PRIMARY KEY (scope_id, doc)) WITHOUT ROWID""",
    # Whether every kept table holds only rows that were appended and overwritten in
    # place since the file was last rewritten (see ``compact``): 0 while erased rows
    # deleted by a compaction wait for its rewrite.
    """CREATE TABLE store_state (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        clean INTEGER NOT NULL)""",
    "INSERT INTO store_state (singleton, clean) VALUES (1, 1)",
    "DELETE FROM search_postings",
    "DELETE FROM search_docs",
    "DELETE FROM search_stats",
    "UPDATE search_meta SET tokenizer = ''",
    # -- the old tables go; the new ones take their names
    *(f"DROP TABLE {table}" for table in _REBUILT_IN_V7),
    *(f"ALTER TABLE {table}_v7 RENAME TO {table}" for table in _REBUILT_IN_V7),
    # -- indexes: the look-up of an ID in any scope (erased rows included: an erased ID
    # has its tombstone and is never stored again); erased rows are left out of every
    # index a read walks by scope. Only 1 marks a row erased: a row whose mark holds
    # anything else (damage) stays in sight, to be read, checked and erased.
    "CREATE UNIQUE INDEX raw_events_by_id ON raw_events (event_id, scope_id)",
    """CREATE INDEX raw_events_expiry ON raw_events (raw_expires_at)
        WHERE status = 0 AND erased IS NOT 1""",
    "CREATE INDEX raw_events_by_scope ON raw_events (scope_id) WHERE erased IS NOT 1",
    "CREATE UNIQUE INDEX memories_by_id ON memories (memory_id, scope_id)",
    # Recall of fully clear memories walks this index backwards, newest first, and stops
    # at LIMIT; the trailing columns let it filter without touching table rows. A new
    # memory (the newest) goes at the end of its scope's range: entries put at the
    # start of a range of full pages would move a cell through every page of it.
    """CREATE INDEX memories_recall_clear ON memories (
        scope_id, created_at, memory_id DESC, clear_until, recall_until, kind)
        WHERE status = 'active' AND erased IS NOT 1""",
    # Fading memories are those still recallable: a range on recall_until.
    """CREATE INDEX memories_recall_fade ON memories (
        scope_id, recall_until, clear_until, created_at, memory_id, kind)
        WHERE status = 'active' AND erased IS NOT 1""",
    # Paged listing (every status, or one), counts by status and kind.
    """CREATE INDEX memories_by_status ON memories (scope_id, status, memory_id, kind)
        WHERE erased IS NOT 1""",
    "CREATE UNIQUE INDEX claims_by_id ON claims (claim_id, scope_id)",
    """CREATE INDEX claims_by_subject ON claims (scope_id, subject_key, predicate_key)
        WHERE erased IS NOT 1""",
    """CREATE INDEX claims_by_supersedes ON claims (scope_id, supersedes)
        WHERE supersedes IS NOT NULL AND erased IS NOT 1""",
    "CREATE UNIQUE INDEX vectors_by_doc ON vectors (doc) WHERE erased IS NOT 1",
    # The semantic scan walks a scope's active vectors of one space newest first and
    # stops at its cap.
    """CREATE INDEX vectors_scan ON vectors (
        scope_id, space_id, active, created_at, vid) WHERE erased IS NOT 1""",
    # Two bytes of a term's key: the look-up's bucket.
    """CREATE INDEX search_terms_lookup ON search_terms (scope_id, substr(term, 7, 2))
        WHERE erased IS NOT 1""",
    f"""CREATE TRIGGER vectors_inserted AFTER INSERT ON vectors BEGIN
        {_generation_bump("NEW.scope_id")} END""",
    f"""CREATE TRIGGER vectors_updated AFTER UPDATE ON vectors BEGIN
        {_generation_bump("OLD.scope_id")} {_generation_bump("NEW.scope_id")} END""",
    f"""CREATE TRIGGER vectors_deleted AFTER DELETE ON vectors BEGIN
        {_generation_bump("OLD.scope_id")} END""",
)

_V8: Sequence[str] = (
    # Expiry walks the due receipts in deadline order and, for one deadline, in event-ID
    # order: the audit rows of bodies due at the same instant are written in an order
    # set by the IDs, not by where the rows happen to lie, so a store moved to another
    # backend writes them alike; and the walk still stops at its chunk.
    "DROP INDEX raw_events_expiry",
    """CREATE INDEX raw_events_expiry ON raw_events (raw_expires_at, event_id)
        WHERE status = 0 AND erased IS NOT 1""",
)

# Schema version 9: a write appends its audit row and its pending search row to one
# small table at the end of the file, ``write_buffer``, instead of into the middle of
# two b-trees clustered by scope (where SQLite rebalances a leaf with its neighbours on
# most inserts). The write that brings the buffer to ``BUFFER_BOUND`` rows moves them
# all, sorted, into the clustered tables: ``audit_log`` and ``search_waiting`` (the
# former ``audit`` and ``search_pending``). ``audit`` and ``search_pending`` become
# views of both places, so that every read sees a row wherever it waits.
AUDIT_COLUMNS = (
    "scope_id, occurred_at, seq, audit_id, action, entity_type, entity_id, reason, metadata, digest"
)
PENDING_COLUMNS = (
    "scope_id, doc, change, length, created_at, clear_until, recall_until, trust, kind, postings"
)
"""The columns of an audit row and of a pending search row, in ``write_buffer`` and in
their clustered tables: what the views show, and what a move of the buffer copies."""
_V9: Sequence[str] = (
    "ALTER TABLE audit RENAME TO audit_log",
    "ALTER TABLE search_pending RENAME TO search_waiting",
    # A row with a memory (``doc``) and neither an audit ID nor a digest is a pending
    # search row; any other is an audit row.
    """CREATE TABLE write_buffer (
        jid INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        doc INTEGER,
        occurred_at, seq, audit_id, action, entity_type, entity_id, reason, metadata,
        digest, change, length, created_at, clear_until, recall_until, trust, kind,
        postings)""",
    f"""CREATE VIEW audit AS SELECT {AUDIT_COLUMNS} FROM audit_log
        UNION ALL SELECT {AUDIT_COLUMNS} FROM write_buffer
        WHERE doc IS NULL OR audit_id IS NOT NULL OR digest IS NOT NULL""",
    f"""CREATE VIEW search_pending AS SELECT {PENDING_COLUMNS} FROM search_waiting
        UNION ALL SELECT {PENDING_COLUMNS} FROM write_buffer
        WHERE doc IS NOT NULL AND audit_id IS NULL AND digest IS NULL""",
    # A memory's merged postings (a seal copies them into its pending removal) are read
    # from this index alone, in term order.
    "DROP INDEX search_postings_by_doc",
    "CREATE INDEX search_postings_by_doc ON search_postings (doc, term_id, tf)",
)

MIGRATIONS: Mapping[int, Sequence[str]] = {
    1: _V1,
    2: _V2,
    3: _V3,
    4: _V4,
    5: _V5,
    6: _V6,
    7: _V7,
    8: _V8,
    9: _V9,
}
"""Statements that take a database from version ``n - 1`` to version ``n``."""
