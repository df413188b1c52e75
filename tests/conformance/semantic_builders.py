"""Test embedders and rerankers for the semantic contract tests."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from trueheart_core import RerankCandidate, RerankResult

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
