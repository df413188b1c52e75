"""Erasure reaches the vectors: a removed memory's vector leaves the backend's storage.

A vector is derived from a body, so it is erased with it. The test embedder is dense and
derives every component from a SHA-256 of the text, so the bytes in which the service
hands each memory's vector to the repository are unique: after a forget, a delete, the
delete of the memory's raw event, or the forget of a claim, no 16-byte aligned chunk of
the removed vector may remain anywhere in the storage, as the backend's forensic search
finds (``Capability.FORENSICS``), while the vectors of the surviving memories are still
there (which shows that the search finds vectors). The secret memory is stored between
many others.

Sealing is not erasure: a sealed memory keeps its vector, leaves the semantic scan, and
comes back into hybrid search when it is restored, without being embedded again.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from conformance_builders import NOW, SCOPE, command, event, found_in_storage, memory
from semantic_builders import (
    BUDGET,
    CHUNK,
    DENSE_DIMS,
    FILLERS,
    SECRET,
    SECRET_CLAIM,
    SECRET_CONTENT,
    SURVIVOR,
    build_erasure_scope,
    dense_blob,
    dense_chunks,
    open_dense,
)

from trueheart_core import (
    ArtifactClass,
    EntityType,
    GovernanceAction,
    MemoryCapsule,
    Scope,
    SearchQuery,
    SignalSource,
    TrueHeart,
)
from trueheart_core.ports import Capability, Repository

pytestmark = pytest.mark.requires(Capability.VECTORS)


def _present_chunks(repository: Repository, content: str) -> list[int]:
    """The positions (in the vector) of the aligned chunks of ``content``'s vector that
    occur in the storage."""
    chunks = dense_chunks(content)
    found = found_in_storage(repository, chunks)
    return [i for i, chunk in enumerate(chunks) if chunk in found]


def _assert_held(repository: Repository, *contents: str) -> None:
    for content in contents:
        assert found_in_storage(repository, [dense_blob(content)]) == [dense_blob(content)]
        assert _present_chunks(repository, content) == list(range(4 * DENSE_DIMS // CHUNK))


def _assert_erased(repository: Repository, *contents: str) -> None:
    for content in contents:
        assert _present_chunks(repository, content) == []


def _semantic_signal(capsule: MemoryCapsule, memory_id: str) -> float | None:
    """The cosine similarity the semantic ranking gave ``memory_id`` in a search."""
    for entry in capsule.trace:
        if entry.memory_id == memory_id:
            for signal in entry.signals:
                if signal.source is SignalSource.SEMANTIC:
                    return signal.score
    return None


def _assert_survivors_searchable(service: TrueHeart, contents: dict[str, str]) -> None:
    found = service.search(SearchQuery(SCOPE, contents[SURVIVOR], NOW, budget_tokens=BUDGET))
    assert found.semantic is not None
    assert _semantic_signal(found, SURVIVOR) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.requires(Capability.FORENSICS)
@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_forget_and_delete_erase_the_memory_vector(
    repository: Repository, action: GovernanceAction
) -> None:
    service, _ = open_dense(repository)
    contents = build_erasure_scope(service)
    _assert_held(repository, SECRET_CONTENT, contents[SURVIVOR], contents[SECRET_CLAIM])
    service.govern(command(action, SECRET))
    _assert_erased(repository, SECRET_CONTENT)
    _assert_held(repository, contents[SURVIVOR], contents[SECRET_CLAIM])
    _assert_survivors_searchable(service, contents)
    assert (
        _semantic_signal(
            service.search(SearchQuery(SCOPE, SECRET_CONTENT, NOW, budget_tokens=BUDGET)), SECRET
        )
        is None
    )
    status = service.semantic_status(SCOPE)
    assert (status.memories, status.indexed, status.complete) == (FILLERS + 1, FILLERS + 1, True)
    assert service.verify_integrity().ok


@pytest.mark.requires(Capability.FORENSICS)
def test_raw_event_delete_erases_the_vectors_of_its_memories_and_claims(
    repository: Repository,
) -> None:
    service, _ = open_dense(repository)
    contents = build_erasure_scope(service)
    _assert_held(repository, SECRET_CONTENT, contents[SECRET_CLAIM])
    result = service.govern(
        command(GovernanceAction.DELETE, "evt-secret", entity_type=EntityType.RAW_EVENT)
    )
    assert result.affected_ids == (SECRET_CLAIM, "evt-secret", SECRET)
    _assert_erased(repository, SECRET_CONTENT, contents[SECRET_CLAIM])
    _assert_held(repository, contents[SURVIVOR])
    _assert_survivors_searchable(service, contents)
    assert service.semantic_status(SCOPE).indexed == FILLERS
    assert service.verify_integrity().ok


@pytest.mark.requires(Capability.FORENSICS)
@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_forgetting_a_claim_erases_its_vector(
    repository: Repository, action: GovernanceAction
) -> None:
    service, _ = open_dense(repository)
    contents = build_erasure_scope(service)
    _assert_held(repository, contents[SECRET_CLAIM], SECRET_CONTENT)
    service.govern(command(action, SECRET_CLAIM))
    _assert_erased(repository, contents[SECRET_CLAIM])
    # the claim's source event and its sibling memory keep theirs
    _assert_held(repository, SECRET_CONTENT, contents[SURVIVOR])
    _assert_survivors_searchable(service, contents)
    status = service.semantic_status(SCOPE)
    assert (status.memories, status.indexed) == (FILLERS + 1, FILLERS + 1)
    assert service.verify_integrity().ok


@pytest.mark.requires(Capability.FORENSICS)
def test_a_sealed_memory_keeps_its_vector_until_it_is_forgotten(repository: Repository) -> None:
    service, _ = open_dense(repository)
    contents = build_erasure_scope(service)
    service.govern(command(GovernanceAction.SEAL, SECRET))
    # an erasing call on another memory leaves the sealed vector where it is
    service.govern(command(GovernanceAction.FORGET, f"mem-{FILLERS - 1:03d}"))
    _assert_held(repository, SECRET_CONTENT)
    service.govern(command(GovernanceAction.FORGET, SECRET))
    _assert_erased(repository, SECRET_CONTENT)
    _assert_held(repository, contents[SURVIVOR])
    assert service.verify_integrity().ok


# --- seal and restore (every configuration) -------------------------------------------------

SMALL = {
    "mem-a": "apples grow on trees",
    "mem-b": "bridges span rivers",
    "mem-c": "clouds bring rain",
}
UNRELATED_QUERY = "zzz unmatched words"


def _everything(service: TrueHeart, text: str = UNRELATED_QUERY) -> MemoryCapsule:
    """A hybrid search whose text shares no term with any memory: with a minimum
    semantic score of -1, every scanned memory is a semantic match."""
    return service.search(SearchQuery(SCOPE, text, NOW, budget_tokens=BUDGET))


def _traced(capsule: MemoryCapsule) -> set[str]:
    return {entry.memory_id for entry in capsule.trace}


def test_sealing_keeps_the_vector_and_restore_brings_it_back_into_hybrid_search(
    repository: Repository,
) -> None:
    service, embedder = open_dense(repository, minimum_semantic_score=-1.0)
    service.ingest_event(event("evt-1", recall_for=timedelta(days=400)))
    for memory_id, content in SMALL.items():
        service.materialize_once(memory(memory_id, content=content))
    assert sorted(embedder.documents) == sorted(SMALL.values())
    before = _everything(service)
    assert before.semantic is not None
    assert (before.semantic.scanned, before.semantic.matched) == (3, 3)
    assert _traced(before) == set(SMALL)
    assert all(
        [signal.source for signal in entry.signals] == [SignalSource.SEMANTIC]
        for entry in before.trace
    )

    service.govern(command(GovernanceAction.SEAL, "mem-b"))
    status = service.semantic_status(SCOPE)
    # only active memories are counted; nothing is missing or stale
    assert (status.memories, status.indexed, status.complete) == (2, 2, True)
    sealed = _everything(service)
    assert sealed.semantic is not None
    assert (sealed.semantic.scanned, sealed.semantic.matched) == (2, 2)
    assert _traced(sealed) == {"mem-a", "mem-c"}
    exact = _everything(service, SMALL["mem-b"])
    assert "mem-b" not in _traced(exact)
    assert _semantic_signal(exact, "mem-b") is None

    embedded = len(embedder.documents)
    service.govern(command(GovernanceAction.RESTORE, "mem-b"))
    # the kept vector is current: restoring embeds nothing
    assert len(embedder.documents) == embedded
    status = service.semantic_status(SCOPE)
    assert (status.memories, status.indexed, status.complete) == (3, 3, True)
    restored = _everything(service)
    assert restored.semantic is not None
    assert (restored.semantic.scanned, restored.semantic.matched) == (3, 3)
    assert _traced(restored) == set(SMALL)
    exact = _everything(service, SMALL["mem-b"])
    assert exact.trace[0].memory_id == "mem-b"
    assert _semantic_signal(exact, "mem-b") == pytest.approx(1.0, abs=1e-6)
    assert service.verify_integrity().ok


@pytest.mark.requires(Capability.FORENSICS)
def test_subject_erasure_takes_every_vector_of_the_scope(repository: Repository) -> None:
    service, _ = open_dense(repository)
    contents = build_erasure_scope(service)
    other = Scope(SCOPE.tenant_id, SCOPE.owner_id, "someone-else")
    service.ingest_event(event("evt-other", scope=other))
    service.materialize_once(
        memory("mem-other", ("evt-other",), scope=other, content="another subject entirely")
    )
    _assert_held(repository, *contents.values(), "another subject entirely")
    plan = service.erase_subject(SCOPE, occurred_at=NOW, dry_run=True)
    assert plan.erased[ArtifactClass.VECTOR] == FILLERS + 2
    receipt = service.erase_subject(SCOPE, occurred_at=NOW)
    assert receipt.erased[ArtifactClass.VECTOR] == FILLERS + 2
    assert receipt.remaining is not None and receipt.remaining[ArtifactClass.VECTOR] == 0
    assert receipt.verified
    _assert_erased(repository, *contents.values())
    _assert_held(repository, "another subject entirely")
    status = service.semantic_status(SCOPE)
    assert (status.memories, status.indexed) == (0, 0)
    assert service.semantic_status(other).complete
    assert service.verify_integrity().problems == ()


def test_forget_reports_the_vector_it_removed(repository: Repository) -> None:
    service, _ = open_dense(repository)
    build_erasure_scope(service)
    result = service.govern(command(GovernanceAction.FORGET, SECRET))
    assert ArtifactClass.VECTOR in result.removed
