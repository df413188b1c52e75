"""ingest_extracted and get_extraction: claims read from an event, all or nothing."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    ask_claims,
    claim_views,
    command,
    event,
    memory,
    msg,
)

from trueheart_core import (
    CanonicalClaimExtractor,
    ClaimExtraction,
    ClaimProvenance,
    ClaimStatus,
    EntityDeleted,
    EntityNotFound,
    EntityType,
    ExtractedClaim,
    ExtractionDiagnostic,
    ExtractionRecord,
    GovernanceAction,
    IdempotencyConflict,
    MemoryStatus,
    ProviderError,
    Scope,
    ScopeMismatch,
    TrueHeart,
    TrustLevel,
    ValidationError,
)

ADA = (
    "Canonical claim: subject=user:ada; predicate=prefers_theme; value=dark; "
    "valid_from=2026-04-18T09:30:00Z; confidence=1.000; authority=application."
)
LIGHT = (
    "Canonical claim: subject=user:ada; predicate=prefers_theme; value=light; "
    "valid_from=2026-05-20T00:00:00Z; supersedes=earlier."
)
FONT = "Canonical claim: subject=user:ada; predicate=prefers_font; value=serif."
OCCURRED = datetime(2026, 4, 18, 10, 0, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, tzinfo=UTC)
CANONICAL = CanonicalClaimExtractor()
MALFORMED = "canonical_claim_malformed"


def claim_id(scope: Scope, event_id: str, index: int) -> str:
    """The documented deterministic ID of the ``index``-th claim read from an event."""
    key = [scope.tenant_id, scope.owner_id, scope.subject_id]
    text = json.dumps([key, event_id, index], separators=(",", ":"), ensure_ascii=False)
    return "claim-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class Fixed:
    """An extractor that returns (or raises) whatever it was given."""

    def __init__(self, output: Any, identity: Any = "test.fixed/1") -> None:
        self._output = output
        self._identity = identity

    @property
    def identity(self) -> Any:
        return self._identity

    def extract(self, content: str) -> ClaimExtraction:
        if isinstance(self._output, Exception):
            raise self._output
        result: ClaimExtraction = self._output
        return result


def dark(start: int = 0, end: int = len(ADA), value: str = "dark") -> ExtractedClaim:
    return ExtractedClaim("user:ada", "prefers_theme", value, ClaimProvenance(start, end))


def _nothing_stored(service: TrueHeart, event_id: str = "evt-1") -> None:
    with pytest.raises(EntityNotFound, match=msg(f"entity not found: {event_id}")):
        service.get_receipt(SCOPE, event_id)
    with pytest.raises(EntityNotFound, match=msg(f"entity not found: {event_id}")):
        service.get_extraction(SCOPE, event_id)
    assert service.audit(SCOPE) == ()
    assert service.list_memories(SCOPE).items == ()
    assert ask_claims(service, NOW).claims == ()


def _delete_event(service: TrueHeart, event_id: str) -> Any:
    raw = EntityType.RAW_EVENT
    return service.govern(command(GovernanceAction.DELETE, event_id, entity_type=raw))


# --------------------------------------------------------------------------- the example


def test_the_canonical_sentence_becomes_one_claim(service: TrueHeart) -> None:
    draft = event("evt-1", content=ADA, occurred_at=OCCURRED, trust=TrustLevel.CONFIRMED)
    result = service.ingest_extracted(draft, CANONICAL)
    (stored,) = result.claims
    assert (stored.subject, stored.predicate, stored.value) == ("user:ada", "prefers_theme", "dark")
    assert stored.valid_from == datetime(2026, 4, 18, 9, 30, tzinfo=UTC)
    assert (stored.valid_to, stored.supersedes) == (None, None)
    assert (stored.confidence, stored.authority) == (1.0, "application")
    assert stored.claim_id == claim_id(SCOPE, "evt-1", 0)
    carried = stored.memory
    assert (carried.kind, carried.content) == ("claim", "user:ada prefers_theme dark")
    assert (carried.source_event_ids, carried.scope) == (("evt-1",), SCOPE)
    assert (carried.created_at, carried.trust) == (OCCURRED, TrustLevel.CONFIRMED)
    assert carried.status is MemoryStatus.ACTIVE
    assert result.receipt == service.get_receipt(SCOPE, "evt-1")
    extraction = result.extraction
    assert extraction == ExtractionRecord(
        "evt-1", SCOPE, "trueheart.canonical-claim/1", (stored.claim_id,), extraction.spans, ()
    )
    (span,) = extraction.spans
    assert ADA[span.start : span.end] == ADA
    assert service.get_extraction(SCOPE, "evt-1") == extraction
    (view,) = ask_claims(service, JUNE).claims
    assert (view.claim, view.status) == (stored, ClaimStatus.CURRENT)
    assert sorted(r.action for r in service.audit(SCOPE)) == ["ingest", "materialize"]
    assert service.verify_integrity().ok


def test_spans_locate_each_claim_in_a_longer_body(service: TrueHeart) -> None:
    body = f"Notes.\n{ADA} Then: {FONT}\nNothing else."
    result = service.ingest_extracted(event("evt-1", content=body), CANONICAL)
    assert [c.claim_id for c in result.claims] == [
        claim_id(SCOPE, "evt-1", 0),
        claim_id(SCOPE, "evt-1", 1),
    ]
    assert [body[s.start : s.end] for s in result.extraction.spans] == [ADA, FONT]
    assert [c.value for c in result.claims] == ["dark", "serif"]
    other = service.ingest_extracted(event("evt-1", scope=OTHER_SCOPE, content=body), CANONICAL)
    assert (
        other.claims[0].claim_id == claim_id(OTHER_SCOPE, "evt-1", 0) != claim_id(SCOPE, "evt-1", 0)
    )


def test_a_body_without_claims_records_an_empty_extraction(service: TrueHeart) -> None:
    result = service.ingest_extracted(event("evt-1", content="no claims here"), CANONICAL)
    assert result.claims == ()
    assert service.get_extraction(SCOPE, "evt-1") == ExtractionRecord(
        "evt-1", SCOPE, CANONICAL.identity, (), (), ()
    )
    assert service.list_memories(SCOPE).items == ()


# --------------------------------------------------------------------------- all or nothing


REFUSED: dict[str, tuple[Any, type[Exception], str]] = {
    "span-out-of-range": (
        ClaimExtraction((dark(0, len(ADA) + 1),)),
        ValidationError,
        "extraction: claim span must lie within the content",
    ),
    "span-without-value": (
        ClaimExtraction((dark(0, ADA.index("value=")),)),
        ValidationError,
        "extraction: claim span must contain its subject, predicate and value",
    ),
    "diagnostic-out-of-range": (
        ClaimExtraction((), (ExtractionDiagnostic("odd", 0, len(ADA) + 1),)),
        ValidationError,
        "extraction: diagnostic span must lie within the content",
    ),
    "not-an-extraction": (
        (dark(),),
        ValidationError,
        "extraction: must be a ClaimExtraction",
    ),
    "too-many-claims": (
        ClaimExtraction((dark(),) * 101),
        ValidationError,
        "extraction: must hold at most 100 claims",
    ),
    "raises": (
        RuntimeError("extractor failed"),
        ProviderError,
        "provider error: the extractor failed",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_extractor_output_stores_nothing(service: TrueHeart, case: str) -> None:
    output, error, message = REFUSED[case]
    with pytest.raises(error, match=msg(message)):
        service.ingest_extracted(event("evt-1", content=ADA), Fixed(output))
    _nothing_stored(service)
    assert service.ingest_extracted(event("evt-1", content=ADA), Fixed(ClaimExtraction((dark(),))))


def test_an_extractor_whose_identity_fails_is_a_provider_error(service: TrueHeart) -> None:
    class Failing:
        @property
        def identity(self) -> str:
            raise RuntimeError("identity lookup failed")

        def extract(self, content: str) -> ClaimExtraction:
            return ClaimExtraction()

    with pytest.raises(ProviderError, match=msg("provider error: the extractor failed")):
        service.ingest_extracted(event("evt-1", content=ADA), Failing())
    _nothing_stored(service)


def test_an_answer_whose_reading_fails_is_the_extractor_failing(service: TrueHeart) -> None:
    failure = RuntimeError("the host's answer")

    class Exploding(ClaimExtraction):
        armed = False  # once built: its own checks read its claims

        def __getattribute__(self, name: str) -> object:
            if name == "claims" and type(self).armed:
                raise failure
            return super().__getattribute__(name)

    answer = Exploding((dark(),))
    Exploding.armed = True
    with pytest.raises(ProviderError, match=msg("provider error: the extractor failed")) as caught:
        service.ingest_extracted(event("evt-1", content=ADA), Fixed(answer))
    assert caught.value.__cause__ is failure
    _nothing_stored(service)


class Fickle(ClaimExtraction):
    """An answer whose claims are those checked on the first reads only: any later read
    gives a claim the body does not hold, or raises."""

    reads = 0
    limit = 1
    later: Any = None

    def __getattribute__(self, name: str) -> object:
        if name == "claims" and type(self).limit >= 0:
            type(self).reads += 1
            if type(self).reads > type(self).limit:
                if isinstance(type(self).later, Exception):
                    raise type(self).later
                return type(self).later
        return super().__getattribute__(name)


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 5, 6])
def test_what_is_stored_is_the_answer_as_it_was_checked(service: TrueHeart, limit: int) -> None:
    planted = ExtractedClaim("user:mallory", "prefers_theme", "planted", ClaimProvenance(0, 5))
    Fickle.limit = -1  # its own construction reads its claims
    answer = Fickle((dark(),))
    Fickle.reads, Fickle.limit, Fickle.later = 0, limit, (planted,)
    result = service.ingest_extracted(event("evt-1", content=ADA), Fixed(answer))
    assert [(c.subject, c.value) for c in result.claims] == [("user:ada", "dark")]
    assert result.extraction.spans == (ClaimProvenance(0, len(ADA)),)
    views = ask_claims(service, NOW).claims
    assert [(view.claim.subject, view.claim.value) for view in views] == [("user:ada", "dark")]
    assert service.get_extraction(SCOPE, "evt-1") == result.extraction


@pytest.mark.parametrize("limit", [0, 1, 2, 3, 4, 5, 6])
def test_an_answer_is_read_once_and_a_failing_read_is_the_extractor_failing(
    service: TrueHeart, limit: int
) -> None:
    failure = RuntimeError("the host's answer")
    Fickle.limit = -1
    answer = Fickle((dark(),))
    Fickle.reads, Fickle.limit, Fickle.later = 0, limit, failure
    try:
        result = service.ingest_extracted(event("evt-1", content=ADA), Fixed(answer))
    except ProviderError as error:
        assert error.__cause__ is failure
        _nothing_stored(service)
    else:
        assert [(c.subject, c.value) for c in result.claims] == [("user:ada", "dark")]
    assert Fickle.reads == 1


def test_the_most_claims_allowed_are_stored(service: TrueHeart) -> None:
    result = service.ingest_extracted(
        event("evt-1", content=ADA), Fixed(ClaimExtraction((dark(),) * 100))
    )
    assert len(result.claims) == len(set(result.extraction.claim_ids)) == 100
    assert len(ask_claims(service, NOW).claims) == 100


def test_a_claim_failing_in_the_transaction_rolls_back_the_event(service: TrueHeart) -> None:
    body = f"{FONT} {LIGHT}"
    with pytest.raises(EntityNotFound, match=msg("entity not found: c-missing")):
        service.ingest_extracted(
            event("evt-1", content=body), CANONICAL, claim_ids_by_source={"earlier": "c-missing"}
        )
    _nothing_stored(service)
    service.ingest_event(event("evt-0"))
    service.materialize_once(memory("plain", ("evt-0",)))
    audit_len = len(service.audit(SCOPE))
    with pytest.raises(ValidationError, match=msg("supersedes: must name a claim")):
        service.ingest_extracted(
            event("evt-1", content=body), CANONICAL, claim_ids_by_source={"earlier": "plain"}
        )
    with pytest.raises(EntityNotFound, match=msg("entity not found: evt-1")):
        service.get_receipt(SCOPE, "evt-1")
    assert len(service.audit(SCOPE)) == audit_len
    assert [m.memory_id for m in service.list_memories(SCOPE).items] == ["plain"]
    assert service.verify_integrity().ok


def test_a_claim_deadline_overflow_rolls_back_the_event(service: TrueHeart) -> None:
    late = event("evt-1", content=ADA, occurred_at=datetime(9999, 12, 1, tzinfo=UTC))
    message = "created_at: retention deadline must be representable"
    with pytest.raises(ValidationError, match=msg(message)):
        service.ingest_extracted(late, CANONICAL)
    _nothing_stored(service)


# --------------------------------------------------------------------------- supersession


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        (None, "claim_ids_by_source: must map every source the extractor names"),
        ({"later": "c-1"}, "claim_ids_by_source: must map every source the extractor names"),
        (["earlier"], "claim_ids_by_source: must map source names to claim IDs"),
        ("earlier", "claim_ids_by_source: must map source names to claim IDs"),
        ({"earlier": 3}, "claim_ids_by_source: must be a non-blank string"),
        ({"": "c-1"}, "claim_ids_by_source: must be a non-blank string"),
    ],
)
def test_supersession_targets_must_be_mapped(
    service: TrueHeart, mapping: Any, message: str
) -> None:
    with pytest.raises(ValidationError, match=msg(message)):
        service.ingest_extracted(
            event("evt-1", content=LIGHT), CANONICAL, claim_ids_by_source=mapping
        )
    _nothing_stored(service)


def test_a_mapped_source_supersedes_the_earlier_claim(service: TrueHeart) -> None:
    first = service.ingest_extracted(event("evt-1", content=ADA, occurred_at=OCCURRED), CANONICAL)
    (earlier,) = first.claims
    may = datetime(2026, 5, 20, tzinfo=UTC)
    second = service.ingest_extracted(
        event("evt-2", content=LIGHT, occurred_at=may),
        CANONICAL,
        claim_ids_by_source={"earlier": earlier.claim_id, "unused": "c-none"},
    )
    (later,) = second.claims
    assert later.supersedes == earlier.claim_id
    assert claim_views(ask_claims(service, JUNE)) == [
        (earlier.claim_id, ClaimStatus.SUPERSEDED, (later.claim_id,)),
        (later.claim_id, ClaimStatus.CURRENT, ()),
    ]
    assert claim_views(ask_claims(service, may - timedelta(microseconds=1))) == [
        (earlier.claim_id, ClaimStatus.CURRENT, ())
    ]


# --------------------------------------------------------------------------- replay


def test_identical_replay_returns_the_stored_result(service: TrueHeart) -> None:
    draft = event("evt-1", content=f"{ADA} {FONT}")
    first = service.ingest_extracted(draft, CANONICAL)
    audit_len, listed = len(service.audit(SCOPE)), service.list_memories(SCOPE)
    assert service.ingest_extracted(draft, CanonicalClaimExtractor()) == first
    assert len(service.audit(SCOPE)) == audit_len == 3
    assert service.list_memories(SCOPE) == listed
    assert len(ask_claims(service, NOW).claims) == 2


REPLAYS: dict[str, Any] = {
    "identity": Fixed(ClaimExtraction((dark(),)), identity="test.other/1"),
    "diagnostics": Fixed(ClaimExtraction((dark(),), (ExtractionDiagnostic(MALFORMED),))),
    "fewer-claims": Fixed(ClaimExtraction()),
    "more-claims": Fixed(ClaimExtraction((dark(), dark()))),
    "value": Fixed(ClaimExtraction((dark(value="dar"),))),
    "span": Fixed(ClaimExtraction((dark(0, len(ADA) - 1),))),
}


@pytest.mark.parametrize("case", sorted(REPLAYS))
def test_replay_with_other_output_conflicts(service: TrueHeart, case: str) -> None:
    draft = event("evt-1", content=ADA)
    first = service.ingest_extracted(draft, Fixed(ClaimExtraction((dark(),))))
    audit_len = len(service.audit(SCOPE))
    with pytest.raises(IdempotencyConflict, match=r"^idempotency conflict: "):
        service.ingest_extracted(draft, REPLAYS[case])
    assert service.get_extraction(SCOPE, "evt-1") == first.extraction
    assert len(service.audit(SCOPE)) == audit_len
    assert service.list_memories(SCOPE).items == (first.claims[0].memory,)


def test_replay_of_another_body_conflicts_on_the_event(service: TrueHeart) -> None:
    service.ingest_extracted(event("evt-1", content=ADA), CANONICAL)
    with pytest.raises(IdempotencyConflict, match=msg("idempotency conflict: evt-1")):
        service.ingest_extracted(event("evt-1", content=FONT), CANONICAL)


# --------------------------------------------------------------------------- stored record


def test_diagnostics_are_stored_body_free(service: TrueHeart) -> None:
    broken = "Canonical claim: subject=user:ada; secret=hunter2."
    body = f"{broken}\n{ADA}"
    result = service.ingest_extracted(event("evt-1", content=body), CANONICAL)
    record = service.get_extraction(SCOPE, "evt-1")
    assert record == result.extraction
    assert record.diagnostics == (ExtractionDiagnostic(MALFORMED, 0, len(broken)),)
    assert record.spans == (ClaimProvenance(len(broken) + 1, len(body)),)
    assert [f.name for f in dataclasses.fields(record)] == [
        "event_id",
        "scope",
        "extractor",
        "claim_ids",
        "spans",
        "diagnostics",
    ]
    assert "hunter2" not in repr(record)
    assert "user:ada" not in repr(record)


def test_deleting_the_event_removes_its_claims_and_extraction(service: TrueHeart) -> None:
    draft = event("evt-1", content=f"{ADA} {FONT}")
    ids = service.ingest_extracted(draft, CANONICAL).extraction.claim_ids
    result = _delete_event(service, "evt-1")
    assert result.affected_ids == (*sorted(ids), "evt-1")
    assert ask_claims(service, NOW).claims == ()
    with pytest.raises(EntityDeleted, match=msg("entity deleted: evt-1")):
        service.get_extraction(SCOPE, "evt-1")
    with pytest.raises(EntityDeleted, match=msg(f"entity deleted: {ids[0]}")):
        service.get_memory(SCOPE, ids[0])
    with pytest.raises(EntityDeleted, match=msg("entity deleted: evt-1")):
        service.ingest_extracted(draft, CANONICAL)
    assert service.verify_integrity().ok


def test_get_extraction_diagnosis(service: TrueHeart) -> None:
    service.ingest_event(event("evt-plain"))
    with pytest.raises(ValidationError, match=msg("event_id: has no extraction record")):
        service.get_extraction(SCOPE, "evt-plain")
    with pytest.raises(EntityNotFound, match=msg("entity not found: evt-none")):
        service.get_extraction(SCOPE, "evt-none")
    service.ingest_extracted(event("evt-there", scope=OTHER_SCOPE, content=ADA), CANONICAL)
    with pytest.raises(ScopeMismatch, match=msg("scope mismatch: evt-there")):
        service.get_extraction(SCOPE, "evt-there")
    assert service.get_extraction(OTHER_SCOPE, "evt-there").scope == OTHER_SCOPE
    with pytest.raises(ValidationError, match=msg("scope: must be a Scope")):
        service.get_extraction("scope", "evt-plain")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=msg("event_id: must be a non-blank string")):
        service.get_extraction(SCOPE, " ")


class NoIdentity:
    def extract(self, content: str) -> ClaimExtraction:
        return ClaimExtraction()


class ClassLevel:
    """A class that would pass for an extractor if classes were accepted."""

    identity = "test.class-level/1"

    @staticmethod
    def extract(content: str) -> ClaimExtraction:
        return ClaimExtraction()


@pytest.mark.parametrize(
    ("extractor", "message"),
    [
        (CanonicalClaimExtractor, "extractor: must be a ClaimExtractor"),
        (ClassLevel, "extractor: must be a ClaimExtractor"),
        (NoIdentity(), "extractor: must be a ClaimExtractor"),
        (object(), "extractor: must be a ClaimExtractor"),
        (Fixed(ClaimExtraction(), identity=1), "extractor: must be a ClaimExtractor"),
        (Fixed(ClaimExtraction(), identity=" "), "extractor: must be a non-blank string"),
    ],
    ids=["class", "class-level", "no-identity", "object", "int-identity", "blank-identity"],
)
def test_the_extractor_is_checked(service: TrueHeart, extractor: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=msg(message)):
        service.ingest_extracted(event("evt-1", content=ADA), extractor)
    _nothing_stored(service)


@pytest.mark.parametrize("draft", [None, memory(), ADA], ids=["none", "memory", "str"])
def test_the_draft_is_checked(service: TrueHeart, draft: Any) -> None:
    with pytest.raises(ValidationError, match=msg("draft: must be a RawEventDraft")):
        service.ingest_extracted(draft, CANONICAL)
    _nothing_stored(service)
