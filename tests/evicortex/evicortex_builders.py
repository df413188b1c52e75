"""Constants, fakes and small helpers shared by the tests of the evicortex face."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from evicortex import (
    ClaimExtraction,
    HashingEmbedder,
    RerankCandidate,
    RerankResult,
)
from trueheart_core import Scope

NS = "demo/ada"
OTHER = "demo/bob"

T0 = datetime(2025, 1, 1, 9, 0, tzinfo=UTC)
T1 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
T2 = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)
T3 = datetime(2025, 9, 1, 9, 0, tzinfo=UTC)


def scope(namespace: str) -> Scope:
    """The engine scope of a namespace."""
    return Scope("evicortex", "namespace", namespace)


def canonical(value: object) -> str:
    """Canonical JSON as the engine writes it (sorted keys, no spaces, UTF-8 kept)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def record_id(namespace: str, idempotency_key: str) -> str:
    """The record ID the specification derives from a namespace and idempotency key."""
    digest = hashlib.sha256(canonical([namespace, idempotency_key]).encode("utf-8"))
    return "mem-" + digest.hexdigest()[:32]


def claim_id(namespace: str, memory_id: str, index: int) -> str:
    """The claim ID the specification derives from the record and the claim's index."""
    digest = hashlib.sha256(canonical([namespace, memory_id, index]).encode("utf-8"))
    return "claim-" + digest.hexdigest()[:32]


def is_id(value: object, prefix: str) -> bool:
    """``prefix`` followed by 32 lowercase hex characters."""
    if not isinstance(value, str) or not value.startswith(prefix):
        return False
    rest = value[len(prefix) :]
    return len(rest) == 32 and all(c in "0123456789abcdef" for c in rest)


def tokens(text: str) -> int:
    """The built-in estimate: ceil(UTF-8 bytes / 3)."""
    return math.ceil(len(text.encode("utf-8")) / 3)


def plain(value: object) -> object:
    """Mappings as dicts and sequences as lists, recursively (frozen metadata compared
    with what was given)."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def id_tuple(value: object) -> tuple[str, ...]:
    """A ``superseded_by`` value as a tuple of IDs, whether it is one ID, None or many."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    assert isinstance(value, list | tuple), value
    return tuple(value)


def store_bytes(path: Path) -> bytes:
    """The bytes of a database file, its write-ahead log and its journal."""
    data = b""
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-journal")):
        if candidate.exists():
            data += candidate.read_bytes()
    return data


class CountingEmbedder:
    """A feature-hashing embedder that counts its calls, fails on demand, and whose
    identity and dimensions can be changed after a store opened with it."""

    def __init__(self, dimensions: int = 64, identity: str = "test-hashing-v1") -> None:
        self.inner = HashingEmbedder(dimensions=dimensions)
        self._identity = identity
        self._dimensions = dimensions
        self.fail = False
        self.document_calls: list[tuple[str, ...]] = []
        self.query_calls: list[str] = []

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def normalized(self) -> bool:
        return True

    def change(self, *, identity: str | None = None, dimensions: int | None = None) -> None:
        if identity is not None:
            self._identity = identity
        if dimensions is not None:
            self._dimensions = dimensions
            self.inner = HashingEmbedder(dimensions=dimensions)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.document_calls.append(tuple(texts))
        if self.fail:
            raise RuntimeError("the embedding service is down")
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.query_calls.append(text)
        return self.inner.embed_query(text)


class RecordingReranker:
    """Scores candidates by content length and records every call."""

    def __init__(self, identity: str = "test-reranker-v1") -> None:
        self._identity = identity
        self.calls: list[tuple[str, tuple[RerankCandidate, ...]]] = []

    @property
    def identity(self) -> str:
        return self._identity

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[RerankResult]:
        self.calls.append((query, tuple(candidates)))
        return [RerankResult(c.memory_id, float(len(c.content))) for c in candidates]


class ScriptedExtractor:
    """An extractor whose answer is computed by ``answer(content)``; records calls."""

    def __init__(self, identity: str, answer: Callable[[str], object]) -> None:
        self._identity = identity
        self._answer = answer
        self.calls: list[str] = []

    @property
    def identity(self) -> str:
        return self._identity

    def extract(self, content: str) -> ClaimExtraction:
        self.calls.append(content)
        return self._answer(content)  # type: ignore[return-value]
