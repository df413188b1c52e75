"""``repr()`` and ``str()`` of DTOs never show a body or a metadata value: bodies show as
their length (``<N chars>``) and metadata as its number of keys (``<N keys>``)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

import evicortex
import evicortex._model as ev
import trueheart_core
from trueheart_core import (
    AuditRecord,
    CapsuleDecision,
    CapsuleItem,
    CapsuleTraceEntry,
    ClaimDraft,
    ClaimExtraction,
    ClaimProvenance,
    ClaimQuery,
    ClaimRecord,
    ClaimSet,
    ClaimStatus,
    ClaimView,
    EntityType,
    ExtractedClaim,
    ExtractionRecord,
    ExtractionResult,
    IngestResult,
    MemoryCapsule,
    MemoryDraft,
    MemoryPage,
    MemoryRecord,
    MemoryStatus,
    RawEventDraft,
    RawEventReceipt,
    RecallItem,
    RecallQuery,
    RerankCandidate,
    RetentionPolicy,
    Scope,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.domain.reprs import body_free_repr
from trueheart_core.domain.search.capsule import Ranked

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SCOPE = Scope("tenant-1", "owner-1", "subject-1")
RETENTION = RetentionPolicy(timedelta(days=1), timedelta(days=2), timedelta(days=3))

# Distinctive texts of different lengths, so that each length can be found in the repr.
CONTENT = "zebra orchid: the body of a memory"  # 34
EVENT_BODY = "walrus lantern, the raw event's body text"  # 41
SUBJECT = "user:quokka"  # 11
PREDICATE = "prefers_marmalade"  # 17
VALUE = "tangerine-vermilion"  # 19
QUERY = "which narwhal sings?"  # 20
SUPERSEDES_SOURCE = "old-axolotl-key"  # 15
META_TEXT = "meta-pelican-note"
SOURCE_META_TEXT = "source-meta-ibis"
CLAIM_CONTENT = f"{SUBJECT} {PREDICATE} {VALUE}"  # 49

SECRETS = (
    CONTENT,
    EVENT_BODY,
    SUBJECT,
    PREDICATE,
    VALUE,
    QUERY,
    SUPERSEDES_SOURCE,
    META_TEXT,
    SOURCE_META_TEXT,
    "quokka",
    "marmalade",
    "tangerine",
    "narwhal",
    "axolotl",
    "pelican",
    "ibis",
    "zebra",
    "walrus",
)

METADATA = {"note": META_TEXT, "tags": [META_TEXT]}


def chars(text: str) -> str:
    return f"<{len(text)} chars>"


# --- builders ------------------------------------------------------------------------------


def source() -> SourceRef:
    return SourceRef("src-1", "chat", NOW, TrustLevel.OBSERVED, {"origin": SOURCE_META_TEXT})


def event_draft() -> RawEventDraft:
    return RawEventDraft("evt-1", SCOPE, source(), EVENT_BODY, RETENTION, METADATA)


def receipt() -> RawEventReceipt:
    return RawEventReceipt(
        "evt-1",
        SCOPE,
        source(),
        "0" * 64,
        NOW,
        NOW + timedelta(days=1),
        timedelta(days=2),
        timedelta(days=3),
        True,
        METADATA,
    )


def memory_draft() -> MemoryDraft:
    return MemoryDraft(
        "mem-1", SCOPE, CONTENT, ("evt-1",), "preference", TrustLevel.OBSERVED, NOW, METADATA
    )


def memory(memory_id: str = "mem-1", content: str = CONTENT, kind: str = "note") -> MemoryRecord:
    return MemoryRecord(
        memory_id,
        SCOPE,
        content,
        ("evt-1",),
        "f" * 64,
        kind,
        TrustLevel.OBSERVED,
        NOW,
        NOW + timedelta(days=2),
        NOW + timedelta(days=3),
        MemoryStatus.ACTIVE,
        METADATA,
    )


def claim_record() -> ClaimRecord:
    return ClaimRecord(
        "claim-1",
        SUBJECT,
        PREDICATE,
        VALUE,
        None,
        None,
        1.0,
        "application",
        None,
        memory("claim-1", CLAIM_CONTENT, "claim"),
    )


def claim_draft() -> ClaimDraft:
    return ClaimDraft(
        "claim-1",
        SCOPE,
        SUBJECT,
        PREDICATE,
        VALUE,
        ("evt-1",),
        TrustLevel.OBSERVED,
        NOW,
        metadata=METADATA,
    )


def extracted_claim() -> ExtractedClaim:
    return ExtractedClaim(
        SUBJECT,
        PREDICATE,
        VALUE,
        ClaimProvenance(0, 10),
        supersedes_source=SUPERSEDES_SOURCE,
    )


def extraction_record() -> ExtractionRecord:
    return ExtractionRecord("evt-1", SCOPE, "test/1", ("claim-1",), (ClaimProvenance(0, 10),), ())


def capsule_item() -> CapsuleItem:
    return CapsuleItem(memory(), 1, 2.5, 1.0, 12)


def claim_view() -> ClaimView:
    return ClaimView(claim_record(), ClaimStatus.CURRENT)


def capsule() -> MemoryCapsule:
    trace = CapsuleTraceEntry("mem-1", 1, 2.5, 1.0, 12, 40, CapsuleDecision.INCLUDED)
    return MemoryCapsule(SCOPE, NOW, (capsule_item(),), 40, 12, 20, "utf8-bytes/3", 1, (trace,))


def ev_claim() -> ev.ClaimRecord:
    return ev.ClaimRecord(
        "claim-1",
        "demo/ada",
        "mem-1",
        SUBJECT,
        PREDICATE,
        VALUE,
        None,
        None,
        1.0,
        "application",
        None,
        "current",
    )


def ev_memory() -> ev.MemoryRecord:
    return ev.MemoryRecord(
        "mem-1",
        "demo/ada",
        CONTENT,
        "episode",
        "chat",
        NOW,
        NOW,
        METADATA,
        None,
        "0" * 64,
        (ev_claim(),),
    )


def ev_item() -> ev.CapsuleItem:
    return ev.CapsuleItem("mem-1", "episode", CONTENT, 2.5, 1, 12, "mem-1", ev_claim())


def ev_capsule() -> ev.MemoryCapsule:
    omitted = ev.OmittedCandidate("mem-2", 2, 99, "budget")
    return ev.MemoryCapsule(
        "demo/ada", QUERY, NOW, (ev_item(),), 40, 12, 20, "utf8-bytes/3", 2, (omitted,), (), None
    )


# Each DTO that holds a body itself, and the lengths its repr must show.
OWN: dict[str, tuple[Callable[[], object], tuple[str, ...]]] = {
    "SourceRef": (source, ("metadata=<1 key>",)),
    "RawEventDraft": (event_draft, (f"content={chars(EVENT_BODY)}", "metadata=<2 keys>")),
    "RawEventReceipt": (receipt, ("metadata=<2 keys>", "source=SourceRef(")),
    "MemoryDraft": (memory_draft, (f"content={chars(CONTENT)}", "metadata=<2 keys>")),
    "MemoryRecord": (memory, (f"content={chars(CONTENT)}", "metadata=<2 keys>")),
    "AuditRecord": (
        lambda: AuditRecord(
            "a1", SCOPE, "ingest", EntityType.RAW_EVENT, "evt-1", NOW, "event ingested", METADATA
        ),
        ("metadata=<2 keys>",),
    ),
    "SearchQuery": (lambda: SearchQuery(SCOPE, QUERY, NOW), (f"text={chars(QUERY)}",)),
    "ClaimDraft": (
        claim_draft,
        (
            f"subject={chars(SUBJECT)}",
            f"predicate={chars(PREDICATE)}",
            f"value={chars(VALUE)}",
            "metadata=<2 keys>",
        ),
    ),
    "ClaimRecord": (
        claim_record,
        (
            f"subject={chars(SUBJECT)}",
            f"predicate={chars(PREDICATE)}",
            f"value={chars(VALUE)}",
            f"content={chars(CLAIM_CONTENT)}",
        ),
    ),
    "ClaimQuery": (
        lambda: ClaimQuery(SCOPE, NOW, subject=SUBJECT, predicate=PREDICATE),
        (f"subject={chars(SUBJECT)}", f"predicate={chars(PREDICATE)}"),
    ),
    "ExtractedClaim": (
        extracted_claim,
        (
            f"subject={chars(SUBJECT)}",
            f"value={chars(VALUE)}",
            f"supersedes_source={chars(SUPERSEDES_SOURCE)}",
        ),
    ),
    "RerankCandidate": (
        lambda: RerankCandidate("mem-1", "note", CONTENT, 1, None, 1),
        (f"content={chars(CONTENT)}", "semantic_rank=None"),
    ),
    "Ranked": (lambda: Ranked("mem-1", CONTENT, 2.5, 1.0), (f"content={chars(CONTENT)}",)),
    "evicortex.ClaimInput": (
        lambda: evicortex.ClaimInput(SUBJECT, PREDICATE, VALUE),
        (f"subject={chars(SUBJECT)}", f"predicate={chars(PREDICATE)}", f"value={chars(VALUE)}"),
    ),
    "evicortex.ClaimRecord": (ev_claim, (f"value={chars(VALUE)}", "status='current'")),
    "evicortex.MemoryRecord": (
        ev_memory,
        (f"content={chars(CONTENT)}", "metadata=<2 keys>", f"value={chars(VALUE)}"),
    ),
    "evicortex.CapsuleItem": (ev_item, (f"content={chars(CONTENT)}", f"value={chars(VALUE)}")),
    "evicortex.MemoryCapsule": (
        ev_capsule,
        (f"query={chars(QUERY)}", f"content={chars(CONTENT)}", "OmittedCandidate("),
    ),
}

# DTOs that hold body-carrying DTOs: their dataclass repr delegates to them.
NESTED: dict[str, tuple[Callable[[], object], tuple[str, ...]]] = {
    "RecallItem": (lambda: RecallItem(memory(), 1.0), (f"content={chars(CONTENT)}",)),
    "CapsuleItem": (capsule_item, (f"content={chars(CONTENT)}",)),
    "MemoryCapsule": (capsule, (f"content={chars(CONTENT)}", "CapsuleTraceEntry(")),
    "MemoryPage": (lambda: MemoryPage((memory(),), None), (f"content={chars(CONTENT)}",)),
    "ClaimView": (claim_view, (f"value={chars(VALUE)}",)),
    "ClaimSet": (lambda: ClaimSet(NOW, NOW, (claim_view(),), ()), (f"value={chars(VALUE)}",)),
    "ClaimExtraction": (
        lambda: ClaimExtraction((extracted_claim(),)),
        (f"value={chars(VALUE)}",),
    ),
    "ExtractionResult": (
        lambda: ExtractionResult(receipt(), (claim_record(),), extraction_record(), (memory(),)),
        (f"value={chars(VALUE)}", f"content={chars(CONTENT)}", "metadata=<2 keys>"),
    ),
    "IngestResult": (
        lambda: IngestResult(receipt(), (memory(),), (claim_record(),)),
        (f"value={chars(VALUE)}", f"content={chars(CONTENT)}"),
    ),
}

CASES = {**OWN, **NESTED}


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


@pytest.mark.parametrize("name", sorted(CASES))
def test_repr_and_str_show_lengths_not_bodies(name: str) -> None:
    build, shown = CASES[name]
    obj = build()
    for text in (repr(obj), str(obj), repr([obj]), f"{obj}", f"{obj!r}"):
        assert _leaks(text) == [], text
        for part in shown:
            assert part in text, (part, text)
    assert repr(obj).startswith(type(obj).__name__ + "(")


@pytest.mark.parametrize("name", sorted(OWN))
def test_equality_hash_and_copies_are_unchanged(name: str) -> None:
    build, _ = OWN[name]
    first, second = build(), build()
    assert first == second
    assert copy.copy(first) == first
    assert copy.deepcopy(first) == first
    assert pickle.loads(pickle.dumps(first)) == first
    other = dataclasses.replace(first, **_changed_body(first))  # type: ignore[type-var]
    assert other != first
    assert repr(other) != repr(first)  # a body of another length
    try:
        digest = hash(first)
    except TypeError:  # a frozen metadata mapping is not hashable, as before
        return
    assert digest == hash(second)


def _changed_body(obj: object) -> dict[str, object]:
    for name in ("content", "text", "value", "query", "subject"):
        if name in {f.name for f in dataclasses.fields(obj)}:  # type: ignore[arg-type]
            return {name: "x"}
    return {"metadata": {}}


@dataclasses.dataclass(frozen=True, slots=True, repr=False)
class Sample:
    memory_id: str
    content: str | None
    note: object
    metadata: object
    hidden_field: str = dataclasses.field(default="private", repr=False)

    __repr__ = body_free_repr("content", "note")


def test_the_helper() -> None:
    assert repr(Sample("m1", "x", None, {"a": 1})) == (
        "Sample(memory_id='m1', content=<1 char>, note=None, metadata=<1 key>)"
    )
    assert repr(Sample("m1", "", 42, {})) == (
        "Sample(memory_id='m1', content=<0 chars>, note=<hidden>, metadata=<0 keys>)"
    )
    assert repr(Sample("m1", None, "ab", ["not", "a", "mapping"])) == (
        "Sample(memory_id='m1', content=None, note=<2 chars>, metadata=<hidden>)"
    )
    assert Sample("m1", "x", None, 1) == Sample("m1", "x", None, 1)
    assert "private" not in repr(Sample("m1", "x", None, 1))


def _dataclasses() -> Iterator[type]:
    modules = (trueheart_core, evicortex, ev)
    seen: set[type] = {Ranked}
    for module in modules:
        for name in getattr(module, "__all__", dir(module)):
            value = getattr(module, name, None)
            if isinstance(value, type) and dataclasses.is_dataclass(value):
                seen.add(value)
    yield from sorted(seen, key=lambda cls: (cls.__module__, cls.__qualname__))


BODY_FIELDS = {"content", "text", "query", "subject", "predicate", "value", "metadata"}


def test_every_public_dto_with_a_body_field_has_the_body_free_repr() -> None:
    covered = {build().__class__ for build, _ in OWN.values()}
    found = []
    for cls in _dataclasses():
        names = {f.name for f in dataclasses.fields(cls)}
        if names & BODY_FIELDS:
            found.append(cls)
            assert cls.__repr__.__qualname__ == "body_free_repr.<locals>.body_free", cls
    assert set(found) == covered


def test_real_answers_of_both_faces_are_body_free() -> None:
    with TrueHeart(SQLiteRepository(":memory:"), clock=lambda: NOW) as memory_service:
        memory_service.ingest_event(event_draft())
        materialised = memory_service.materialize_once(memory_draft())
        recalled = memory_service.recall(RecallQuery(SCOPE, NOW))
        found = memory_service.search(SearchQuery(SCOPE, "zebra orchid", NOW))
        text = repr((materialised, recalled, found))
        assert _leaks(text) == []
        assert chars(CONTENT) in text
    with evicortex.EviCortex.open(":memory:") as store:
        record = store.remember(
            namespace="demo/ada",
            content=CONTENT,
            metadata=METADATA,
            claims=[evicortex.ClaimInput(SUBJECT, PREDICATE, VALUE)],
        )
        answer = store.recall(namespace="demo/ada", query=QUERY + " zebra", budget_tokens=512)
        text = repr((record, answer)) + str(record)
        assert _leaks(text) == []
        assert chars(CONTENT) in text and chars(VALUE) in text and "metadata=<2 keys>" in text
