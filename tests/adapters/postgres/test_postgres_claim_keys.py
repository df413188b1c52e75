"""The index keys of PostgreSQL claim rows: the SQLite adapter's ``text_key`` of the
subject and predicate, so that a drifted key (edited with plain SQL here) is reported by
``verify_integrity`` and repaired by ``rebuild_indexes`` as it is on SQLite."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import postgres_configuration
from trueheart_core import (
    ClaimDraft,
    ClaimQuery,
    IntegrityProblem,
    PostgresRepository,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SourceRef,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.adapters.sql.keys import text_key

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "subject")
OTHER = Scope("tenant", "owner", "other-subject")
_names = itertools.count(1)


@pytest.fixture
def schema_name(postgres_cluster: Any) -> Iterator[str]:
    name = f"th_claimkeys_{os.getpid()}_{next(_names)}"
    try:
        yield name
    finally:
        postgres_configuration.drop_schema(postgres_configuration.database_url(), name)


@pytest.fixture
def service(schema_name: str) -> Iterator[TrueHeart]:
    repo = PostgresRepository(
        postgres_configuration.database_url(), schema=schema_name, max_connections=2
    )
    try:
        yield TrueHeart(repo, clock=lambda: NOW)
    finally:
        repo.close()


@pytest.fixture
def sql(service: TrueHeart, schema_name: str) -> Iterator[Any]:
    """A plain autocommit connection with the store's schema on its search path."""
    import psycopg

    conn = psycopg.connect(postgres_configuration.database_url(), autocommit=True)
    try:
        conn.execute(f'SET search_path = "{schema_name}"')
        yield conn
    finally:
        conn.close()


def _populate(service: TrueHeart) -> None:
    retention = RetentionPolicy(timedelta(days=7), timedelta(days=30), timedelta(days=90))
    for scope in (SCOPE, OTHER):
        src = SourceRef("source-1", "synthetic", NOW, TrustLevel.OBSERVED, {})
        service.ingest_event(RawEventDraft("evt-1", scope, src, "a message", retention, {}))
    for claim_id, subject, scope in (
        ("claim-1", "user:ada", SCOPE),
        ("claim-2", "user:bob", SCOPE),
        ("claim-1", "user:ada", OTHER),
    ):
        service.materialize_claim(
            ClaimDraft(
                claim_id,
                scope,
                subject,
                "prefers_theme",
                "dark",
                ("evt-1",),
                TrustLevel.OBSERVED,
                NOW,
                None,
                None,
                1.0,
                "application",
                None,
                {},
            )
        )


def test_keys_are_the_sqlite_adapters_keys_of_the_texts(service: TrueHeart, sql: Any) -> None:
    _populate(service)
    rows = sql.execute(
        "SELECT subject, predicate, subject_key, predicate_key FROM claims"
    ).fetchall()
    assert len(rows) == 3
    for subject, predicate, subject_key, predicate_key in rows:
        assert subject_key == text_key(bytes(subject).decode())
        assert predicate_key == text_key(bytes(predicate).decode())


def test_drifted_claim_keys_are_reported_and_repaired(service: TrueHeart, sql: Any) -> None:
    _populate(service)
    changed = sql.execute(
        "UPDATE claims SET subject_key = 7 WHERE claim_id = %s AND subject_id = %s",
        [b"claim-1", b"subject"],
    ).rowcount
    assert changed == 1
    problem = IntegrityProblem("claim_index", "claim-1", SCOPE, "claim_key_mismatch")
    assert service.verify_integrity().problems == (problem,)
    assert service.verify_integrity(SCOPE).problems == (problem,)
    assert service.verify_integrity(OTHER).ok
    # A question by subject reads through the keys, and misses the drifted row.
    assert service.claims(ClaimQuery(SCOPE, NOW, subject="user:ada")).claims == ()
    report = service.rebuild_indexes()
    assert report.claim_keys_repaired == 1 and report.changed
    assert service.verify_integrity().ok
    answer = service.claims(ClaimQuery(SCOPE, NOW, subject="user:ada"))
    assert [view.claim.claim_id for view in answer.claims] == ["claim-1"]
