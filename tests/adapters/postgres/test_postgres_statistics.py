"""Statistics on PostgreSQL with the smallest pool: the size of the store is read over
the connection the call would otherwise wait for."""

from __future__ import annotations

import pytest
from conformance_builders import NOW, SCOPE, event

pytest.importorskip("psycopg", reason="needs the postgres extra (psycopg)")

import postgres_configuration
from trueheart_core import PostgresRepository, TrueHeart


def test_statistics_need_no_second_connection(pg_schema: str) -> None:
    # One connection: the size is read before the call's unit takes it, not over a
    # second connection that the pool would never lend while the unit holds the first.
    repository = PostgresRepository(
        postgres_configuration.database_url(),
        schema=pg_schema,
        max_connections=1,
        connect_timeout=1,
    )
    try:
        service = TrueHeart(repository, clock=lambda: NOW)
        service.ingest_event(event("evt-1"))
        whole, mine = service.stats(), service.stats(SCOPE)
        assert (whole.events, mine.events) == (1, 1)
        assert whole.storage_bytes is not None and whole.storage_bytes > 0
    finally:
        repository.close()
