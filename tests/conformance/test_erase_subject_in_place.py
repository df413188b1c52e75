"""Erasing a whole subject without a rewrite of the storage (``rewrite=False``), and
``compact``: the same receipt, reads and tombstones as the default erasure, no erased
word left in the storage (the test of 10,000 interleaved memories erases them both
ways), and a compaction that changes no answer."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from conformance_builders import (
    ERASED_AT,
    NOW,
    OTHER_SCOPE,
    OTHER_WORDS,
    SCOPE,
    SUBJECT_WORDS,
    event,
    found_in_storage,
    memory,
    populate_subject,
)

from trueheart_core import (
    ClaimQuery,
    EntityDeleted,
    RecallQuery,
    RepositoryReadOnly,
    SearchQuery,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Capability, Repository


def _answers(service: TrueHeart) -> list[Any]:
    """Every read of both scopes, for comparison."""
    answers: list[Any] = []
    for scope in (SCOPE, OTHER_SCOPE):
        answers += [
            service.recall(RecallQuery(scope, NOW)),
            service.search(SearchQuery(scope, "shared", NOW)),
            service.claims(ClaimQuery(scope, NOW)),
            service.list_memories(scope),
            [(r.action, r.entity_type, r.entity_id) for r in service.audit(scope)],
        ]
        stats = service.stats(scope)
        answers.append((stats.events, stats.memories, stats.claims, stats.tombstones))
    return answers


def test_the_receipt_and_reads_are_those_of_the_default_erasure(
    service: TrueHeart, fresh_repository: Any, clock: Any
) -> None:
    populate_subject(service)
    in_place = service.erase_subject(SCOPE, occurred_at=ERASED_AT, rewrite=False)
    with TrueHeart(fresh_repository(), clock=clock) as other:
        populate_subject(other)
        rewritten = other.erase_subject(SCOPE, occurred_at=ERASED_AT)
        assert in_place == rewritten
        assert _answers(service) == _answers(other)
    assert in_place.remaining is not None and in_place.remaining.total == 0
    assert in_place.erased.raw_event > 0 and in_place.erased.memory > 0
    assert service.verify_integrity().ok


def test_the_tombstones_stop_every_erased_id_coming_back(service: TrueHeart) -> None:
    populate_subject(service)
    receipt = service.erase_subject(SCOPE, occurred_at=ERASED_AT, rewrite=False)
    with pytest.raises(EntityDeleted):
        service.ingest_event(event(receipt.event_ids[0]))
    with pytest.raises(EntityDeleted):
        service.materialize_once(memory(receipt.memory_ids[0], ("evt-new",)))


def test_a_dry_run_counts_the_same_either_way(service: TrueHeart) -> None:
    populate_subject(service)
    thorough = service.erase_subject(SCOPE, occurred_at=ERASED_AT, dry_run=True)
    indexed = service.erase_subject(SCOPE, occurred_at=ERASED_AT, dry_run=True, rewrite=False)
    assert thorough == indexed and thorough.erased.total > 0


def test_rewrite_must_be_a_bool(service: TrueHeart) -> None:
    populate_subject(service)
    before = service.stats(SCOPE)
    with pytest.raises(ValidationError, match=r"^rewrite: must be a bool$"):
        service.erase_subject(SCOPE, occurred_at=ERASED_AT, rewrite=0)  # type: ignore[arg-type]
    assert service.stats(SCOPE) == before


@pytest.mark.requires(Capability.FORENSICS)
def test_erased_words_leave_the_storage_without_a_rewrite(
    repository: Repository, service: TrueHeart
) -> None:
    populate_subject(service)
    service.erase_subject(SCOPE, occurred_at=ERASED_AT, rewrite=False)
    assert found_in_storage(repository, SUBJECT_WORDS) == []
    assert found_in_storage(repository, OTHER_WORDS) == list(OTHER_WORDS)


def test_compaction_changes_no_answer(service: TrueHeart) -> None:
    populate_subject(service)
    service.expire_raw_content(as_of=NOW + timedelta(days=30))
    before = _answers(service)
    service.compact()
    assert _answers(service) == before
    assert service.verify_integrity().ok


@pytest.mark.requires(Capability.FORENSICS)
def test_compaction_after_an_erasure_without_a_rewrite(
    repository: Repository, service: TrueHeart
) -> None:
    populate_subject(service)
    service.erase_subject(SCOPE, occurred_at=ERASED_AT, rewrite=False)
    service.compact()
    assert found_in_storage(repository, SUBJECT_WORDS) == []
    assert found_in_storage(repository, OTHER_WORDS) == list(OTHER_WORDS)


@pytest.mark.requires(Capability.READ_ONLY_OPEN)
def test_a_read_only_store_refuses_both(
    repository: Repository, service: TrueHeart, reopen: Callable[..., Repository]
) -> None:
    populate_subject(service)
    repository.close()
    reader = TrueHeart(reopen(read_only=True))
    with pytest.raises(
        RepositoryReadOnly, match=r"^repository read-only: store compaction failed$"
    ):
        reader.compact()
    with pytest.raises(RepositoryReadOnly):
        reader.erase_subject(SCOPE, occurred_at=ERASED_AT, rewrite=False)
    assert reader.stats(SCOPE).memories == 9
