"""Governance results name the classes of stored artifacts each operation removed."""

from __future__ import annotations

from datetime import timedelta

from conformance_builders import NOW, SCOPE, claim, command, event, memory

from trueheart_core import (
    ArtifactClass,
    CanonicalClaimExtractor,
    EntityType,
    GovernanceAction,
    TrueHeart,
)

A = ArtifactClass


def _removed(service: TrueHeart, action: GovernanceAction, entity_id: str) -> tuple[A, ...]:
    entity_type = (
        EntityType.MEMORY if entity_id.startswith(("mem", "claim")) else EntityType.RAW_EVENT
    )
    return service.govern(command(action, entity_id, entity_type=entity_type)).removed


def test_forgetting_an_active_memory_with_words_of_its_own(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-1", content="unique words"))
    assert _removed(service, GovernanceAction.FORGET, "mem-1") == (
        A.MEMORY,
        A.LINEAGE_EDGE,
        A.SEARCH_ENTRY,
        A.SEARCH_TERM,
    )


def test_deleting_a_memory_whose_words_another_memory_holds(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-1", content="shared words"))
    service.materialize_once(memory("mem-2", content="shared words too"))
    assert _removed(service, GovernanceAction.DELETE, "mem-1") == (
        A.MEMORY,
        A.LINEAGE_EDGE,
        A.SEARCH_ENTRY,
    )


def test_forgetting_a_sealed_memory_removes_no_index_entry(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-1", content="unique words"))
    assert _removed(service, GovernanceAction.SEAL, "mem-1") == (A.SEARCH_ENTRY, A.SEARCH_TERM)
    assert _removed(service, GovernanceAction.RESTORE, "mem-1") == ()
    assert _removed(service, GovernanceAction.SEAL, "mem-1") == (A.SEARCH_ENTRY, A.SEARCH_TERM)
    assert _removed(service, GovernanceAction.FORGET, "mem-1") == (A.MEMORY, A.LINEAGE_EDGE)


def test_sealing_a_memory_whose_words_another_memory_holds(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-1", content="shared words"))
    service.materialize_once(memory("mem-2", content="shared words too"))
    assert _removed(service, GovernanceAction.SEAL, "mem-1") == (A.SEARCH_ENTRY,)
    assert _removed(service, GovernanceAction.SEAL, "mem-2") == (A.SEARCH_ENTRY, A.SEARCH_TERM)


def test_sealing_after_many_writes(service: TrueHeart) -> None:
    # Enough writes for a backend that buffers index changes to have applied them.
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-1", content="solitary phrase"))
    service.materialize_once(memory("mem-2", content="filler"))
    for k in range(150):
        service.materialize_once(memory(f"mem-fill-{k}", content=f"filler {k}"))
    terms = service.stats(SCOPE).search_terms
    for _ in range(2):
        assert _removed(service, GovernanceAction.SEAL, "mem-1") == (
            A.SEARCH_ENTRY,
            A.SEARCH_TERM,
        )
        assert _removed(service, GovernanceAction.SEAL, "mem-2") == (A.SEARCH_ENTRY,)
        assert _removed(service, GovernanceAction.RESTORE, "mem-1") == ()
        assert _removed(service, GovernanceAction.RESTORE, "mem-2") == ()
    assert service.stats(SCOPE).search_terms == terms


def test_forgetting_a_claim_removes_its_claim_row(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1"))
    service.materialize_claim(claim("claim-1"))
    assert _removed(service, GovernanceAction.FORGET, "claim-1") == (
        A.MEMORY,
        A.CLAIM,
        A.LINEAGE_EDGE,
        A.SEARCH_ENTRY,
        A.SEARCH_TERM,
    )


def test_deleting_an_event_with_its_extraction_and_claims(service: TrueHeart) -> None:
    service.ingest_extracted(
        event("evt-1", content="Canonical claim: subject=user:a; predicate=likes; value=tea."),
        CanonicalClaimExtractor(),
    )
    assert _removed(service, GovernanceAction.DELETE, "evt-1") == (
        A.RAW_EVENT,
        A.RAW_BODY,
        A.MEMORY,
        A.CLAIM,
        A.LINEAGE_EDGE,
        A.EXTRACTION_RECORD,
        A.SEARCH_ENTRY,
        A.SEARCH_TERM,
    )


def test_deleting_an_expired_event_without_dependents(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1", raw_ttl=timedelta(days=1)))
    service.expire_raw_content(as_of=NOW + timedelta(days=1))
    assert _removed(service, GovernanceAction.DELETE, "evt-1") == (A.RAW_EVENT,)


def test_a_cascade_removes_the_terms_only_its_memories_held(service: TrueHeart) -> None:
    service.ingest_events([event("evt-1"), event("evt-2")])
    # Both dependents hold "pair"; nothing else does: the cascade removes its term row.
    service.materialize_once(memory("mem-1", ("evt-1",), content="pair kept"))
    service.materialize_once(memory("mem-2", ("evt-1",), content="pair", kind="other"))
    service.materialize_once(memory("mem-3", ("evt-2",), content="kept"))
    before = service.stats(SCOPE).search_terms
    result = service.govern(
        command(GovernanceAction.DELETE, "evt-1", entity_type=EntityType.RAW_EVENT)
    )
    assert A.SEARCH_TERM in result.removed
    assert service.stats(SCOPE).search_terms == before - 1
