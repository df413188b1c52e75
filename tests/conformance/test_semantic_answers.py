"""What the host's embedder and reranker answer is checked before it is used or stored,
and what they raise becomes a documented error."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest
from conformance_builders import NOW, SCOPE, CountingClock, materialize_all, memory, msg
from semantic_builders import ConceptEmbedder, ScriptedReranker

from trueheart_core import (
    ProviderError,
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


# --- properties that raise ----------------------------------------------------------------

EMBEDDER_FAILED = msg("provider error: the embedder failed")
PROPERTIES = ["identity", "dimensions", "normalized", "term_based"]


class _Unreachable(RuntimeError):
    """What a host's model registry raises when it cannot be reached."""


class _Breaking(ConceptEmbedder):
    """Raises ``error`` when the property named ``broken`` is read."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = ""
        self.error: BaseException = _Unreachable("registry unreachable")

    def _read(self, name: str, value: object) -> object:
        if name == self.broken:
            raise self.error
        return value

    @property
    def identity(self) -> str:
        return self._read("identity", super().identity)  # type: ignore[return-value]

    @property
    def dimensions(self) -> int:
        return self._read("dimensions", super().dimensions)  # type: ignore[return-value]

    @property
    def normalized(self) -> bool:
        return self._read("normalized", super().normalized)  # type: ignore[return-value]

    @property
    def term_based(self) -> bool:
        return self._read("term_based", False)  # type: ignore[return-value]


class _BrokenReranker(ScriptedReranker):
    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    @property
    def identity(self) -> str:
        raise self.error


@pytest.mark.parametrize("name", PROPERTIES)
def test_an_embedder_property_that_raises_at_open_is_a_provider_error(
    repository: Repository, name: str
) -> None:
    embedder = _Breaking()
    embedder.broken = name
    with pytest.raises(ProviderError, match=EMBEDDER_FAILED) as caught:
        _open(repository, embedder)
    assert isinstance(caught.value.__cause__, _Unreachable)


@pytest.mark.parametrize("name", ["identity", "dimensions", "normalized"])
def test_an_embedder_property_that_raises_after_open_is_a_provider_error(
    repository: Repository, name: str
) -> None:
    embedder = _Breaking()
    service = _open(repository, embedder)
    materialize_all(service, {"mem-0": "concise answers"})
    embedder.broken = name
    calls = [
        lambda: service.search(SearchQuery(SCOPE, "brief replies", LATER)),
        lambda: service.index_semantic(SCOPE, ["mem-0"]),
        lambda: service.sync_semantic(SCOPE),
    ]
    for call in calls:
        with pytest.raises(ProviderError, match=EMBEDDER_FAILED) as caught:
            call()
        assert isinstance(caught.value.__cause__, _Unreachable)
    # After a write, the failure is the projection's, as when the embedder itself fails.
    with pytest.raises(SemanticProjectionError, match="the embedder failed: mem-1") as failed:
        service.materialize_once(memory("mem-1", content="brief tea"))
    assert isinstance(failed.value.__cause__, _Unreachable)
    embedder.broken = ""
    assert service.search(SearchQuery(SCOPE, "brief replies", LATER)).items


def test_a_reranker_identity_that_raises_at_open_is_a_provider_error(
    repository: Repository,
) -> None:
    with pytest.raises(ProviderError, match=msg("provider error: the reranker failed")) as caught:
        TrueHeart(
            repository,
            embedder=ConceptEmbedder(),
            reranker=_BrokenReranker(_Unreachable("registry unreachable")),
        )
    assert isinstance(caught.value.__cause__, _Unreachable)


def test_an_interrupt_while_a_property_is_read_passes_through(repository: Repository) -> None:
    with pytest.raises(KeyboardInterrupt):
        TrueHeart(
            repository, embedder=ConceptEmbedder(), reranker=_BrokenReranker(KeyboardInterrupt())
        )
    embedder = _Breaking()
    embedder.error = KeyboardInterrupt()
    embedder.broken = "identity"
    with pytest.raises(KeyboardInterrupt):
        _open(repository, embedder)
    embedder.broken = ""
    service = _open(repository, embedder)
    embedder.broken = "dimensions"
    with pytest.raises(KeyboardInterrupt):
        service.search(SearchQuery(SCOPE, "brief replies", LATER))


class _Unreadable(Sequence[float]):
    """A host's vector whose items cannot be read."""

    def __len__(self) -> int:
        return len(ConceptEmbedder().embed_query(""))

    def __getitem__(self, index: int) -> float:  # type: ignore[override]
        raise _Unreachable("vector store unreachable")


class _UnreadableQueries(ConceptEmbedder):
    def embed_query(self, text: str) -> Sequence[float]:  # type: ignore[override]
        return _Unreadable()


def test_a_query_vector_whose_items_cannot_be_read_is_a_provider_error(
    repository: Repository,
) -> None:
    service = _open(repository, _UnreadableQueries())
    materialize_all(service, {"mem-0": "concise answers"})
    with pytest.raises(ProviderError, match=EMBEDDER_FAILED) as caught:
        service.search(SearchQuery(SCOPE, "brief replies", LATER))
    assert isinstance(caught.value.__cause__, _Unreachable)
