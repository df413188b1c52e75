"""The schema check at open: a store whose live catalog differs from what this version
builds, object by object, or whose ``meta`` row is not ours, is refused with
``RepositoryCorruption`` and left as it was; a schema that holds something else is
never taken over; a read-only open never creates a store."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from conformance_builders import NOW, SCOPE, event, memory, msg

import postgres_configuration
from trueheart_core import (
    PostgresRepository,
    RecallQuery,
    RepositoryCorruption,
    RepositoryReadOnly,
    RepositoryUnavailable,
    TrueHeart,
    ValidationError,
)

INVALID_CATALOG = msg("repository corruption: invalid schema catalog")
STORE_REPLACED = (
    "repository unavailable: the store was dropped and created again since it was opened: "
    "close the repository and open it again"
)

CHANGES = {
    "an index dropped": "DROP INDEX memories_by_status",
    "an index added": "CREATE INDEX extra_index ON memories (kind)",
    "a column added": "ALTER TABLE memories ADD COLUMN note TEXT",
    "a column's type changed": "ALTER TABLE audit ALTER COLUMN reason TYPE TEXT",
    "a column made nullable": "ALTER TABLE meta ALTER COLUMN tokenizer DROP NOT NULL",
    "a table added": "CREATE TABLE notes (k INTEGER PRIMARY KEY)",
    "a trigger dropped": "DROP TRIGGER vectors_changed ON vectors",
    "a function replaced": (
        "CREATE OR REPLACE FUNCTION vector_generation_bump() RETURNS trigger "
        "LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$"
    ),
    "a constraint dropped": "ALTER TABLE scopes DROP CONSTRAINT scopes_pkey",
    "meta names another application": "UPDATE meta SET application = 'someone-else'",
    "a rule added": (
        "CREATE TABLE IF NOT EXISTS public.erased_copies (content BYTEA); "
        "CREATE RULE keep_bodies AS "
        "ON DELETE TO raw_bodies DO ALSO INSERT INTO public.erased_copies VALUES (OLD.content)"
    ),
    "a trigger disabled": "ALTER TABLE vectors DISABLE TRIGGER vectors_changed",
    "a table made unlogged": "ALTER TABLE audit SET UNLOGGED",
    "a column's statistics target changed": (
        "ALTER TABLE raw_bodies ALTER COLUMN content SET STATISTICS -1"
    ),
    "a column's storage changed": "ALTER TABLE raw_bodies ALTER COLUMN content SET STORAGE PLAIN",
    "a column's default changed": "ALTER TABLE meta ALTER COLUMN rewrite_tables SET DEFAULT '{x}'",
    "a function made security definer": "ALTER FUNCTION vector_generation_bump() SECURITY DEFINER",
    "an identity's sequence changed": "ALTER TABLE audit ALTER COLUMN seq SET INCREMENT BY 2",
    "a type added": "CREATE TYPE mood AS ENUM ('calm')",
}


def _catalog(pg: Any, schema: str) -> list[tuple[Any, ...]]:
    """Every object of the schema, with its definition where it has one."""
    return pg.execute(
        "SELECT c.relname, c.relkind, pg_get_indexdef(c.oid), "
        "(SELECT array_agg((a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull) "
        "ORDER BY a.attnum) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 "
        "AND NOT a.attisdropped)::text "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s ORDER BY c.relname",
        (schema,),
    ).fetchall()


def _refused(schema: str) -> None:
    """Opening the schema, read-write and read-only, is refused as an invalid catalog."""
    for read_only in (False, True):
        with pytest.raises(RepositoryCorruption, match=INVALID_CATALOG):
            PostgresRepository(
                postgres_configuration.database_url(), schema=schema, read_only=read_only
            )


@contextlib.contextmanager
def _version_one_store(url: str, name: str, version: int = 1) -> Iterator[None]:
    """A store in schema ``name`` as the migrations up to ``version`` built it, dropped
    after."""
    import psycopg

    from trueheart_core.adapters.postgres import schema as ddl

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
        conn.execute(f'SET search_path TO "{name}"')
        for step in range(1, version + 1):
            for statement in ddl.MIGRATIONS[step]:
                conn.execute(statement.encode("utf-8"))
        conn.execute(
            "INSERT INTO meta (singleton, application, schema_version, tokenizer) "
            "VALUES (1, %s, %s, '')",
            (ddl.APPLICATION, version),
        )
    try:
        yield
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_store_whose_catalog_changed_is_refused_and_left_alone(
    repository: PostgresRepository, pg: Any, pg_schema: str, change: str
) -> None:
    TrueHeart(repository).ingest_event(event("evt-1"))
    repository.close()
    pg.execute(CHANGES[change])
    before = _catalog(pg, pg_schema)
    _refused(pg_schema)
    assert _catalog(pg, pg_schema) == before
    (events,) = pg.execute("SELECT COUNT(*) FROM raw_events").fetchone()
    assert events == 1


def test_a_schema_that_holds_something_else_is_not_taken_over(pg: Any, pg_schema: str) -> None:
    foreign = pg_schema + "_foreign"
    pg.execute(f'CREATE SCHEMA "{foreign}"')
    try:
        pg.execute(f'CREATE TABLE "{foreign}".orders (k INTEGER PRIMARY KEY)')
        before = _catalog(pg, foreign)
        _refused(foreign)
        assert _catalog(pg, foreign) == before
        assert [name for name, *_ in before] == ["orders", "orders_pkey"]
    finally:
        pg.execute(f'DROP SCHEMA "{foreign}" CASCADE')


def test_a_read_only_open_creates_no_store(pg_schema: str) -> None:
    url = postgres_configuration.database_url()
    with pytest.raises(
        RepositoryReadOnly,
        match=msg("repository read-only: a new store needs a writable connection"),
    ):
        PostgresRepository(url, schema=pg_schema + "_ro", read_only=True)
    import psycopg

    with psycopg.connect(url) as conn:
        found = conn.execute(
            "SELECT 1 FROM pg_namespace WHERE nspname = %s", (pg_schema + "_ro",)
        ).fetchone()
    assert found is None


def test_a_store_of_the_first_version_is_upgraded_at_its_first_writable_open(
    pg_schema: str,
) -> None:
    """A store built by version 1's migrations (before the store kept the rewrite an
    erasure owes) is refused read-only, upgraded in place at the first writable open,
    keeps its rows, and then matches what a new store's migrations build."""
    import psycopg

    url = postgres_configuration.database_url()
    name = pg_schema + "_v1"
    with _version_one_store(url, name):
        with pytest.raises(
            RepositoryReadOnly,
            match=msg("repository read-only: schema upgrade needs a writable store"),
        ):
            PostgresRepository(url, schema=name, read_only=True)
        with TrueHeart(PostgresRepository(url, schema=name)) as service:
            service.ingest_event(event("evt-1"))
        with psycopg.connect(url) as conn:
            assert conn.execute(f'SELECT schema_version FROM "{name}".meta').fetchone() == (3,)
        with TrueHeart(PostgresRepository(url, schema=name, read_only=True)) as service:
            assert service.stats().events == 1
            assert service.verify_integrity().ok


