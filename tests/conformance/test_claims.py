"""Claims: materialising them as governed memories, governance, and bi-temporal answers."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    ask_claims,
    claim,
    claim_views,
    command,
    conflict_ids,
    event,
    ingest_ids,
    memory,
    msg,
    views_at,
)

from trueheart_core import (
    ClaimConflict,
    ClaimQuery,
    ClaimRecord,
    ClaimStatus,
    EntityDeleted,
    EntityNotFound,
    EntityType,
    GovernanceAction,
    IdempotencyConflict,
    MemoryStatus,
    Scope,
    ScopeMismatch,
    TrueHeart,
    TrustEscalation,
    TrustLevel,
    ValidationError,
)

CURRENT, SUPERSEDED = ClaimStatus.CURRENT, ClaimStatus.SUPERSEDED
ENDED, NOT_YET_VALID = ClaimStatus.ENDED, ClaimStatus.NOT_YET_VALID
SEAL, RESTORE = GovernanceAction.SEAL, GovernanceAction.RESTORE
FORGET, DELETE = GovernanceAction.FORGET, GovernanceAction.DELETE
US = timedelta(microseconds=1)
LONG = timedelta(days=400)
MARCH = datetime(2026, 3, 1, tzinfo=UTC)
APRIL = datetime(2026, 4, 18, 9, 30, tzinfo=UTC)
LATE_APRIL = datetime(2026, 4, 30, tzinfo=UTC)
MAY = datetime(2026, 5, 20, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, tzinfo=UTC)


def _supersession(service: TrueHeart) -> None:
    """claim-1 (dark, made in April) superseded by claim-2 (light, made in May)."""
    ingest_ids(service, "evt-1", "evt-2")
    service.materialize_claim(claim("claim-1", created_at=APRIL))
    later: dict[str, Any] = {"created_at": MAY, "supersedes": "claim-1"}
    service.materialize_claim(claim("claim-2", ("evt-2",), value="light", **later))


BOTH = [("claim-1", SUPERSEDED, ("claim-2",)), ("claim-2", CURRENT, ())]


def _govern(service: TrueHeart, action: GovernanceAction, entity_id: str) -> Any:
    entity_type = EntityType.RAW_EVENT if entity_id.startswith("evt") else EntityType.MEMORY
    return service.govern(command(action, entity_id, entity_type=entity_type))


# --------------------------------------------------------------------------- materialize


def test_stored_claim_record_and_its_memory(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1", clear_for=timedelta(days=4), recall_for=timedelta(days=6)))
    service.ingest_event(event("evt-2", clear_for=timedelta(days=2), recall_for=timedelta(days=8)))
    fields: dict[str, Any] = {"created_at": APRIL.astimezone(timezone(timedelta(hours=2)))}
    fields.update(valid_from=APRIL, valid_to=JUNE, confidence=1, authority="user")
    fields.update(metadata={"origin": ["form", 2]})
    record = service.materialize_claim(claim("claim-1", ("evt-2", "evt-1"), **fields))
    assert isinstance(record, ClaimRecord)
    assert (record.claim_id, record.valid_from, record.valid_to) == ("claim-1", APRIL, JUNE)
    assert (record.subject, record.predicate, record.value) == ("user:ada", "prefers_theme", "dark")
    assert type(record.confidence) is float
    assert (record.confidence, record.authority, record.supersedes) == (1.0, "user", None)
    stored = record.memory
    assert (stored.memory_id, stored.scope, stored.kind) == ("claim-1", SCOPE, "claim")
    assert stored.content == "user:ada prefers_theme dark"
    assert stored.source_event_ids == ("evt-1", "evt-2")
    assert stored.trust is TrustLevel.OBSERVED
    assert stored.created_at == APRIL == record.created_at
    assert stored.created_at.tzinfo is UTC
    assert stored.clear_until == APRIL + timedelta(days=2)
    assert stored.recall_until == APRIL + timedelta(days=6)
    assert stored.status is MemoryStatus.ACTIVE
    assert stored.metadata == {"origin": ("form", 2)}
    assert record.scope == SCOPE
    assert service.get_memory(SCOPE, "claim-1") == stored
    assert service.list_memories(SCOPE, kinds=("claim",)).items == (stored,)
    (audit_row,) = [r for r in service.audit(SCOPE) if r.action == "materialize"]
    assert (audit_row.entity_type, audit_row.entity_id) == (EntityType.MEMORY, "claim-1")
    assert (audit_row.occurred_at, audit_row.reason) == (APRIL, "memory materialized")


def test_trust_above_the_sources_is_an_escalation(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1", trust=TrustLevel.OBSERVED))
    with pytest.raises(TrustEscalation, match=msg("trust escalation: claim-1")):
        service.materialize_claim(claim(trust=TrustLevel.CONFIRMED))
    assert [r.action for r in service.audit(SCOPE)] == ["ingest"]
    assert ask_claims(service, NOW).claims == ()
    stored = service.materialize_claim(claim(trust=TrustLevel.UNTRUSTED))
    assert stored.memory.trust is TrustLevel.UNTRUSTED


def test_missing_sources_are_diagnosed(service: TrueHeart) -> None:
    service.ingest_event(event("evt-gone"))
    _govern(service, DELETE, "evt-gone")
    service.ingest_event(event("evt-there", scope=OTHER_SCOPE))
    cases: list[tuple[str, type[Exception], str]] = [
        ("evt-none", EntityNotFound, "entity not found: evt-none"),
        ("evt-gone", EntityDeleted, "entity deleted: evt-gone"),
        ("evt-there", ScopeMismatch, "scope mismatch: evt-there"),
    ]
    for source_id, error, message in cases:
        with pytest.raises(error, match=msg(message)):
            service.materialize_claim(claim("claim-1", (source_id,)))
    assert [r.action for r in service.audit(SCOPE)] == ["delete", "ingest"]


def test_identical_replay_returns_the_stored_claim(service: TrueHeart) -> None:
    ingest_ids(service, "evt-1", "evt-2")
    draft = claim("claim-1", ("evt-2", "evt-1"), valid_from=APRIL, metadata={"a": [1]})
    first = service.materialize_claim(draft)
    again = service.materialize_claim(
        claim("claim-1", ("evt-1", "evt-2"), valid_from=APRIL, metadata={"a": (1,)})
    )
    assert again == first
    assert len(service.audit(SCOPE)) == 3
    _govern(service, SEAL, "claim-1")
    assert service.materialize_claim(draft).memory.status is MemoryStatus.SEALED


REPLAY_CHANGES: dict[str, dict[str, Any]] = {
    "subject": {"subject": "user:bob"},
    "predicate": {"predicate": "prefers_font"},
    "value": {"value": "light"},
    "valid_from": {"valid_from": APRIL + US},
    "valid_from-open": {"valid_from": None},
    "valid_to": {"valid_to": JUNE},
    "confidence": {"confidence": 0.25},
    "authority": {"authority": "admin"},
    "supersedes": {"supersedes": "claim-0"},
    "trust": {"trust": TrustLevel.UNTRUSTED},
    "created_at": {"created_at": NOW + US},
    "sources": {"sources": ("evt-1",)},
    "metadata": {"metadata": {"k": 2}},
}


@pytest.mark.parametrize("case", sorted(REPLAY_CHANGES))
def test_replay_with_any_field_changed_conflicts(service: TrueHeart, case: str) -> None:
    ingest_ids(service, "evt-1", "evt-2")
    service.materialize_claim(claim("claim-0", ("evt-1",), value="blue"))
    base: dict[str, Any] = {"sources": ("evt-1", "evt-2"), "valid_from": APRIL}
    base.update(confidence=0.5, authority="user", metadata={"k": 1})
    stored = service.materialize_claim(claim("claim-1", **base))
    audit_len = len(service.audit(SCOPE))
    with pytest.raises(IdempotencyConflict, match=msg("idempotency conflict: claim-1")):
        service.materialize_claim(claim("claim-1", **{**base, **REPLAY_CHANGES[case]}))
    assert len(service.audit(SCOPE)) == audit_len
    assert service.materialize_claim(claim("claim-1", **base)) == stored


def test_a_plain_memory_holding_the_id_conflicts(service: TrueHeart) -> None:
    ingest_ids(service, "evt-1")
    plain = service.materialize_once(memory("claim-1"))
    with pytest.raises(IdempotencyConflict, match=msg("idempotency conflict: claim-1")):
        service.materialize_claim(claim("claim-1"))
    # even a memory that looks exactly like the claim's memory is not a claim
    twin = memory("twin", kind="claim", content="user:ada prefers_theme dark")
    service.materialize_once(twin)
    with pytest.raises(IdempotencyConflict, match=msg("idempotency conflict: twin")):
        service.materialize_claim(claim("twin"))
    assert service.get_memory(SCOPE, "claim-1") == plain
    assert ask_claims(service, NOW).claims == ()


def test_supersedes_must_name_a_claim_of_the_same_scope(service: TrueHeart) -> None:
    ingest_ids(service, "evt-1", "evt-2")
    service.ingest_event(event("evt-1", scope=OTHER_SCOPE))
    service.materialize_claim(claim("claim-old", ("evt-1",)))
    _govern(service, FORGET, "claim-old")
    service.materialize_claim(claim("claim-there", ("evt-1",), scope=OTHER_SCOPE))
    service.materialize_once(memory("plain", ("evt-2",)))
    cases: list[tuple[str, type[Exception], str]] = [
        ("claim-none", EntityNotFound, "entity not found: claim-none"),
        ("claim-old", EntityDeleted, "entity deleted: claim-old"),
        ("claim-there", ScopeMismatch, "scope mismatch: claim-there"),
        ("plain", ValidationError, "supersedes: must name a claim"),
    ]
    audit_len = len(service.audit(SCOPE))
    for target, error, message in cases:
        with pytest.raises(error, match=msg(message)):
            service.materialize_claim(claim("claim-new", ("evt-2",), supersedes=target))
        with pytest.raises(EntityNotFound, match=msg("entity not found: claim-new")):
            service.get_memory(SCOPE, "claim-new")
    assert len(service.audit(SCOPE)) == audit_len
    assert service.verify_integrity().ok


# --------------------------------------------------------------------------- governance


@pytest.mark.parametrize("action", [FORGET, DELETE])
def test_forgetting_or_deleting_a_claim_removes_it_for_good(
    service: TrueHeart, action: GovernanceAction
) -> None:
    ingest_ids(service, "evt-1", "evt-2")
    service.materialize_claim(claim("claim-1"))
    assert _govern(service, action, "claim-1").affected_ids == ("claim-1",)
    assert ask_claims(service, NOW).claims == ()
    with pytest.raises(EntityDeleted, match=msg("entity deleted: claim-1")):
        service.get_memory(SCOPE, "claim-1")
    for draft in (claim("claim-1"), claim("claim-1", ("evt-2",), value="light")):
        with pytest.raises(EntityDeleted, match=msg("entity deleted: claim-1")):
            service.materialize_claim(draft)
    # the fingerprint tombstone also blocks a new claim citing exactly the same sources
    with pytest.raises(EntityDeleted, match=msg("entity deleted: claim-2")):
        service.materialize_claim(claim("claim-2", value="light"))
    assert service.materialize_claim(claim("claim-2", ("evt-2",), value="light"))
    assert service.verify_integrity().ok


def test_deleting_a_source_event_removes_its_claims(service: TrueHeart) -> None:
    ingest_ids(service, "evt-1", "evt-2")
    service.materialize_claim(claim("claim-1", ("evt-1", "evt-2")))
    service.materialize_claim(claim("claim-2", ("evt-2",), value="light"))
    service.materialize_claim(claim("claim-3", ("evt-1",), predicate="prefers_font"))
    result = _govern(service, DELETE, "evt-1")
    assert result.affected_ids == ("claim-1", "claim-3", "evt-1")
    assert views_at(service, NOW) == [("claim-2", CURRENT, ())]
    with pytest.raises(EntityDeleted, match=msg("entity deleted: claim-3")):
        service.materialize_claim(claim("claim-3", ("evt-2",), predicate="prefers_font"))
    assert service.verify_integrity().ok


@pytest.mark.parametrize(("action", "target"), [(FORGET, "claim-2"), (DELETE, "evt-2")])
def test_a_superseded_claim_is_current_again_without_its_superseder(
    service: TrueHeart, action: GovernanceAction, target: str
) -> None:
    _supersession(service)
    assert views_at(service, JUNE) == BOTH
    _govern(service, action, target)
    assert views_at(service, JUNE) == [("claim-1", CURRENT, ())]


def test_sealed_claims_are_hidden_until_restored(service: TrueHeart) -> None:
    _supersession(service)
    _govern(service, SEAL, "claim-2")  # a sealed superseder closes nothing
    assert views_at(service, JUNE) == [("claim-1", CURRENT, ())]
    _govern(service, SEAL, "claim-1")
    assert ask_claims(service, JUNE).claims == ()
    _govern(service, RESTORE, "claim-1")
    _govern(service, RESTORE, "claim-2")
    assert views_at(service, JUNE) == BOTH


# --------------------------------------------------------------------------- claims()


def test_what_we_knew_when_about_which_time(service: TrueHeart) -> None:
    ingest_ids(service, "evt-1", "evt-2")
    service.materialize_claim(claim("ada-dark", created_at=APRIL, valid_from=APRIL))
    later: dict[str, Any] = {"created_at": MAY, "valid_from": MAY, "supersedes": "ada-dark"}
    light = service.materialize_claim(claim("ada-light", ("evt-2",), value="light", **later))
    in_april = {
        MARCH: [("ada-dark", NOT_YET_VALID, ())],
        LATE_APRIL: [("ada-dark", CURRENT, ())],
        JUNE: [("ada-dark", CURRENT, ())],
    }
    in_june = {
        MARCH: [("ada-dark", SUPERSEDED, ("ada-light",)), ("ada-light", NOT_YET_VALID, ())],
        LATE_APRIL: [("ada-dark", SUPERSEDED, ("ada-light",)), ("ada-light", NOT_YET_VALID, ())],
        JUNE: [("ada-dark", SUPERSEDED, ("ada-light",)), ("ada-light", CURRENT, ())],
    }
    for known_at, expected in ((LATE_APRIL, in_april), (JUNE, in_june)):
        for as_of, views in expected.items():
            answer = ask_claims(service, as_of, known_at)
            assert claim_views(answer) == views, (known_at, as_of)
            assert (answer.as_of, answer.known_at, answer.conflicts) == (as_of, known_at, ())
    assert views_at(service, MAY - US) == [("ada-dark", CURRENT, ())]
    assert ask_claims(service, JUNE) == ask_claims(service, JUNE, JUNE)
    assert ask_claims(service, JUNE).claims[1].claim == light


def test_valid_time_boundaries_to_the_microsecond(service: TrueHeart) -> None:
    ingest_ids(service, "evt-1", "evt-2")
    service.materialize_claim(claim("claim-1", created_at=MARCH, valid_from=APRIL, valid_to=JUNE))
    expected = {
        APRIL - US: NOT_YET_VALID,
        APRIL: CURRENT,
        JUNE - US: CURRENT,
        JUNE: ENDED,
        MARCH - timedelta(days=1): NOT_YET_VALID,
    }
    for as_of, status in expected.items():
        assert views_at(service, as_of, JUNE) == [("claim-1", status, ())], as_of
    service.materialize_claim(claim("claim-2", ("evt-2",), created_at=MAY, supersedes="claim-1"))
    service.materialize_claim(claim("claim-0", ("evt-2",), created_at=MAY, supersedes="claim-1"))
    # supersession comes first, whatever the valid time
    for as_of in (APRIL - US, APRIL, JUNE):
        assert views_at(service, as_of, JUNE)[0] == ("claim-1", SUPERSEDED, ("claim-0", "claim-2"))


def test_a_claim_is_known_from_created_at_until_its_recall_deadline(service: TrueHeart) -> None:
    ingest_ids(service, "evt-1")
    ingest_ids(service, "evt-short", recall_for=timedelta(days=2))
    service.materialize_claim(claim("claim-1", created_at=APRIL))
    recall_until = service.materialize_claim(
        claim("claim-2", ("evt-short",), value="light", created_at=MAY, supersedes="claim-1")
    ).memory.recall_until
    assert recall_until == MAY + timedelta(days=2)
    assert ask_claims(service, JUNE, APRIL - US).claims == ()
    assert views_at(service, JUNE, APRIL) == [("claim-1", CURRENT, ())]
    assert views_at(service, JUNE, MAY - US) == [("claim-1", CURRENT, ())]
    assert views_at(service, JUNE, recall_until - US) == BOTH
    # past its recall deadline the superseder is hidden but still closes what it replaced
    assert views_at(service, JUNE, recall_until) == BOTH[:1]
    assert ask_claims(service, JUNE, APRIL + LONG).claims == ()


def test_views_are_ordered_and_filtered_by_subject_and_predicate(service: TrueHeart) -> None:
    ingest_ids(service, "evt-1")
    theme, font = "prefers_theme", "prefers_font"
    for claim_id, subject, predicate, created in [
        ("c-5", "user:bob", theme, APRIL),
        ("c-4", "user:ada", theme, MAY),
        ("c-3", "user:ada", theme, APRIL),
        ("c-2", "user:ada", font, MAY),
        ("c-1", "user:ada", theme, APRIL),
    ]:
        draft = claim(claim_id, subject=subject, predicate=predicate, created_at=created)
        service.materialize_claim(draft)
    service.ingest_event(event("evt-1", scope=OTHER_SCOPE))
    service.materialize_claim(claim("c-0", scope=OTHER_SCOPE, created_at=APRIL))

    def ids(**kw: Any) -> list[str]:
        return [view[0] for view in views_at(service, JUNE, **kw)]

    assert ids() == ["c-2", "c-1", "c-3", "c-4", "c-5"]
    assert ids(subject="user:ada") == ["c-2", "c-1", "c-3", "c-4"]
    assert ids(predicate="prefers_theme") == ["c-1", "c-3", "c-4", "c-5"]
    assert ids(subject="user:ada", predicate="prefers_font") == ["c-2"]
    assert ids(subject="user:carol") == []
    assert ids(subject="user:bob", predicate="prefers_font") == []
    assert service.claims(ClaimQuery(OTHER_SCOPE, JUNE)).claims[0].claim.claim_id == "c-0"
    assert service.claims(ClaimQuery(Scope("tenant", "owner", "none"), JUNE)).claims == ()


def test_statuses_filter_the_views_but_not_the_conflicts(service: TrueHeart) -> None:
    ingest_ids(service, "evt-1")
    service.materialize_claim(claim("c-dark", created_at=APRIL))
    service.materialize_claim(claim("c-light", value="light", created_at=MAY, supersedes="c-dark"))
    service.materialize_claim(claim("c-blue", value="blue", created_at=MAY))
    service.materialize_claim(claim("c-late", value="red", created_at=MAY, valid_from=JUNE))
    everything = ask_claims(service, MAY)
    assert claim_views(everything) == [
        ("c-dark", SUPERSEDED, ("c-light",)),
        ("c-blue", CURRENT, ()),
        ("c-late", NOT_YET_VALID, ()),
        ("c-light", CURRENT, ()),
    ]
    only = ask_claims(service, MAY, statuses=(SUPERSEDED, NOT_YET_VALID))
    assert [view[0] for view in claim_views(only)] == ["c-dark", "c-late"]
    assert conflict_ids(only) == conflict_ids(everything) == [("c-blue", "c-light")]
    current = ask_claims(service, MAY, statuses=(CURRENT,))
    assert [view[0] for view in claim_views(current)] == ["c-blue", "c-light"]
    assert ask_claims(service, MAY, statuses=(ENDED,)).claims == ()


def test_conflicts_are_current_claims_with_different_values(service: TrueHeart) -> None:
    ingest_ids(service, "evt-1")
    service.materialize_claim(claim("c-a", created_at=MARCH))
    service.materialize_claim(claim("c-b", created_at=MARCH, subject="user:bob", value="light"))
    assert ask_claims(service, JUNE).conflicts == ()  # different subjects
    service.materialize_claim(claim("c-c", created_at=APRIL))
    assert ask_claims(service, JUNE).conflicts == ()  # same value
    service.materialize_claim(claim("c-d", created_at=APRIL, value="light"))
    assert conflict_ids(ask_claims(service, JUNE)) == [("c-a", "c-c", "c-d")]
    assert conflict_ids(ask_claims(service, JUNE, subject="user:bob")) == []
    assert ask_claims(service, JUNE, APRIL - US).conflicts == ()
    bob_blue = claim("c-e", created_at=MAY, subject="user:bob", value="blue", valid_to=JUNE)
    service.materialize_claim(bob_blue)
    assert conflict_ids(ask_claims(service, JUNE - US)) == [("c-a", "c-c", "c-d"), ("c-b", "c-e")]
    assert conflict_ids(ask_claims(service, JUNE)) == [("c-a", "c-c", "c-d")]  # c-e ended
    service.materialize_claim(claim("c-f", created_at=MAY, supersedes="c-d"))
    assert ask_claims(service, JUNE).conflicts == ()  # the superseded one is not in conflict
    assert conflict_ids(ask_claims(service, JUNE, MAY - US)) == [("c-a", "c-c", "c-d")]


def test_conflicts_name_claim_ids_only(service: TrueHeart) -> None:
    ingest_ids(service, "evt-1")
    service.materialize_claim(claim("c-a", value="secret-dark-value"))
    service.materialize_claim(claim("c-b", value="secret-light-value"))
    (conflict,) = ask_claims(service, NOW).conflicts
    assert isinstance(conflict, ClaimConflict)
    assert [f.name for f in dataclasses.fields(conflict)] == ["claim_ids"]
    assert conflict.claim_ids == ("c-a", "c-b")
    assert "secret" not in repr(conflict)


SHIFT = timezone(timedelta(hours=-5))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"scope": ("t", "o", "s")}, "scope: must be a Scope"),
        ({"as_of": datetime(2026, 6, 1)}, "as_of: must be timezone-aware"),
        ({"known_at": datetime(2026, 6, 1)}, "known_at: must be timezone-aware"),
        ({"known_at": "2026-06-01T00:00:00Z"}, "known_at: must be timezone-aware"),
        ({"subject": " "}, "subject: must be a non-blank string"),
        ({"predicate": ""}, "predicate: must be a non-blank string"),
        ({"subject": "s" * 129}, "subject: must be at most 128 characters"),
        ({"statuses": [CURRENT]}, "statuses: must be a tuple of ClaimStatus"),
        ({"statuses": ("current",)}, "statuses: must be a tuple of ClaimStatus"),
    ],
)
def test_claim_query_validation(changes: dict[str, Any], message: str) -> None:
    fields: dict[str, Any] = {"scope": SCOPE, "as_of": JUNE, **changes}
    with pytest.raises(ValidationError, match=msg(message)):
        ClaimQuery(**fields)


def test_times_are_normalised_and_arguments_type_checked(service: TrueHeart) -> None:
    query = ClaimQuery(SCOPE, JUNE.astimezone(SHIFT), MAY.astimezone(SHIFT))
    assert (query.as_of, query.known_at) == (JUNE, MAY)
    assert query.as_of.tzinfo is UTC and query.known_at is not None
    assert query.known_at.tzinfo is UTC
    assert ClaimQuery(SCOPE, JUNE.astimezone(SHIFT)).known_at == JUNE
    answer = service.claims(query)
    assert (answer.as_of, answer.known_at) == (JUNE, MAY)
    with pytest.raises(ValidationError, match=msg("query: must be a ClaimQuery")):
        service.claims(SCOPE)  # type: ignore[arg-type]
    for argument in (None, memory(), claim().content):
        with pytest.raises(ValidationError, match=msg("draft: must be a ClaimDraft")):
            service.materialize_claim(argument)  # type: ignore[arg-type]
