"""The SQLite schema: one place for DDL, versions, migrations and catalog checks."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Mapping, Sequence

from trueheart_core.errors import RepositoryCorruption

APPLICATION_ID = 0x54485243  # "THRC" in the database header: marks our files
SCHEMA_VERSION = 6

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

MIGRATIONS: Mapping[int, Sequence[str]] = {1: _V1, 2: _V2, 3: _V3, 4: _V4, 5: _V5, 6: _V6}
"""Statements that take a database from version ``n - 1`` to version ``n``."""

Definition = tuple[str, str, str, str | None]
"""A schema object as ``sqlite_master`` stores it: ``(type, name, table, sql)``."""

# SQLite keeps its own bookkeeping tables under these names (``ANALYZE`` statistics, the
# AUTOINCREMENT counters): they hold no data of ours and are not compared.
_BOOKKEEPING = ("sqlite_stat", "sqlite_sequence")


@functools.cache
def definitions(version: int) -> frozenset[Definition]:
    """Every schema object of ``version`` exactly as SQLite stores it, read from a
    throwaway in-memory database built by the same migrations (so the text is SQLite's
    own rendering, whatever its version). Computed once per process and version."""
    conn = sqlite3.connect(":memory:")
    try:
        for step in range(1, version + 1):
            for statement in MIGRATIONS[step]:
                conn.execute(statement)
        return frozenset(_stored(conn))
    finally:
        conn.close()


def object_names(version: int) -> frozenset[tuple[str, str]]:
    """``(type, name)`` of the objects of ``version`` that the schema creates by name."""
    return frozenset(
        (kind, name) for kind, name, _, _ in definitions(version) if not name.startswith("sqlite_")
    )


def _stored(conn: sqlite3.Connection) -> list[Definition]:
    return [
        (kind, name, table, sql)
        for kind, name, table, sql in conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master"
        )
        if not name.startswith(_BOOKKEEPING)
    ]


def migrate(conn: sqlite3.Connection, from_version: int) -> None:
    """Apply every migration after ``from_version`` (inside the caller's transaction)."""
    for version in range(from_version + 1, SCHEMA_VERSION + 1):
        for statement in MIGRATIONS[version]:
            conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def check_known_version(version: object) -> int:
    """A version this code can read or upgrade; fail closed otherwise."""
    if type(version) is not int or version < 1:
        raise RepositoryCorruption("invalid schema version")
    if version > SCHEMA_VERSION:
        raise RepositoryCorruption("unsupported schema version")
    return version


def check_version(version: object) -> None:
    """Fail closed unless ``version`` is the version this code reads and writes."""
    if check_known_version(version) < SCHEMA_VERSION:
        raise RepositoryCorruption("invalid schema version")


def check_catalog(conn: sqlite3.Connection) -> int:
    """Our application ID, a known version, and a catalog that is exactly the one that
    version's migrations build: every table, index and trigger present with the very
    definition this code expects (a changed byte of a stored definition is damage, not a
    variant), nothing foreign, and each b-tree rooted on a page of its own inside the
    file. Returns the version (older ones are upgraded by :func:`migrate`)."""
    (application_id,) = conn.execute("PRAGMA application_id").fetchone()
    if application_id != APPLICATION_ID:
        raise RepositoryCorruption("invalid schema catalog")
    (found,) = conn.execute("PRAGMA user_version").fetchone()
    version = check_known_version(found)
    expected = definitions(version)
    present = set(_stored(conn))
    if present != expected:
        names = {(kind, name) for kind, name, _, _ in present}
        if not names >= {(kind, name) for kind, name, _, _ in expected}:
            raise RepositoryCorruption("incomplete schema")
        raise RepositoryCorruption("invalid schema catalog")
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    roots = [
        root for (root,) in conn.execute("SELECT rootpage FROM sqlite_master WHERE rootpage != 0")
    ]
    if len(set(roots)) != len(roots) or not all(
        type(root) is int and 2 <= root <= pages for root in roots
    ):
        raise RepositoryCorruption("invalid schema catalog")
    return version
