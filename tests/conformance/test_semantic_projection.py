"""Semantic projection: vector spaces, automatic projection, status and repair."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from fractions import Fraction
from typing import Any

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    CountingClock,
    claim,
    command,
    event,
    materialize_all,
    memory,
    msg,
)
from semantic_builders import ConceptEmbedder, DenseEmbedder, dense_blob

from trueheart_core import (
    CanonicalClaimExtractor,
    Embedder,
    EmbedderMismatch,
    GovernanceAction,
    HashingEmbedder,
    RepositoryReadOnly,
    Scope,
    SearchQuery,
    SemanticProjectionError,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Capability, Repository

pytestmark = pytest.mark.requires(Capability.VECTORS)

LATER = NOW + timedelta(seconds=1)


def semantic(
    repository: Repository, embedder: object | None = None, **options: object
) -> TrueHeart:
    return TrueHeart(
        repository,
        clock=CountingClock(),
        embedder=ConceptEmbedder() if embedder is None else embedder,  # type: ignore[arg-type]
        **options,  # type: ignore[arg-type]
    )


# --- automatic projection and status --------------------------------------------------


def test_every_write_is_projected_and_the_status_is_complete(repository: Repository) -> None:
    embedder = ConceptEmbedder()
    service = semantic(repository, embedder)
    materialize_all(service, {"mem-1": "concise answers", "mem-2": "green tea"})
    service.materialize_claim(claim("claim-1", value="dark"))
    status = service.semantic_status(SCOPE)
    assert status.registered and status.complete
    assert (status.memories, status.indexed) == (3, 3)
    assert status.embedder == "test-concepts-v1"
    assert (status.missing_count, status.stale_count) == (0, 0)
    assert embedder.documents == ["concise answers", "green tea", "user:ada prefers_theme dark"]


def test_claims_and_memories_are_reported_apart(repository: Repository) -> None:
    service = semantic(repository, auto_index=False)
    materialize_all(service, {"mem-2": "b", "mem-1": "a"})
    service.materialize_claim(claim("claim-1"))
    status = service.semantic_status(SCOPE)
    assert status.registered and not status.complete
    assert status.missing_memory_ids == ("mem-1", "mem-2")
    assert status.missing_claim_ids == ("claim-1",)
    assert (status.memories, status.indexed, status.missing_count) == (3, 0, 3)


def test_extracted_claims_are_projected(repository: Repository) -> None:
    embedder = ConceptEmbedder()
    service = semantic(repository, embedder)
    text = "Canonical claim: subject=user:ada; predicate=prefers_theme; value=dark."
    result = service.ingest_extracted(event("evt-x", content=text), CanonicalClaimExtractor())
    (stored,) = result.claims
    status = service.semantic_status(SCOPE)
    assert status.complete and (status.memories, status.indexed) == (1, 1)
    assert embedder.documents == [service.get_memory(SCOPE, stored.claim_id).content]


def test_a_replay_is_not_embedded_again(repository: Repository) -> None:
    embedder = ConceptEmbedder()
    service = semantic(repository, embedder)
    materialize_all(service, {"mem-1": "concise answers"})
    service.materialize_once(memory("mem-1", content="concise answers"))
    assert embedder.documents == ["concise answers"]


def test_without_auto_index_nothing_is_embedded_until_repair(repository: Repository) -> None:
    embedder = ConceptEmbedder()
    service = semantic(repository, embedder, auto_index=False)
    materialize_all(service, {f"mem-{i}": f"brief note {i}" for i in range(5)})
    assert embedder.documents == []
    calls: list[tuple[int, int]] = []
    status = service.sync_semantic(SCOPE, batch_size=2, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(2, 5), (4, 5), (5, 5)]
    assert status.complete and status.indexed == 5
    assert service.sync_semantic(SCOPE).complete
    assert len(embedder.documents) == 5


def test_a_progress_callback_that_raises_stops_the_sync_after_a_stored_batch(
    repository: Repository,
) -> None:
    service = semantic(repository, auto_index=False)
    materialize_all(service, {f"mem-{i}": f"brief note {i}" for i in range(5)})
    failure = RuntimeError("the host's progress")

    def progress(done: int, total: int) -> None:
        if done == 4:
            raise failure

    with pytest.raises(RuntimeError) as caught:
        service.sync_semantic(SCOPE, batch_size=2, progress=progress)
    assert caught.value is failure
    assert service.semantic_status(SCOPE).missing_memory_ids == ("mem-4",)
    assert service.sync_semantic(SCOPE).complete


def test_index_semantic_projects_named_memories_only(repository: Repository) -> None:
    service = semantic(repository, auto_index=False)
    materialize_all(service, {"mem-1": "a", "mem-2": "b"})
    assert service.index_semantic(SCOPE, ("mem-2", "missing-id")) == 1
    assert service.index_semantic(SCOPE, ["mem-2"]) == 0
    assert service.semantic_status(SCOPE).missing_memory_ids == ("mem-1",)


def test_status_is_per_scope(repository: Repository) -> None:
    service = semantic(repository, auto_index=False)
    materialize_all(service, {"mem-1": "a"})
    materialize_all(service, {"mem-9": "b"}, scope=OTHER_SCOPE, event_id="evt-9")
    service.sync_semantic(OTHER_SCOPE)
    assert service.semantic_status(SCOPE).missing_memory_ids == ("mem-1",)
    assert service.semantic_status(OTHER_SCOPE).complete


# --- provider failures -------------------------------------------------------------------


def test_a_failing_provider_leaves_the_write_committed(repository: Repository) -> None:
    embedder = ConceptEmbedder()
    service = semantic(repository, embedder)
    service.ingest_event(event("evt-1"))
    embedder.fail_documents = lambda texts: True
    with pytest.raises(
        SemanticProjectionError, match=msg("semantic projection failed: the embedder failed: mem-1")
    ) as caught:
        service.materialize_once(memory("mem-1", content="concise answers"))
    assert caught.value.memory_id == "mem-1"
    assert caught.value.evidence_committed is True
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert service.get_memory(SCOPE, "mem-1").content == "concise answers"
    status = service.semantic_status(SCOPE)
    assert status.missing_memory_ids == ("mem-1",) and not status.complete
    embedder.fail_documents = lambda texts: False
    assert service.sync_semantic(SCOPE).complete


def test_sync_resumes_after_a_failing_batch(repository: Repository) -> None:
    embedder = ConceptEmbedder()
    service = semantic(repository, embedder, auto_index=False)
    materialize_all(service, {f"mem-{i}": f"note {i}" for i in range(4)})
    embedder.fail_documents = lambda texts: "note 2" in texts
    with pytest.raises(SemanticProjectionError) as caught:
        service.sync_semantic(SCOPE, batch_size=2)
    assert caught.value.memory_id == "mem-2"
    assert service.semantic_status(SCOPE).missing_memory_ids == ("mem-2", "mem-3")
    embedder.fail_documents = lambda texts: False
    assert service.sync_semantic(SCOPE).complete


class _Broken(ConceptEmbedder):
    def __init__(self, answer: object) -> None:
        super().__init__()
        self.answer = answer

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.answer  # type: ignore[return-value]


class _Lying(list[list[float]]):
    """Says it holds one vector, and yields none."""

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator[list[float]]:
        return iter(())


@pytest.mark.parametrize(
    "answer",
    [
        _Lying(),
        [],
        [[0.0] * 5],
        [[float("nan")] + [0.0] * 5],
        [[2.0] + [0.0] * 5],
        [["x"] * 6],
        "vectors",
        None,
    ],
    ids=["lying", "none", "short", "nan", "not-normalised", "not-numbers", "string", "null"],
)
def test_a_broken_answer_is_refused_after_the_commit(
    repository: Repository, answer: object
) -> None:
    service = semantic(repository, _Broken(answer))
    service.ingest_event(event("evt-1"))
    with pytest.raises(SemanticProjectionError, match="answer was refused: mem-1") as caught:
        service.materialize_once(memory("mem-1"))
    assert isinstance(caught.value.__cause__, ValidationError)
    assert service.get_memory(SCOPE, "mem-1").memory_id == "mem-1"
    assert service.semantic_status(SCOPE).missing_memory_ids == ("mem-1",)


class _Unreadable(float):
    """A number whose conversion fails, as a host's own number type may."""

    def __float__(self) -> float:
        raise RuntimeError("cannot convert")


