"""The search index follows governance: seal, restore, forget, delete and raw deletion;
replays, expiry and rebuilds leave it exact; verify_integrity reports a tampered index
and rebuild_search_index repairs it."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    bm25_reference,
    check_capsule,
    command,
    event,
    file_db_or_skip,
    materialize_all,
    memory,
    tamper,
)

from trueheart_core import (
    EntityType,
    GovernanceAction,
    IntegrityProblem,
    MemoryCapsule,
    Scope,
    SearchQuery,
    TrueHeart,
)

SEAL = GovernanceAction.SEAL
RESTORE = GovernanceAction.RESTORE
FORGET = GovernanceAction.FORGET
DELETE = GovernanceAction.DELETE

CONTENTS = {
    "mem-1": "green tea with lemon",
    "mem-2": "black tea",
    "mem-3": "the user drinks tea every morning",
}


def _search(service: TrueHeart, text: str, scope: Scope = SCOPE) -> MemoryCapsule:
    capsule = service.search(SearchQuery(scope, text, NOW + timedelta(hours=1), limit=100))
    check_capsule(capsule)
    return capsule


def _ids(capsule: MemoryCapsule) -> list[str]:
    return [item.memory.memory_id for item in capsule.items]


def _scores(capsule: MemoryCapsule) -> dict[str, float]:
    return {item.memory.memory_id: item.score for item in capsule.items}


def _assert_reference(capsule: MemoryCapsule, query: str, corpus: dict[str, str]) -> None:
    """Every item scores as BM25 over exactly ``corpus`` says, and nothing else matches."""
    texts = list(corpus.values())
    expected = {
        memory_id: bm25_reference(query, texts, content)
        for memory_id, content in corpus.items()
        if bm25_reference(query, texts, content) > 0
    }
    assert set(_scores(capsule)) == set(expected)
    assert capsule.matched == len(expected)
    for memory_id, score in _scores(capsule).items():
        assert math.isclose(score, expected[memory_id], rel_tol=1e-12), memory_id


def test_sealed_memories_are_not_searchable_until_restored(service: TrueHeart) -> None:
    materialize_all(service, CONTENTS)
    before = _search(service, "green tea")
    assert "mem-1" in _ids(before)
    service.govern(command(SEAL, "mem-1"))
    sealed = _search(service, "green tea")
    assert "mem-1" not in _ids(sealed)
    assert "mem-1" not in [entry.memory_id for entry in sealed.trace]
    assert _search(service, "lemon").matched == 0
    # Sealing takes the memory out of the statistics too.
    _assert_reference(sealed, "green tea", {k: v for k, v in CONTENTS.items() if k != "mem-1"})
    service.govern(command(RESTORE, "mem-1"))
    restored = _search(service, "green tea")
    assert restored == before
    assert _scores(restored)["mem-1"] == _scores(before)["mem-1"]
    assert service.verify_integrity().ok


@pytest.mark.parametrize("action", [FORGET, DELETE])
def test_forgotten_and_deleted_memories_never_appear(
    service: TrueHeart, action: GovernanceAction
) -> None:
    materialize_all(service, CONTENTS)
    before = _search(service, "tea")
    assert before.matched == 3
    service.govern(command(action, "mem-2"))
    after = _search(service, "tea")
    assert "mem-2" not in [entry.memory_id for entry in after.trace]
    assert _search(service, "black").matched == 0
    remaining = {k: v for k, v in CONTENTS.items() if k != "mem-2"}
    _assert_reference(after, "tea", remaining)
    # The statistics changed with N: a remaining memory's score is not what it was.
    assert _scores(after)["mem-1"] != _scores(before)["mem-1"]
    assert service.verify_integrity().ok


def test_deleting_a_raw_event_removes_its_dependents_from_search(service: TrueHeart) -> None:
    for event_id in ("evt-1", "evt-2"):
        service.ingest_event(event(event_id))
    service.materialize_once(memory("mem-a", ("evt-1",), content="tea from the first"))
    service.materialize_once(memory("mem-b", ("evt-1", "evt-2"), content="tea from both"))
    service.materialize_once(memory("mem-c", ("evt-2",), content="tea from the second"))
    assert sorted(_ids(_search(service, "tea"))) == ["mem-a", "mem-b", "mem-c"]
    result = service.govern(command(DELETE, "evt-1", entity_type=EntityType.RAW_EVENT))
    assert result.affected_ids == ("evt-1", "mem-a", "mem-b")
    after = _search(service, "tea")
    assert _ids(after) == ["mem-c"]
    assert _search(service, "both first").matched == 0
    _assert_reference(after, "tea", {"mem-c": "tea from the second"})
    survivor = _search(service, "tea from the")
    _assert_reference(survivor, "tea from the", {"mem-c": "tea from the second"})
    assert service.verify_integrity().ok


def test_forget_changes_the_scope_statistics(service: TrueHeart) -> None:
    materialize_all(service, CONTENTS)
    materialize_all(service, CONTENTS, scope=OTHER_SCOPE)
    _assert_reference(_search(service, "tea morning"), "tea morning", CONTENTS)
    service.govern(command(FORGET, "mem-3"))
    remaining = {k: v for k, v in CONTENTS.items() if k != "mem-3"}
    _assert_reference(_search(service, "tea morning"), "tea morning", remaining)
    # The other scope keeps its own statistics.
    _assert_reference(_search(service, "tea morning", OTHER_SCOPE), "tea morning", CONTENTS)


def test_expired_raw_bodies_do_not_affect_memory_search(service: TrueHeart) -> None:
    materialize_all(service, CONTENTS)
    before = _search(service, "tea")
    assert service.expire_raw_content(as_of=NOW + timedelta(days=8)) == 1
    assert service.get_receipt(SCOPE, "evt-1").content_available is False
    assert _search(service, "tea") == before
    assert service.verify_integrity().ok


def test_an_idempotent_replay_does_not_index_twice(service: TrueHeart) -> None:
    records = materialize_all(service, CONTENTS)
    before = _search(service, "green tea")
    replayed = service.materialize_once(memory("mem-1", content=CONTENTS["mem-1"]))
    assert replayed == records["mem-1"]
    assert _search(service, "green tea") == before
    _assert_reference(before, "green tea", CONTENTS)
    assert service.verify_integrity().ok
    assert service.rebuild_search_index() == 3


def test_rebuild_returns_the_active_count_and_keeps_results(service: TrueHeart) -> None:
    assert service.rebuild_search_index() == 0
    materialize_all(service, CONTENTS)
    materialize_all(service, {"mem-x": "tea elsewhere", "mem-y": "more tea"}, scope=OTHER_SCOPE)
    service.govern(command(SEAL, "mem-2"))
    service.govern(command(FORGET, "mem-y", scope=OTHER_SCOPE))
    before = (_search(service, "tea lemon"), _search(service, "tea", OTHER_SCOPE))
    assert service.rebuild_search_index() == 3  # mem-1, mem-3, mem-x
    assert (_search(service, "tea lemon"), _search(service, "tea", OTHER_SCOPE)) == before
    assert service.rebuild_search_index() == 3
    assert service.verify_integrity().ok


def test_verify_integrity_is_clean_after_a_mixed_workload(service: TrueHeart) -> None:
    for scope in (SCOPE, OTHER_SCOPE):
        for event_id in ("evt-1", "evt-2", "evt-3"):
            service.ingest_event(event(event_id, scope=scope))
        for number, content in enumerate(CONTENTS.values(), 1):
            sources = (f"evt-{number}",) if number < 3 else ("evt-2", "evt-3")
            service.materialize_once(memory(f"mem-{number}", sources, scope=scope, content=content))
    service.materialize_once(memory("mem-1", content=CONTENTS["mem-1"]))  # replay
    service.govern(command(SEAL, "mem-1"))
    service.govern(command(SEAL, "mem-2", scope=OTHER_SCOPE))
    service.govern(command(RESTORE, "mem-1"))
    service.govern(command(FORGET, "mem-3"))
    service.govern(command(DELETE, "evt-1", entity_type=EntityType.RAW_EVENT, scope=OTHER_SCOPE))
    service.expire_raw_content(as_of=NOW + timedelta(days=8))
    service.govern(command(SEAL, "mem-2"))
    service.materialize_once(memory("mem-4", ("evt-3",), content="jasmine tea"))
    assert service.verify_integrity().ok
    assert service.verify_integrity(SCOPE).ok
    assert service.verify_integrity(OTHER_SCOPE).ok
    assert _ids(_search(service, "tea")) == ["mem-4", "mem-1"]
    assert _search(service, "tea", OTHER_SCOPE).matched == 1  # mem-3 only
    assert service.rebuild_search_index() == 3
    assert service.verify_integrity().ok


# --- tampering with the index behind the library's back (file-backed store only) -----------

DOC = "(SELECT rid FROM memories WHERE memory_id = 'mem-1')"
FIRST_TERM = f"(SELECT MIN(term_id) FROM search_postings WHERE doc = {DOC})"

# Each statement damages the index (populated with mem-1 and mem-2 active and mem-3
# sealed, in SCOPE) and the problems verify_integrity must report, as
# (entity_id, whole-store scope, code).
INDEX_TAMPERS: dict[str, tuple[str, set[tuple[str, Scope | None, str]]]] = {
    "delete-posting": (
        f"DELETE FROM search_postings WHERE doc = {DOC} AND term_id = {FIRST_TERM}",
        {("mem-1", SCOPE, "index_entry_mismatch"), ("", SCOPE, "term_count_mismatch")},
    ),
    "change-df": (
        f"UPDATE search_terms SET df = df + 1 WHERE term_id = {FIRST_TERM}",
        {("", SCOPE, "term_count_mismatch")},
    ),
    "duplicate-term": (
        "INSERT INTO search_terms (scope_id, bucket, term, df) "
        f"SELECT scope_id, bucket, term, 0 FROM search_terms WHERE term_id = {FIRST_TERM}",
        {("", SCOPE, "duplicate_term")},
    ),
    "change-tf": (
        f"UPDATE search_postings SET tf = tf + 1 WHERE doc = {DOC} AND term_id = {FIRST_TERM}",
        {("mem-1", SCOPE, "index_entry_mismatch")},
    ),
    "change-entry": (
        f"UPDATE search_docs SET recall_until = recall_until + 1 WHERE doc = {DOC}",
        {("mem-1", SCOPE, "index_entry_mismatch")},
    ),
    "delete-entry": (
        f"DELETE FROM search_docs WHERE doc = {DOC}",
        {
            ("mem-1", SCOPE, "memory_not_indexed"),
            ("", SCOPE, "statistics_mismatch"),
            ("", None, "posting_without_entry"),
        },
    ),
    "index-sealed": (
        "INSERT INTO search_docs SELECT rid, scope_id, 2, created_at, clear_until, "
        "recall_until, trust, kind FROM memories WHERE memory_id = 'mem-3'",
        {("mem-3", SCOPE, "inactive_memory_indexed"), ("", SCOPE, "statistics_mismatch")},
    ),
    "entry-without-memory": (
        "INSERT INTO search_docs SELECT MAX(rid) + 100, scope_id, 2, created_at, clear_until, "
        "recall_until, trust, kind FROM memories",
        {("", SCOPE, "index_entry_without_memory"), ("", SCOPE, "statistics_mismatch")},
    ),
    "change-stats-docs": (
        "UPDATE search_stats SET docs = docs + 1",
        {("", SCOPE, "statistics_mismatch")},
    ),
    "change-stats-length": (
        "UPDATE search_stats SET length = length - 1",
        {("", SCOPE, "statistics_mismatch")},
    ),
}


def _populate_index(service: TrueHeart) -> None:
    materialize_all(service, {"mem-1": "green tea", "mem-2": "black tea", "mem-3": "tea too"})
    service.govern(command(SEAL, "mem-3"))


def _problems(service: TrueHeart, scope: Scope | None = None) -> set[tuple[str, Scope | None, str]]:
    report = service.verify_integrity(scope)
    assert all(p.entity_type == "search_index" for p in report.problems)
    found = {(p.entity_id, p.scope, p.code) for p in report.problems}
    assert len(found) == len(report.problems)
    return found


@pytest.mark.parametrize("case", sorted(INDEX_TAMPERS))
def test_a_tampered_index_is_reported_and_rebuilt(
    service: TrueHeart, tmp_path: Path, case: str
) -> None:
    path = file_db_or_skip(tmp_path)
    _populate_index(service)
    healthy = _search(service, "tea")
    sql, expected = INDEX_TAMPERS[case]
    assert tamper(path, sql) == 1
    assert _problems(service) == expected
    # A check of the scope names the scope wherever the whole-store check could not.
    assert _problems(service, SCOPE) == {(i, SCOPE, code) for i, _, code in expected}
    assert service.verify_integrity(OTHER_SCOPE).ok
    assert service.rebuild_search_index() == 2
    assert service.verify_integrity().ok
    assert _search(service, "tea") == healthy


def test_an_index_built_by_other_rules_is_reported_and_rebuilt_by_search(
    service: TrueHeart, tmp_path: Path
) -> None:
    path = file_db_or_skip(tmp_path)
    _populate_index(service)
    healthy = _search(service, "tea")
    assert tamper(path, "UPDATE search_meta SET tokenizer = 'other'") == 1
    (problem,) = service.verify_integrity().problems
    assert problem == IntegrityProblem("search_index", "", None, "index_built_by_other_rules")
    assert service.verify_integrity(SCOPE).problems == (problem,)
    assert _search(service, "tea") == healthy
    assert service.verify_integrity().ok


def test_a_stale_index_built_by_other_rules_is_replaced_whole(
    service: TrueHeart, tmp_path: Path
) -> None:
    path = file_db_or_skip(tmp_path)
    _populate_index(service)
    # Stale entries under another identity: counts that disagree and a missing entry.
    tamper(path, "UPDATE search_terms SET df = df + 5")
    tamper(path, f"DELETE FROM search_docs WHERE doc = {DOC}")
    tamper(path, "UPDATE search_meta SET tokenizer = 'other'")
    assert [p.code for p in service.verify_integrity().problems] == ["index_built_by_other_rules"]
    service.materialize_once(memory("mem-4", content="oolong tea"))  # rebuilds, then indexes
    assert service.verify_integrity().ok
    active = {"mem-1": "green tea", "mem-2": "black tea", "mem-4": "oolong tea"}
    _assert_reference(_search(service, "tea"), "tea", active)
    _assert_reference(_search(service, "green"), "green", active)
