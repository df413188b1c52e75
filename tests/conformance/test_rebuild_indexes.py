"""Rebuilding every derived index from the canonical rows, and verification of those
indexes: the search index, the claim index keys and the storage engine's indexes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conformance_builders import NOW, OTHER_SCOPE, SCOPE, claim, event, memory

from trueheart_core import (
    IndexRebuildReport,
    RepositoryReadOnly,
    SearchQuery,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Capability, Repository


def _populate(service: TrueHeart) -> None:
    service.ingest_events([event("evt-1"), event("evt-1", scope=OTHER_SCOPE)])
    service.materialize_once(memory("mem-1", content="alpha beta"))
    service.materialize_once(memory("mem-2", content="beta gamma"))
    service.materialize_once(memory("mem-1", scope=OTHER_SCOPE, content="alpha"))
    service.materialize_claim(claim("claim-1", subject="user:ada", value="dark"))
    service.materialize_claim(claim("claim-2", subject="user:bob", value="light"))


def _problems(service: TrueHeart) -> list[tuple[str, str, str]]:
    return [(p.entity_type, p.entity_id, p.code) for p in service.verify_integrity().problems]


def test_rebuilding_a_sound_store_changes_nothing(service: TrueHeart) -> None:
    _populate(service)
    stats = service.stats()
    found = service.search(SearchQuery(SCOPE, "beta", NOW))
    report = service.rebuild_indexes()
    assert report.search_entries_before == report.search_entries_after == stats.search_entries
    assert report.search_terms_before == report.search_terms_after == stats.search_terms
    assert (report.search_entries_added, report.search_entries_removed) == (0, 0)
    assert (report.search_terms_added, report.search_terms_removed) == (0, 0)
    assert report.claim_keys_repaired == 0
    assert report.storage_indexes_rebuilt > 0
    assert not report.changed
    assert service.search(SearchQuery(SCOPE, "beta", NOW)) == found
    after = service.stats()
    assert (after.search_entries, after.search_terms, after.search_postings) == (
        stats.search_entries,
        stats.search_terms,
        stats.search_postings,
    )
    assert service.verify_integrity().ok


@pytest.mark.requires(Capability.READ_ONLY_OPEN)
def test_rebuild_needs_a_writable_store(
    repository: Repository, service: TrueHeart, reopen: Callable[..., Repository]
) -> None:
    _populate(service)
    repository.close()
    reader = TrueHeart(reopen(read_only=True))
    with pytest.raises(RepositoryReadOnly):
        reader.rebuild_indexes()
    assert reader.verify_integrity().ok


def test_report_validates_its_counts() -> None:
    with pytest.raises(ValidationError, match=r"^search_terms_added: must be a non-negative int$"):
        IndexRebuildReport(0, 0, 0, 0, 0, 0, -1, 0, 0, 0)
    assert IndexRebuildReport(1, 1, 0, 0, 2, 2, 0, 0, 0, 19).changed is False