class _Arrays:
    """What numpy and torch answer with: no sequence, but values through ``tolist()``."""

    def __init__(self, values: object) -> None:
        self._values = values

    def tolist(self) -> object:
        return self._values


def test_a_number_that_cannot_be_read_is_the_embedder_s_failure_after_the_commit(
    repository: Repository,
) -> None:
    vector = ConceptEmbedder().embed_documents(["x"])[0]
    service = semantic(repository, _Broken([[_Unreadable(vector[0]), *vector[1:]]]))
    service.ingest_event(event("evt-1"))
    with pytest.raises(SemanticProjectionError, match="the embedder failed: mem-1") as caught:
        service.materialize_once(memory("mem-1"))
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert service.semantic_status(SCOPE).missing_memory_ids == ("mem-1",)


@pytest.mark.parametrize("rows", [False, True], ids=["array", "list-of-arrays"])
def test_an_answer_given_as_arrays_is_stored(repository: Repository, rows: bool) -> None:
    vectors = ConceptEmbedder().embed_documents(["prefers concise summaries"])
    answer = [_Arrays(vectors[0])] if rows else _Arrays(vectors)
    service = semantic(repository, _Broken(answer))
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-1", content="prefers concise summaries"))
    assert service.semantic_status(SCOPE).complete


