"""The advisory lock of each scope: writers of one scope wait for each other, writers of
scopes whose IDs differ do not, whatever characters the IDs hold (U+0000 included), and
the key of IDs without U+0000 is the one every earlier version computed."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import postgres_configuration
from trueheart_core import (
    PostgresRepository,
    RawEventDraft,
    RepositoryBusy,
    RetentionPolicy,
    Scope,
    SourceRef,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.adapters.postgres.session import lock_key

NOW = datetime(2026, 8, 13, 12, tzinfo=UTC)
WEEK = RetentionPolicy(timedelta(days=7), timedelta(days=7), timedelta(days=7))


def _key(scope: Scope, store: str) -> int:
    ids = (scope.tenant_id, scope.owner_id, scope.subject_id)
    return lock_key(b"scope", store.encode(), *(part.encode() for part in ids))


def _event(scope: Scope) -> RawEventDraft:
    source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
    return RawEventDraft("evt-1", scope, source, "Ada drinks tea.", WEEK)


def test_ids_that_join_alike_around_a_zero_character_get_different_keys() -> None:
    pairs = [
        (Scope("a\x00b", "c", "d"), Scope("a", "b\x00c", "d")),
        (Scope("a", "b\x00", "c"), Scope("a", "b", "\x00c")),
        (Scope("a\x00\x00", "b", "c"), Scope("a", "\x00b", "c")),
    ]
    for first, second in pairs:
        assert _key(first, "trueheart") != _key(second, "trueheart")


def test_the_key_of_ids_without_a_zero_character_is_unchanged() -> None:
    """Processes of different versions writing one store must take the same lock for a
    scope: the key of such IDs is still the hash of the parts joined by zero bytes."""
    scope = Scope("acme", "agent", "user-1")
    joined = b"\x00".join([b"scope", b"trueheart", b"acme", b"agent", b"user-1"])
    digest = hashlib.blake2b(joined, digest_size=8, person=b"trueheart-lock").digest()
    assert _key(scope, "trueheart") == int.from_bytes(digest, "big", signed=True)


def test_a_writer_of_one_scope_does_not_wait_for_a_scope_whose_ids_join_alike(
    repository: PostgresRepository, pg_schema: str
) -> None:
    import psycopg

    held, other = Scope("a\x00b", "c", "d"), Scope("a", "b\x00c", "d")
    holder: Any = psycopg.connect(postgres_configuration.database_url())
    try:
        # A writer of ``held``, in the middle of its transaction.
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (_key(held, pg_schema),))
        service = TrueHeart(
            PostgresRepository(
                postgres_configuration.database_url(), schema=pg_schema, lock_timeout=1.0
            ),
            clock=lambda: NOW,
        )
        with service:
            assert service.ingest_event(_event(other)).event_id == "evt-1"
            with pytest.raises(RepositoryBusy):
                service.ingest_event(_event(held))
            holder.rollback()
            assert service.ingest_event(_event(held)).event_id == "evt-1"
    finally:
        holder.close()
