"""materialize_once: records, fingerprints, deadlines and the documented check order."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    assert_not_chained,
    command,
    event,
    memory,
    msg,
)

from trueheart_core import (
    EntityDeleted,
    EntityNotFound,
    EntityType,
    GovernanceAction,
    IdempotencyConflict,
    MemoryRecord,
    MemoryStatus,
    RecallQuery,
    ScopeMismatch,
    TrueHeart,
    TrustEscalation,
    TrustLevel,
    ValidationError,
)

CANONICAL_FINGERPRINT_TEXT = (
    '{"kind":"fact","scope":{"owner_id":"owner","subject_id":"subject","tenant_id":"tenant"},'
    '"source_event_ids":["evt-1","evt-2"]}'
)


def _two_sources(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1"))
    service.ingest_event(event("evt-2", content="second synthetic message"))


def _forget(service: TrueHeart, memory_id: str, scope: Any = SCOPE) -> None:
    service.govern(command(GovernanceAction.FORGET, memory_id, scope=scope))


def _delete_event(service: TrueHeart, event_id: str, scope: Any = SCOPE) -> None:
    service.govern(
        command(GovernanceAction.DELETE, event_id, entity_type=EntityType.RAW_EVENT, scope=scope)
    )


def test_new_memory_record(service: TrueHeart) -> None:
    _two_sources(service)
    created = NOW - timedelta(hours=1)
    record = service.materialize_once(
        memory(
            "mem-1",
            ("evt-2", "evt-1"),
            created_at=created,
            metadata={"note": ["x", 1]},
        )
    )
    assert isinstance(record, MemoryRecord)
    assert record.memory_id == "mem-1"
    assert record.scope == SCOPE
    assert record.content == "derived synthetic memory"
    assert record.source_event_ids == ("evt-1", "evt-2")
    assert record.kind == "fact"
    assert record.trust is TrustLevel.OBSERVED
    assert record.created_at == created
    assert record.clear_until == created + timedelta(days=30)
    assert record.recall_until == created + timedelta(days=90)
    assert record.status is MemoryStatus.ACTIVE
    assert record.metadata == {"note": ("x", 1)}
    assert (
        record.dependency_fingerprint
        == hashlib.sha256(CANONICAL_FINGERPRINT_TEXT.encode("utf-8")).hexdigest()
    )


def test_fingerprint_ignores_content_trust_time_and_id(service: TrueHeart) -> None:
    _two_sources(service)
    first = service.materialize_once(memory("mem-a", ("evt-1", "evt-2")))
    second = service.materialize_once(
        memory(
            "mem-b",
            ("evt-2", "evt-1"),
            content="another derived memory",
            trust=TrustLevel.UNTRUSTED,
            created_at=NOW + timedelta(days=1),
        )
    )
    # two memories in one scope may share a fingerprint
    assert first.dependency_fingerprint == second.dependency_fingerprint
    other_kind = service.materialize_once(memory("mem-c", ("evt-1", "evt-2"), kind="preference"))
    assert other_kind.dependency_fingerprint != first.dependency_fingerprint
    fewer = service.materialize_once(memory("mem-d", ("evt-1",)))
    assert fewer.dependency_fingerprint != first.dependency_fingerprint


def test_fingerprint_depends_on_scope(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1"))
    service.ingest_event(event("evt-1", scope=OTHER_SCOPE))
    here = service.materialize_once(memory("mem-1", ("evt-1",)))
    there = service.materialize_once(memory("mem-1", ("evt-1",), scope=OTHER_SCOPE))
    assert here.dependency_fingerprint != there.dependency_fingerprint


def test_worked_deadline_example(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1", clear_for=timedelta(days=4), recall_for=timedelta(days=6)))
    service.ingest_event(event("evt-2", clear_for=timedelta(days=2), recall_for=timedelta(days=8)))
    record = service.materialize_once(
        memory("mem-1", ("evt-1", "evt-2"), created_at=datetime(2026, 8, 13, 12, tzinfo=UTC))
    )
    assert record.clear_until == datetime(2026, 8, 15, 12, tzinfo=UTC)
    assert record.recall_until == datetime(2026, 8, 19, 12, tzinfo=UTC)
    assert record.clear_until.tzinfo is UTC


def test_created_at_is_normalised_to_utc(service: TrueHeart) -> None:
    service.ingest_event(event())
    local = NOW.astimezone(timezone(timedelta(hours=9, minutes=30)))
    record = service.materialize_once(memory(created_at=local))
    assert record.created_at == NOW
    assert record.created_at.tzinfo is UTC


def test_deadline_overflow_is_a_validation_error_and_rolls_back(service: TrueHeart) -> None:
    service.ingest_event(event())
    late = datetime(9999, 12, 1, tzinfo=UTC)
    with pytest.raises(
        ValidationError, match=msg("created_at: retention deadline must be representable")
    ) as info:
        service.materialize_once(memory(created_at=late))
    assert_not_chained(info.value)
    assert [r.action for r in service.audit(SCOPE)] == ["ingest"]
    # nothing was left behind: the same id can be created with a different draft
    record = service.materialize_once(memory(content="a different body"))
    assert record.content == "a different body"


def test_overflow_of_recall_deadline_alone(service: TrueHeart) -> None:
    service.ingest_event(event(clear_for=timedelta(days=1), recall_for=timedelta(days=10)))
    created = datetime.max.replace(tzinfo=UTC) - timedelta(days=5)
    with pytest.raises(
        ValidationError, match=msg("created_at: retention deadline must be representable")
    ):
        service.materialize_once(memory(created_at=created))


def test_materialize_writes_one_audit_row_at_created_at(service: TrueHeart) -> None:
    service.ingest_event(event())
    created = NOW - timedelta(days=2)
    service.materialize_once(memory(created_at=created))
    records = service.audit(SCOPE)
    assert [r.action for r in records] == ["ingest", "materialize"]
    mat = records[1]
    assert mat.entity_type is EntityType.MEMORY
    assert mat.entity_id == "mem-1"
    assert mat.occurred_at == created
    assert mat.reason == "memory materialized"
    assert mat.metadata == {}


def test_identical_replay_returns_stored_record_without_audit(service: TrueHeart) -> None:
    _two_sources(service)
    first = service.materialize_once(memory(sources=("evt-2", "evt-1"), metadata={"a": [1]}))
    again = service.materialize_once(memory(sources=("evt-1", "evt-2"), metadata={"a": (1,)}))
    assert again == first
    assert len(service.audit(SCOPE)) == 3


def test_replay_of_sealed_memory_returns_it_sealed(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.materialize_once(memory())
    service.govern(command(GovernanceAction.SEAL))
    audit_len = len(service.audit(SCOPE))
    replay = service.materialize_once(memory())
    assert replay.status is MemoryStatus.SEALED
    assert len(service.audit(SCOPE)) == audit_len


def test_replay_after_source_expiry_still_works(service: TrueHeart) -> None:
    service.ingest_event(event())
    first = service.materialize_once(memory())
    assert service.expire_raw_content(as_of=NOW + timedelta(days=30)) == 1
    assert service.materialize_once(memory()) == first


REPLAY_CONFLICTS: dict[str, dict[str, Any]] = {
    "content": {"content": "changed derived memory"},
    "sources": {"sources": ("evt-1",)},
    "missing-source": {"sources": ("evt-1", "evt-2", "evt-missing")},
    "kind": {"kind": "preference"},
    "trust": {"trust": TrustLevel.UNTRUSTED},
    "created_at": {"created_at": NOW + timedelta(microseconds=1)},
    "metadata": {"metadata": {"k": 1}},
    "metadata-bool-vs-int": {"metadata": {"v": 1, "w": 1}},
    "metadata-int-vs-float": {"metadata": {"v": True, "w": 1.0}},
}


@pytest.mark.parametrize("case", sorted(REPLAY_CONFLICTS))
def test_replay_with_any_difference_conflicts(service: TrueHeart, case: str) -> None:
    _two_sources(service)
    base: dict[str, Any] = {"sources": ("evt-1", "evt-2"), "metadata": {"v": True, "w": 1}}
    service.materialize_once(memory(**base))
    changed = {**base, **REPLAY_CONFLICTS[case]}
    with pytest.raises(IdempotencyConflict, match=msg("idempotency conflict: mem-1")):
        service.materialize_once(memory(**changed))
    assert len(service.audit(SCOPE)) == 3


def test_replay_is_checked_before_trust_ceiling(service: TrueHeart) -> None:
    service.ingest_event(event(trust=TrustLevel.OBSERVED))
    service.materialize_once(memory(trust=TrustLevel.OBSERVED))
    with pytest.raises(IdempotencyConflict, match=msg("idempotency conflict: mem-1")):
        service.materialize_once(memory(trust=TrustLevel.CONFIRMED))


def test_memory_ids_are_scoped(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.ingest_event(event(scope=OTHER_SCOPE))
    here = service.materialize_once(memory(content="here"))
    there = service.materialize_once(memory(scope=OTHER_SCOPE, content="there"))
    assert (here.content, there.content) == ("here", "there")


def test_expired_sources_are_accepted(service: TrueHeart) -> None:
    service.ingest_event(event(raw_ttl=timedelta(hours=1)))
    assert service.expire_raw_content(as_of=NOW + timedelta(hours=1)) == 1
    record = service.materialize_once(memory())
    assert record.source_event_ids == ("evt-1",)


# --------------------------------------------------------------------------- trust ceiling


@pytest.mark.parametrize(
    ("sources", "draft_trust", "allowed"),
    [
        ((TrustLevel.OBSERVED,), TrustLevel.OBSERVED, True),
        ((TrustLevel.OBSERVED,), TrustLevel.UNTRUSTED, True),
        ((TrustLevel.OBSERVED,), TrustLevel.CONFIRMED, False),
        ((TrustLevel.UNTRUSTED,), TrustLevel.OBSERVED, False),
        ((TrustLevel.CONFIRMED, TrustLevel.UNTRUSTED), TrustLevel.OBSERVED, False),
        ((TrustLevel.CONFIRMED, TrustLevel.CONFIRMED), TrustLevel.CONFIRMED, True),
        ((TrustLevel.CONFIRMED, TrustLevel.OBSERVED), TrustLevel.OBSERVED, True),
    ],
)
def test_trust_ceiling_is_the_least_trusted_source(
    service: TrueHeart,
    sources: tuple[TrustLevel, ...],
    draft_trust: TrustLevel,
    allowed: bool,
) -> None:
    ids = []
    for index, trust in enumerate(sources):
        service.ingest_event(event(f"evt-{index}", trust=trust))
        ids.append(f"evt-{index}")
    draft = memory("mem-t", tuple(ids), trust=draft_trust)
    if allowed:
        assert service.materialize_once(draft).trust is draft_trust
    else:
        with pytest.raises(TrustEscalation, match=msg("trust escalation: mem-t")):
            service.materialize_once(draft)
        assert [r.action for r in service.audit(SCOPE)] == ["ingest"] * len(sources)


def test_trust_ceiling_is_checked_before_deadlines(service: TrueHeart) -> None:
    service.ingest_event(event(trust=TrustLevel.UNTRUSTED))
    late = datetime(9999, 12, 1, tzinfo=UTC)
    with pytest.raises(TrustEscalation, match=msg("trust escalation: mem-1")):
        service.materialize_once(memory(trust=TrustLevel.OBSERVED, created_at=late))


# --------------------------------------------------------------------------- check order


def test_id_tombstone_blocks_identical_and_different_drafts(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.materialize_once(memory())
    _forget(service, "mem-1")
    with pytest.raises(EntityDeleted, match=msg("entity deleted: mem-1")):
        service.materialize_once(memory())
    with pytest.raises(EntityDeleted, match=msg("entity deleted: mem-1")):
        service.materialize_once(memory(kind="other-kind", content="new"))


def test_id_tombstone_is_checked_before_sources(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.materialize_once(memory())
    _forget(service, "mem-1")
    with pytest.raises(EntityDeleted, match=msg("entity deleted: mem-1")):
        service.materialize_once(memory(sources=("evt-missing",), trust=TrustLevel.CONFIRMED))


def test_id_tombstone_does_not_block_other_scopes(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.ingest_event(event(scope=OTHER_SCOPE))
    service.materialize_once(memory())
    _forget(service, "mem-1")
    record = service.materialize_once(memory(scope=OTHER_SCOPE))
    assert record.scope == OTHER_SCOPE


def test_raw_tombstone_does_not_block_memory_id(service: TrueHeart) -> None:
    service.ingest_event(event("shared-id"))
    service.ingest_event(event("evt-2"))
    _delete_event(service, "shared-id")
    record = service.materialize_once(memory("shared-id", ("evt-2",)))
    assert record.memory_id == "shared-id"


def test_replay_wins_over_fingerprint_tombstone(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.materialize_once(memory("mem-a"))
    kept = service.materialize_once(memory("mem-b", content="same sources, same kind"))
    _forget(service, "mem-a")
    assert service.materialize_once(memory("mem-b", content="same sources, same kind")) == kept
    with pytest.raises(IdempotencyConflict, match=msg("idempotency conflict: mem-b")):
        service.materialize_once(memory("mem-b", content="changed"))


def test_fingerprint_tombstone_blocks_new_memory_and_names_the_draft(service: TrueHeart) -> None:
    _two_sources(service)
    service.materialize_once(memory("mem-a", ("evt-1", "evt-2")))
    _forget(service, "mem-a")
    with pytest.raises(EntityDeleted, match=msg("entity deleted: mem-new")):
        service.materialize_once(memory("mem-new", ("evt-2", "evt-1"), content="other"))
    # a different kind or source set is a different fingerprint
    assert service.materialize_once(memory("mem-k", ("evt-1", "evt-2"), kind="preference"))
    assert service.materialize_once(memory("mem-s", ("evt-1",)))


def test_fingerprint_tombstone_does_not_block_other_scopes(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.ingest_event(event(scope=OTHER_SCOPE))
    service.materialize_once(memory("mem-a"))
    _forget(service, "mem-a")
    assert service.materialize_once(memory("mem-new", scope=OTHER_SCOPE)).memory_id == "mem-new"


def test_fingerprint_tombstone_from_cascade_precedes_source_diagnosis(
    service: TrueHeart,
) -> None:
    service.ingest_event(event())
    service.materialize_once(memory("mem-a"))
    _delete_event(service, "evt-1")
    # same (scope, kind, sources): blocked by the cascaded memory tombstone
    with pytest.raises(EntityDeleted, match=msg("entity deleted: mem-new")):
        service.materialize_once(memory("mem-new"))
    # different kind: the deleted source itself is diagnosed
    with pytest.raises(EntityDeleted, match=msg("entity deleted: evt-1")):
        service.materialize_once(memory("mem-new", kind="preference"))


def test_sources_are_diagnosed_in_draft_order(service: TrueHeart) -> None:
    service.ingest_event(event("evt-ok"))
    service.ingest_event(event("evt-gone"))
    _delete_event(service, "evt-gone")
    service.ingest_event(event("evt-elsewhere", scope=OTHER_SCOPE))
    cases: list[tuple[tuple[str, ...], type[Exception], str]] = [
        (("missing-b", "missing-a"), EntityNotFound, "entity not found: missing-b"),
        (("evt-ok", "missing-a", "evt-gone"), EntityNotFound, "entity not found: missing-a"),
        (("evt-gone", "missing-a"), EntityDeleted, "entity deleted: evt-gone"),
        (("evt-ok", "evt-elsewhere", "evt-gone"), ScopeMismatch, "scope mismatch: evt-elsewhere"),
        (("evt-gone", "evt-elsewhere"), EntityDeleted, "entity deleted: evt-gone"),
    ]
    for sources, error, message in cases:
        with pytest.raises(error, match=msg(message)):
            service.materialize_once(memory("mem-x", sources, kind="k-" + "-".join(sources)))
    assert [r.action for r in service.audit(SCOPE)] == ["delete", "ingest", "ingest"]


def test_a_memory_of_more_sources_than_one_look_up_reads(service: TrueHeart) -> None:
    """1,201 sources: more than a backend's look-up of receipts takes at once (500 IDs on
    both), so they are read in several parts; every source is checked, in draft order,
    and a replay is recognised."""
    sources = tuple(f"evt-{index:04d}" for index in range(1201))
    service.ingest_events([event(event_id) for event_id in sources])
    record = service.materialize_once(memory("mem-wide", sources))
    assert record.source_event_ids == tuple(sorted(sources))
    assert service.materialize_once(memory("mem-wide", sources)) == record
    _delete_event(service, "evt-1100")
    late = (*sources[:1101], "evt-missing")  # the deleted source comes first
    with pytest.raises(EntityDeleted, match=msg("entity deleted: evt-1100")):
        service.materialize_once(memory("mem-late", late, kind="other"))
    with pytest.raises(EntityNotFound, match=msg("entity not found: evt-missing")):
        service.materialize_once(memory("mem-late", (*sources[:1100], "evt-missing")))


def test_sources_are_checked_before_trust_ceiling(service: TrueHeart) -> None:
    service.ingest_event(event(trust=TrustLevel.UNTRUSTED))
    with pytest.raises(EntityNotFound, match=msg("entity not found: evt-missing")):
        service.materialize_once(
            memory(sources=("evt-1", "evt-missing"), trust=TrustLevel.CONFIRMED)
        )


def test_source_diagnosis_scope_mismatch_for_live_event_elsewhere(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1", scope=OTHER_SCOPE))
    with pytest.raises(ScopeMismatch, match=msg("scope mismatch: evt-1")):
        service.materialize_once(memory())


def test_source_diagnosis_scope_mismatch_for_raw_tombstone_elsewhere(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1", scope=OTHER_SCOPE))
    _delete_event(service, "evt-1", scope=OTHER_SCOPE)
    with pytest.raises(ScopeMismatch, match=msg("scope mismatch: evt-1")):
        service.materialize_once(memory())


def test_source_diagnosis_ignores_memory_rows_and_memory_tombstones(service: TrueHeart) -> None:
    service.ingest_event(event("evt-base"))
    service.ingest_event(event("evt-base", scope=OTHER_SCOPE))
    # a live memory called "ghost" here and a memory tombstone "ghost-2" here and elsewhere
    service.materialize_once(memory("ghost", ("evt-base",)))
    service.materialize_once(memory("ghost-2", ("evt-base",), kind="k2"))
    _forget(service, "ghost-2")
    service.materialize_once(memory("ghost-2", ("evt-base",), kind="k2", scope=OTHER_SCOPE))
    _forget(service, "ghost-2", scope=OTHER_SCOPE)
    for missing in ("ghost", "ghost-2"):
        with pytest.raises(EntityNotFound, match=msg(f"entity not found: {missing}")):
            service.materialize_once(memory("mem-x", (missing,)))


def test_deleted_source_in_exact_scope_is_entity_deleted(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1"))
    service.ingest_event(event("evt-1", scope=OTHER_SCOPE))
    _delete_event(service, "evt-1")
    # exact-scope tombstone wins over the live row in the other scope
    with pytest.raises(EntityDeleted, match=msg("entity deleted: evt-1")):
        service.materialize_once(memory())


@pytest.mark.parametrize(
    "argument",
    [None, "mem-1", event(), RecallQuery(SCOPE, NOW)],
    ids=["none", "str", "raw-draft", "query"],
)
def test_materialize_type_checks_its_argument(service: TrueHeart, argument: Any) -> None:
    with pytest.raises(ValidationError, match=msg("draft: must be a MemoryDraft")):
        service.materialize_once(argument)


def test_record_metadata_types_come_back_exactly(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.materialize_once(memory(metadata={"t": True, "i": 1, "f": 1.0, "big": -(1 << 4095)}))
    (item,) = service.recall(RecallQuery(SCOPE, NOW))
    metadata = item.memory.metadata
    assert [type(metadata[k]) for k in ("t", "i", "f", "big")] == [bool, int, float, int]
    assert metadata["big"] == -(1 << 4095)


@pytest.mark.parametrize(
    ("scope", "kind"),
    [
        (SCOPE, "caf\u00e9 \U0001f600"),
        (SCOPE, 'quote " and \\ backslash'),
        (OTHER_SCOPE, "fact"),
    ],
)
def test_fingerprint_is_sha256_of_canonical_json(service: TrueHeart, scope: Any, kind: str) -> None:
    ids = ("evt-b", "evt-\u00e9", "evt-A")
    for event_id in ids:
        service.ingest_event(event(event_id, scope=scope))
    record = service.materialize_once(memory("mem-1", ids, scope=scope, kind=kind))
    text = json.dumps(
        {
            "kind": kind,
            "scope": {
                "tenant_id": scope.tenant_id,
                "owner_id": scope.owner_id,
                "subject_id": scope.subject_id,
            },
            "source_event_ids": sorted(ids),
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )
    assert record.dependency_fingerprint == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert record.source_event_ids == tuple(sorted(ids))


def test_many_sources_have_no_count_limit(service: TrueHeart) -> None:
    ids = tuple(f"evt-{index:04d}" for index in range(1_100))
    service.ingest_events([event(event_id) for event_id in ids])
    draft = memory("mem-wide", tuple(reversed(ids)))
    record = service.materialize_once(draft)
    assert record.source_event_ids == ids
    assert service.materialize_once(draft) == record
    missing = (*ids, "evt-missing")
    with pytest.raises(EntityNotFound, match=msg("entity not found: evt-missing")):
        service.materialize_once(memory("mem-other", missing))
    result = service.govern(
        command(GovernanceAction.DELETE, "evt-0600", entity_type=EntityType.RAW_EVENT)
    )
    assert result.affected_ids == ("evt-0600", "mem-wide")


@pytest.mark.parametrize(
    ("stored", "requested"),
    [
        ("evt_1", "evt-1"),
        ("evt%", "evt-1"),
        ("EVT-1", "evt-1"),
        ("evt-1 ", "evt-1"),
        ("evt\x00x", "evt"),
        ("evt", "evt\x00x"),
    ],
    ids=["underscore", "percent", "case", "trailing-space", "nul-stored", "nul-requested"],
)
def test_source_lookup_is_exact(service: TrueHeart, stored: str, requested: str) -> None:
    service.ingest_event(event(stored))
    service.ingest_event(event(stored, scope=OTHER_SCOPE))
    with pytest.raises(EntityNotFound, match=msg(f"entity not found: {requested}")):
        service.materialize_once(memory("mem-1", (requested,)))
    record = service.materialize_once(memory("mem-1", (stored,)))
    assert record.source_event_ids == (stored,)


def test_scopes_that_collide_when_concatenated_are_independent(service: TrueHeart) -> None:
    from trueheart_core import Scope

    scopes = [
        Scope("a\x00b", "c", "d"),
        Scope("a", "b\x00c", "d"),
        Scope("a:b", "c", "d"),
        Scope("a", "b:c", "d"),
        Scope("a|b", "c", "d"),
        Scope("a", "b|c", "d"),
    ]
    for index, scope in enumerate(scopes):
        service.ingest_event(event("evt-1", scope=scope, content=f"body {index}"))
        service.materialize_once(memory("mem-1", scope=scope, content=f"memory {index}"))
    for index, scope in enumerate(scopes):
        (item,) = service.recall(RecallQuery(scope, NOW))
        assert item.memory.content == f"memory {index}"
        assert [r.entity_id for r in service.audit(scope)] == ["mem-1", "evt-1"]
    assert service.verify_integrity().ok


def test_deadline_overflow_is_checked_after_tombstones_and_replay(service: TrueHeart) -> None:
    late = datetime(9999, 12, 1, tzinfo=UTC)
    service.ingest_event(event())
    service.materialize_once(memory("mem-live"))
    service.materialize_once(memory("mem-gone", kind="gone"))
    _forget(service, "mem-gone")
    with pytest.raises(IdempotencyConflict, match=msg("idempotency conflict: mem-live")):
        service.materialize_once(memory("mem-live", created_at=late))
    with pytest.raises(EntityDeleted, match=msg("entity deleted: mem-gone")):
        service.materialize_once(memory("mem-gone", created_at=late))
    with pytest.raises(EntityDeleted, match=msg("entity deleted: mem-fp")):
        service.materialize_once(memory("mem-fp", kind="gone", created_at=late))
    with pytest.raises(EntityNotFound, match=msg("entity not found: evt-missing")):
        service.materialize_once(memory("mem-new", ("evt-missing",), created_at=late))