class _Measured(list[float]):
    """A vector whose len() is wrong: what counts is what it yields."""

    def __len__(self) -> int:
        return 1


class _RealNumbers(ConceptEmbedder):
    """Answers with components that are real numbers but not floats (as numpy's float32
    are), in sequences whose len() says otherwise."""

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [
            _Measured([Fraction(x).limit_denominator(10**6) for x in vector])  # type: ignore[misc]
            for vector in super().embed_documents(texts)
        ]


def test_real_numbers_and_what_a_vector_yields_are_what_count(repository: Repository) -> None:
    service = semantic(repository, _RealNumbers())
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-1", content="prefers concise summaries"))
    assert service.semantic_status(SCOPE).complete


def test_a_read_only_store_refuses_a_projection_before_the_embedder_is_called(
    repository: Repository, reopen: Callable[..., Repository]
) -> None:
    materialize_all(semantic(repository, auto_index=False), {"mem-1": "concise answers"})
    repository.close()
    embedder = ConceptEmbedder()
    service = TrueHeart(reopen(read_only=True), embedder=embedder, auto_index=False)
    with pytest.raises(RepositoryReadOnly):
        service.sync_semantic(SCOPE)
    with pytest.raises(RepositoryReadOnly):
        service.index_semantic(SCOPE, ["mem-1"])
    assert embedder.documents == []
    # With nothing to embed there is nothing to refuse.
    assert service.index_semantic(SCOPE, []) == 0
    assert service.index_semantic(SCOPE, ["mem-unknown"]) == 0
    assert service.semantic_status(SCOPE).missing_memory_ids == ("mem-1",)


# --- vector spaces ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "other",
    [
        lambda: ConceptEmbedder(identity="another-model"),
        lambda: ConceptEmbedder(normalized=False),
        lambda: HashingEmbedder(6),
    ],
    ids=["identity", "normalisation", "model"],
)
def test_another_embedder_is_refused(repository: Repository, other: object) -> None:
    service = semantic(repository)
    materialize_all(service, {"mem-1": "concise answers"})
    with pytest.raises(
        EmbedderMismatch,
        match=msg("embedder mismatch: the store holds vectors of another embedder"),
    ):
        TrueHeart(repository, embedder=other())  # type: ignore[operator]
    assert service.semantic_status(SCOPE).complete


