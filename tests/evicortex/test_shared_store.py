"""One store, two faces: what EviCortex writes the engine reads in the namespace's scope,
and an evidence event with its memory written through the engine is an EviCortex record."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from evicortex_builders import NS, OTHER, T0, T1, T2, plain, scope

from evicortex import ClaimInput, EviCortex
from trueheart_core import (
    ClaimQuery,
    MemoryDraft,
    RawEventDraft,
    RetentionPolicy,
    ScopeMismatch,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

LONG = timedelta(days=365 * 200)


def test_the_engine_reads_what_evicortex_wrote(
    store_path: Path, open_store: Callable[..., EviCortex]
) -> None:
    memory = open_store(store_path)
    record = memory.remember(
        namespace=NS,
        content="Ada adopted a quokka named Pip.",
        source="chat:42",
        occurred_at=T0,
        recorded_at=T1,
        metadata={"channel": "chat"},
        idempotency_key="adoption",
        claims=[
            ClaimInput("user:ada", "has_pet", "quokka", valid_from=T0),
            ClaimInput("pet:pip", "species", "quokka", confidence=0.5, authority="user"),
        ],
    )
    default_source = memory.remember(namespace=NS, content="A line without a source.")
    memory.close()
    now = datetime.now(UTC)
    with TrueHeart(SQLiteRepository(str(store_path))) as engine:
        evidence = engine.get_memory(scope(NS), record.id)
        assert evidence.content == record.content
        assert evidence.kind == "episode"
        assert evidence.trust == TrustLevel.OBSERVED
        assert evidence.created_at == T0
        assert evidence.source_event_ids == (record.id,)
        assert plain(evidence.metadata) == {"channel": "chat"}

        receipt = engine.get_receipt(scope(NS), record.id)
        assert receipt.source.source_id == "chat:42"
        assert receipt.source.source_type == "evicortex"
        assert receipt.source.occurred_at == T0
        assert receipt.source.trust == TrustLevel.OBSERVED
        source_metadata = plain(receipt.source.metadata)
        assert isinstance(source_metadata, dict)
        assert source_metadata["source"] == "chat:42"
        assert source_metadata["idempotency_key"] == "adoption"
        assert receipt.ingested_at == T1
        assert receipt.content_hash == record.content_hash
        assert plain(receipt.metadata) == {"channel": "chat"}
        assert receipt.raw_expires_at > now + timedelta(days=365 * 50)
        other_receipt = engine.get_receipt(scope(NS), default_source.id)
        assert other_receipt.source.source_id == "evicortex"
        other_metadata = plain(other_receipt.source.metadata)
        assert isinstance(other_metadata, dict)
        assert (other_metadata["source"], other_metadata["idempotency_key"]) == ("", None)

        claims = engine.claims(ClaimQuery(scope(NS), now))
        views = {view.claim.claim_id: view for view in claims.claims}
        assert set(views) == {claim.id for claim in record.claims}
        for claim in record.claims:
            stored = views[claim.id].claim
            assert (stored.subject, stored.predicate, stored.value) == (
                claim.subject,
                claim.predicate,
                claim.value,
            )
            assert (stored.confidence, stored.authority) == (claim.confidence, claim.authority)
            assert stored.memory.source_event_ids == (record.id,)
            assert stored.memory.created_at == T0
            assert views[claim.id].status == claim.status

        capsule = engine.search(SearchQuery(scope(NS), "quokka", now))
        found = {item.memory.memory_id for item in capsule.items}
        assert found == {record.id, *(claim.id for claim in record.claims)}

        with pytest.raises(ScopeMismatch):
            engine.get_memory(scope(OTHER), record.id)


def test_evicortex_reads_evidence_written_through_the_engine(
    store_path: Path, open_store: Callable[..., EviCortex]
) -> None:
    content = "Ada planted a walnut tree."
    with TrueHeart(SQLiteRepository(str(store_path))) as engine:
        event = RawEventDraft(
            "th-1",
            scope(NS),
            SourceRef("garden-log", "evicortex", T1, TrustLevel.OBSERVED),
            content,
            RetentionPolicy(LONG, LONG, LONG),
            {"channel": "log"},
        )
        evidence = MemoryDraft(
            "th-1",
            scope(NS),
            content,
            ("th-1",),
            "episode",
            TrustLevel.OBSERVED,
            T1,
            {"channel": "log"},
        )
        engine.ingest_derived(event, memories=[evidence])
    memory = open_store(store_path)
    record = memory.expand(namespace=NS, memory_id="th-1")
    assert record.id == "th-1"
    assert record.namespace == NS
    assert record.content == content
    assert record.kind == "episode"
    assert record.occurred_at == T1
    assert plain(record.metadata) == {"channel": "log"}
    assert record.claims == ()
    capsule = memory.recall(namespace=NS, query="walnut")
    assert [(item.id, item.memory_id) for item in capsule.items] == [("th-1", "th-1")]
    assert memory.recall(namespace=NS, query="walnut", as_of=T0).items == ()
    assert [item.id for item in memory.recall(namespace=NS, query="walnut", as_of=T2).items] == [
        "th-1"
    ]
    with pytest.raises(KeyError):
        memory.expand(namespace=OTHER, memory_id="th-1")
    assert memory.stats(NS).memories == 1
