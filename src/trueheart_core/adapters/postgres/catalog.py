"""Creating, checking and upgrading the schema of a PostgreSQL store.

An existing schema is accepted only when its catalog is exactly what this version's
migrations build: every table (unlogged or not), column (name, type, nullability,
identity, statistics target, storage, default), constraint, index, rule, trigger (and
whether it is enabled), identity sequence, type and function (its body, security,
volatility and settings) present with the very definition expected, and nothing
foreign. Row-level security policies and table storage parameters are the operator's
and are not compared. The expected catalog is read from a copy that the same migrations build in the
connection's temporary schema inside a transaction that is rolled back (any role that may
connect can do that), once per process and server version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trueheart_core.adapters.postgres import schema
from trueheart_core.errors import RepositoryCorruption, RepositoryReadOnly

if TYPE_CHECKING:
    import psycopg

Catalog = frozenset[tuple[str, ...]]

_UPGRADE_NEEDS_WRITE = "schema upgrade needs a writable store"
_CREATE_NEEDS_WRITE = "a new store needs a writable connection"


def _describe(conn: psycopg.Connection[tuple[Any, ...]], namespace: str) -> Catalog:
    """Every object of the namespace, with its definition stripped of the namespace
    (which the server writes quoted when it is a keyword: ``"select".audit``)."""
    quoted = f"{schema.quote(namespace)}."
    prefix = f"{namespace}."

    def bare(text: str) -> str:
        return text.replace(quoted, "").replace(prefix, "")

    found: set[tuple[str, ...]] = set()
    rows = conn.execute(
        # An unlogged table loses its rows in a crash (the expected tables, temporary,
        # are neither logged nor unlogged: only ``u`` is told apart).
        "SELECT c.relkind::text, c.relname, (c.relpersistence = 'u')::text "
        "FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE n.nspname = %s",
        (namespace,),
    ).fetchall()
    found.update(("relation", *row) for row in rows)
    rows = conn.execute(
        # Statistics targets (caller text is never sampled), storage and defaults too.
        "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), "
        "a.attnotnull::text, a.attidentity::text, a.attnum::text, "
        "a.attstattarget::text, a.attstorage::text, "
        "COALESCE(pg_get_expr(d.adbin, d.adrelid), '') "
        "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
        "WHERE n.nspname = %s AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped",
        (namespace,),
    ).fetchall()
    found.update(("column", *row[:-1], bare(row[-1])) for row in rows)
    rows = conn.execute(
        # A rule could copy what an erasure deletes somewhere else.
        "SELECT c.relname, r.rulename, pg_get_ruledef(r.oid) FROM pg_rewrite r "
        "JOIN pg_class c ON c.oid = r.ev_class JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s",
        (namespace,),
    ).fetchall()
    found.update(("rule", t, name, bare(d)) for t, name, d in rows)
    rows = conn.execute(
        "SELECT c.relname, s.seqtypid::regtype::text, s.seqstart::text, "
        "s.seqincrement::text, s.seqmax::text, s.seqmin::text, s.seqcache::text, "
        "s.seqcycle::text FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s",
        (namespace,),
    ).fetchall()
    found.update(("sequence", *row) for row in rows)
    rows = conn.execute(
        # Types of their own (not the row types of the tables, nor arrays).
        "SELECT t.typname, t.typtype::text FROM pg_type t "
        "JOIN pg_namespace n ON n.oid = t.typnamespace "
        "WHERE n.nspname = %s AND t.typrelid = 0 AND t.typelem = 0",
        (namespace,),
    ).fetchall()
    found.update(("type", *row) for row in rows)
    rows = conn.execute(
        "SELECT c.relname, k.conname, pg_get_constraintdef(k.oid) FROM pg_constraint k "
        "JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s",
        (namespace,),
    ).fetchall()
    found.update(("constraint", t, name, bare(d)) for t, name, d in rows)
    rows = conn.execute(
        "SELECT c.relname, pg_get_indexdef(c.oid) FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s",
        (namespace,),
    ).fetchall()
    found.update(("index", name, bare(d)) for name, d in rows)
    rows = conn.execute(
        "SELECT t.tgname, pg_get_triggerdef(t.oid), t.tgenabled::text FROM pg_trigger t "
        "JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND NOT t.tgisinternal",
        (namespace,),
    ).fetchall()
    found.update(("trigger", name, bare(d), on) for name, d, on in rows)
    rows = conn.execute(
        "SELECT p.proname, p.prosrc, p.prosecdef::text, p.provolatile::text, "
        "COALESCE(array_to_string(p.proconfig, ','), ''), p.prorettype::regtype::text "
        "FROM pg_proc p "
        "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %s",
        (namespace,),
    ).fetchall()
    found.update(("function", *row) for row in rows)
    return frozenset(found)


_EXPECTED: dict[tuple[int, int], Catalog] = {}


def expected(conn: psycopg.Connection[tuple[Any, ...]], version: int) -> Catalog:
    """The catalog ``version``'s migrations build, on this server (cached per process)."""
    server = int(conn.info.server_version)
    cached = _EXPECTED.get((server, version))
    if cached is not None:
        return cached
    # Read-write even on a read-only repository: only temporary objects are made, and
    # the transaction is rolled back.
    conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE")
    try:
        conn.execute("SET LOCAL search_path = pg_temp")
        for step in range(1, version + 1):
            for statement in schema.MIGRATIONS[step]:
                # Functions of the temporary schema are found only by a qualified name.
                conn.execute(
                    statement.replace(
                        "EXECUTE FUNCTION vector_generation_bump()",
                        "EXECUTE FUNCTION pg_temp.vector_generation_bump()",
                    ).replace("CREATE TABLE", "CREATE TEMPORARY TABLE")
                )
        row = conn.execute("SELECT nspname FROM pg_namespace WHERE oid = pg_my_temp_schema()")
        (namespace,) = row.fetchone() or ("",)
        built = _describe(conn, str(namespace))
    finally:
        conn.execute("ROLLBACK")
    # Definitions in the temporary schema name it ``pg_temp``; the stored ones name
    # nothing (the store's schema is the connection's search path). Nothing else differs.
    result = frozenset(tuple(part.replace("pg_temp.", "") for part in item) for item in built)
    _EXPECTED[(server, version)] = result
    return result