def test_other_dimensions_are_refused(repository: Repository) -> None:
    TrueHeart(repository, embedder=HashingEmbedder(64))
    with pytest.raises(EmbedderMismatch):
        TrueHeart(repository, embedder=HashingEmbedder(65))
    assert TrueHeart(repository, embedder=HashingEmbedder(64)) is not None


def test_replacing_the_space_makes_every_vector_stale(repository: Repository) -> None:
    old = semantic(repository)
    materialize_all(old, {"mem-1": "concise answers", "mem-2": "tea"})
    old.materialize_claim(claim("claim-1"))
    new = TrueHeart(
        repository,
        clock=CountingClock(),
        embedder=ConceptEmbedder(identity="test-concepts-v2"),
        replace_semantic_space=True,
    )
    status = new.semantic_status(SCOPE)
    assert status.registered and status.indexed == 0
    assert status.stale_memory_ids == ("mem-1", "mem-2")
    assert status.stale_claim_ids == ("claim-1",)
    capsule = new.search(SearchQuery(SCOPE, "brief replies", LATER))
    assert capsule.semantic is not None and capsule.semantic.scanned == 0
    assert new.sync_semantic(SCOPE).complete
    capsule = new.search(SearchQuery(SCOPE, "brief replies", LATER))
    assert [i.memory.memory_id for i in capsule.items] == ["mem-1"]
    with pytest.raises(EmbedderMismatch):
        semantic(repository)  # the old model is now the other one


def test_an_embedder_that_changes_after_open_is_refused(repository: Repository) -> None:
    embedder = ConceptEmbedder()
    service = semantic(repository, embedder)
    materialize_all(service, {"mem-1": "concise answers"})
    embedder._identity = "silently-upgraded"
    with pytest.raises(EmbedderMismatch, match="changed since the service opened"):
        service.search(SearchQuery(SCOPE, "brief", LATER))
    with pytest.raises(EmbedderMismatch):
        service.sync_semantic(SCOPE)
    # A write that projects stays committed; its projection is refused, saying why.
    with pytest.raises(SemanticProjectionError) as caught:
        service.materialize_once(memory("mem-2", content="brief replies"))
    assert str(caught.value) == (
        "semantic projection failed: the embedder changed since the service opened: mem-2"
    )
    assert isinstance(caught.value.__cause__, EmbedderMismatch)
    assert caught.value.evidence_committed
    assert service.get_memory(SCOPE, "mem-2").memory_id == "mem-2"


def test_a_service_without_embedder_reads_a_projected_store(repository: Repository) -> None:
    service = semantic(repository)
    materialize_all(service, {"mem-1": "concise answers"})
    plain = TrueHeart(repository, clock=CountingClock())
    status = plain.semantic_status(SCOPE)
    assert status.embedder is None and status.registered and status.indexed == 1
    capsule = plain.search(SearchQuery(SCOPE, "concise", LATER))
    assert capsule.semantic is None and [i.memory.memory_id for i in capsule.items] == ["mem-1"]
    plain.materialize_once(memory("mem-2", content="brief replies"))
    assert service.semantic_status(SCOPE).missing_memory_ids == ("mem-2",)
    with pytest.raises(ValidationError, match=msg("embedder: is not configured")):
        plain.sync_semantic(SCOPE)


def test_a_fresh_store_without_memories_is_registered(repository: Repository) -> None:
    service = semantic(repository)
    status = service.semantic_status(SCOPE)
    assert status.registered and status.complete and status.memories == 0


