"""The PostgreSQL operations role against the server itself: the artifact names of its
counts, reads that do not trust the indexes (a row its indexes lost is still counted,
planned and erased), erasure's record of the tables to vacuum, the server's own
consistency check with and without ``amcheck``, and the index rebuild.

An index that lost a row is made with the catalog: while ``pg_index.indisready`` is
off, the server does not add new rows to the table's indexes; turned on again, each
index lacks those rows, as one damaged on disk would.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from trueheart_core import PostgresRepository, RepositoryCorruption, SQLiteRepository
from trueheart_core.adapters.postgres.operations import KEPT_TABLES, SCOPED_ROWS

SCOPE = ("tenant", "owner", "subject")
OTHER = ("tenant", "owner", "other")


def _key(scope: tuple[str, str, str]) -> list[bytes]:
    return [part.encode() for part in scope]


def _put(pg: Any, scope: tuple[str, str, str], n: int) -> None:
    """A receipt with its body, a memory with a search entry, posting and term, a claim
    and a vector, written with plain SQL (the role counts and removes rows; it does
    not read what they hold)."""
    key = _key(scope)
    mid, eid = f"mem-{n}".encode(), f"evt-{n}".encode()
    pg.execute("INSERT INTO scopes VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", key)
    pg.execute(
        "INSERT INTO raw_events (tenant_id, owner_id, subject_id, event_id, status) "
        "VALUES (%s, %s, %s, %s, 'active')",
        [*key, eid],
    )
    pg.execute(
        "INSERT INTO raw_bodies (tenant_id, owner_id, subject_id, event_id, content) "
        "VALUES (%s, %s, %s, %s, 'body')",
        [*key, eid],
    )
    pg.execute(
        "INSERT INTO memories (tenant_id, owner_id, subject_id, memory_id, kind, status, "
        "dependency_fingerprint) VALUES (%s, %s, %s, %s, 'fact', 'active', 'fp')",
        [*key, mid],
    )
    pg.execute(
        "INSERT INTO lineage (tenant_id, owner_id, subject_id, memory_id, event_id) "
        "VALUES (%s, %s, %s, %s, %s)",
        [*key, mid, eid],
    )
    pg.execute(
        "INSERT INTO search_docs (tenant_id, owner_id, subject_id, memory_id, length) "
        "VALUES (%s, %s, %s, %s, 1)",
        [*key, mid],
    )
    pg.execute("INSERT INTO search_postings VALUES (%s, %s, %s, 7, %s, 1)", [*key, mid])
    # No ON CONFLICT: it needs an index, and some tests write with the indexes off.
    held = pg.execute(
        "UPDATE search_terms SET df = df + 1 WHERE tenant_id = %s AND owner_id = %s "
        "AND subject_id = %s AND term = 7",
        key,
    )
    if held.rowcount == 0:
        pg.execute("INSERT INTO search_terms VALUES (%s, %s, %s, 7, 1)", key)
    pg.execute(
        "INSERT INTO claims (tenant_id, owner_id, subject_id, claim_id, subject_key, "
        "predicate_key) VALUES (%s, %s, %s, %s, 1, 2)",
        [*key, mid],
    )
    pg.execute(
        "INSERT INTO vectors (tenant_id, owner_id, subject_id, memory_id, space_id, active, "
        "created_at) VALUES (%s, %s, %s, %s, 1, true, 1)",
        [*key, mid],
    )


@contextlib.contextmanager
def _unindexed(pg: Any, *tables: str) -> Iterator[None]:
    """Rows written in the block are in the tables but in none of their indexes."""
    flag = (
        "UPDATE pg_index SET indisready = {} WHERE indrelid = ANY("
        "SELECT oid FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
        "AND relname = ANY(%s))"
    )
    pg.execute(flag.format("false"), [list(tables)])
    try:
        yield
    finally:
        pg.execute(flag.format("true"), [list(tables)])


def _ops(repository: PostgresRepository, method: str, *args: Any, **kwargs: Any) -> Any:
    with repository.unit_of_work("stats", write=False) as uow:
        return getattr(uow.operations, method)(*args, **kwargs)


def test_the_counts_name_the_artifacts_as_the_sqlite_adapter_does(
    repository: PostgresRepository, pg: Any
) -> None:
    sqlite = SQLiteRepository(":memory:")
    try:
        with sqlite.unit_of_work("stats", write=False) as uow:
            names = set(uow.operations.count_rows(None))
            scoped = set(uow.operations.count_rows(SCOPE))
            removed = set(uow.operations.removal_counts(SCOPE, ["mem-1"]))
    finally:
        sqlite.close()
    assert set(_ops(repository, "count_rows", None)) == names
    assert set(_ops(repository, "count_rows", SCOPE, from_tables=True)) == scoped
    assert set(_ops(repository, "removal_counts", SCOPE, ["mem-1"])) == removed
    assert {artifact for artifact, _ in SCOPED_ROWS} == names - {
        "raw_event_with_body",
        "tombstone",
        "audit",
    }
    assert _ops(repository, "count_rows", None) == dict.fromkeys(names, 0)


def test_counts_of_a_scope_and_of_the_store(repository: PostgresRepository, pg: Any) -> None:
    for n in range(3):
        _put(pg, SCOPE, n)
    _put(pg, OTHER, 0)
    mine = _ops(repository, "count_rows", SCOPE)
    assert mine == _ops(repository, "count_rows", SCOPE, from_tables=True)
    assert {a: mine[a] for a, _ in SCOPED_ROWS} == {
        **{a: 3 for a, _ in SCOPED_ROWS},
        "search_term": 1,
        "search_statistics": 0,
        "extraction_record": 0,
    }
    assert mine["raw_event_with_body"] == 3
    whole = _ops(repository, "count_rows", None)
    assert whole["memory"] == 4 and whole["search_term"] == 2
    assert _ops(repository, "held_scopes", None, None) == [OTHER, SCOPE]
    assert _ops(repository, "held_scopes", "tenant", "owner") == [OTHER, SCOPE]
    assert _ops(repository, "held_scopes", "nobody", None) == []
    assert _ops(repository, "count_memories", SCOPE) == [("active", "fact", 3)]
    assert _ops(repository, "count_memories", None) == [("active", "fact", 4)]
    removal = _ops(repository, "removal_counts", SCOPE, ["mem-0", "mem-1", "mem-9"])
    assert removal == dict.fromkeys(removal, 2) | {"search_term": 0}
    everything = _ops(repository, "removal_counts", SCOPE, ["mem-0", "mem-1", "mem-2"])
    assert everything["search_term"] == 1, "the term goes with the last memory holding it"


def test_thorough_reads_find_a_row_the_indexes_lost(
    repository: PostgresRepository, pg: Any
) -> None:
    _put(pg, SCOPE, 0)
    with _unindexed(pg, "raw_events", "memories", "claims"):
        _put(pg, SCOPE, 1)
    assert _ops(repository, "scope_event_ids", SCOPE, thorough=False) == ["evt-0"]
    assert sorted(_ops(repository, "scope_event_ids", SCOPE)) == ["evt-0", "evt-1"]
    assert sorted(_ops(repository, "scope_memory_fingerprints", SCOPE)) == [
        ("mem-0", "fp"),
        ("mem-1", "fp"),
    ]
    assert sorted(_ops(repository, "scope_claim_ids", SCOPE)) == ["mem-0", "mem-1"]
    assert _ops(repository, "count_rows", SCOPE)["memory"] == 1
    assert _ops(repository, "count_rows", SCOPE, from_tables=True)["memory"] == 2
    with repository.unit_of_work("stats", write=False) as uow:
        uow.operations.count_rows(SCOPE, from_tables=True)
        # The planner settings are put back after a thorough read.
        assert uow.session.one("SHOW enable_indexscan") == ("on",)


def test_a_rewriting_erasure_removes_a_row_the_indexes_lost(
    repository: PostgresRepository, pg: Any
) -> None:
    _put(pg, SCOPE, 0)
    with _unindexed(pg, *(table for _, table in SCOPED_ROWS)):
        _put(pg, SCOPE, 1)
    _put(pg, OTHER, 0)
    with repository.unit_of_work("erase", write=True, erasing=True) as uow:
        removed = uow.operations.erase_scope(SCOPE)
        touched, rewrite = set(uow.session.touched_tables), uow.session.rewrite_requested
        uow.commit()
    assert removed["memory"] == removed["raw_event"] == removed["vector"] == 2
    assert removed["search_term"] == 1
    assert touched == {table for artifact, table in SCOPED_ROWS if removed[artifact]}
    assert rewrite is True
    left = _ops(repository, "count_rows", SCOPE, from_tables=True)
    assert not any(left.values())
    for table in KEPT_TABLES - {"tombstones", "audit"}:
        (count,) = pg.execute(
            f"SELECT COUNT(*) FROM {table} WHERE subject_id = %s", [b"subject"]
        ).fetchone()
        assert count == 1, table  # the scope's own row and its vector generation stay
    assert _ops(repository, "count_rows", OTHER)["memory"] == 1


def test_an_erasure_without_a_rewrite_asks_only_for_a_vacuum(
    repository: PostgresRepository, pg: Any
) -> None:
    _put(pg, SCOPE, 0)
    with repository.unit_of_work("erase", write=True, erasing=True) as uow:
        removed = uow.operations.erase_scope(SCOPE, rewrite=False)
        touched, rewrite = set(uow.session.touched_tables), uow.session.rewrite_requested
        uow.commit()
    assert removed["memory"] == 1 and rewrite is False
    assert "memories" in touched and not touched & KEPT_TABLES
    with repository.unit_of_work("erase", write=True, erasing=True) as uow:
        assert not any(uow.operations.erase_scope(SCOPE).values())
        assert uow.session.touched_tables == set() and not uow.session.rewrite_requested


def test_the_storage_check_without_amcheck_reads_every_table(
    repository: PostgresRepository, pg: Any
) -> None:
    if pg.execute("SELECT 1 FROM pg_extension WHERE extname = 'amcheck'").fetchone():
        pytest.skip("amcheck is installed in the shared test database")
    _put(pg, SCOPE, 0)
    assert _ops(repository, "storage_is_consistent") is True


@pytest.fixture
def amcheck_store(postgres_cluster: Any) -> Iterator[tuple[PostgresRepository, Any]]:
    """A store in a database of its own with the ``amcheck`` extension, and a plain
    connection to it."""
    import psycopg

    url = postgres_cluster.create_database()
    conn = psycopg.connect(url, autocommit=True)
    repo = None
    try:
        conn.execute("CREATE EXTENSION amcheck")
        repo = PostgresRepository(url, schema="store", max_connections=2)
        conn.execute("SET search_path = store")
        yield repo, conn
    finally:
        if repo is not None:
            repo.close()
        conn.close()
        postgres_cluster.drop_database(url)


def test_the_storage_check_with_amcheck_finds_a_row_an_index_lost(
    amcheck_store: tuple[PostgresRepository, Any],
) -> None:
    repository, pg = amcheck_store
    _put(pg, SCOPE, 0)
    assert _ops(repository, "storage_is_consistent") is True
    with _unindexed(pg, "memories"):
        _put(pg, SCOPE, 1)
    with pytest.raises(RepositoryCorruption):
        _ops(repository, "storage_is_consistent")
    with repository.unit_of_work("rebuild", write=True) as uow:
        uow.operations.rebuild_storage_indexes()
        uow.commit()
    assert _ops(repository, "storage_is_consistent") is True
    assert _ops(repository, "count_rows", SCOPE)["memory"] == 2


def test_the_rebuild_reindexes_every_index_of_the_schema(
    repository: PostgresRepository, pg: Any
) -> None:
    _put(pg, SCOPE, 0)
    with _unindexed(pg, "memories"):
        _put(pg, SCOPE, 1)
    (indexes,) = pg.execute(
        "SELECT COUNT(*) FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid "
        "WHERE t.relnamespace = current_schema()::regnamespace "
        "OR t.oid IN (SELECT reltoastrelid FROM pg_class "
        "WHERE relnamespace = current_schema()::regnamespace)"
    ).fetchone()
    with repository.unit_of_work("rebuild", write=True) as uow:
        assert uow.operations.rebuild_storage_indexes() == indexes
        uow.commit()
    assert _ops(repository, "count_rows", SCOPE)["memory"] == 2
