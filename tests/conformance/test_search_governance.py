"""The search index follows governance: seal, restore, forget, delete and raw deletion;
replays, expiry and rebuilds leave it exact. (A tampered index, reported and rebuilt:
see the SQLite adapter tests.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    assert_bm25_reference,
    check_capsule,
    command,
    event,
    materialize_all,
    memory,
)

from trueheart_core import (
    EntityType,
    GovernanceAction,
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
    assert_bm25_reference(sealed, "green tea", {k: v for k, v in CONTENTS.items() if k != "mem-1"})
    service.govern(command(RESTORE, "mem-1"))
    restored = _search(service, "green tea")
    assert restored == before
    assert _scores(restored)["mem-1"] == _scores(before)["mem-1"]
    assert service.verify_integrity().ok


@pytest.mark.parametrize("merged_first", [False, True])
def test_a_memory_restored_after_the_last_other_holder_of_its_word_went_is_found_by_it(
    service: TrueHeart, merged_first: bool
) -> None:
    # mem-a is sealed; mem-b, the only other memory holding "zeta", is forgotten, which
    # erases the word's index data; restoring mem-a must make it findable by the word
    # again, whether its entry was already in the main index (70 memories: past the
    # point where the SQLite index merges its pending entries) or still pending.
    fillers = {f"mem-{n:03d}": f"filler number {n}" for n in range(70 if merged_first else 2)}
    materialize_all(service, {"mem-a": "kyoto zeta", "mem-b": "zeta", **fillers})
    service.govern(command(SEAL, "mem-a"))
    service.govern(command(FORGET, "mem-b"))
    assert _ids(_search(service, "zeta")) == []
    service.govern(command(RESTORE, "mem-a"))
    assert _ids(_search(service, "zeta")) == ["mem-a"]
    assert _ids(_search(service, "kyoto")) == ["mem-a"]
    assert_bm25_reference(
        _search(service, "zeta kyoto"), "zeta kyoto", {"mem-a": "kyoto zeta", **fillers}
    )
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
    assert_bm25_reference(after, "tea", remaining)
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
    assert_bm25_reference(after, "tea", {"mem-c": "tea from the second"})
    survivor = _search(service, "tea from the")
    assert_bm25_reference(survivor, "tea from the", {"mem-c": "tea from the second"})
    assert service.verify_integrity().ok


def test_forget_changes_the_scope_statistics(service: TrueHeart) -> None:
    materialize_all(service, CONTENTS)
    materialize_all(service, CONTENTS, scope=OTHER_SCOPE)
    assert_bm25_reference(_search(service, "tea morning"), "tea morning", CONTENTS)
    service.govern(command(FORGET, "mem-3"))
    remaining = {k: v for k, v in CONTENTS.items() if k != "mem-3"}
    assert_bm25_reference(_search(service, "tea morning"), "tea morning", remaining)
    # The other scope keeps its own statistics.
    assert_bm25_reference(_search(service, "tea morning", OTHER_SCOPE), "tea morning", CONTENTS)


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
    assert_bm25_reference(before, "green tea", CONTENTS)
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


def _many(count: int) -> dict[str, str]:
    """Contents sharing some words (and repeating some) and holding words of their own."""
    words = ("tea", "coffee", "garden", "river", "lamp", "violin")
    return {
        f"mem-{index:03d}": f"{words[index % 6]} {words[index % 4]} {words[index % 4]} "
        f"note{index} {'river' if index % 9 == 0 else 'stone'}"
        for index in range(count)
    }


def _whole(service: TrueHeart, text: str) -> MemoryCapsule:
    """A search whose capsule has room for every match."""
    query = SearchQuery(SCOPE, text, NOW + timedelta(hours=1), limit=100, budget_tokens=100_000)
    capsule = service.search(query)
    check_capsule(capsule)
    return capsule


@pytest.mark.parametrize("count", [10, 150])
def test_many_writes_and_removals_keep_the_scores_exact(service: TrueHeart, count: int) -> None:
    contents = _many(count)
    materialize_all(service, contents)
    active = dict(contents)
    queries = ("tea", "river violin", "note7 coffee", "lamp")
    for query in queries:
        assert_bm25_reference(_whole(service, query), query, active)
    # Remove memories written early and late, by each way out of the index.
    chosen = [f"mem-{index:03d}" for index in (0, 1, 2, count // 2, count - 2, count - 1)]
    for memory_id, action in zip(chosen, [SEAL, FORGET, DELETE] * 2, strict=True):
        service.govern(command(action, memory_id))
        del active[memory_id]
        for query in queries:
            assert_bm25_reference(_whole(service, query), query, active)
    service.govern(command(RESTORE, chosen[0]))
    active[chosen[0]] = contents[chosen[0]]
    for query in (*queries, "note1", "note0"):
        assert_bm25_reference(_whole(service, query), query, active)
    assert service.verify_integrity().ok
    # A word only a forgotten memory held is gone from the index.
    assert service.search(SearchQuery(SCOPE, "note1", NOW)).matched == 0
