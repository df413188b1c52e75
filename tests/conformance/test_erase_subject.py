"""Erasing a whole subject: everything held in one exact scope goes in one transaction,
with tombstones, one summary audit row and a receipt whose counts agree with the
statistics. (The SQLite adapter tests count the rows of the file independently.)"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conformance_builders import (
    ERASED_AT,
    NOW,
    OTHER_SCOPE,
    OTHER_WORDS,
    SCOPE,
    SUBJECT_WORDS,
    after_write_unit,
    claim,
    event,
    found_in_storage,
    memory,
    populate_subject,
)

from trueheart_core import (
    ArtifactClass,
    ArtifactCounts,
    ClaimQuery,
    EntityDeleted,
    EntityType,
    ErasureReceipt,
    RecallQuery,
    RepositoryReadOnly,
    Scope,
    SearchQuery,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Capability, Repository


def test_receipt_counts_match_the_statistics(service: TrueHeart) -> None:
    populate_subject(service)
    stats = service.stats(SCOPE)
    receipt = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert receipt.erased.raw_event == stats.events
    assert receipt.erased.raw_body == stats.events_with_body
    assert receipt.erased.memory == stats.memories
    assert receipt.erased.claim == stats.claims
    assert receipt.erased.extraction_record == stats.extraction_records
    assert receipt.erased.search_entry == stats.search_entries
    assert receipt.erased.search_term == stats.search_terms
    after = service.stats(SCOPE)
    assert (after.events, after.memories, after.claims, after.search_postings) == (0, 0, 0, 0)
    assert after.tombstones == stats.tombstones + receipt.erased.raw_event + stats.memories
    assert receipt.verified is True


def test_dry_run_changes_nothing_through_the_api(service: TrueHeart) -> None:
    populate_subject(service)
    stats, audit = service.stats(SCOPE), service.audit(SCOPE, limit=100)
    planned = service.erase_subject(SCOPE, occurred_at=ERASED_AT, dry_run=True)
    assert service.stats(SCOPE) == stats
    assert service.audit(SCOPE, limit=100) == audit
    assert service.get_memory(SCOPE, "mem-0").memory_id == "mem-0"
    assert planned.erased.memory == stats.memories == 9


@pytest.mark.requires(Capability.READ_ONLY_OPEN)
def test_dry_run_works_on_a_read_only_store(
    repository: Repository, service: TrueHeart, reopen: Callable[..., Repository]
) -> None:
    populate_subject(service)
    repository.close()
    reader = TrueHeart(reopen(read_only=True))
    planned = reader.erase_subject(SCOPE, occurred_at=ERASED_AT, dry_run=True)
    assert planned.erased.memory == 9
    assert reader.stats(SCOPE).memories == 9


def test_tombstones_stop_every_erased_id_coming_back(service: TrueHeart) -> None:
    populate_subject(service)
    receipt = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    for event_id in receipt.event_ids:
        with pytest.raises(EntityDeleted):
            service.ingest_event(event(event_id))
        with pytest.raises(EntityDeleted):
            service.get_receipt(SCOPE, event_id)
    # A new source event, so that only the tombstones can refuse the memories.
    service.ingest_event(event("evt-new"))
    for memory_id in receipt.memory_ids:
        with pytest.raises(EntityDeleted):
            service.materialize_once(memory(memory_id, ("evt-new",)))
        with pytest.raises(EntityDeleted):
            service.get_memory(SCOPE, memory_id)
    with pytest.raises(EntityDeleted):
        service.materialize_claim(claim("claim-1", ("evt-new",)))
    # The other scope keeps its own IDs.
    assert service.get_memory(OTHER_SCOPE, "mem-0").memory_id == "mem-0"
    assert service.verify_integrity().ok


def test_one_body_free_audit_row_is_written_and_earlier_ones_kept(service: TrueHeart) -> None:
    populate_subject(service)
    earlier = service.audit(SCOPE, limit=100)
    receipt = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    records = service.audit(SCOPE, limit=100)
    assert records[1:] == earlier
    newest = records[0]
    assert (newest.action, newest.entity_type, newest.entity_id) == (
        "erase_subject",
        EntityType.SUBJECT,
        SCOPE.subject_id,
    )
    assert (newest.occurred_at, newest.reason, dict(newest.metadata)) == (
        ERASED_AT,
        "subject erasure requested",
        {},
    )
    assert not [word for word in SUBJECT_WORDS if word in repr(records) + repr(receipt)]
    assert service.verify_integrity().ok


def test_other_scopes_are_untouched(service: TrueHeart) -> None:
    populate_subject(service)
    stats = service.stats(OTHER_SCOPE)
    recall = service.recall(RecallQuery(OTHER_SCOPE, NOW))
    found = service.search(SearchQuery(OTHER_SCOPE, "shared", NOW))
    claims = service.claims(ClaimQuery(OTHER_SCOPE, NOW))
    service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    after = service.stats(OTHER_SCOPE)
    assert (after.events, after.memories, after.claims, after.search_terms) == (
        stats.events,
        stats.memories,
        stats.claims,
        stats.search_terms,
    )
    assert (after.search_entries, after.search_postings, after.audit_records) == (
        stats.search_entries,
        stats.search_postings,
        stats.audit_records,
    )
    assert service.recall(RecallQuery(OTHER_SCOPE, NOW)) == recall
    assert service.search(SearchQuery(OTHER_SCOPE, "shared", NOW)) == found
    assert service.claims(ClaimQuery(OTHER_SCOPE, NOW)) == claims
    assert service.verify_integrity().ok


def test_nothing_of_the_subject_is_readable_afterwards(service: TrueHeart) -> None:
    populate_subject(service)
    service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert service.recall(RecallQuery(SCOPE, NOW)) == ()
    assert service.search(SearchQuery(SCOPE, "shared zqxsubjmem0", NOW)).matched == 0
    assert service.claims(ClaimQuery(SCOPE, NOW)).claims == ()
    assert service.list_memories(SCOPE).items == ()
    assert service.verify_integrity(SCOPE).ok


@pytest.mark.requires(Capability.FORENSICS)
def test_erased_words_leave_the_storage(repository: Repository, service: TrueHeart) -> None:
    populate_subject(service)
    held = [word for word in SUBJECT_WORDS if word != "zqxsubjexpired"]
    assert found_in_storage(repository, SUBJECT_WORDS) == held
    service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert found_in_storage(repository, SUBJECT_WORDS) == []
    # the other subject of the same owner keeps its words
    assert found_in_storage(repository, OTHER_WORDS) == list(OTHER_WORDS)


def test_erasing_an_unknown_or_empty_scope_records_it(service: TrueHeart) -> None:
    nobody = Scope("tenant", "owner", "nobody")
    receipt = service.erase_subject(nobody, occurred_at=ERASED_AT)
    assert receipt.erased == ArtifactCounts() and receipt.verified is True
    assert (receipt.event_ids, receipt.memory_ids, receipt.claim_ids) == ((), (), ())
    assert [r.action for r in service.audit(nobody)] == ["erase_subject"]
    again = service.erase_subject(nobody, occurred_at=ERASED_AT + timedelta(hours=1))
    assert again.erased.total == 0
    assert len(service.audit(nobody)) == 2


def test_a_second_erasure_finds_nothing_left(service: TrueHeart) -> None:
    populate_subject(service)
    service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    again = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert again.erased.total == 0 and again.verified is True
    assert again.event_ids == again.memory_ids == again.claim_ids == ()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scope": ("tenant", "owner", "subject")}, "scope: must be a Scope"),
        ({"occurred_at": datetime(2026, 8, 13)}, "occurred_at: must be timezone-aware"),
        ({"occurred_at": "2026-08-13"}, "occurred_at: must be timezone-aware"),
        ({"dry_run": 1}, "dry_run: must be a bool"),
    ],
)
def test_bad_arguments_are_refused_before_anything_changes(
    service: TrueHeart, kwargs: dict[str, Any], message: str
) -> None:
    populate_subject(service)
    stats = service.stats(SCOPE)
    arguments: dict[str, Any] = {"scope": SCOPE, "occurred_at": ERASED_AT, **kwargs}
    scope = arguments.pop("scope")
    with pytest.raises(ValidationError, match=f"^{message}$"):
        service.erase_subject(scope, **arguments)
    assert service.stats(SCOPE) == stats


@pytest.mark.requires(Capability.READ_ONLY_OPEN)
def test_a_read_only_store_refuses_erasure(
    repository: Repository, service: TrueHeart, reopen: Callable[..., Repository]
) -> None:
    populate_subject(service)
    repository.close()
    reader = TrueHeart(reopen(read_only=True))
    with pytest.raises(RepositoryReadOnly):
        reader.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert reader.stats(SCOPE).memories == 9


def test_receipt_validates_its_fields() -> None:
    counts = ArtifactCounts(memory=1)
    when = datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(ValidationError, match=r"^memory_ids: must be sorted and without dupl"):
        ErasureReceipt(SCOPE, when, False, counts, (), ("b", "a"), (), ArtifactCounts())
    with pytest.raises(ValidationError, match=r"^remaining: must be None in a dry run$"):
        ErasureReceipt(SCOPE, when, True, counts, (), (), (), ArtifactCounts())
    with pytest.raises(ValidationError, match=r"^remaining: must be an ArtifactCounts or None$"):
        ErasureReceipt(SCOPE, when, False, counts, (), (), (), counts.total)  # type: ignore[arg-type]
    assert ErasureReceipt(SCOPE, when, False, counts, (), (), ()).verified is None
    left = ErasureReceipt(SCOPE, when, False, counts, (), ("a",), (), ArtifactCounts(claim=1))
    assert left.verified is False
    assert counts[ArtifactClass.MEMORY] == 1 and counts.total == 1
    with pytest.raises(ValidationError, match=r"^raw_event: must be a non-negative int$"):
        ArtifactCounts(raw_event=-1)


def test_artifact_counts_have_one_field_per_class() -> None:
    import dataclasses

    assert [f.name for f in dataclasses.fields(ArtifactCounts)] == [a.value for a in ArtifactClass]
    counts = ArtifactCounts(*range(len(ArtifactClass)))
    assert [count for _, count in counts.items()] == list(range(len(ArtifactClass)))


def test_rows_stored_after_the_commit_are_counted_as_remaining(
    repository: Repository, reopen: Callable[..., Repository]
) -> None:
    """``remaining`` is counted in a new transaction after the commit: an event another
    connection stores in the scope between the two is counted (the scope holds it), and
    the receipt is then not verified; the erased rows stay erased."""
    service = TrueHeart(repository, clock=lambda: NOW)
    populate_subject(service)
    writer = TrueHeart(reopen(), clock=lambda: NOW)

    with after_write_unit("erase", lambda: writer.ingest_event(event("evt-after-commit"))) as done:
        receipt = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert len(done) == 1
    assert receipt.remaining is not None
    assert receipt.remaining.raw_event == 1
    assert receipt.remaining.memory == 0
    assert receipt.verified is False
    assert "evt-after-commit" not in receipt.event_ids
    assert service.stats(SCOPE).events == 1
    assert service.stats(SCOPE).memories == 0