def store_oid(conn: psycopg.Connection[tuple[Any, ...]], name: str) -> int:
    """The OID of the ``meta`` table of the store in schema ``name``: it names this
    store, not another one made under the same name after it was dropped."""
    row = conn.execute(f"SELECT tableoid::bigint FROM {schema.quote(name)}.meta").fetchone()
    if row is None:
        raise RepositoryCorruption("invalid schema catalog")
    return int(row[0])


def open_schema(conn: psycopg.Connection[tuple[Any, ...]], name: str, *, read_only: bool) -> int:
    """Create the schema ``name`` if it does not exist (a new store), else check it and
    upgrade it from an older version; returns the version found before any upgrade.

    Runs in transactions of its own, under an advisory lock on the schema's name, so
    that processes opening a new store at once create it once."""
    quoted = schema.quote(name)
    conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
    try:
        if not read_only:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("trueheart:" + name,))
        exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (name,)).fetchone()
        has_meta = exists is not None and (
            conn.execute(
                "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relname = 'meta'",
                (name,),
            ).fetchone()
            is not None
        )
        if not has_meta:
            foreign = exists is not None and (
                conn.execute(
                    "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %s LIMIT 1",
                    (name,),
                ).fetchone()
                is not None
            )
            if foreign:
                raise RepositoryCorruption("invalid schema catalog")
            if read_only:
                raise RepositoryReadOnly(_CREATE_NEEDS_WRITE)
            # One round trip: the statements hold no parameters.
            conn.execute(";\n".join(schema.create_statements(name)).encode("utf-8"))
            conn.execute("COMMIT")
            return schema.SCHEMA_VERSION
        row = conn.execute(f"SELECT application, schema_version FROM {quoted}.meta").fetchall()
        if len(row) != 1 or row[0][0] != schema.APPLICATION:
            raise RepositoryCorruption("invalid schema catalog")
        version = schema.check_known_version(row[0][1])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    if _describe(conn, name) != expected(conn, version):
        # Another process may have upgraded the store since its version was read here.
        (stored,) = conn.execute(f"SELECT schema_version FROM {quoted}.meta").fetchone() or (None,)
        newer = schema.check_known_version(stored)
        if newer == version or _describe(conn, name) != expected(conn, newer):
            raise RepositoryCorruption("invalid schema catalog")
        version = newer
    if version < schema.SCHEMA_VERSION:
        if read_only:
            raise RepositoryReadOnly(_UPGRADE_NEEDS_WRITE)
        _upgrade(conn, name)
    return version


def _upgrade(conn: psycopg.Connection[tuple[Any, ...]], name: str) -> None:
    """Apply every migration after the stored version, atomically, under the lock."""
    conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
    try:
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("trueheart:" + name,))
        (stored,) = conn.execute(
            f"SELECT schema_version FROM {schema.quote(name)}.meta"
        ).fetchone() or (None,)
        version = schema.check_known_version(stored)
        for statement in schema.upgrade_statements(version):
            conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def checked_meta(rows: list[tuple[Any, ...]]) -> object:
    """The tokenizer of the ``(schema_version, tokenizer)`` row a unit of work read at
    its start, after failing closed unless the version is the one this code reads and
    writes (another process may have changed it since the open)."""
    if len(rows) != 1 or schema.check_known_version(rows[0][0]) != schema.SCHEMA_VERSION:
        raise RepositoryCorruption("invalid schema version")
    return rows[0][1]
