"""Erasure reaches the search index: after a forget, a delete, or the delete of the
memory's raw event, no word of the memory remains anywhere in the backend's storage, as
its forensic search finds (``Capability.FORENSICS``), while a word that a surviving
memory shares stays searchable. The index holds a few thousand postings and the secret
memory is indexed between others, so that its entries sit among entries that stay.
"""

from __future__ import annotations

import pytest
from conformance_builders import NOW, SCOPE, command, event, found_in_storage, memory

from trueheart_core import EntityType, GovernanceAction, SearchQuery, TrueHeart
from trueheart_core.ports import Capability, Repository

pytestmark = pytest.mark.requires(Capability.FORENSICS)

SECRET = "zqxjvortex"
TYPO = "zqxjvotrex"  # one transposition away: found through the correction of a query
# Enough distinct terms that the memory's postings are many.
SECRET_TERMS = [SECRET, *(f"{SECRET}{index}" for index in range(300))]
SHARED = "sharedmarmalade"
BUDGET = 100_000
FILLERS = 100
WORDS_PER_FILLER = 40


def _build(service: TrueHeart, repository: Repository) -> None:
    """A few thousand postings with the secret memory's rows in the middle."""
    drafts = [event(f"evt-{index}") for index in range(FILLERS)] + [event("evt-secret")]
    service.ingest_events(drafts)
    for index in range(FILLERS):
        if index == FILLERS // 2:
            content = " ".join(SECRET_TERMS) + f" {SHARED}"
            service.materialize_once(memory("mem-secret", ("evt-secret",), content=content))
        words = " ".join(f"filler{index}x{word}" for word in range(WORDS_PER_FILLER))
        extra = f" {SHARED}" if index == 7 else ""
        service.materialize_once(
            memory(f"mem-{index:03d}", (f"evt-{index}",), content=words + extra)
        )
    # An erasing call on an unrelated memory first: the secret memory stays stored. (Only
    # its first word is looked for: storage may split a long body at any byte.)
    service.govern(command(GovernanceAction.FORGET, f"mem-{FILLERS - 1:03d}"))
    assert found_in_storage(repository, [SECRET]) == [SECRET]
    found = service.search(SearchQuery(SCOPE, SECRET, NOW, budget_tokens=BUDGET))
    assert [item.memory.memory_id for item in found.items] == ["mem-secret"]
    corrected = service.search(SearchQuery(SCOPE, TYPO, NOW, budget_tokens=BUDGET))
    assert [item.memory.memory_id for item in corrected.items] == ["mem-secret"]


def _assert_erased(service: TrueHeart, repository: Repository) -> None:
    assert found_in_storage(repository, SECRET_TERMS) == []
    # A word that a surviving memory shares stays, and stays searchable for it.
    assert found_in_storage(repository, [SHARED, "filler7x39"]) == [SHARED, "filler7x39"]
    kept = service.search(SearchQuery(SCOPE, SHARED, NOW, budget_tokens=BUDGET))
    assert [item.memory.memory_id for item in kept.items] == ["mem-007"]
    assert service.search(SearchQuery(SCOPE, SECRET, NOW)).matched == 0
    assert service.search(SearchQuery(SCOPE, TYPO, NOW)).matched == 0  # nothing to correct to
    assert found_in_storage(repository, [TYPO]) == []  # a search stores nothing it looks up
    assert service.verify_integrity().ok


@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_forget_and_delete_erase_the_memory_terms(
    repository: Repository, service: TrueHeart, action: GovernanceAction
) -> None:
    _build(service, repository)
    service.govern(command(action, "mem-secret"))
    _assert_erased(service, repository)


def test_raw_event_delete_erases_the_dependent_memory_terms(
    repository: Repository, service: TrueHeart
) -> None:
    _build(service, repository)
    result = service.govern(
        command(GovernanceAction.DELETE, "evt-secret", entity_type=EntityType.RAW_EVENT)
    )
    assert result.affected_ids == ("evt-secret", "mem-secret")
    _assert_erased(service, repository)


def test_sealed_memory_terms_are_erased_on_forget(
    repository: Repository, service: TrueHeart
) -> None:
    _build(service, repository)
    service.govern(command(GovernanceAction.SEAL, "mem-secret"))
    assert service.search(SearchQuery(SCOPE, SECRET, NOW)).matched == 0
    service.govern(command(GovernanceAction.FORGET, "mem-secret"))
    _assert_erased(service, repository)
