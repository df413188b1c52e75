"""A write finds the search terms it reuses as the store holds them now: after another
repository on the same store erased them, after this repository erased them itself,
after a write that added them was rolled back, and after compaction. Each case writes a
word again and searches for it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conformance_builders import NOW, SCOPE, command, event, memory

from trueheart_core import GovernanceAction, SearchQuery, TrueHeart, TrueHeartError
from trueheart_core.ports import Repository

WORD = "quokkaberry"


def _found(service: TrueHeart, word: str = WORD) -> list[str]:
    answer = service.search(SearchQuery(SCOPE, word, NOW, budget_tokens=10_000))
    return [item.memory.memory_id for item in answer.items]


def _check_everywhere(
    service: TrueHeart, expected: list[str], fresh: Repository | None = None
) -> None:
    assert _found(service) == expected
    assert service.verify_integrity().ok
    if fresh is not None:
        other = TrueHeart(fresh, clock=lambda: NOW)
        assert _found(other) == expected
        assert other.verify_integrity().ok


def test_a_word_erased_by_another_repository_is_written_anew(
    service: TrueHeart, reopen: Callable[..., Repository]
) -> None:
    service.ingest_events([event("evt-1"), event("evt-2")])
    service.materialize_once(memory("mem-1", ("evt-1",), content=f"{WORD} orchard"))
    assert _found(service) == ["mem-1"]
    # The other repository forgets the only memory holding the word: the word goes.
    other = TrueHeart(reopen(), clock=lambda: NOW)
    other.govern(command(GovernanceAction.FORGET, "mem-1"))
    assert _found(other) == []
    service.materialize_once(memory("mem-2", ("evt-2",), content=f"{WORD} harvest"))
    _check_everywhere(service, ["mem-2"], reopen())
    assert _found(service, "harvest") == ["mem-2"]


def test_a_word_this_repository_erased_is_written_anew(service: TrueHeart) -> None:
    service.ingest_events([event("evt-1"), event("evt-2"), event("evt-3")])
    service.materialize_once(memory("mem-1", ("evt-1",), content=f"{WORD} orchard"))
    service.govern(command(GovernanceAction.FORGET, "mem-1"))
    service.materialize_once(memory("mem-2", ("evt-2",), content=f"{WORD} harvest"))
    assert _found(service) == ["mem-2"]
    # And once more after the whole subject is erased.
    service.erase_subject(SCOPE, occurred_at=NOW)
    service.ingest_event(event("evt-4"))
    service.materialize_once(memory("mem-3", ("evt-4",), content=f"{WORD} again"))
    _check_everywhere(service, ["mem-3"])


def test_a_word_added_by_a_rolled_back_write_is_written_anew(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1"))
    with pytest.raises(TrueHeartError):
        service.ingest_derived(
            event("evt-2"),
            memories=[
                memory("mem-1", ("evt-2",), content=f"{WORD} orchard"),
                memory("mem-2", ("evt-missing",), content="never stored"),
            ],
        )
    assert _found(service) == []
    # A new word takes the next term row first, then the word itself comes back.
    service.materialize_once(memory("mem-3", ("evt-1",), content="zzplaceholder"))
    service.materialize_once(memory("mem-4", ("evt-1",), content=f"{WORD} harvest"))
    _check_everywhere(service, ["mem-4"])
    assert _found(service, "zzplaceholder") == ["mem-3"]


def test_a_word_left_only_in_a_sealed_memory_is_written_anew(service: TrueHeart) -> None:
    service.ingest_events([event("evt-1"), event("evt-2")])
    service.materialize_once(memory("mem-1", ("evt-1",), content=f"{WORD} orchard"))
    service.govern(command(GovernanceAction.SEAL, "mem-1"))
    # Enough other writes that the index folds the seal in (and lets the word go).
    for index in range(200):
        service.materialize_once(memory(f"mem-x{index}", ("evt-2",), content=f"filler{index}"))
    service.materialize_once(memory("mem-2", ("evt-2",), content=f"{WORD} harvest"))
    _check_everywhere(service, ["mem-2"])
    service.govern(command(GovernanceAction.RESTORE, "mem-1"))
    _check_everywhere(service, ["mem-1", "mem-2"])


def test_a_new_word_after_compaction_is_not_taken_for_an_erased_one(service: TrueHeart) -> None:
    service.ingest_events([event("evt-1"), event("evt-2"), event("evt-3")])

    def fillers(start: int, count: int) -> None:
        # Words the store already holds, each memory of its own kind (no shared lineage).
        for index in range(start, start + count):
            service.materialize_once(
                memory(f"mem-f{index}", ("evt-3",), content="common words", kind=f"k{index}")
            )

    fillers(0, 100)
    service.materialize_once(memory("mem-n", ("evt-1",), content="omegaword"))
    service.materialize_once(memory("mem-m", ("evt-2",), content="omegaword"))
    fillers(100, 100)  # the index folds both in
    # The seal's removal of "omegaword" waits; the forget then leaves the word to nobody.
    service.govern(command(GovernanceAction.SEAL, "mem-n"))
    service.govern(command(GovernanceAction.FORGET, "mem-m"))
    service.compact()
    service.materialize_once(memory("mem-p", ("evt-3",), content=f"{WORD} orchard"))
    fillers(200, 100)  # the index folds the waiting removal and the new word in
    _check_everywhere(service, ["mem-p"])
    service.govern(command(GovernanceAction.RESTORE, "mem-n"))
    assert _found(service, "omegaword") == ["mem-n"]
    _check_everywhere(service, ["mem-p"])
