"""What the host's embedder and reranker answer is checked before it is used or stored,
and what they raise becomes a documented error."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest
from conformance_builders import NOW, SCOPE, CountingClock, materialize_all, memory, msg
from semantic_builders import ConceptEmbedder

from trueheart_core import (
    SearchQuery,
    SemanticProjectionError,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Capability, Repository

pytestmark = pytest.mark.requires(Capability.VECTORS)

LATER = NOW + timedelta(seconds=1)


class _Miscounted(Sequence[float]):
    """A host's vector whose ``len()`` says ``dimensions`` but which holds fewer numbers."""

    def __init__(self, length: int, items: list[float]) -> None:
        self.length = length
        self.items = items

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> float:  # type: ignore[override]
        return self.items[index]


class _Miscounting(ConceptEmbedder):
    """Answers miscounted vectors while ``lying`` is set."""

    lying = False

    def _answer(self, text: str) -> Sequence[float]:
        vector = self._vector(text)
        return _Miscounted(len(vector), vector[:2]) if self.lying else vector

    def embed_documents(self, texts: Sequence[str]) -> list[Sequence[float]]:  # type: ignore[override]
        return [self._answer(text) for text in texts]

    def embed_query(self, text: str) -> Sequence[float]:  # type: ignore[override]
        return self._answer(text)


def _open(repository: Repository, embedder: ConceptEmbedder) -> TrueHeart:
    return TrueHeart(repository, clock=CountingClock(), embedder=embedder)


def test_a_vector_holding_fewer_numbers_than_its_len_is_never_stored(
    repository: Repository,
) -> None:
    embedder = _Miscounting()
    service = _open(repository, embedder)
    materialize_all(service, {"mem-0": "concise answers"})
    embedder.lying = True
    with pytest.raises(SemanticProjectionError, match="answer was refused: mem-1") as caught:
        service.materialize_once(memory("mem-1", content="brief tea"))
    assert isinstance(caught.value.__cause__, ValidationError)
    assert str(caught.value.__cause__) == "embedder: returned a vector of the wrong length"
    assert service.semantic_status(SCOPE).missing_memory_ids == ("mem-1",)
    assert service.verify_integrity().problems == ()
    embedder.lying = False
    capsule = service.search(SearchQuery(SCOPE, "brief replies", LATER))
    assert capsule.items[0].memory.memory_id == "mem-0"
    assert service.sync_semantic(SCOPE).complete


def test_a_query_vector_holding_fewer_numbers_than_its_len_is_refused(
    repository: Repository,
) -> None:
    embedder = _Miscounting()
    service = _open(repository, embedder)
    materialize_all(service, {"mem-0": "concise answers"})
    embedder.lying = True
    with pytest.raises(
        ValidationError, match=msg("embedder: returned a vector of the wrong length")
    ):
        service.search(SearchQuery(SCOPE, "brief replies", LATER))
    capsule = service.search(SearchQuery(SCOPE, "brief replies", LATER, semantic=False))
    assert capsule.semantic is None
