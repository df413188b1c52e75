"""A store used by a role of least privilege, as docs/postgres.md sets one up: the owner
role creates the schema; the application role may read and write its rows and nothing
else. Everything works for it except what needs the owner (rewriting tables), which is
refused before anything is changed."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from conformance_builders import ERASED_AT, NOW, OTHER_SCOPE, SCOPE, command, event, memory

import postgres_configuration
from trueheart_core import (
    EntityType,
    GovernanceAction,
    PostgresRepository,
    RecallQuery,
    RepositoryBusy,
    RepositoryReadOnly,
    TrueHeart,
)


def _as(url: str, role: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, f"{role}@{host}", parts.path, parts.query, ""))


@pytest.fixture
def app_url(repository: PostgresRepository, pg: Any, pg_schema: str) -> Iterator[str]:
    """The URL of a new login role holding only the grants the guide lists."""
    role = f"th_app_{uuid.uuid4().hex[:12]}"
    pg.execute(f'CREATE ROLE "{role}" LOGIN')
    for statement in (
        f'GRANT USAGE ON SCHEMA "{pg_schema}" TO "{role}"',
        f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{pg_schema}" TO "{role}"',
        f'GRANT USAGE ON ALL SEQUENCES IN SCHEMA "{pg_schema}" TO "{role}"',
    ):
        pg.execute(statement)
    yield _as(postgres_configuration.database_url(), role)
    pg.execute(f'DROP OWNED BY "{role}"')
    pg.execute(f'DROP ROLE "{role}"')


def test_the_application_role_writes_reads_and_governs(app_url: str, pg_schema: str) -> None:
    with TrueHeart(PostgresRepository(app_url, schema=pg_schema), clock=lambda: NOW) as service:
        service.ingest_event(event("evt-1"))
        service.materialize_once(memory("mem-1", ("evt-1",)))
        service.materialize_once(memory("mem-2", ("evt-1",), content="another memory"))
        service.govern(command(GovernanceAction.FORGET, "mem-2"))
        assert [i.memory.memory_id for i in service.recall(RecallQuery(SCOPE, NOW))] == ["mem-1"]
        receipt = service.erase_subject(SCOPE, occurred_at=ERASED_AT, rewrite=False)
        assert receipt.verified is True
        assert service.verify_integrity().ok


def test_a_rewrite_needs_the_owner_and_is_refused_before_any_change(
    app_url: str, pg_schema: str
) -> None:
    with TrueHeart(PostgresRepository(app_url, schema=pg_schema), clock=lambda: NOW) as service:
        service.ingest_event(event("evt-1"))
        service.materialize_once(memory("mem-1", ("evt-1",)))
        with pytest.raises(RepositoryReadOnly, match="needs the role that owns them"):
            service.erase_subject(SCOPE, occurred_at=ERASED_AT)
        with pytest.raises(RepositoryReadOnly, match="needs the role that owns them"):
            service.compact()
        assert len(service.recall(RecallQuery(SCOPE, NOW))) == 1
        assert service.audit(SCOPE)[0].action == "materialize"


def test_the_application_role_cannot_create_a_store(app_url: str) -> None:
    with pytest.raises(RepositoryReadOnly):
        PostgresRepository(app_url, schema=f"th_denied_{uuid.uuid4().hex[:8]}")


def test_an_owed_rewrite_is_left_owed_by_a_role_that_cannot_run_it(
    app_url: str, pg_schema: str, pg: Any
) -> None:
    """The application role's erasing calls go on, and the rewrite an owner's erasure
    owes stays recorded until the owner's next erasing call runs it (the server would
    skip another role's ``VACUUM FULL`` with a mere warning)."""
    import psycopg

    url = postgres_configuration.database_url()
    holder = psycopg.connect(url)
    try:
        with TrueHeart(
            PostgresRepository(url, schema=pg_schema, lock_timeout=0.3), clock=lambda: NOW
        ) as owner:
            owner.ingest_event(event("evt-1"))
            owner.materialize_once(memory("mem-1", ("evt-1",)))
            holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            holder.execute("SELECT 1").fetchall()
            with pytest.raises(RepositoryBusy, match="erasure rewrite incomplete"):
                owner.erase_subject(SCOPE, occurred_at=ERASED_AT)
    finally:
        holder.close()
    owed = pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone()
    assert owed[0] and owed[1] is not None
    with TrueHeart(PostgresRepository(app_url, schema=pg_schema), clock=lambda: NOW) as app:
        app.ingest_event(event("evt-2", scope=OTHER_SCOPE))
        app.govern(
            command(
                GovernanceAction.DELETE,
                "evt-2",
                entity_type=EntityType.RAW_EVENT,
                scope=OTHER_SCOPE,
            )
        )
    assert pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone() == owed
    with TrueHeart(PostgresRepository(url, schema=pg_schema), clock=lambda: NOW) as owner:
        owner.ingest_event(event("evt-3", scope=OTHER_SCOPE))
        owner.govern(
            command(
                GovernanceAction.DELETE,
                "evt-3",
                entity_type=EntityType.RAW_EVENT,
                scope=OTHER_SCOPE,
            )
        )
    assert pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone() == ([], None)


def test_the_application_role_s_rebuild_leaves_its_rewrite_to_the_owner(
    app_url: str, pg_schema: str, pg: Any
) -> None:
    """Rebuilding needs no owner: the rows it removes leave every answer at once, and
    the rewrite that takes them out of the files stays owed until a call of the owner
    runs it (the application role's own erasing calls go on meanwhile)."""
    with TrueHeart(PostgresRepository(app_url, schema=pg_schema), clock=lambda: NOW) as app:
        app.ingest_event(event("evt-1"))
        app.materialize_once(memory("mem-1", ("evt-1",)))
        assert app.rebuild_search_index() == 1
        assert app.verify_integrity().ok
        app.govern(command(GovernanceAction.FORGET, "mem-1"))
    owed = pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone()
    assert set(owed[0]) >= {"search_docs", "search_postings"} and owed[1] is not None
    url = postgres_configuration.database_url()
    with TrueHeart(PostgresRepository(url, schema=pg_schema), clock=lambda: NOW) as owner:
        owner.compact()
    assert pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone() == ([], None)
