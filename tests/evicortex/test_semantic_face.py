"""The semantic projection through the evicortex face: status, explicit indexing and
repair, a failing provider, a changed provider, the scan cap and the reranker seam."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from evicortex_builders import (
    NS,
    OTHER,
    T0,
    T1,
    T2,
    CountingEmbedder,
    RecordingReranker,
    record_id,
)

from evicortex import (
    ClaimInput,
    EmbedderMismatch,
    EmbeddingUpsertResult,
    EviCortex,
    HashingEmbedder,
    SemanticIndexStatus,
    SemanticProjectionError,
)
from evicortex.errors import EviCortexError, ValidationError

TWO_CLAIMS = [
    ClaimInput("user:ada", "prefers_theme", "dark"),
    ClaimInput("user:ada", "lives_in", "Lyon"),
]


def test_status_is_complete_after_remember(open_store: Callable[..., EviCortex]) -> None:
    memory = open_store(":memory:", embedder=HashingEmbedder(256))
    record = memory.remember(namespace=NS, content="Exact evidence", claims=TWO_CLAIMS)
    status = memory.semantic_status(NS)
    assert isinstance(status, SemanticIndexStatus)
    assert status.namespace == NS
    assert status.registered is True
    assert status.complete is True
    assert (status.missing_count, status.stale_count) == (0, 0)
    assert status.memory_missing_ids == status.memory_stale_ids == ()
    assert status.claim_missing_ids == status.claim_stale_ids == ()
    assert memory.stats(NS).vectors == 1 + len(record.claims)


def test_without_auto_index_the_missing_ids_are_listed_then_repaired(
    open_store: Callable[..., EviCortex],
) -> None:
    embedder = CountingEmbedder()
    memory = open_store(":memory:", embedder=embedder, auto_index=False)
    first = memory.remember(namespace=NS, content="first evidence", claims=TWO_CLAIMS)
    second = memory.remember(namespace=NS, content="second evidence")
    assert embedder.document_calls == []
    status = memory.semantic_status(NS)
    assert status.registered is True
    assert status.complete is False
    assert status.memory_missing_ids == tuple(sorted([first.id, second.id]))
    assert status.claim_missing_ids == tuple(sorted(c.id for c in first.claims))
    assert status.missing_count == 4
    assert status.stale_count == 0

    result = memory.index_semantic(second)
    assert isinstance(result, EmbeddingUpsertResult)
    assert result.memory_id == second.id
    assert result.embedded == 1
    after = memory.semantic_status(NS)
    assert second.id not in after.memory_missing_ids
    assert first.id in after.memory_missing_ids
    again = memory.index_semantic(second)
    assert (again.memory_id, again.embedded) == (second.id, 0)

    repaired = memory.sync_semantic(NS)
    assert isinstance(repaired, SemanticIndexStatus)
    assert repaired.complete is True
    assert memory.semantic_status(NS).complete is True
    assert memory.stats(NS).vectors == 4


def test_index_semantic_embeds_a_record_with_its_claims(
    open_store: Callable[..., EviCortex],
) -> None:
    memory = open_store(":memory:", embedder=CountingEmbedder(), auto_index=False)
    record = memory.remember(namespace=NS, content="evidence", claims=TWO_CLAIMS)
    result = memory.index_semantic(record)
    assert result.memory_id == record.id
    assert result.embedded >= 1
    status = memory.semantic_status(NS)
    assert record.id not in status.memory_missing_ids


def test_index_semantic_projects_the_stored_records_claims(
    open_store: Callable[..., EviCortex],
) -> None:
    # A record whose claims were changed after it was returned (None, or another
    # record's claim) projects what the store holds for it, nothing else.
    memory = open_store(":memory:", embedder=CountingEmbedder(), auto_index=False)
    record = memory.remember(namespace=NS, content="evidence", claims=TWO_CLAIMS)
    other = memory.remember(namespace=NS, content="other evidence", claims=TWO_CLAIMS[:1])
    forged = dataclasses.replace(record, claims=(None, *other.claims))  # type: ignore[arg-type]
    result = memory.index_semantic(forged)
    assert (result.memory_id, result.embedded + result.skipped) == (record.id, 3)
    status = memory.semantic_status(NS)
    assert record.id not in status.memory_missing_ids
    assert other.id in status.memory_missing_ids
    assert set(status.claim_missing_ids) == {claim.id for claim in other.claims}


def test_sync_semantic_repairs_in_batches(open_store: Callable[..., EviCortex]) -> None:
    embedder = CountingEmbedder()
    memory = open_store(":memory:", embedder=embedder, auto_index=False)
    for index in range(5):
        memory.remember(namespace=NS, content=f"evidence number {index}")
    memory.remember(namespace=OTHER, content="another namespace")
    status = memory.sync_semantic(NS, batch_size=2)
    assert status.complete is True
    assert all(len(call) <= 2 for call in embedder.document_calls)
    assert sum(len(call) for call in embedder.document_calls) == 5
    assert memory.semantic_status(OTHER).memory_missing_ids != ()
    for batch_size in (0, 4097, True):
        with pytest.raises(ValidationError):
            memory.sync_semantic(NS, batch_size=batch_size)


def test_a_failing_embedder_raises_after_the_evidence_is_committed(
    open_store: Callable[..., EviCortex],
) -> None:
    embedder = CountingEmbedder()
    embedder.fail = True
    memory = open_store(":memory:", embedder=embedder)
    with pytest.raises(SemanticProjectionError) as caught:
        memory.remember(namespace=NS, content="committed evidence", idempotency_key="k")
    error = caught.value
    assert isinstance(error, EviCortexError)
    assert error.memory_id == record_id(NS, "k")
    assert error.evidence_committed is True
    assert "committed evidence" not in str(error)
    record = memory.expand(namespace=NS, memory_id=error.memory_id)
    assert record.content == "committed evidence"
    assert memory.semantic_status(NS).memory_missing_ids == (record.id,)
    # Repair with the (now working) compatible provider, instead of writing again.
    embedder.fail = False
    assert memory.sync_semantic(NS).complete is True
    assert memory.remember(namespace=NS, content="committed evidence", idempotency_key="k") == (
        record
    )
    assert memory.stats(NS).memories == 1


def test_a_changed_embedder_at_reopen_is_refused(
    store_path: Path, open_store: Callable[..., EviCortex]
) -> None:
    with EviCortex.open(store_path, embedder=HashingEmbedder(256)) as memory:
        memory.remember(namespace=NS, content="projected evidence")
    with pytest.raises(EmbedderMismatch):
        EviCortex.open(store_path, embedder=HashingEmbedder(128))
    with pytest.raises(EmbedderMismatch):
        EviCortex.open(store_path, embedder=CountingEmbedder(256, identity="another-model"))
    memory = open_store(store_path, embedder=HashingEmbedder(256))
    assert memory.semantic_status(NS).complete is True
    assert memory.stats(NS).memories == 1


def test_a_provider_changed_after_open_is_refused(open_store: Callable[..., EviCortex]) -> None:
    embedder = CountingEmbedder(64)
    memory = open_store(":memory:", embedder=embedder, auto_index=False)
    record = memory.remember(namespace=NS, content="evidence")
    embedder.change(dimensions=32)
    with pytest.raises(EmbedderMismatch):
        memory.sync_semantic(NS)
    with pytest.raises(EmbedderMismatch):
        memory.index_semantic(record)
    assert memory.semantic_status(NS).memory_missing_ids == (record.id,)


def test_the_scan_cap_reports_an_overflow(open_store: Callable[..., EviCortex]) -> None:
    memory = open_store(":memory:", embedder=HashingEmbedder(64), semantic_scan_cap=2)
    for index in range(4):
        memory.remember(namespace=NS, content=f"quokka sighting {index}")
    capsule = memory.recall(namespace=NS, query="quokka sighting")
    assert capsule.semantic is not None
    assert capsule.semantic.scan_cap == 2
    assert capsule.semantic.capped is True
    assert capsule.diagnostics or capsule.semantic.diagnostics


def test_a_reranker_is_consulted_within_its_limit(open_store: Callable[..., EviCortex]) -> None:
    reranker = RecordingReranker()
    memory = open_store(":memory:", embedder=HashingEmbedder(64), reranker=reranker, rerank_limit=2)
    records = [
        memory.remember(namespace=NS, content="quokka " + "x" * index) for index in range(1, 6)
    ]
    capsule = memory.recall(namespace=NS, query="quokka")
    assert reranker.calls
    assert all(query == "quokka" for query, _ in reranker.calls)
    assert all(1 <= len(candidates) <= 2 for _, candidates in reranker.calls)
    known = {record.id for record in records}
    assert all(c.memory_id in known for _, candidates in reranker.calls for c in candidates)
    assert capsule.semantic is not None
    assert capsule.semantic.reranker == reranker.identity
    assert 1 <= capsule.semantic.reranked <= 2
    reranked = [
        item.id
        for item in capsule.items
        if any(getattr(signal, "source", None) == "rerank" for signal in item.signals)
    ]
    assert 1 <= len(reranked) <= 2


@pytest.mark.parametrize(
    "settings",
    [
        pytest.param({"reranker": RecordingReranker()}, id="reranker-without-embedder"),
        pytest.param({"embedder": HashingEmbedder(8), "rerank_limit": 0}, id="rerank-limit-0"),
        pytest.param({"embedder": HashingEmbedder(8), "rerank_limit": 101}, id="rerank-limit-101"),
        pytest.param({"embedder": HashingEmbedder(8), "reranker_weight": -1.0}, id="weight"),
        pytest.param({"embedder": HashingEmbedder(8), "semantic_scan_cap": 0}, id="scan-cap-0"),
        pytest.param(
            {"embedder": HashingEmbedder(8), "minimum_semantic_score": 2.0}, id="minimum-score"
        ),
        pytest.param({"embedder": object()}, id="not-an-embedder"),
        pytest.param({"auto_index": "yes"}, id="auto-index"),
    ],
)
def test_semantic_settings_out_of_bounds_are_refused(settings: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        EviCortex.open(":memory:", **settings)


def test_the_reranker_gets_only_claims_valid_at_as_of(
    open_store: Callable[..., EviCortex],
) -> None:
    reranker = RecordingReranker()
    memory = open_store(":memory:", embedder=HashingEmbedder(64), reranker=reranker)
    record = memory.remember(
        namespace=NS,
        content="Ada will move to Paris.",
        occurred_at=T0,
        claims=[ClaimInput("user:ada", "lives_in", "Paris", valid_from=T2)],
    )
    (claim,) = record.claims
    capsule = memory.recall(namespace=NS, query="Ada lives_in Paris", as_of=T1)
    assert [item.id for item in capsule.items] == [record.id]
    seen = {c.memory_id for _, candidates in reranker.calls for c in candidates}
    assert claim.id not in seen
    assert record.id in seen
