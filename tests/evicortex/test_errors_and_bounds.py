"""The public names, the error tree, opening and closing a store, and every documented
bound: namespaces, content, metadata and claim inputs."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from evicortex_builders import NS, OTHER, T0, T1, CountingEmbedder, record_id

import evicortex
import evicortex.errors
import evicortex.providers
import trueheart_core
from evicortex import (
    CanonicalClaimExtractor,
    ClaimInput,
    EviCortex,
    HashingEmbedder,
    IntegrityReport,
    StoreStats,
)
from evicortex.errors import (
    EviCortexError,
    IdempotencyConflictError,
    StorageClosedError,
    ValidationError,
)

ROOT_NAMES = (
    "EviCortex",
    "ClaimInput",
    "ClaimRecord",
    "MemoryRecord",
    "MemoryCapsule",
    "CapsuleItem",
    "OmittedCandidate",
    "CanonicalClaimExtractor",
    "ClaimExtractor",
    "Embedder",
    "Reranker",
    "ClaimExtraction",
    "ClaimProvenance",
    "ExtractionDiagnostic",
    "ExtractionRecord",
    "HashingEmbedder",
    "SemanticIndexStatus",
    "EmbeddingUpsertResult",
    "RerankCandidate",
    "RerankResult",
    "StoreStats",
    "IntegrityReport",
    "SemanticProjectionError",
    "EmbedderMismatch",
)
ERROR_NAMES = (
    "EviCortexError",
    "ValidationError",
    "StorageClosedError",
    "IdempotencyConflictError",
    "PurgedError",
    "SemanticProjectionError",
    "EmbedderMismatch",
    "ProviderError",
    "RepositoryBusy",
    "RepositoryConflict",
    "RepositoryCorruption",
    "RepositoryFull",
    "RepositoryReadOnly",
    "RepositoryUnavailable",
)


# --- names and errors --------------------------------------------------------------------


@pytest.mark.parametrize("name", ROOT_NAMES)
def test_the_package_root_exports(name: str) -> None:
    assert hasattr(evicortex, name)


def test_the_errors_and_providers_modules_export() -> None:
    for name in ERROR_NAMES:
        error = getattr(evicortex.errors, name)
        assert isinstance(error, type)
        assert issubclass(error, EviCortexError)
    assert callable(evicortex.providers.TransformersEmbedder)
    assert callable(evicortex.providers.local_transformers_artifact_sha256)


def test_the_error_tree() -> None:
    assert EviCortexError is trueheart_core.TrueHeartError
    assert issubclass(ValidationError, trueheart_core.ValidationError)
    assert issubclass(ValidationError, ValueError)
    assert issubclass(IdempotencyConflictError, trueheart_core.IdempotencyConflict)
    assert evicortex.SemanticProjectionError is evicortex.errors.SemanticProjectionError
    assert evicortex.EmbedderMismatch is evicortex.errors.EmbedderMismatch
    # The repository errors are the engine's own classes.
    repository_errors = [name for name in ERROR_NAMES if name.startswith("Repository")]
    assert len(repository_errors) == 6
    for name in repository_errors:
        assert getattr(evicortex.errors, name) is getattr(trueheart_core, name)


# --- open and close ----------------------------------------------------------------------


def test_open_defaults_to_an_in_memory_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with EviCortex.open() as memory:
        record = memory.remember(namespace=NS, content="kept in memory")
        assert [i.id for i in memory.recall(namespace=NS, query="memory").items] == [record.id]
    with EviCortex.open(":memory:") as other:
        assert other.stats().memories == 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("first", [str, Path], ids=["str", "path"])
def test_a_store_file_is_opened_from_a_str_or_a_path(
    tmp_path: Path, first: Callable[[Path], Any]
) -> None:
    path = tmp_path / "nested name é" / "store.db"
    path.parent.mkdir()
    with EviCortex.open(first(path)) as memory:
        record = memory.remember(namespace=NS, content="kept on disk")
    assert path.is_file()
    second = str if first is Path else Path
    with EviCortex.open(second(path)) as memory:
        assert memory.expand(namespace=NS, memory_id=record.id) == record


@pytest.mark.parametrize("path", [5, None, 1.5, ["store.db"]])
def test_a_path_that_is_no_str_or_path_is_refused(path: Any) -> None:
    with pytest.raises(ValidationError):
        EviCortex.open(path)


def test_close_is_idempotent(store_path: Path) -> None:
    memory = EviCortex.open(store_path)
    memory.remember(namespace=NS, content="kept")
    memory.close()
    memory.close()
    with EviCortex.open(store_path) as again:
        assert again.stats(NS).memories == 1
    again.close()


def closed_calls(record: Any) -> dict[str, Callable[[EviCortex], object]]:
    return {
        "remember": lambda m: m.remember(namespace=NS, content="late"),
        "remember_extracted": lambda m: m.remember_extracted(namespace=NS, content="late"),
        "get_extraction": lambda m: m.get_extraction(NS, record.id),
        "recall": lambda m: m.recall(namespace=NS, query="kept"),
        "expand": lambda m: m.expand(namespace=NS, memory_id=record.id),
        "purge_memory": lambda m: m.purge_memory(namespace=NS, memory_id=record.id),
        "index_semantic": lambda m: m.index_semantic(record),
        "semantic_status": lambda m: m.semantic_status(NS),
        "sync_semantic": lambda m: m.sync_semantic(NS),
        "verify_integrity": lambda m: m.verify_integrity(),
        "rebuild_indexes": lambda m: m.rebuild_indexes(),
        "stats": lambda m: m.stats(),
    }


CLOSED_METHODS = tuple(closed_calls(None))


@pytest.mark.parametrize("method", CLOSED_METHODS)
@pytest.mark.parametrize("closing", ["close", "with"])
def test_every_method_after_close_raises_storage_closed_error(
    store_path: Path, method: str, closing: str
) -> None:
    settings: dict[str, Any] = {
        "embedder": HashingEmbedder(32),
        "extractor": CanonicalClaimExtractor(),
    }
    if closing == "close":
        memory = EviCortex.open(store_path, **settings)
        record = memory.remember_extracted(namespace=NS, content="kept words")
        memory.close()
    else:
        with EviCortex.open(store_path, **settings) as memory:
            record = memory.remember_extracted(namespace=NS, content="kept words")
    with pytest.raises(StorageClosedError):
        closed_calls(record)[method](memory)
    with EviCortex.open(store_path, **settings) as again:
        assert again.expand(namespace=NS, memory_id=record.id) == record
        assert again.stats(NS).memories == 1


# --- namespaces --------------------------------------------------------------------------

BAD_NAMESPACES = [
    pytest.param("", id="empty"),
    pytest.param("   ", id="blank"),
    pytest.param("n" * 129, id="129-characters"),
    pytest.param("bad\ud800", id="lone-surrogate"),
    pytest.param(5, id="int"),
    pytest.param(None, id="none"),
    pytest.param(b"demo", id="bytes"),
]


def namespace_calls(namespace: Any) -> dict[str, Callable[[EviCortex], object]]:
    return {
        "remember": lambda m: m.remember(namespace=namespace, content="text"),
        "remember_extracted": lambda m: m.remember_extracted(
            namespace=namespace, content="text", extractor=CanonicalClaimExtractor()
        ),
        "get_extraction": lambda m: m.get_extraction(namespace, "mem-x"),
        "recall": lambda m: m.recall(namespace=namespace, query="text"),
        "expand": lambda m: m.expand(namespace=namespace, memory_id="mem-x"),
        "purge_memory": lambda m: m.purge_memory(namespace=namespace, memory_id="mem-x"),
        "semantic_status": lambda m: m.semantic_status(namespace),
        "sync_semantic": lambda m: m.sync_semantic(namespace),
        "verify_integrity": lambda m: m.verify_integrity(namespace),
        "stats": lambda m: m.stats(namespace),
    }


@pytest.mark.parametrize("method", tuple(namespace_calls(NS)))
@pytest.mark.parametrize("namespace", BAD_NAMESPACES)
def test_a_bad_namespace_is_refused_by_every_method(
    open_store: Callable[..., EviCortex], method: str, namespace: Any
) -> None:
    memory = open_store(":memory:", embedder=HashingEmbedder(16))
    if namespace is None and method in ("verify_integrity", "stats"):
        # None is their documented default: every namespace.
        assert namespace_calls(namespace)[method](memory) is not None
        return
    with pytest.raises(ValidationError) as caught:
        namespace_calls(namespace)[method](memory)
    assert isinstance(caught.value, ValueError)
    assert memory.stats().memories == 0


def test_a_namespace_of_128_characters_is_accepted(memory: EviCortex) -> None:
    namespace = "n" * 127 + "é"
    record = memory.remember(namespace=namespace, content="long namespace")
    assert record.namespace == namespace
    assert memory.expand(namespace=namespace, memory_id=record.id) == record


# --- content, metadata and other arguments of remember -----------------------------------


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("", id="empty"),
        pytest.param("secret \ud800", id="lone-surrogate"),
        pytest.param("secret \udfff tail", id="lone-low-surrogate"),
        pytest.param(5, id="int"),
        pytest.param(None, id="none"),
        pytest.param(b"secret", id="bytes"),
    ],
)
def test_content_that_is_no_non_empty_utf8_text_is_refused(memory: EviCortex, content: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        memory.remember(namespace=NS, content=content, idempotency_key="k")
    assert isinstance(caught.value, ValueError)
    assert "secret" not in str(caught.value)
    assert memory.stats(NS).memories == 0
    with pytest.raises(KeyError):
        memory.expand(namespace=NS, memory_id=record_id(NS, "k"))


@pytest.mark.parametrize(
    "metadata",
    [
        pytest.param([("a", 1)], id="list"),
        pytest.param("secret", id="str"),
        pytest.param(5, id="int"),
        pytest.param({1: "x"}, id="int-key"),
        pytest.param({"a": object()}, id="object-value"),
        pytest.param({"a": {1, 2}}, id="set-value"),
        pytest.param({"a": math.nan}, id="nan"),
        pytest.param({"a": math.inf}, id="infinity"),
        pytest.param({"a": "secret \ud800"}, id="lone-surrogate"),
    ],
)
def test_metadata_that_is_no_json_object_is_refused(memory: EviCortex, metadata: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        memory.remember(namespace=NS, content="text", metadata=metadata)
    assert isinstance(caught.value, ValueError)
    assert "secret" not in str(caught.value)
    assert memory.stats(NS).memories == 0


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"source": 5}, id="source-int"),
        pytest.param({"idempotency_key": 5}, id="key-int"),
        pytest.param({"claims": [("user:ada", "likes", "tea")]}, id="claims-tuples"),
        pytest.param({"claims": ClaimInput("user:ada", "likes", "tea")}, id="claims-one-input"),
    ],
)
def test_other_arguments_of_the_wrong_type_are_refused(
    memory: EviCortex, arguments: dict[str, Any]
) -> None:
    with pytest.raises(ValidationError):
        memory.remember(namespace=NS, content="text", **arguments)
    assert memory.stats(NS).memories == 0


# --- ClaimInput bounds -------------------------------------------------------------------


def remember_with_claim(memory: EviCortex, **fields: Any) -> object:
    claim: dict[str, Any] = {"subject": "user:ada", "predicate": "likes", "value": "tea"}
    claim.update(fields)
    return memory.remember(
        namespace=NS, content="Ada likes tea.", idempotency_key="k", claims=[ClaimInput(**claim)]
    )


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"confidence": -0.01}, id="confidence-below-0"),
        pytest.param({"confidence": 1.01}, id="confidence-above-1"),
        pytest.param({"confidence": math.nan}, id="confidence-nan"),
        pytest.param({"confidence": math.inf}, id="confidence-infinite"),
        pytest.param({"confidence": 2**1024}, id="confidence-huge-int"),
        pytest.param({"confidence": -(10**5000)}, id="confidence-huge-negative-int"),
        pytest.param({"confidence": True}, id="confidence-bool"),
        pytest.param({"confidence": "0.5"}, id="confidence-str"),
        pytest.param({"valid_from": T1, "valid_to": T1}, id="valid-to-equal"),
        pytest.param({"valid_from": T1, "valid_to": T0}, id="valid-to-earlier"),
        pytest.param(
            {"valid_from": "2025-03-01T09:00:00Z", "valid_to": "2025-03-01T11:00:00+02:00"},
            id="valid-to-equal-other-offset",
        ),
        pytest.param({"subject": ""}, id="subject-empty"),
        pytest.param({"predicate": "  "}, id="predicate-blank"),
        pytest.param({"value": ""}, id="value-empty"),
        pytest.param({"authority": ""}, id="authority-empty"),
    ],
)
def test_claim_inputs_out_of_bounds_are_refused(memory: EviCortex, fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        remember_with_claim(memory, **fields)
    assert memory.stats(NS).memories == 0
    assert memory.stats(NS).claims == 0


@pytest.mark.parametrize("field", ["valid_from", "valid_to"])
def test_a_rejected_time_is_kept_nowhere_in_the_error(field: str) -> None:
    """Not in the message, nor in the exception the parser raised (``__context__``)."""
    with pytest.raises(ValidationError) as caught:
        ClaimInput("user:ada", "likes", "tea", **{field: "secret-patient-value"})
    error = caught.value
    assert str(error) == f"{field}: must be an ISO 8601 time with an offset"
    assert error.__cause__ is None and error.__context__ is None


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"confidence": 0}, id="confidence-0"),
        pytest.param({"confidence": 1}, id="confidence-1"),
        pytest.param({"valid_from": T0, "valid_to": T1}, id="valid-to-later"),
        pytest.param({"valid_to": T1}, id="valid-to-alone"),
    ],
)
def test_claim_inputs_at_the_bounds_are_accepted(memory: EviCortex, fields: dict[str, Any]) -> None:
    remember_with_claim(memory, **fields)
    assert memory.stats(NS).claims == 1


class Raising(str):
    """Text whose own methods raise: it must be read as the text it holds."""

    __slots__ = ()

    def strip(self, chars: str | None = None) -> str:
        raise RuntimeError("host")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("host")

    __hash__ = str.__hash__


class Fickle(float):
    """A number whose own comparisons raise."""

    def __le__(self, other: object) -> bool:
        raise RuntimeError("host")

    def __ge__(self, other: object) -> bool:
        raise RuntimeError("host")


def test_claim_inputs_hold_the_plain_values_they_were_given() -> None:
    claim = ClaimInput(
        Raising("user:ada"),
        Raising("likes"),
        Raising("tea"),
        confidence=Fickle(0.5),
        authority=Raising("host"),
        supersedes=Raising("c-1"),
    )
    for name in ("subject", "predicate", "value", "authority", "supersedes"):
        assert type(getattr(claim, name)) is str
    assert (claim.subject, claim.predicate, claim.value) == ("user:ada", "likes", "tea")
    assert (claim.authority, claim.supersedes) == ("host", "c-1")
    assert type(claim.confidence) is float and claim.confidence == 0.5
    with pytest.raises(ValidationError, match="confidence: must be from 0 through 1"):
        ClaimInput("user:ada", "likes", "tea", confidence=Fickle(1.5))


def test_claims_whose_own_iteration_raises_are_read_or_refused(memory: EviCortex) -> None:
    class Shifting(list[ClaimInput]):
        def __iter__(self) -> Any:
            raise RuntimeError("host")

    def failing() -> Any:
        yield ClaimInput("user:ada", "likes", "tea")
        raise RuntimeError("host")

    claims = Shifting([ClaimInput("user:ada", "likes", "tea")])
    record = memory.remember(namespace=NS, content="Ada likes tea.", claims=claims)
    assert [claim.value for claim in record.claims] == ["tea"]
    refused = "claims: must be an iterable of ClaimInput"
    with pytest.raises(ValidationError, match=refused) as caught:
        memory.remember(namespace=NS, content="Ada likes coffee.", claims=failing())
    assert caught.value.__cause__ is None
    assert memory.stats(NS).memories == 1


def test_a_mapping_whose_own_methods_raise_is_refused_by_remember_extracted(
    memory: EviCortex,
) -> None:
    class Unreadable(dict[str, str]):
        def items(self) -> Any:
            raise RuntimeError("host")

        def values(self) -> Any:
            raise RuntimeError("host")

    with pytest.raises(ValidationError, match="claim_ids_by_source: must be a readable mapping"):
        memory.remember_extracted(
            namespace=NS,
            content="Canonical claim: subject=user:ada; predicate=likes; value=tea.",
            claim_ids_by_source=Unreadable(earlier="c-1"),
            extractor=CanonicalClaimExtractor(),
        )
    assert memory.stats(NS).memories == 0


def test_a_capsule_holds_the_plain_query_it_searched_for(memory: EviCortex) -> None:
    class Short(str):
        __slots__ = ()

        def __len__(self) -> int:
            return 1

    memory.remember(namespace=NS, content="The sky is blue.")
    capsule = memory.recall(namespace=NS, query=Short("sky " * 100))
    assert type(capsule.query) is str and capsule.query == "sky " * 100
    assert "<400 chars>" in repr(capsule)


# --- integrity, repair and statistics ----------------------------------------------------


def test_stats_count_evidence_claims_namespaces_and_vectors(
    open_store: Callable[..., EviCortex],
) -> None:
    memory = open_store(":memory:", embedder=HashingEmbedder(32))
    claims = [ClaimInput("user:ada", "likes", "tea"), ClaimInput("user:ada", "likes", "cake")]
    memory.remember(namespace=NS, content="Ada likes tea and cake.", claims=claims)
    memory.remember(namespace=NS, content="Ada went home.")
    memory.remember(namespace=OTHER, content="Bob went home.")
    everything = memory.stats()
    assert isinstance(everything, StoreStats)
    assert (everything.memories, everything.claims, everything.namespaces) == (3, 2, 2)
    assert everything.vectors == 5
    assert isinstance(everything.engine, trueheart_core.StoreStats)
    ada = memory.stats(NS)
    assert (ada.memories, ada.claims, ada.vectors) == (2, 2, 4)


def test_verify_integrity_reports_a_sound_store(memory: EviCortex) -> None:
    memory.remember(
        namespace=NS, content="Ada likes tea.", claims=[ClaimInput("user:ada", "likes", "tea")]
    )
    for report in (memory.verify_integrity(), memory.verify_integrity(NS)):
        assert isinstance(report, IntegrityReport)
        assert report.problems == ()
        assert report.rows_checked > 0


def test_rebuild_indexes_never_calls_a_provider(open_store: Callable[..., EviCortex]) -> None:
    embedder = CountingEmbedder()
    memory = open_store(":memory:", embedder=embedder)
    record = memory.remember(
        namespace=NS, content="Ada likes tea.", claims=[ClaimInput("user:ada", "likes", "tea")]
    )
    documents, queries = len(embedder.document_calls), len(embedder.query_calls)
    assert memory.rebuild_indexes() is None  # type: ignore[func-returns-value]
    assert (len(embedder.document_calls), len(embedder.query_calls)) == (documents, queries)
    assert memory.semantic_status(NS).complete is True
    assert memory.verify_integrity().problems == ()
    ids = {item.id for item in memory.recall(namespace=NS, query="tea").items}
    assert ids == {record.id, record.claims[0].id}


def test_errors_raised_on_purpose_are_evicortex_errors(memory: EviCortex) -> None:
    first = memory.remember(namespace=NS, content="Ada likes tea.", idempotency_key="k")
    with pytest.raises(EviCortexError):
        memory.remember(namespace=NS, content="Ada likes coffee.", idempotency_key="k")
    assert memory.purge_memory(namespace=NS, memory_id=first.id) is True
    with pytest.raises(EviCortexError):
        memory.remember(namespace=NS, content="Ada likes tea.", idempotency_key="k")
    with pytest.raises(EviCortexError):
        memory.remember(namespace=NS, content="")
