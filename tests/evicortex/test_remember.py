"""remember and remember_extracted: the stored evidence, its claims, its times, and
idempotent replay."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from evicortex_builders import (
    NS,
    OTHER,
    T0,
    T1,
    T2,
    T3,
    ScriptedExtractor,
    claim_id,
    id_tuple,
    is_id,
    plain,
    record_id,
)

from evicortex import (
    CanonicalClaimExtractor,
    ClaimExtraction,
    ClaimInput,
    ClaimProvenance,
    ClaimRecord,
    EviCortex,
    ExtractionRecord,
    MemoryRecord,
)
from evicortex.errors import EviCortexError, IdempotencyConflictError, ValidationError
from trueheart_core import ExtractedClaim, IdempotencyConflict

FAR_FUTURE = datetime(2099, 1, 1, tzinfo=UTC)


def is_utc(moment: datetime) -> bool:
    return moment.tzinfo is not None and moment.utcoffset() == timedelta(0)


# --- the evidence ----------------------------------------------------------------------


def test_remember_stores_the_evidence_with_the_documented_defaults(memory: EviCortex) -> None:
    before = datetime.now(UTC) - timedelta(seconds=1)
    record = memory.remember(namespace=NS, content="Ada selected dark mode.")
    after = datetime.now(UTC)
    assert isinstance(record, MemoryRecord)
    assert is_id(record.id, "mem-")
    assert record.namespace == NS
    assert record.content == "Ada selected dark mode."
    assert record.kind == "episode"
    assert record.source == ""
    assert plain(record.metadata) == {}
    assert record.idempotency_key is None
    assert record.claims == ()
    assert isinstance(record.content_hash, str)
    assert len(record.content_hash) == 64
    for moment in (record.occurred_at, record.recorded_at):
        assert is_utc(moment)
        assert before <= moment <= after
    assert memory.expand(namespace=NS, memory_id=record.id) == record


def test_without_a_key_every_call_stores_a_new_record(memory: EviCortex) -> None:
    first = memory.remember(namespace=NS, content="same words")
    second = memory.remember(namespace=NS, content="same words")
    assert first.id != second.id
    assert is_id(second.id, "mem-")
    assert memory.stats(NS).memories == 2


def test_an_idempotency_key_names_the_record(memory: EviCortex) -> None:
    record = memory.remember(namespace=NS, content="imported line", idempotency_key="import-7")
    assert record.id == record_id(NS, "import-7")
    assert record.idempotency_key == "import-7"


def test_kind_source_metadata_and_times_are_stored_as_given(memory: EviCortex) -> None:
    metadata = {"channel": "chat", "tags": ["a", "b"], "nested": {"n": 1, "ok": True}}
    record = memory.remember(
        namespace=NS,
        content="Ada asked for the invoice.",
        kind="note",
        source="chat:42",
        occurred_at=T1,
        recorded_at=T2,
        metadata=metadata,
    )
    assert record.kind == "note"
    assert record.source == "chat:42"
    assert record.occurred_at == T1
    assert record.recorded_at == T2
    assert plain(record.metadata) == metadata
    assert memory.expand(namespace=NS, memory_id=record.id) == record


def test_the_caller_s_metadata_is_copied(memory: EviCortex) -> None:
    metadata: dict[str, Any] = {"tags": ["a"]}
    record = memory.remember(namespace=NS, content="copied", metadata=metadata)
    metadata["tags"].append("b")
    metadata["added"] = 1
    assert plain(record.metadata) == {"tags": ["a"]}
    assert plain(memory.expand(namespace=NS, memory_id=record.id).metadata) == {"tags": ["a"]}


@pytest.mark.parametrize("kind", ["claim", "", "   ", 5])
def test_a_claim_kind_or_a_kind_that_is_no_text_is_refused(memory: EviCortex, kind: Any) -> None:
    with pytest.raises(ValidationError):
        memory.remember(namespace=NS, content="refused", kind=kind)
    assert memory.stats(NS).memories == 0


# --- times -------------------------------------------------------------------------------

AWARE_FORMS_OF_T1 = [
    pytest.param(T1, id="utc-datetime"),
    pytest.param(datetime(2025, 3, 1, 11, 0, tzinfo=timezone(timedelta(hours=2))), id="plus-2"),
    pytest.param(datetime(2025, 3, 1, 4, 0, tzinfo=timezone(timedelta(hours=-5))), id="minus-5"),
    pytest.param("2025-03-01T09:00:00Z", id="iso-z"),
    pytest.param("2025-03-01T09:00:00+00:00", id="iso-zero-offset"),
    pytest.param("2025-03-01T11:00:00+02:00", id="iso-plus-2"),
    pytest.param("2025-03-01T04:00:00-05:00", id="iso-minus-5"),
]

NAIVE_OR_INVALID = [
    pytest.param(datetime(2025, 3, 1, 9, 0), id="naive-datetime"),
    pytest.param("2025-03-01T09:00:00", id="naive-iso"),
    pytest.param("2025-03-01", id="date-only"),
    pytest.param("yesterday", id="not-a-time"),
    pytest.param(1_740_819_600, id="epoch-int"),
]


@pytest.mark.parametrize("field", ["occurred_at", "recorded_at"])
@pytest.mark.parametrize("value", AWARE_FORMS_OF_T1)
def test_aware_times_are_normalised_to_utc(memory: EviCortex, field: str, value: Any) -> None:
    record = memory.remember(namespace=NS, content="timed", **{field: value})
    moment = getattr(record, field)
    assert moment == T1
    assert is_utc(moment)
    assert getattr(memory.expand(namespace=NS, memory_id=record.id), field) == T1


@pytest.mark.parametrize("field", ["occurred_at", "recorded_at"])
@pytest.mark.parametrize("value", NAIVE_OR_INVALID)
def test_naive_or_unreadable_times_are_refused(memory: EviCortex, field: str, value: Any) -> None:
    with pytest.raises(ValidationError):
        memory.remember(namespace=NS, content="timed", **{field: value})
    assert memory.stats(NS).memories == 0


@pytest.mark.parametrize("value", AWARE_FORMS_OF_T1)
def test_claim_valid_times_are_normalised_to_utc(memory: EviCortex, value: Any) -> None:
    record = memory.remember(
        namespace=NS,
        content="Ada lives in Lyon.",
        claims=[ClaimInput("user:ada", "lives_in", "Lyon", valid_from=value)],
    )
    (claim,) = record.claims
    assert claim.valid_from == T1
    assert claim.valid_from is not None
    assert is_utc(claim.valid_from)


@pytest.mark.parametrize("value", NAIVE_OR_INVALID)
def test_naive_claim_valid_times_are_refused(memory: EviCortex, value: Any) -> None:
    with pytest.raises(ValidationError):
        memory.remember(
            namespace=NS,
            content="Ada lives in Lyon.",
            claims=[ClaimInput("user:ada", "lives_in", "Lyon", valid_from=value)],
        )
    assert memory.stats(NS).memories == 0


# --- idempotent replay -------------------------------------------------------------------


def keyed(**changes: Any) -> dict[str, Any]:
    """The arguments of one keyed remember call, with ``changes`` applied."""
    arguments: dict[str, Any] = {
        "namespace": NS,
        "content": "Ada moved to Lyon.",
        "kind": "note",
        "source": "chat",
        "occurred_at": T1,
        "recorded_at": T2,
        "metadata": {"channel": "chat"},
        "idempotency_key": "key-1",
        "claims": [ClaimInput("user:ada", "lives_in", "Lyon", valid_from=T0)],
    }
    arguments.update(changes)
    return arguments


def test_an_identical_replay_returns_the_stored_record(memory: EviCortex) -> None:
    first = memory.remember(**keyed())
    assert memory.remember(**keyed()) == first
    assert memory.remember(**keyed(occurred_at="2025-03-01T11:00:00+02:00")) == first
    assert memory.stats(NS).memories == 1
    assert memory.stats(NS).claims == 1


def test_a_replay_without_explicit_times_returns_the_stored_record(memory: EviCortex) -> None:
    arguments: dict[str, Any] = {
        "namespace": NS,
        "content": "Ada moved to Lyon.",
        "idempotency_key": "k",
    }
    first = memory.remember(**arguments)
    assert memory.remember(**arguments) == first
    assert memory.stats(NS).memories == 1


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"content": "Ada moved to Paris."}, id="content"),
        pytest.param({"kind": "episode"}, id="kind"),
        pytest.param({"source": "email"}, id="source"),
        pytest.param({"metadata": {"channel": "email"}}, id="metadata"),
        pytest.param({"metadata": None}, id="metadata-none"),
        pytest.param({"claims": []}, id="no-claims"),
        pytest.param(
            {"claims": [ClaimInput("user:ada", "lives_in", "Paris", valid_from=T0)]},
            id="claim-value",
        ),
        pytest.param(
            {
                "claims": [
                    ClaimInput("user:ada", "lives_in", "Lyon", valid_from=T0),
                    ClaimInput("user:ada", "speaks", "French"),
                ]
            },
            id="claim-count",
        ),
        pytest.param({"occurred_at": T2}, id="occurred_at"),
        pytest.param({"recorded_at": T3}, id="recorded_at"),
    ],
)
def test_a_different_request_with_the_same_key_conflicts(
    memory: EviCortex, change: dict[str, Any]
) -> None:
    first = memory.remember(**keyed())
    with pytest.raises(IdempotencyConflictError) as caught:
        memory.remember(**keyed(**change))
    assert isinstance(caught.value, IdempotencyConflict)
    assert "Paris" not in str(caught.value)
    assert memory.expand(namespace=NS, memory_id=first.id) == first
    assert memory.stats(NS).memories == 1


def test_idempotency_keys_are_per_namespace(memory: EviCortex) -> None:
    ada = memory.remember(namespace=NS, content="in the first namespace", idempotency_key="k")
    bob = memory.remember(namespace=OTHER, content="in the second namespace", idempotency_key="k")
    assert ada.id == record_id(NS, "k")
    assert bob.id == record_id(OTHER, "k")
    assert ada.id != bob.id
    assert memory.expand(namespace=NS, memory_id=ada.id) == ada
    assert memory.expand(namespace=OTHER, memory_id=bob.id) == bob
    assert memory.stats(NS).memories == 1
    assert memory.stats(OTHER).memories == 1


# --- claims ------------------------------------------------------------------------------


def test_claims_are_stored_with_generated_ids_and_projected_status(memory: EviCortex) -> None:
    record = memory.remember(
        namespace=NS,
        content="Ada prefers dark mode, lived in Lyon and plans to retire.",
        occurred_at=T1,
        idempotency_key="claims",
        claims=[
            ClaimInput("user:ada", "prefers_theme", "dark"),
            ClaimInput(
                "user:ada",
                "lived_in",
                "Lyon",
                valid_from="2025-03-01T11:00:00+02:00",
                valid_to=T3,
                confidence=0.75,
                authority="user",
            ),
            ClaimInput("user:ada", "plans", "retire", valid_from=FAR_FUTURE),
        ],
    )
    assert len(record.claims) == 3
    for index, claim in enumerate(record.claims):
        assert isinstance(claim, ClaimRecord)
        assert claim.id == claim_id(NS, record.id, index)
        assert claim.namespace == NS
        assert claim.memory_id == record.id
        assert claim.supersedes is None
        assert id_tuple(claim.superseded_by) == ()
    dark, lyon, retire = record.claims
    assert (dark.subject, dark.predicate, dark.value) == ("user:ada", "prefers_theme", "dark")
    assert (dark.valid_from, dark.valid_to) == (None, None)
    assert (dark.confidence, dark.authority) == (1.0, "application")
    assert dark.status == "current"
    assert (lyon.valid_from, lyon.valid_to) == (T1, T3)
    assert (lyon.confidence, lyon.authority) == (0.75, "user")
    assert lyon.status == "ended"
    assert retire.status == "not_yet_valid"
    assert len({claim.id for claim in record.claims}) == 3
    assert memory.expand(namespace=NS, memory_id=record.id).claims == record.claims


def test_claim_ids_do_not_depend_on_the_store(memory: EviCortex) -> None:
    claims = [ClaimInput("user:ada", "prefers_theme", "dark")]
    record = memory.remember(namespace=NS, content="x", idempotency_key="k", claims=claims)
    with EviCortex.open(":memory:") as other:
        again = other.remember(namespace=NS, content="x", idempotency_key="k", claims=claims)
    assert again.id == record.id
    assert [c.id for c in again.claims] == [c.id for c in record.claims]


def test_supersedes_revises_a_claim_without_deleting_it(memory: EviCortex) -> None:
    old = memory.remember(
        namespace=NS,
        content="Ada prefers dark mode.",
        occurred_at=T0,
        claims=[ClaimInput("user:ada", "prefers_theme", "dark")],
    )
    new = memory.remember(
        namespace=NS,
        content="Ada now prefers light mode.",
        occurred_at=T1,
        claims=[ClaimInput("user:ada", "prefers_theme", "light", supersedes=old.claims[0].id)],
    )
    (revision,) = new.claims
    assert revision.supersedes == old.claims[0].id
    assert revision.status == "current"
    earlier = memory.expand(namespace=NS, memory_id=old.id)
    assert earlier.content == "Ada prefers dark mode."
    (previous,) = earlier.claims
    assert previous.id == old.claims[0].id
    assert previous.value == "dark"
    assert previous.status == "superseded"
    assert revision.id in id_tuple(previous.superseded_by)
    assert memory.stats(NS).claims == 2


@pytest.mark.parametrize("target", ["other-namespace", "missing"])
def test_supersedes_must_name_a_claim_of_the_same_namespace(memory: EviCortex, target: str) -> None:
    foreign = memory.remember(
        namespace=OTHER,
        content="Bob prefers dark mode.",
        occurred_at=T0,
        claims=[ClaimInput("user:bob", "prefers_theme", "dark")],
    )
    supersedes = foreign.claims[0].id if target == "other-namespace" else claim_id(NS, "x", 0)
    with pytest.raises(EviCortexError):
        memory.remember(
            namespace=NS,
            content="Ada now prefers light mode.",
            occurred_at=T1,
            idempotency_key="revision",
            claims=[ClaimInput("user:ada", "prefers_theme", "light", supersedes=supersedes)],
        )
    with pytest.raises(KeyError):
        memory.expand(namespace=NS, memory_id=record_id(NS, "revision"))
    assert memory.stats(NS).memories == 0
    assert memory.stats(NS).claims == 0
    kept = memory.expand(namespace=OTHER, memory_id=foreign.id)
    assert kept == foreign
    assert kept.claims[0].status == "current"


# --- remember_extracted ------------------------------------------------------------------

CANONICAL_TEXT = (
    "Ada selected dark mode. "
    "Canonical claim: subject=user:ada; predicate=prefers_theme; value=dark; "
    "valid_from=2025-03-01T09:00:00Z; confidence=0.900; authority=application."
)


def likes(content: str) -> ClaimExtraction:
    """A faithful reading of ``"<subject> likes <value>."``."""
    subject, _, value = content.rstrip(".").split(" ", 2)
    claim = ExtractedClaim(subject, "likes", value, ClaimProvenance(0, len(content)))
    return ClaimExtraction((claim,))


def test_remember_extracted_stores_the_extracted_claims(
    open_store: Callable[..., EviCortex],
) -> None:
    memory = open_store(":memory:", extractor=CanonicalClaimExtractor())
    record = memory.remember_extracted(
        namespace=NS,
        content=CANONICAL_TEXT,
        kind="note",
        source="chat",
        occurred_at=T1,
        recorded_at=T2,
        metadata={"channel": "chat"},
        idempotency_key="extracted",
    )
    assert record.id == record_id(NS, "extracted")
    assert (record.kind, record.source, record.occurred_at, record.recorded_at) == (
        "note",
        "chat",
        T1,
        T2,
    )
    (claim,) = record.claims
    assert (claim.subject, claim.predicate, claim.value) == ("user:ada", "prefers_theme", "dark")
    assert (claim.valid_from, claim.confidence, claim.authority) == (T1, 0.9, "application")
    assert claim.memory_id == record.id
    assert claim.status == "current"
    audit = memory.get_extraction(NS, record.id)
    assert isinstance(audit, ExtractionRecord)
    assert audit.extractor == CanonicalClaimExtractor().identity
    assert audit.claim_ids == (claim.id,)
    assert memory.expand(namespace=NS, memory_id=record.id) == record
    replay = memory.remember_extracted(
        namespace=NS,
        content=CANONICAL_TEXT,
        kind="note",
        source="chat",
        occurred_at=T1,
        recorded_at=T2,
        metadata={"channel": "chat"},
        idempotency_key="extracted",
    )
    assert replay == record


def test_a_per_call_extractor_overrides_the_configured_one(
    open_store: Callable[..., EviCortex],
) -> None:
    configured = ScriptedExtractor("test-configured/1", likes)
    per_call = ScriptedExtractor("test-per-call/1", likes)
    memory = open_store(":memory:", extractor=configured)
    record = memory.remember_extracted(namespace=NS, content="Ada likes tea.", extractor=per_call)
    assert configured.calls == []
    assert per_call.calls == ["Ada likes tea."]
    assert [c.value for c in record.claims] == ["tea"]
    assert memory.get_extraction(NS, record.id).extractor == "test-per-call/1"
    other = memory.remember_extracted(namespace=NS, content="Ada likes coffee.")
    assert configured.calls == ["Ada likes coffee."]
    assert memory.get_extraction(NS, other.id).extractor == "test-configured/1"


def test_without_any_extractor_nothing_is_stored(memory: EviCortex) -> None:
    with pytest.raises(ValidationError):
        memory.remember_extracted(namespace=NS, content="Ada likes tea.", idempotency_key="k")
    assert memory.stats(NS).memories == 0
    with pytest.raises(KeyError):
        memory.expand(namespace=NS, memory_id=record_id(NS, "k"))


def fails(content: str) -> ClaimExtraction:
    raise RuntimeError("the model is down")


def span_outside(content: str) -> ClaimExtraction:
    claim = ExtractedClaim("Ada", "likes", "tea", ClaimProvenance(0, len(content) + 10))
    return ClaimExtraction((claim,))


def span_without_value(content: str) -> ClaimExtraction:
    claim = ExtractedClaim("Ada", "likes", "coffee", ClaimProvenance(0, len(content)))
    return ClaimExtraction((claim,))


def not_an_extraction(content: str) -> object:
    return {"claims": [("Ada", "likes", "tea")]}


@pytest.mark.parametrize(
    "answer",
    [fails, span_outside, span_without_value, not_an_extraction],
    ids=["raises", "span-outside", "span-without-value", "not-an-extraction"],
)
def test_invalid_extractor_output_stores_nothing(
    memory: EviCortex, answer: Callable[[str], object]
) -> None:
    extractor = ScriptedExtractor("test-faulty/1", answer)
    with pytest.raises(EviCortexError):
        memory.remember_extracted(
            namespace=NS, content="Ada likes tea.", idempotency_key="k", extractor=extractor
        )
    assert extractor.calls == ["Ada likes tea."]
    assert memory.stats(NS).memories == 0
    assert memory.stats(NS).claims == 0
    with pytest.raises(KeyError):
        memory.expand(namespace=NS, memory_id=record_id(NS, "k"))
    with pytest.raises(KeyError):
        memory.get_extraction(NS, record_id(NS, "k"))
    assert memory.recall(namespace=NS, query="tea").items == ()
    good = ScriptedExtractor("test-faithful/1", likes)
    record = memory.remember_extracted(
        namespace=NS, content="Ada likes tea.", idempotency_key="k", extractor=good
    )
    assert record.id == record_id(NS, "k")
    assert [c.value for c in record.claims] == ["tea"]


def test_get_extraction_raises_key_error_when_there_is_none(
    open_store: Callable[..., EviCortex],
) -> None:
    memory = open_store(":memory:", extractor=CanonicalClaimExtractor())
    extracted = memory.remember_extracted(namespace=OTHER, content=CANONICAL_TEXT)
    plain_record = memory.remember(namespace=NS, content="no extraction here")
    for memory_id in ("mem-missing", extracted.id, plain_record.id):
        with pytest.raises(KeyError):
            memory.get_extraction(NS, memory_id)
    assert memory.get_extraction(OTHER, extracted.id).claim_ids == tuple(
        c.id for c in extracted.claims
    )


def test_claim_ids_by_source_resolves_a_named_supersession(
    open_store: Callable[..., EviCortex],
) -> None:
    memory = open_store(":memory:", extractor=CanonicalClaimExtractor())
    first = memory.remember_extracted(
        namespace=NS,
        content="Canonical claim: subject=user:ada; predicate=prefers_theme; value=dark.",
        occurred_at=T0,
    )
    revision = "Canonical claim: subject=user:ada; predicate=prefers_theme; value=light; " + (
        "supersedes=theme-1."
    )
    with pytest.raises(ValidationError):
        memory.remember_extracted(
            namespace=NS, content=revision, occurred_at=T1, idempotency_key="revision"
        )
    assert memory.stats(NS).memories == 1
    second = memory.remember_extracted(
        namespace=NS,
        content=revision,
        occurred_at=T1,
        idempotency_key="revision",
        claim_ids_by_source={"theme-1": first.claims[0].id},
    )
    (claim,) = second.claims
    assert claim.supersedes == first.claims[0].id
    (previous,) = memory.expand(namespace=NS, memory_id=first.id).claims
    assert previous.status == "superseded"
    assert claim.id in id_tuple(previous.superseded_by)


# --- one key, with and without an extractor ----------------------------------------------


def test_remember_then_remember_extracted_with_the_same_key_conflicts(
    memory: EviCortex,
) -> None:
    first = memory.remember(namespace=NS, content=CANONICAL_TEXT, idempotency_key="k")
    assert first.claims == ()
    with pytest.raises(IdempotencyConflictError) as caught:
        memory.remember_extracted(
            namespace=NS,
            content=CANONICAL_TEXT,
            idempotency_key="k",
            extractor=CanonicalClaimExtractor(),
        )
    assert isinstance(caught.value, IdempotencyConflict)
    # Nothing was added to the stored record.
    assert memory.expand(namespace=NS, memory_id=first.id) == first
    assert memory.stats(NS).claims == 0
    with pytest.raises(KeyError):
        memory.get_extraction(NS, first.id)
    assert memory.remember(namespace=NS, content=CANONICAL_TEXT, idempotency_key="k") == first


def test_remember_extracted_then_remember_with_the_same_key_conflicts(
    memory: EviCortex,
) -> None:
    extractor = CanonicalClaimExtractor()
    first = memory.remember_extracted(
        namespace=NS, content=CANONICAL_TEXT, idempotency_key="k", extractor=extractor
    )
    assert len(first.claims) == 1
    extraction = memory.get_extraction(NS, first.id)
    with pytest.raises(IdempotencyConflictError) as caught:
        memory.remember(namespace=NS, content=CANONICAL_TEXT, idempotency_key="k")
    assert isinstance(caught.value, IdempotencyConflict)
    assert memory.expand(namespace=NS, memory_id=first.id) == first
    assert memory.stats(NS).claims == 1
    assert memory.get_extraction(NS, first.id) == extraction
    again = memory.remember_extracted(
        namespace=NS, content=CANONICAL_TEXT, idempotency_key="k", extractor=extractor
    )
    assert again == first


def test_a_replay_of_remember_returns_the_claims_stored(memory: EviCortex) -> None:
    first = memory.remember(
        namespace=NS,
        content="Ada prefers dark mode.",
        idempotency_key="k",
        claims=[ClaimInput("user:ada", "prefers_theme", "dark")],
    )
    again = memory.remember(
        namespace=NS,
        content="Ada prefers dark mode.",
        idempotency_key="k",
        claims=[ClaimInput("user:ada", "prefers_theme", "dark")],
    )
    assert again == first == memory.expand(namespace=NS, memory_id=first.id)
    assert len(again.claims) == 1
