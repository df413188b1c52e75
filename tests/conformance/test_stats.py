"""Store statistics: row counts of the whole store or of one scope, and storage sizes
where the repository reports them (``Capability.STORAGE_SIZES``)."""

from __future__ import annotations

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    command,
    event,
    memory,
    populate_for_stats,
)

from trueheart_core import (
    GovernanceAction,
    Scope,
    StoreStats,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Capability, Repository


def test_scope_statistics(service: TrueHeart) -> None:
    populate_for_stats(service)
    stats = service.stats(SCOPE)
    assert stats.scope == SCOPE
    assert (stats.events, stats.events_with_body, stats.events_without_body) == (4, 3, 1)
    assert (stats.memories, stats.active_memories, stats.sealed_memories) == (5, 4, 1)
    assert stats.memories_by_kind == (("claim", 2), ("fact", 2), ("plan", 1))
    assert (stats.claims, stats.extraction_records, stats.tombstones) == (2, 1, 1)
    # 4 ingests, 5 materialisations (the extracted claim included), seal, forget, expire
    assert stats.audit_records == 4 + 6 + 1 + 1 + 1
    assert stats.search_entries == 4
    # "alpha beta", "beta gamma", "user:a likes tea", "user:ada prefers_theme dark"
    terms = ("alpha", "beta", "gamma", "user", "a", "likes", "tea", "ada", "prefers", "theme")
    assert stats.search_terms == len((*terms, "dark"))
    assert stats.search_postings == 2 + 2 + 4 + 5


def test_store_statistics_add_up_the_scopes(service: TrueHeart) -> None:
    populate_for_stats(service)
    whole = service.stats()
    mine, other = service.stats(SCOPE), service.stats(OTHER_SCOPE)
    assert whole.scope is None
    for name in (
        "events",
        "events_with_body",
        "memories",
        "active_memories",
        "sealed_memories",
        "claims",
        "extraction_records",
        "tombstones",
        "audit_records",
        "search_entries",
        "search_terms",
        "search_postings",
        "vectors",
    ):
        assert getattr(whole, name) == getattr(mine, name) + getattr(other, name), name
    assert whole.memories_by_kind == (("claim", 2), ("fact", 3), ("plan", 1))


def test_storage_sizes_are_reported_exactly_with_the_capability(
    repository: Repository, service: TrueHeart
) -> None:
    populate_for_stats(service)
    stats = service.stats()
    if Capability.STORAGE_SIZES in repository.capabilities:
        assert isinstance(stats.storage_bytes, int) and stats.storage_bytes > 0
        assert stats.storage_detail, "the parts of the storage are named"
        assert all(isinstance(part, str) and part for part, _ in stats.storage_detail)
        assert stats.storage_bytes == sum(size for _, size in stats.storage_detail)
    else:
        assert stats.storage_bytes is None and stats.storage_detail == ()
        assert stats.database_bytes is None and stats.wal_bytes is None


def test_an_empty_or_unknown_scope_counts_nothing(service: TrueHeart) -> None:
    populate_for_stats(service)
    stats = service.stats(Scope("tenant", "owner", "nobody"))
    assert stats.events == stats.memories == stats.audit_records == stats.search_terms == 0
    assert stats.memories_by_kind == ()


def test_statistics_change_nothing(service: TrueHeart) -> None:
    populate_for_stats(service)
    audit = service.audit(SCOPE, limit=100)
    assert service.stats() == service.stats()
    assert service.audit(SCOPE, limit=100) == audit


@pytest.mark.parametrize("scope", [("tenant", "owner", "subject"), "tenant/owner/subject", 1])
def test_scope_must_be_a_scope(service: TrueHeart, scope: object) -> None:
    with pytest.raises(ValidationError, match=r"^scope: must be a Scope$"):
        service.stats(scope)  # type: ignore[arg-type]


def test_statistics_validate_their_fields() -> None:
    base = StoreStats(None, 1, 1, 0, 0, 0, (), 0, 0, 0, 0, 0, 0, 0, 0, None, None)
    assert base.events_without_body == 0
    with pytest.raises(ValidationError, match=r"^events: must be a non-negative int$"):
        StoreStats(None, -1, 0, 0, 0, 0, (), 0, 0, 0, 0, 0, 0, 0, 0, None, None)
    with pytest.raises(ValidationError, match=r"^memories_by_kind: must be sorted by kind$"):
        StoreStats(None, 0, 0, 2, 2, 0, (("b", 1), ("a", 1)), 0, 0, 0, 0, 0, 0, 0, 0, 1, 0)


def test_a_sealed_memorys_own_terms_are_not_counted(service: TrueHeart) -> None:
    # A memory of this many distinct terms is merged into the index as soon as it is
    # written, so sealing it leaves a removal to apply rather than dropping an addition.
    words = [f"zq{n}" for n in range(1_100)]
    service.ingest_events([event("evt-1"), event("evt-1", scope=OTHER_SCOPE)])
    service.materialize_once(memory("mem-1", ("evt-1",), content="alpha beta"))
    service.materialize_once(memory("mem-2", ("evt-1",), content=" ".join(["beta", *words])))
    service.materialize_once(memory("mem-1", ("evt-1",), scope=OTHER_SCOPE, content="zq1"))
    assert service.stats(SCOPE).search_terms == 2 + len(words)
    service.govern(command(GovernanceAction.SEAL, "mem-2"))
    # Only "alpha" and "beta" are still held by a searchable memory of the scope; the
    # other scope's "zq1" is its own.
    assert service.stats(SCOPE).search_terms == 2
    assert service.stats().search_terms == 3
    receipt = service.erase_subject(SCOPE, occurred_at=NOW, dry_run=True)
    assert receipt.erased.search_term == 2
    service.govern(command(GovernanceAction.RESTORE, "mem-2"))
    assert service.stats(SCOPE).search_terms == 2 + len(words)
    assert service.stats().search_terms == 3 + len(words)
