"""The dense embedder end to end: a TrueHeart service projects, repairs and searches
with the tiny local model, and refuses the same store under another model."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from trueheart_core import (
    EmbedderMismatch,
    MemoryDraft,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.providers import TransformersEmbedder

NOW = datetime(2026, 8, 13, 12, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "subject")
RETENTION = RetentionPolicy(timedelta(days=1), timedelta(days=10), timedelta(days=100))


def test_a_service_projects_and_searches_with_the_local_model(
    tiny_model: Path, model_factory: Callable[[int], Path], tmp_path: Path
) -> None:
    path = tmp_path / "store.db"
    embedder = TransformersEmbedder(str(tiny_model))
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW, embedder=embedder) as service:
        source = SourceRef("s", "t", NOW, TrustLevel.OBSERVED)
        service.ingest_event(RawEventDraft("evt", SCOPE, source, "body", RETENTION))
        for index, text in enumerate(["the cat sat", "a dog ran", "cats and dogs"]):
            service.materialize_once(
                MemoryDraft(f"m{index}", SCOPE, text, ("evt",), "note", TrustLevel.OBSERVED, NOW)
            )
        status = service.semantic_status(SCOPE)
        assert status.complete and status.indexed == 3
        capsule = service.search(SearchQuery(SCOPE, "cat", NOW + timedelta(seconds=1)))
        assert capsule.semantic is not None
        assert capsule.semantic.embedder == embedder.identity
        assert capsule.semantic.scanned == 3
        assert capsule.items
        assert service.verify_integrity().problems == ()
    other = TransformersEmbedder(str(model_factory(1)))
    assert other.identity != embedder.identity
    with (
        SQLiteRepository(path) as repository,
        pytest.raises(EmbedderMismatch),
    ):
        TrueHeart(repository, embedder=other)