def test_a_store_of_the_second_version_expires_in_event_id_order_once_upgraded(
    pg_schema: str,
) -> None:
    """Version 3 orders the expiry index by deadline, then event ID: a version 2 store
    is upgraded (a later open checks its catalog against a new store's) and then
    expires its bodies due at one instant in ID order."""
    url = postgres_configuration.database_url()
    name = pg_schema + "_v2"
    ids = ["evt-c", "evt-a", "evt-b"]
    with _version_one_store(url, name, version=2):
        with TrueHeart(PostgresRepository(url, schema=name), clock=lambda: NOW) as service:
            for event_id in ids:
                service.ingest_event(event(event_id, raw_ttl=timedelta(days=1)))
            assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 3
            expired = [r.entity_id for r in service.audit(SCOPE) if r.action == "expire"]
            assert expired == sorted(ids, reverse=True)
            assert service.verify_integrity().ok
        with TrueHeart(PostgresRepository(url, schema=name, read_only=True)) as service:
            assert service.stats().events == 3


def test_an_open_that_another_process_upgrades_under_accepts_the_upgraded_store(
    pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An opener reads an older version, and before it compares the catalog another
    opener upgrades the store: the first compares again with the version now stored
    instead of taking the upgraded catalog for a damaged one."""
    from trueheart_core.adapters.postgres import catalog

    url = postgres_configuration.database_url()
    name = pg_schema + "_race"
    real = catalog._describe
    upgraded = []

    def upgraded_meanwhile(conn: Any, namespace: str) -> Any:
        if namespace == name and not upgraded:
            upgraded.append(True)
            PostgresRepository(url, schema=name).close()  # the other opener
        return real(conn, namespace)

    monkeypatch.setattr(catalog, "_describe", upgraded_meanwhile)
    with _version_one_store(url, name):
        with TrueHeart(PostgresRepository(url, schema=name)) as service:
            assert service.verify_integrity().ok
        assert upgraded == [True]


@pytest.mark.parametrize("keyword", ["select", "order"])
def test_a_store_in_a_schema_named_by_a_keyword_opens_again(keyword: str) -> None:
    # The server writes such a schema's name quoted in the definitions it prints.
    url = postgres_configuration.database_url()
    postgres_configuration.drop_schema(url, keyword)
    try:
        with TrueHeart(PostgresRepository(url, schema=keyword), clock=lambda: NOW) as service:
            service.ingest_event(event("evt-1"))
        for read_only in (False, True):
            with TrueHeart(PostgresRepository(url, schema=keyword, read_only=read_only)) as again:
                assert again.stats().events == 1
                assert again.verify_integrity().ok
    finally:
        postgres_configuration.drop_schema(url, keyword)


@pytest.mark.parametrize("name", ["pg_store", "pg_temp"])
def test_a_schema_name_the_server_keeps_for_itself_is_refused(name: str) -> None:
    rule = (
        "must be 1 to 63 lower-case letters, digits or underscores, "
        "not beginning with a digit or pg_"
    )
    with pytest.raises(ValidationError, match=msg(f"schema: {rule}")):
        PostgresRepository(postgres_configuration.database_url(), schema=name)


def test_a_store_made_again_under_an_open_repository_is_refused_by_it(
    repository: PostgresRepository, pg: Any, pg_schema: str
) -> None:
    """A schema dropped and created again (a restore, a reset) while a repository is
    open is another store: the repository refuses every call rather than write into
    it what it remembers of the old one (a scope whose row it knows is there)."""
    old = TrueHeart(repository, clock=lambda: NOW)
    old.ingest_event(event("evt-1"))
    old.materialize_once(memory("mem-1", ("evt-1",)))
    pg.execute(f'DROP SCHEMA "{pg_schema}" CASCADE')
    with pytest.raises(RepositoryCorruption):
        old.ingest_event(event("evt-2"))
    with PostgresRepository(postgres_configuration.database_url(), schema=pg_schema) as again:
        fresh = TrueHeart(again, clock=lambda: NOW)
        calls = {
            "ingest": lambda: old.ingest_event(event("evt-2")),
            "ingest alone": lambda: old.ingest_events([event("evt-3")]),
            "materialize": lambda: old.materialize_once(memory("mem-2", ("evt-1",))),
            "recall": lambda: old.recall(RecallQuery(SCOPE, NOW)),
            "scopes": old.scopes,
        }
        for name, call in calls.items():
            with pytest.raises(RepositoryUnavailable, match=msg(STORE_REPLACED)):
                call()
            assert fresh.scopes() == (), name
        (rows,) = pg.execute("SELECT COUNT(*) FROM raw_events").fetchone()
        assert rows == 0
        fresh.ingest_event(event("evt-4"))
        assert fresh.scopes() == (SCOPE,)
        assert fresh.verify_integrity().ok
        with pytest.raises(RepositoryUnavailable, match=msg(STORE_REPLACED)):
            old.ingest_event(event("evt-5"))
