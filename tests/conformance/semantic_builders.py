"""Test embedders and rerankers for the semantic conformance tests."""

from __future__ import annotations

import hashlib
import math
import re
import struct
from collections.abc import Callable, Sequence

from conformance_builders import NOW, SCOPE, claim, event, memory

from trueheart_core import RerankCandidate, RerankResult, TrueHeart
from trueheart_core.domain.semantic.vectors import checked_vector, pack
from trueheart_core.ports import Repository

# Words of one group share a dimension: a tiny, fully predictable "semantic" model in
# which "brief" and "concise" mean the same thing.
CONCEPTS: tuple[tuple[str, ...], ...] = (
    ("brief", "concise", "short", "terse"),
    ("answers", "replies", "responses", "summaries"),
    ("tea", "coffee", "drink"),
    ("rain", "rainy", "weather", "storm"),
    ("dark", "theme", "night"),
)


class ConceptEmbedder:
    """Maps each word to its concept's dimension (other words are ignored), then
    normalises. ``calls`` records every text embedded, documents and queries apart."""

    def __init__(self, identity: str = "test-concepts-v1", normalized: bool = True) -> None:
        self._identity = identity
        self._normalized = normalized
        self.documents: list[str] = []
        self.queries: list[str] = []
        self.fail_documents: Callable[[Sequence[str]], bool] = lambda texts: False
        self.fail_queries = False

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def dimensions(self) -> int:
        return len(CONCEPTS) + 1

    @property
    def normalized(self) -> bool:
        return self._normalized

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for word in re.findall(r"[a-z]+", text.lower()):
            for index, group in enumerate(CONCEPTS):
                if word in group:
                    vector[index] += 1.0
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if self.fail_documents(texts):
            raise RuntimeError("model offline")
        self.documents.extend(texts)
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        if self.fail_queries:
            raise RuntimeError("model offline")
        self.queries.append(text)
        return self._vector(text)


class ScriptedReranker:
    """Scores candidates with ``score(candidate)``; records what it was shown."""

    def __init__(
        self,
        score: Callable[[RerankCandidate], float] = lambda c: float(len(c.content)),
        identity: str = "test-reranker-v1",
    ) -> None:
        self._identity = identity
        self._score = score
        self.shown: list[tuple[str, tuple[RerankCandidate, ...]]] = []
        self.answer: Callable[[Sequence[RerankCandidate]], object] | None = None

    @property
    def identity(self) -> str:
        return self._identity

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> object:
        self.shown.append((query, tuple(candidates)))
        if self.answer is not None:
            return self.answer(candidates)
        return [RerankResult(c.memory_id, self._score(c)) for c in candidates]


DENSE_DIMS = 64
CHUNK = 16


class DenseEmbedder:
    """64 components from SHA-256 blocks of the text, scaled to unit length: the stored
    bytes of every text's vector are unique. Records every document text it embeds."""

    def __init__(self) -> None:
        self.documents: list[str] = []

    @property
    def identity(self) -> str:
        return "test-dense-v1"

    @property
    def dimensions(self) -> int:
        return DENSE_DIMS

    @property
    def normalized(self) -> bool:
        return True

    @staticmethod
    def vector(text: str) -> list[float]:
        raw = b"".join(
            hashlib.sha256(bytes([block]) + text.encode("utf-8")).digest()
            for block in range(DENSE_DIMS * 4 // 32)
        )
        components = [u / 2**31 - 1.0 for u in struct.unpack(f">{DENSE_DIMS}I", raw)]
        norm = math.sqrt(math.fsum(x * x for x in components))
        return [x / norm for x in components]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.documents.extend(texts)
        return [self.vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vector(text)


def dense_blob(content: str) -> bytes:
    """The form in which the service hands a content's dense vector to the repository."""
    return pack(checked_vector("embedder", DenseEmbedder.vector(content), DENSE_DIMS, True))


def dense_chunks(content: str) -> list[bytes]:
    """The 16-byte aligned chunks of ``dense_blob(content)``."""
    blob = dense_blob(content)
    assert len(blob) == 4 * DENSE_DIMS
    return [blob[start : start + CHUNK] for start in range(0, len(blob), CHUNK)]


# --- the scope that the erasure tests of vectors build ------------------------------------

FILLERS = 40
SECRET = "mem-secret"
SECRET_CLAIM = "claim-secret"
SURVIVOR = "mem-007"
SECRET_CONTENT = "the secret memory zqxjvortex"
BUDGET = 100_000


def erasure_filler(index: int) -> str:
    return f"filler memory number {index} about ordinary things"


def open_dense(repository: Repository, **settings: object) -> tuple[TrueHeart, DenseEmbedder]:
    embedder = DenseEmbedder()
    service = TrueHeart(repository, clock=lambda: NOW, embedder=embedder, **settings)  # type: ignore[arg-type]
    return service, embedder


def build_erasure_scope(service: TrueHeart) -> dict[str, str]:
    """FILLERS memories, the secret memory and the secret claim in the middle, each with
    its vector; returns every memory's content by ID."""
    service.ingest_events(
        [event(f"evt-{index}") for index in range(FILLERS)] + [event("evt-secret")]
    )
    contents: dict[str, str] = {}
    for index in range(FILLERS):
        if index == FILLERS // 2:
            service.materialize_once(memory(SECRET, ("evt-secret",), content=SECRET_CONTENT))
            contents[SECRET] = SECRET_CONTENT
            stored = service.materialize_claim(
                claim(SECRET_CLAIM, ("evt-secret",), subject="user:zqxj", value="vortexblue")
            )
            contents[SECRET_CLAIM] = service.get_memory(SCOPE, stored.claim_id).content
        memory_id = f"mem-{index:03d}"
        service.materialize_once(
            memory(memory_id, (f"evt-{index}",), content=erasure_filler(index))
        )
        contents[memory_id] = erasure_filler(index)
    status = service.semantic_status(SCOPE)
    assert status.complete
    assert status.indexed == status.memories == FILLERS + 2
    return contents


def rebuild_recomputes_vector(service: TrueHeart, memory_id: str) -> None:
    """A store with one damaged vector, of ``memory_id`` in ``SCOPE``: rebuilding the
    indexes removes it (the store verifies clean, the memory is missing its vector) and
    ``sync_semantic`` computes it again."""
    report = service.rebuild_indexes()
    assert report.damaged_vectors_removed == 1 and report.changed
    assert service.verify_integrity().ok
    assert service.semantic_status(SCOPE).missing_memory_ids == (memory_id,)
    assert service.sync_semantic(SCOPE).complete
    assert service.verify_integrity().ok
    assert service.rebuild_indexes().damaged_vectors_removed == 0