@pytest.mark.requires(Capability.READ_ONLY_OPEN)
def test_a_read_only_store_is_only_checked(
    repository: Repository, reopen: Callable[..., Repository]
) -> None:
    materialize_all(semantic(repository), {"mem-1": "concise answers"})
    repository.close()
    reader = reopen(read_only=True)
    service = TrueHeart(reader, embedder=ConceptEmbedder())
    assert service.semantic_status(SCOPE).complete
    with pytest.raises(EmbedderMismatch):
        TrueHeart(reader, embedder=ConceptEmbedder(identity="other"))


# --- governance -------------------------------------------------------------------------


def test_sealed_memories_keep_their_vector_and_restore_reprojects_nothing(
    repository: Repository,
) -> None:
    embedder = ConceptEmbedder()
    service = semantic(repository, embedder)
    materialize_all(service, {"mem-1": "concise answers", "mem-2": "tea"})
    service.govern(command(GovernanceAction.SEAL, "mem-1"))
    status = service.semantic_status(SCOPE)
    assert (status.memories, status.indexed) == (1, 1)
    service.govern(command(GovernanceAction.RESTORE, "mem-1"))
    assert service.semantic_status(SCOPE).indexed == 2
    assert embedder.documents == ["concise answers", "tea"]


def test_restore_projects_a_memory_that_never_had_a_vector(repository: Repository) -> None:
    service = semantic(repository, auto_index=False)
    materialize_all(service, {"mem-1": "concise answers"})
    service.govern(command(GovernanceAction.SEAL, "mem-1"))
    auto = semantic(repository)
    auto.govern(command(GovernanceAction.RESTORE, "mem-1"))
    assert auto.semantic_status(SCOPE).complete


@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_forget_and_delete_remove_the_vector(
    repository: Repository, action: GovernanceAction
) -> None:
    service = semantic(repository)
    materialize_all(service, {"mem-1": "concise answers", "mem-2": "brief replies"})
    service.govern(command(action, "mem-1"))
    status = service.semantic_status(SCOPE)
    assert (status.memories, status.indexed) == (1, 1)
    capsule = service.search(SearchQuery(SCOPE, "terse responses", LATER))
    assert [i.memory.memory_id for i in capsule.items] == ["mem-2"]
    assert capsule.semantic is not None and capsule.semantic.scanned == 1
    assert service.verify_integrity().problems == ()


# --- integrity ----------------------------------------------------------------------------


# --- settings --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"embedder": object()}, "embedder: must be an Embedder"),
        ({"embedder": HashingEmbedder}, "embedder: must be an Embedder"),
        ({"semantic_scan_cap": 0}, "semantic_scan_cap: must be None or from 1 through 1000000"),
        ({"semantic_scan_cap": True}, "semantic_scan_cap: must be None or from 1 through 1000000"),
        ({"minimum_semantic_score": 1.5}, "minimum_semantic_score: must be from -1.0 through 1.0"),
        (
            {"minimum_semantic_score": float("nan")},
            "minimum_semantic_score: must be from -1.0 through 1.0",
        ),
        ({"rerank_limit": 0}, "rerank_limit: must be from 1 through 100"),
        ({"reranker_weight": -1.0}, "reranker_weight: must be a finite number >= 0"),
        ({"reranker_weight": 10**400}, "reranker_weight: must be a finite number >= 0"),
        ({"reranker": object()}, "reranker: must be a Reranker or None"),
        ({"auto_index": 1}, "auto_index: must be a bool"),
        ({"replace_semantic_space": "yes"}, "replace_semantic_space: must be a bool"),
    ],
)
def test_settings_are_checked(
    repository: Repository, options: dict[str, object], message: str
) -> None:
    options = {"embedder": ConceptEmbedder(), **options}
    with pytest.raises(ValidationError, match=msg(message)):
        TrueHeart(repository, **options)  # type: ignore[arg-type]


def test_a_reranker_needs_an_embedder(repository: Repository) -> None:
    from semantic_builders import ScriptedReranker

    with pytest.raises(ValidationError, match=msg("reranker: needs an embedder")):
        TrueHeart(repository, reranker=ScriptedReranker())


