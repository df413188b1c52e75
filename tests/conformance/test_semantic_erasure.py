"""Erasure reaches the vectors: a removed memory's vector leaves the files.

A vector is derived from a body, so it is erased with it. The test embedder is dense and
derives every component from a SHA-256 of the text, so the stored bytes of each memory's
vector are unique: after a forget, a delete, the delete of the memory's raw event, or
the forget of a claim, no 16-byte aligned chunk of the removed vector may remain in the
database file or its write-ahead log, while the vectors of the surviving memories are
still there (which shows that the byte search finds vectors). The secret memory is
stored between many others, so its vector row sits inside a multi-page table.

Sealing is not erasure: a sealed memory keeps its vector, leaves the semantic scan, and
comes back into hybrid search when it is restored, without being embedded again.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
import struct
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest
from conformance_builders import (
    NOW,
    SCOPE,
    claim,
    command,
    event,
    file_db_or_skip,
    memory,
    store_bytes,
)

from trueheart_core import (
    ArtifactClass,
    EntityType,
    GovernanceAction,
    MemoryCapsule,
    Scope,
    SearchQuery,
    SQLiteRepository,
    TrueHeart,
)
from trueheart_core.domain.search.model import SignalSource
from trueheart_core.domain.semantic.vectors import checked_vector, pack

DIMS = 64
CHUNK = 16
FILLERS = 40
SECRET = "mem-secret"
SECRET_CLAIM = "claim-secret"
SURVIVOR = "mem-007"
SECRET_CONTENT = "the secret memory zqxjvortex"
BUDGET = 100_000


class DenseEmbedder:
    """64 components from SHA-256 blocks of the text, scaled to unit length; records
    every document text it embeds."""

    def __init__(self) -> None:
        self.documents: list[str] = []

    @property
    def identity(self) -> str:
        return "test-dense-v1"

    @property
    def dimensions(self) -> int:
        return DIMS

    @property
    def normalized(self) -> bool:
        return True

    @staticmethod
    def vector(text: str) -> list[float]:
        raw = b"".join(
            hashlib.sha256(bytes([block]) + text.encode("utf-8")).digest()
            for block in range(DIMS * 4 // 32)
        )
        components = [u / 2**31 - 1.0 for u in struct.unpack(f">{DIMS}I", raw)]
        norm = math.sqrt(math.fsum(x * x for x in components))
        return [x / norm for x in components]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.documents.extend(texts)
        return [self.vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vector(text)


def _blob(content: str) -> bytes:
    """The stored form of a content's vector."""
    return pack(checked_vector("embedder", DenseEmbedder.vector(content), DIMS, True))


def _chunks(content: str) -> list[bytes]:
    blob = _blob(content)
    assert len(blob) == 4 * DIMS
    return [blob[start : start + CHUNK] for start in range(0, len(blob), CHUNK)]


def _filler(index: int) -> str:
    return f"filler memory number {index} about ordinary things"


def _open(repository: SQLiteRepository, **settings: object) -> tuple[TrueHeart, DenseEmbedder]:
    embedder = DenseEmbedder()
    service = TrueHeart(repository, clock=lambda: NOW, embedder=embedder, **settings)  # type: ignore[arg-type]
    return service, embedder


def _build(service: TrueHeart) -> dict[str, str]:
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
        service.materialize_once(memory(memory_id, (f"evt-{index}",), content=_filler(index)))
        contents[memory_id] = _filler(index)
    status = service.semantic_status(SCOPE)
    assert status.complete
    assert status.indexed == status.memories == FILLERS + 2
    return contents


def _present_chunks(data: bytes, content: str) -> list[int]:
    """The positions (in the vector) of the aligned chunks of ``content``'s vector that
    occur in ``data``."""
    return [i for i, chunk in enumerate(_chunks(content)) if chunk in data]


