"""Ingesting an event with its derived memories and claims in one transaction."""

from __future__ import annotations

import pytest
from conformance_builders import SCOPE, claim, event, memory, msg

from trueheart_core import (
    CanonicalClaimExtractor,
    ClaimExtraction,
    EntityNotFound,
    IngestResult,
    ProviderError,
    TrueHeart,
    TrustEscalation,
    TrustLevel,
    ValidationError,
)


def test_event_memories_and_claims_are_stored_together(service: TrueHeart) -> None:
    result = service.ingest_derived(
        event("evt-1", content="Ada likes dark mode"),
        memories=[memory("mem-1", content="Ada likes dark mode")],
        claims=[claim("claim-1", value="dark")],
    )
    assert isinstance(result, IngestResult)
    assert result.receipt.event_id == "evt-1"
    assert [m.memory_id for m in result.memories] == ["mem-1"]
    assert [c.claim_id for c in result.claims] == ["claim-1"]
    assert service.get_memory(SCOPE, "mem-1") == result.memories[0]
    assert service.get_memory(SCOPE, "claim-1").memory_id == "claim-1"


def test_an_identical_replay_returns_what_is_stored(service: TrueHeart) -> None:
    parts = {"memories": (memory("mem-1"),), "claims": (claim("claim-1"),)}
    first = service.ingest_derived(event("evt-1"), **parts)  # type: ignore[arg-type]
    assert service.ingest_derived(event("evt-1"), **parts) == first  # type: ignore[arg-type]


def test_one_refused_part_stores_nothing(service: TrueHeart) -> None:
    with pytest.raises(TrustEscalation):
        service.ingest_derived(
            event("evt-1", trust=TrustLevel.OBSERVED),
            memories=[memory("mem-1"), memory("mem-2", trust=TrustLevel.CONFIRMED)],
        )
    with pytest.raises(EntityNotFound):
        service.get_receipt(SCOPE, "evt-1")
    with pytest.raises(EntityNotFound):
        service.get_memory(SCOPE, "mem-1")


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ({"memories": [object()]}, "memories: must be a list or tuple of MemoryDraft"),
        ({"memories": memory()}, "memories: must be a list or tuple of MemoryDraft"),
        ({"claims": [memory()]}, "claims: must be a list or tuple of ClaimDraft"),
    ],
)
def test_parts_are_checked_before_anything_is_stored(
    service: TrueHeart, parts: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=msg(message)):
        service.ingest_derived(event("evt-1"), **parts)  # type: ignore[arg-type]
    with pytest.raises(EntityNotFound):
        service.get_receipt(SCOPE, "evt-1")


def test_extraction_stores_the_memories_passed_along(service: TrueHeart) -> None:
    text = "Canonical claim: subject=user:ada; predicate=prefers_theme; value=dark."
    result = service.ingest_extracted(
        event("evt-1", content=text),
        CanonicalClaimExtractor(),
        memories=[memory("mem-1", content=text)],
    )
    assert [m.memory_id for m in result.memories] == ["mem-1"]
    assert len(result.claims) == 1
    assert service.get_memory(SCOPE, "mem-1").content == text


class _Broken:
    identity = "broken"

    def extract(self, text: str) -> ClaimExtraction:
        raise RuntimeError("no")


def test_a_failed_extraction_stores_no_memory_either(service: TrueHeart) -> None:
    with pytest.raises(ProviderError, match=msg("provider error: the extractor failed")) as caught:
        service.ingest_extracted(
            event("evt-1"),
            _Broken(),
            memories=[memory("mem-1")],  # type: ignore[arg-type]
        )
    assert isinstance(caught.value.__cause__, RuntimeError)
    with pytest.raises(EntityNotFound):
        service.get_memory(SCOPE, "mem-1")