@pytest.mark.parametrize("batch_size", [0, 4097, True, 1.5])
def test_sync_batch_size_is_checked(repository: Repository, batch_size: object) -> None:
    service = semantic(repository)
    with pytest.raises(ValidationError, match=msg("batch_size: must be from 1 through 4096")):
        service.sync_semantic(SCOPE, batch_size=batch_size)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=msg("progress: must be callable or None")):
        service.sync_semantic(SCOPE, progress=3)  # type: ignore[arg-type]


def test_sealing_keeps_the_vector_in_step(repository: Repository) -> None:
    service = semantic(repository)
    materialize_all(service, {"mem-1": "concise answers"})
    service.govern(command(GovernanceAction.SEAL, "mem-1"))
    assert service.verify_integrity().problems == ()
    service.govern(command(GovernanceAction.RESTORE, "mem-1"))
    assert service.verify_integrity().problems == ()


# --- batched projection: one embed_documents call per write or per sync batch ----------


class CountingEmbedder:
    """Wraps an embedder and records the texts of every ``embed_documents`` call, one list
    per call; ``fail`` makes the next calls raise (they are still recorded)."""

    def __init__(self, inner: Embedder | None = None) -> None:
        self.inner: Embedder = DenseEmbedder() if inner is None else inner
        self.calls: list[list[str]] = []
        self.fail = False

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    @property
    def normalized(self) -> bool:
        return self.inner.normalized

    def embed_documents(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        self.calls.append(list(texts))
        if self.fail:
            raise RuntimeError("model offline")
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Sequence[float]:
        return self.inner.embed_query(text)


def counting(repository: Repository, **options: object) -> tuple[TrueHeart, CountingEmbedder]:
    embedder = CountingEmbedder()
    return semantic(repository, embedder, **options), embedder


# Memory IDs out of alphabetical order, so that "in order" means the order written.
DERIVED = {"mem-c": "third note", "mem-a": "first note", "mem-d": "fourth", "mem-b": "second"}


def derived(prefix: str = "", scope: Scope = SCOPE, event_id: str = "evt-1") -> dict[str, object]:
    return {
        "memories": [
            memory(prefix + memory_id, (event_id,), scope=scope, content=content)
            for memory_id, content in DERIVED.items()
        ],
        "claims": [
            claim(prefix + "claim-z", (event_id,), scope=scope, value="dark"),
            claim(prefix + "claim-y", (event_id,), scope=scope, predicate="likes", value="tea"),
        ],
    }


CLAIM_TEXTS = ["user:ada prefers_theme dark", "user:ada likes tea"]


def stored_vectors(repository: Repository) -> dict[tuple[object, str], bytes]:
    """Every stored vector by (scope key, memory ID), read through the repository port."""
    with repository.unit_of_work("read", write=False) as uow:
        assert uow.vectors is not None
        return {(row.scope, row.memory_id): row.vector for row in uow.vectors.iter(None)}


def test_ingest_derived_embeds_all_its_memories_and_claims_in_one_call(
    repository: Repository,
) -> None:
    service, embedder = counting(repository)
    result = service.ingest_derived(event("evt-1"), **derived())  # type: ignore[arg-type]
    assert embedder.calls == [[*DERIVED.values(), *CLAIM_TEXTS]]
    assert len(result.memories) == 4 and len(result.claims) == 2
    status = service.semantic_status(SCOPE)
    assert status.complete and status.indexed == 6


def test_a_replayed_ingest_derived_embeds_nothing_again(repository: Repository) -> None:
    service, embedder = counting(repository)
    service.ingest_derived(event("evt-1"), **derived())  # type: ignore[arg-type]
    service.ingest_derived(event("evt-1"), **derived())  # type: ignore[arg-type]
    assert len(embedder.calls) == 1


def test_ingest_derived_projects_each_memory_in_its_own_scope(repository: Repository) -> None:
    service, embedder = counting(repository)
    service.ingest_event(event("evt-9", scope=OTHER_SCOPE))
    service.ingest_derived(
        event("evt-1"),
        memories=[
            memory("mem-other", ("evt-9",), scope=OTHER_SCOPE, content="elsewhere"),
            memory("mem-here", content="here"),
        ],
    )
    assert embedder.calls == [["elsewhere", "here"]]
    assert service.semantic_status(OTHER_SCOPE).complete
    assert service.semantic_status(SCOPE).complete


def test_ingest_extracted_embeds_its_memories_and_claims_in_one_call(
    repository: Repository,
) -> None:
    service, embedder = counting(repository)
    text = (
        "Canonical claim: subject=user:ada; predicate=prefers_theme; value=dark. "
        "Canonical claim: subject=user:ada; predicate=likes; value=tea."
    )
    result = service.ingest_extracted(
        event("evt-x", content=text),
        CanonicalClaimExtractor(),
        memories=[memory("mem-z", ("evt-x",), content="zeta"), memory("mem-y", ("evt-x",))],
    )
    assert len(result.claims) == 2
    assert embedder.calls == [["zeta", "derived synthetic memory", *CLAIM_TEXTS]]
    assert service.semantic_status(SCOPE).indexed == 4


@pytest.mark.parametrize(("count", "batch_size"), [(7, 3), (6, 3), (5, 1), (3, 64), (64, 64)])
def test_sync_calls_the_embedder_once_per_batch(
    repository: Repository, count: int, batch_size: int
) -> None:
    service, embedder = counting(repository, auto_index=False)
    contents = {f"mem-{i:02d}": f"note {i}" for i in range(count)}
    materialize_all(service, contents)
    assert embedder.calls == []
    assert service.sync_semantic(SCOPE, batch_size=batch_size).complete
    assert len(embedder.calls) == math.ceil(count / batch_size)
    assert [len(texts) for texts in embedder.calls] == [
        min(batch_size, count - start) for start in range(0, count, batch_size)
    ]
    assert [text for texts in embedder.calls for text in texts] == list(contents.values())


def test_a_single_write_embeds_one_text_in_one_call(repository: Repository) -> None:
    service, embedder = counting(repository)
    materialize_all(service, {"mem-1": "concise answers"})
    assert embedder.calls == [["concise answers"]]
    service.materialize_claim(claim("claim-1"))
    assert embedder.calls[1:] == [["user:ada prefers_theme dark"]]
    assert service.index_semantic(SCOPE, ["mem-1", "claim-1"]) == 0
    assert len(embedder.calls) == 2


def test_restore_embeds_one_text_in_one_call(repository: Repository) -> None:
    plain, _ = counting(repository, auto_index=False)
    materialize_all(plain, {"mem-1": "concise answers", "mem-2": "tea"})
    plain.govern(command(GovernanceAction.SEAL, "mem-1"))
    service, embedder = counting(repository)
    service.govern(command(GovernanceAction.RESTORE, "mem-1"))
    assert embedder.calls == [["concise answers"]]


def test_index_semantic_embeds_the_named_memories_in_one_call(repository: Repository) -> None:
    service, embedder = counting(repository, auto_index=False)
    materialize_all(service, {"mem-1": "a", "mem-2": "b", "mem-3": "c"})
    assert service.index_semantic(SCOPE, ["mem-3", "missing", "mem-1", "mem-3"]) == 2
    assert embedder.calls == [["c", "a"]]


def test_batched_vectors_and_answers_equal_those_embedded_one_by_one(
    repository: Repository,
) -> None:
    """The same memories, written as one ingest_derived in one scope and one by one in
    another: every vector is the one of its own content, and searches agree."""
    service, embedder = counting(repository, minimum_semantic_score=-1.0)
    service.ingest_derived(event("evt-1"), **derived("a-"))  # type: ignore[arg-type]
    assert len(embedder.calls) == 1
    service.ingest_event(event("evt-2", scope=OTHER_SCOPE))
    parts = derived("b-", scope=OTHER_SCOPE, event_id="evt-2")
    for draft in parts["memories"]:  # type: ignore[attr-defined]
        service.materialize_once(draft)
    for draft in parts["claims"]:  # type: ignore[attr-defined]
        service.materialize_claim(draft)
    assert [len(texts) for texts in embedder.calls] == [6, 1, 1, 1, 1, 1, 1]

    vectors = stored_vectors(repository)
    batched = {m: blob for (scope, m), blob in vectors.items() if m.startswith("a-")}
    single = {m: blob for (scope, m), blob in vectors.items() if m.startswith("b-")}
    assert len(batched) == len(single) == 6
    contents = {**DERIVED, "claim-z": CLAIM_TEXTS[0], "claim-y": CLAIM_TEXTS[1]}
    for memory_id, content in contents.items():
        assert batched["a-" + memory_id] == single["b-" + memory_id] == dense_blob(content)

    for text in ("first note", "second", "tea", "user:ada"):
        answers = []
        for scope, prefix in ((SCOPE, "a-"), (OTHER_SCOPE, "b-")):
            capsule = service.search(SearchQuery(scope, text, LATER, limit=10))
            answers.append(
                [
                    (
                        entry.memory_id.removeprefix(prefix),
                        entry.score,
                        [(s.source, s.rank, s.score) for s in entry.signals],
                    )
                    for entry in capsule.trace
                ]
            )
        assert answers[0] == answers[1]
        assert answers[0]


class _ClosedAfterItsWrite:
    """The repository, closed by another thread as soon as a write unit commits: the
    service's projection, which reads after the commit, finds it closed."""

    def __init__(self, inner: Repository) -> None:
        self.inner = inner
        self.armed = False

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    @contextlib.contextmanager
    def unit_of_work(
        self, operation: Any, *, write: bool, erasing: bool = False
    ) -> Iterator[object]:
        with self.inner.unit_of_work(operation, write=write, erasing=erasing) as uow:
            yield uow
        if write and self.armed:
            self.inner.close()


@pytest.mark.requires(Capability.PERSISTENT)
def test_a_projection_that_cannot_read_after_the_write_keeps_the_write(
    repository: Repository, reopen: Callable[..., Repository]
) -> None:
    """Whatever stops the projection once the write committed (here the repository,
    closed meanwhile by another thread) is ``SemanticProjectionError``: the caller
    learns that the write is stored."""
    wrapper = _ClosedAfterItsWrite(repository)
    service = semantic(wrapper)  # type: ignore[arg-type]
    service.ingest_event(event("evt-1"))
    wrapper.armed = True
    with pytest.raises(
        SemanticProjectionError,
        match=msg("semantic projection failed: the memories to project could not be read: mem-1"),
    ) as caught:
        service.materialize_once(memory("mem-1", content="concise answers"))
    assert caught.value.evidence_committed is True
    assert isinstance(caught.value.__cause__, ValidationError)
    again = TrueHeart(reopen(), clock=CountingClock())
    assert again.get_memory(SCOPE, "mem-1").memory_id == "mem-1"
    assert again.semantic_status(SCOPE).missing_memory_ids == ("mem-1",)


def test_a_failing_batch_names_its_first_memory_and_keeps_the_write(
    repository: Repository,
) -> None:
    service, embedder = counting(repository)
    embedder.fail = True
    with pytest.raises(
        SemanticProjectionError, match=msg("semantic projection failed: the embedder failed: mem-c")
    ) as caught:
        service.ingest_derived(event("evt-1"), **derived())  # type: ignore[arg-type]
    assert caught.value.memory_id == "mem-c"
    assert caught.value.evidence_committed is True
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert len(embedder.calls) == 1
    assert service.get_memory(SCOPE, "mem-a").content == "first note"
    status = service.semantic_status(SCOPE)
    assert status.missing_count == 6 and status.indexed == 0
    embedder.fail = False
    assert service.sync_semantic(SCOPE).complete
    assert [len(texts) for texts in embedder.calls] == [6, 6]