def _assert_held(path: Path, *contents: str) -> None:
    data = store_bytes(path)
    for content in contents:
        assert _blob(content) in data
        assert _present_chunks(data, content) == list(range(4 * DIMS // CHUNK))


def _assert_erased(path: Path, *contents: str) -> None:
    data = store_bytes(path)
    for content in contents:
        assert _present_chunks(data, content) == []


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


def _assert_rows_after_close(service: TrueHeart, path: Path, survivors: int, *removed: str) -> None:
    service.close()
    raw = sqlite3.connect(path)
    try:
        ((vectors,),) = raw.execute("SELECT count(*) FROM vectors").fetchall()
        ((memories,),) = raw.execute("SELECT count(*) FROM memories").fetchall()
        ((orphans,),) = raw.execute(
            "SELECT count(*) FROM vectors v LEFT JOIN memories m ON m.rid = v.doc "
            "WHERE m.rid IS NULL"
        ).fetchall()
        left = [
            content
            for content in removed
            if raw.execute(
                "SELECT count(*) FROM vectors WHERE vector = ?", (_blob(content),)
            ).fetchone()
            != (0,)
        ]
    finally:
        raw.close()
    assert (vectors, memories, orphans, left) == (survivors, survivors, 0, [])


@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_forget_and_delete_erase_the_memory_vector(
    repository: SQLiteRepository, tmp_path: Path, action: GovernanceAction
) -> None:
    path = file_db_or_skip(tmp_path)
    service, _ = _open(repository)
    contents = _build(service)
    _assert_held(path, SECRET_CONTENT, contents[SURVIVOR], contents[SECRET_CLAIM])
    service.govern(command(action, SECRET))
    _assert_erased(path, SECRET_CONTENT)
    _assert_held(path, contents[SURVIVOR], contents[SECRET_CLAIM])
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
    _assert_rows_after_close(service, path, FILLERS + 1, SECRET_CONTENT)


def test_raw_event_delete_erases_the_vectors_of_its_memories_and_claims(
    repository: SQLiteRepository, tmp_path: Path
) -> None:
    path = file_db_or_skip(tmp_path)
    service, _ = _open(repository)
    contents = _build(service)
    _assert_held(path, SECRET_CONTENT, contents[SECRET_CLAIM])
    result = service.govern(
        command(GovernanceAction.DELETE, "evt-secret", entity_type=EntityType.RAW_EVENT)
    )
    assert result.affected_ids == (SECRET_CLAIM, "evt-secret", SECRET)
    _assert_erased(path, SECRET_CONTENT, contents[SECRET_CLAIM])
    _assert_held(path, contents[SURVIVOR])
    _assert_survivors_searchable(service, contents)
    assert service.semantic_status(SCOPE).indexed == FILLERS
    assert service.verify_integrity().ok
    _assert_rows_after_close(service, path, FILLERS, SECRET_CONTENT, contents[SECRET_CLAIM])


@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_forgetting_a_claim_erases_its_vector(
    repository: SQLiteRepository, tmp_path: Path, action: GovernanceAction
) -> None:
    path = file_db_or_skip(tmp_path)
    service, _ = _open(repository)
    contents = _build(service)
    _assert_held(path, contents[SECRET_CLAIM], SECRET_CONTENT)
    service.govern(command(action, SECRET_CLAIM))
    _assert_erased(path, contents[SECRET_CLAIM])
    # the claim's source event and its sibling memory keep theirs
    _assert_held(path, SECRET_CONTENT, contents[SURVIVOR])
    _assert_survivors_searchable(service, contents)
    status = service.semantic_status(SCOPE)
    assert (status.memories, status.indexed) == (FILLERS + 1, FILLERS + 1)
    assert service.verify_integrity().ok
    _assert_rows_after_close(service, path, FILLERS + 1, contents[SECRET_CLAIM])


def test_a_sealed_memory_keeps_its_vector_until_it_is_forgotten(
    repository: SQLiteRepository, tmp_path: Path
) -> None:
    path = file_db_or_skip(tmp_path)
    service, _ = _open(repository)
    contents = _build(service)
    service.govern(command(GovernanceAction.SEAL, SECRET))
    # an erasing call on another memory checkpoints the log: the sealed vector stays
    service.govern(command(GovernanceAction.FORGET, f"mem-{FILLERS - 1:03d}"))
    _assert_held(path, SECRET_CONTENT)
    service.govern(command(GovernanceAction.FORGET, SECRET))
    _assert_erased(path, SECRET_CONTENT)
    _assert_held(path, contents[SURVIVOR])
    assert service.verify_integrity().ok
    _assert_rows_after_close(service, path, FILLERS, SECRET_CONTENT)


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
    repository: SQLiteRepository,
) -> None:
    service, embedder = _open(repository, minimum_semantic_score=-1.0)
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


def test_subject_erasure_takes_every_vector_of_the_scope(
    repository: SQLiteRepository, tmp_path: Path
) -> None:
    path = file_db_or_skip(tmp_path)
    service, _ = _open(repository)
    contents = _build(service)
    other = Scope(SCOPE.tenant_id, SCOPE.owner_id, "someone-else")
    service.ingest_event(event("evt-other", scope=other))
    service.materialize_once(
        memory("mem-other", ("evt-other",), scope=other, content="another subject entirely")
    )
    _assert_held(path, *contents.values(), "another subject entirely")
    plan = service.erase_subject(SCOPE, occurred_at=NOW, dry_run=True)
    assert plan.erased[ArtifactClass.VECTOR] == FILLERS + 2
    receipt = service.erase_subject(SCOPE, occurred_at=NOW)
    assert receipt.erased[ArtifactClass.VECTOR] == FILLERS + 2
    assert receipt.remaining is not None and receipt.remaining[ArtifactClass.VECTOR] == 0
    assert receipt.verified
    _assert_erased(path, *contents.values())
    _assert_held(path, "another subject entirely")
    status = service.semantic_status(SCOPE)
    assert (status.memories, status.indexed) == (0, 0)
    assert service.semantic_status(other).complete
    assert service.verify_integrity().problems == ()


def test_forget_reports_the_vector_it_removed(repository: SQLiteRepository) -> None:
    service, _ = _open(repository)
    _build(service)
    result = service.govern(command(GovernanceAction.FORGET, SECRET))
    assert ArtifactClass.VECTOR in result.removed
