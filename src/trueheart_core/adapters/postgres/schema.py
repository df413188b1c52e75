"""The PostgreSQL schema: one place for DDL, versions, migrations and catalog checks.

Every table of stored data carries the scope's three IDs, and every primary key leads
with ``tenant_id``, so the schema can be distributed by tenant (Citus) as it stands; the
only tables without a tenant are ``meta`` and ``semantic_spaces``, which hold no data of
any tenant (a reference table each, when distributed). IDs are the caller's, or derived
by the library; the ``seq`` and ``vid`` columns are write order and handles, drawn from
sequences, and never identify a row on their own.

Text that a caller gives (IDs, bodies, reasons, claim texts, kinds) is stored as
``BYTEA`` of its UTF-8 encoding: PostgreSQL's ``TEXT`` cannot hold the character U+0000,
which the library accepts, and bytes compare in code-point order whatever the database's
collation. What the library itself writes (statuses, types, digests, hashes, durations,
canonical JSON) is ``TEXT``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from trueheart_core.errors import RepositoryCorruption

SCHEMA_VERSION = 3
APPLICATION = "trueheart-core"
"""Written in ``meta``: marks a schema as ours."""

_SCOPE = "tenant_id BYTEA NOT NULL, owner_id BYTEA NOT NULL, subject_id BYTEA NOT NULL"
_KEY = "tenant_id, owner_id, subject_id"

_V1: Sequence[str] = (
    """CREATE TABLE meta (
        singleton SMALLINT PRIMARY KEY CHECK (singleton = 1),
        application TEXT NOT NULL,
        schema_version INTEGER NOT NULL,
        tokenizer TEXT NOT NULL)""",
    f"""CREATE TABLE scopes ({_SCOPE},
        PRIMARY KEY ({_KEY}))""",
    f"""CREATE TABLE raw_events ({_SCOPE},
        event_id BYTEA NOT NULL,
        source_id BYTEA, source_type BYTEA, source_occurred_at BIGINT, trust INTEGER,
        source_metadata TEXT, content_hash TEXT, ingested_at BIGINT, raw_expires_at BIGINT,
        clear_for TEXT, recall_for TEXT, status TEXT, metadata TEXT, digest TEXT,
        PRIMARY KEY ({_KEY}, event_id))""",
    # A diagnosis looks for an ID in other scopes (``ScopeMismatch``); expiry sweeps the
    # whole store in deadline order. Both are the store-wide reads docs/postgres.md lists.
    "CREATE INDEX raw_events_by_id ON raw_events (event_id)",
    "CREATE INDEX raw_events_expiry ON raw_events (raw_expires_at) WHERE status = 'active'",
    f"""CREATE TABLE raw_bodies ({_SCOPE},
        event_id BYTEA NOT NULL,
        content BYTEA, digest TEXT,
        PRIMARY KEY ({_KEY}, event_id))""",
    f"""CREATE TABLE memories ({_SCOPE},
        memory_id BYTEA NOT NULL,
        content BYTEA, dependency_fingerprint TEXT, kind BYTEA, trust INTEGER,
        created_at BIGINT, clear_until BIGINT, recall_until BIGINT, status TEXT,
        metadata TEXT, digest TEXT,
        PRIMARY KEY ({_KEY}, memory_id))""",
    "CREATE INDEX memories_by_id ON memories (memory_id)",
    f"""CREATE INDEX memories_recall_clear ON memories (
        {_KEY}, status, created_at DESC, memory_id, clear_until, recall_until, kind)""",
    f"""CREATE INDEX memories_recall_fade ON memories (
        {_KEY}, status, recall_until, clear_until, created_at, memory_id, kind)""",
    f"CREATE INDEX memories_by_status ON memories ({_KEY}, status, memory_id)",
    f"""CREATE TABLE lineage ({_SCOPE},
        memory_id BYTEA NOT NULL,
        event_id BYTEA NOT NULL,
        trust INTEGER, clear_for TEXT, recall_for TEXT, digest TEXT,
        PRIMARY KEY ({_KEY}, memory_id, event_id))""",
    f"CREATE INDEX lineage_by_event ON lineage ({_KEY}, event_id)",
    f"""CREATE TABLE tombstones ({_SCOPE},
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        entity_type TEXT, entity_id BYTEA, fingerprint TEXT, deleted_at BIGINT,
        reason BYTEA, digest TEXT,
        PRIMARY KEY (tenant_id, seq))""",
    f"CREATE INDEX tombstones_by_scope ON tombstones ({_KEY}, entity_id)",
    "CREATE INDEX tombstones_by_id ON tombstones (entity_id, entity_type)",
    f"""CREATE INDEX tombstones_by_fingerprint ON tombstones ({_KEY}, fingerprint)
        WHERE fingerprint IS NOT NULL""",
    f"""CREATE TABLE audit ({_SCOPE},
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        audit_id TEXT, action TEXT, entity_type TEXT, entity_id BYTEA, occurred_at BIGINT,
        reason BYTEA, metadata TEXT, digest TEXT,
        PRIMARY KEY (tenant_id, seq))""",
    f"CREATE INDEX audit_recent ON audit ({_KEY}, occurred_at DESC, seq DESC)",
    # A claim's structured fields, beside the memory row that carries it.
    f"""CREATE TABLE claims ({_SCOPE},
        claim_id BYTEA NOT NULL,
        subject BYTEA, predicate BYTEA, value BYTEA, valid_from BIGINT, valid_to BIGINT,
        confidence DOUBLE PRECISION, authority BYTEA, supersedes BYTEA, digest TEXT,
        subject_key BIGINT NOT NULL, predicate_key BIGINT NOT NULL,
        PRIMARY KEY ({_KEY}, claim_id))""",
    f"""CREATE INDEX claims_by_subject ON claims (
        {_KEY}, subject_key, predicate_key)""",
    f"""CREATE INDEX claims_by_supersedes ON claims ({_KEY}, supersedes)
        WHERE supersedes IS NOT NULL""",
    f"""CREATE TABLE extractions ({_SCOPE},
        event_id BYTEA NOT NULL,
        extractor BYTEA, claim_ids TEXT, spans TEXT, diagnostics TEXT, digest TEXT,
        PRIMARY KEY ({_KEY}, event_id))""",
    # The lexical search index: the library's own terms, as signed 64-bit keys.
    f"""CREATE TABLE search_docs ({_SCOPE},
        memory_id BYTEA NOT NULL,
        length INTEGER NOT NULL,
        created_at BIGINT, clear_until BIGINT, recall_until BIGINT, trust INTEGER,
        kind BYTEA,
        PRIMARY KEY ({_KEY}, memory_id))""",
    f"""CREATE TABLE search_stats ({_SCOPE},
        docs BIGINT NOT NULL,
        length BIGINT NOT NULL,
        PRIMARY KEY ({_KEY}))""",
    f"""CREATE TABLE search_terms ({_SCOPE},
        term BIGINT NOT NULL,
        df INTEGER NOT NULL,
        PRIMARY KEY ({_KEY}, term))""",
    f"""CREATE TABLE search_postings ({_SCOPE},
        term BIGINT NOT NULL,
        memory_id BYTEA NOT NULL,
        tf INTEGER NOT NULL,
        PRIMARY KEY ({_KEY}, term, memory_id))""",
    f"CREATE INDEX search_postings_by_memory ON search_postings ({_KEY}, memory_id)",
    # Registered vector spaces; the highest space_id is current. Identities are model
    # names, never text of the store.
    """CREATE TABLE semantic_spaces (
        space_id INTEGER PRIMARY KEY,
        identity BYTEA NOT NULL,
        dimensions INTEGER NOT NULL,
        normalized BOOLEAN NOT NULL)""",
    # One vector per memory, with copies of the memory's times, trust, kind and status so
    # that a scan reads one row per vector. ``vid`` is the handle a scan hands out.
    f"""CREATE TABLE vectors ({_SCOPE},
        memory_id BYTEA NOT NULL,
        vid BIGINT GENERATED ALWAYS AS IDENTITY,
        space_id INTEGER NOT NULL,
        active BOOLEAN NOT NULL,
        created_at BIGINT NOT NULL,
        clear_until BIGINT, recall_until BIGINT, trust INTEGER, kind BYTEA,
        content_hash TEXT, vector BYTEA, digest TEXT,
        sketch BYTEA, sketch_scale DOUBLE PRECISION, sketch_error DOUBLE PRECISION,
        PRIMARY KEY ({_KEY}, memory_id))""",
    "CREATE UNIQUE INDEX vectors_by_handle ON vectors (tenant_id, vid)",
    f"""CREATE INDEX vectors_scan ON vectors (
        {_KEY}, space_id, active, created_at DESC, vid DESC)""",
    # A counter per scope that every change of the scope's vector rows moves on, in the
    # same transaction (the trigger below); a scope's row is never deleted.
    f"""CREATE TABLE vector_generations ({_SCOPE},
        generation BIGINT NOT NULL,
        PRIMARY KEY ({_KEY}))""",
    """CREATE FUNCTION vector_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' THEN
            INSERT INTO vector_generations AS g (tenant_id, owner_id, subject_id, generation)
            VALUES (OLD.tenant_id, OLD.owner_id, OLD.subject_id, 1)
            ON CONFLICT (tenant_id, owner_id, subject_id)
            DO UPDATE SET generation = g.generation + 1;
        END IF;
        IF TG_OP <> 'DELETE' THEN
            INSERT INTO vector_generations AS g (tenant_id, owner_id, subject_id, generation)
            VALUES (NEW.tenant_id, NEW.owner_id, NEW.subject_id, 1)
            ON CONFLICT (tenant_id, owner_id, subject_id)
            DO UPDATE SET generation = g.generation + 1;
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER vectors_changed AFTER INSERT OR UPDATE OR DELETE ON vectors
        FOR EACH ROW EXECUTE FUNCTION vector_generation_bump()""",
)

UNSAMPLED: Mapping[str, tuple[str, ...]] = {
    # Columns that ``ANALYZE`` never samples (statistics target 0): the text and bytes a
    # caller stored, and the keys and hashes derived from them. The server keeps a
    # sample of every analysed column (its most common values and histogram bounds) in
    # the database's ``pg_statistic`` catalog, out of reach of an erasure of the rows.
    # IDs and scope IDs stay sampled: tombstones and audit rows keep them anyway.
    "raw_events": (
        "source_id",
        "source_type",
        "source_metadata",
        "content_hash",
        "clear_for",
        "recall_for",
        "metadata",
        "digest",
    ),
    "raw_bodies": ("content", "digest"),
    "memories": ("content", "dependency_fingerprint", "kind", "metadata", "digest"),
    "lineage": ("clear_for", "recall_for", "digest"),
    "claims": (
        "subject",
        "predicate",
        "value",
        "authority",
        "supersedes",
        "digest",
        "subject_key",
        "predicate_key",
    ),
    "extractions": ("extractor", "claim_ids", "spans", "diagnostics", "digest"),
    "search_docs": ("kind",),
    "search_terms": ("term",),
    "search_postings": ("term",),
    "vectors": ("kind", "content_hash", "vector", "digest", "sketch"),
}

_V1 = (
    *_V1,
    *(
        f"ALTER TABLE {table} ALTER COLUMN {column} SET STATISTICS 0"
        for table, columns in UNSAMPLED.items()
        for column in columns
    ),
)

_V2 = (
    # The rewrite an erasure owes, kept in the store so that it survives the process
    # that erased: the tables to rewrite, and the newest erasing transaction, whose
    # removed rows no snapshot that rewrite waits for may still hold (see
    # ``repository.PostgresRepository``).
    "ALTER TABLE meta ADD COLUMN rewrite_tables TEXT[] NOT NULL DEFAULT '{}'",
    "ALTER TABLE meta ADD COLUMN rewrite_xid xid8",
)

_V3 = (
    # Expiry walks the due receipts in deadline order and, for one deadline, in event-ID
    # order: the audit rows of bodies due at the same instant are written in an order
    # set by the IDs, not by where the rows happen to lie, so a store moved from another
    # backend writes them alike; and the walk still stops at its chunk.
    "DROP INDEX raw_events_expiry",
    "CREATE INDEX raw_events_expiry ON raw_events (raw_expires_at, event_id) "
    "WHERE status = 'active'",
)

MIGRATIONS: Mapping[int, Sequence[str]] = {1: _V1, 2: _V2, 3: _V3}
"""Statements that take a schema from version ``n - 1`` to version ``n``."""


TABLES: tuple[str, ...] = tuple(
    match.group(1)
    for statement in _V1
    if (match := re.match(r"CREATE TABLE (\w+)", statement)) is not None
)
"""Every table of the schema, in creation order."""

GLOBAL_TABLES = frozenset({"meta", "semantic_spaces"})
"""The tables that belong to no tenant."""

REWRITE_TABLES = tuple(t for t in TABLES if t not in ("meta", "scopes"))
"""The tables a whole-store rewrite (``compact``) rewrites: every table erased rows can
be in."""


def create_statements(schema_name: str) -> list[str]:
    """Everything that builds this version's schema in ``schema_name`` (quoted), with
    its ``meta`` row."""
    statements = [f"CREATE SCHEMA IF NOT EXISTS {quote(schema_name)}"]
    for version in range(1, SCHEMA_VERSION + 1):
        statements.extend(MIGRATIONS[version])
    statements.append(
        "INSERT INTO meta (singleton, application, schema_version, tokenizer) "
        f"VALUES (1, '{APPLICATION}', {SCHEMA_VERSION}, '')"
    )
    return statements


def upgrade_statements(from_version: int) -> list[str]:
    """Every migration after ``from_version``, then the new version in ``meta``."""
    statements: list[str] = []
    for version in range(from_version + 1, SCHEMA_VERSION + 1):
        statements.extend(MIGRATIONS[version])
    statements.append(f"UPDATE meta SET schema_version = {SCHEMA_VERSION}")
    return statements


_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def valid_schema_name(name: object) -> bool:
    """A schema name of lower-case letters, digits and underscores (a plain SQL
    identifier that cannot be mistaken for another), not beginning with a digit, nor with
    ``pg_``, which the server keeps for itself. A keyword (``select``) is allowed: the
    server writes it quoted, and the catalog check reads it so."""
    return (
        isinstance(name, str)
        and _IDENTIFIER.fullmatch(name) is not None
        and not name.startswith("pg_")
    )


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def check_known_version(version: object) -> int:
    """A version this code can read or upgrade; fail closed otherwise."""
    if type(version) is not int or version < 1:
        raise RepositoryCorruption("invalid schema version")
    if version > SCHEMA_VERSION:
        raise RepositoryCorruption("unsupported schema version")
    return version
