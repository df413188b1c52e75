"""The search index's pending rows and their merge (white-box): a seal waits in a pending
row, an erasure of another holder of the same terms reaches through it, and the merge
that follows keeps every count exact."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from byte_search import key_bytes, leftovers
from conformance_builders import NOW, SCOPE, command, event, memory
from sqlite_builders import merge_pending_of

from trueheart_core import ArtifactClass, GovernanceAction, SearchQuery, TrueHeart
from trueheart_core.adapters.sqlite.pending import PENDING_BOUND


def _found(service: TrueHeart, text: str) -> list[str]:
    capsule = service.search(SearchQuery(SCOPE, text, NOW + timedelta(hours=1), limit=100))
    return sorted(item.memory.memory_id for item in capsule.items)


def test_forgetting_the_last_holder_of_a_term_whose_other_holder_is_sealed(
    service: TrueHeart, db_path: Path
) -> None:
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-a", content="zqxrare"))
    service.materialize_once(memory("mem-b", content="zqxrare second"))
    merge_pending_of(db_path)  # both entries merged
    sealed = service.govern(command(GovernanceAction.SEAL, "mem-a"))
    # mem-b still holds the term: the seal takes out the entry only.
    assert sealed.removed == (ArtifactClass.SEARCH_ENTRY,)
    assert _found(service, "zqxrare") == ["mem-b"]
    forgotten = service.govern(command(GovernanceAction.FORGET, "mem-b"))
    # No active memory holds the term now: it goes with mem-b.
    assert ArtifactClass.SEARCH_TERM in forgotten.removed
    assert service.verify_integrity().ok
    assert leftovers(db_path, [key_bytes("zqxrare"), b"zqxrare second"]) == {}
    assert _found(service, "zqxrare") == []
    merge_pending_of(db_path)  # the seal's removal merged afterwards
    assert service.verify_integrity().ok
    # Restoring the sealed memory brings the term back, under a new row.
    service.govern(command(GovernanceAction.RESTORE, "mem-a"))
    assert _found(service, "zqxrare") == ["mem-a"]
    assert service.verify_integrity().ok


def test_the_write_that_reaches_the_bound_merges_and_answers_stay_the_same(
    service: TrueHeart,
) -> None:
    service.ingest_event(event("evt-1"))
    for number in range(PENDING_BOUND - 1):
        service.materialize_once(memory(f"mem-{number:03d}", content=f"tea {number} green"))
    before = _found(service, "green tea")
    service.govern(command(GovernanceAction.SEAL, "mem-000"))  # the bound-th pending row
    assert _found(service, "green tea") == [m for m in before if m != "mem-000"]
    assert service.verify_integrity().ok
    service.govern(command(GovernanceAction.RESTORE, "mem-000"))
    assert _found(service, "green tea") == before
    assert service.verify_integrity().ok
