"""Erasure reaches the storage: removed bodies are gone from everything the backend keeps,
as its own forensic search of its storage finds (``Capability.FORENSICS``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from conformance_builders import NOW, SCOPE, command, event, found_in_storage, memory

from trueheart_core import EntityType, GovernanceAction, TrueHeart
from trueheart_core.ports import Capability, Repository

pytestmark = pytest.mark.requires(Capability.FORENSICS)

RAW_BODY = "erasure-raw-body-qx7v3k9p-" + "R" * 40
MEMORY_BODY = "erasure-memory-body-mz4w8t2n-" + "M" * 40
KEEP_BODY = "erasure-kept-body-hy6d1c5f-" + "K" * 40


def _present(repository: Repository, text: str) -> bool:
    return found_in_storage(repository, [text]) == [text]


def test_expiry_erases_raw_body(repository: Repository, service: TrueHeart) -> None:
    service.ingest_event(event("evt-1", content=RAW_BODY, raw_ttl=timedelta(days=1)))
    service.ingest_event(event("evt-2", content=KEEP_BODY, raw_ttl=timedelta(days=9)))
    assert _present(repository, RAW_BODY)
    assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 1
    assert not _present(repository, RAW_BODY)
    assert _present(repository, KEEP_BODY)


def test_raw_delete_erases_event_and_dependent_memory_bodies(
    repository: Repository, service: TrueHeart
) -> None:
    receipt = service.ingest_event(event("evt-1", content=RAW_BODY))
    service.ingest_event(event("evt-2", content=KEEP_BODY))
    service.materialize_once(memory("mem-1", ("evt-1", "evt-2"), content=MEMORY_BODY))
    assert _present(repository, receipt.content_hash)
    assert _present(repository, RAW_BODY)
    assert _present(repository, MEMORY_BODY)
    result = service.govern(
        command(GovernanceAction.DELETE, "evt-1", entity_type=EntityType.RAW_EVENT)
    )
    assert result.affected_ids == ("evt-1", "mem-1")
    assert not _present(repository, RAW_BODY)
    assert not _present(repository, MEMORY_BODY)
    assert _present(repository, KEEP_BODY)
    # the receipt went too, and with it the content hash derived from the body
    assert not _present(repository, receipt.content_hash)


@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_memory_forget_and_delete_erase_memory_body(
    repository: Repository, service: TrueHeart, action: GovernanceAction
) -> None:
    service.ingest_event(event("evt-1", content=RAW_BODY))
    service.materialize_once(memory("mem-1", content=MEMORY_BODY))
    service.materialize_once(memory("mem-2", content=KEEP_BODY))
    assert _present(repository, MEMORY_BODY)
    service.govern(command(action, "mem-1"))
    assert not _present(repository, MEMORY_BODY)
    # forgetting a memory never touches its source event nor sibling memories
    assert _present(repository, RAW_BODY)
    assert _present(repository, KEEP_BODY)


def test_sealed_memory_body_is_erased_on_forget(repository: Repository, service: TrueHeart) -> None:
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-1", content=MEMORY_BODY))
    service.govern(command(GovernanceAction.SEAL, "mem-1"))
    assert _present(repository, MEMORY_BODY)
    service.govern(command(GovernanceAction.FORGET, "mem-1"))
    assert not _present(repository, MEMORY_BODY)


def test_erasure_survives_close_and_reopen(
    repository: Repository, service: TrueHeart, reopen: Callable[..., Repository]
) -> None:
    service.ingest_event(event("evt-1", content=RAW_BODY, raw_ttl=timedelta(days=1)))
    service.materialize_once(memory("mem-1", content=MEMORY_BODY))
    service.expire_raw_content(as_of=NOW + timedelta(days=1))
    service.govern(command(GovernanceAction.FORGET, "mem-1"))
    repository.close()
    reopened = reopen()
    assert found_in_storage(reopened, [RAW_BODY, MEMORY_BODY, "evt-1"]) == ["evt-1"]
    again = TrueHeart(reopened, clock=lambda: NOW)
    assert [r.action for r in again.audit(SCOPE)][:2] == ["expire", "forget"]
    again.close()
    assert found_in_storage(reopen(), [RAW_BODY, MEMORY_BODY, "evt-1"]) == ["evt-1"]


def test_many_bodies_are_all_erased(repository: Repository, service: TrueHeart) -> None:
    bodies = [f"erasure-bulk-{index:03d}-" + "B" * 300 for index in range(40)]
    for index, body in enumerate(bodies):
        service.ingest_event(event(f"evt-{index}", content=body, raw_ttl=timedelta(days=1)))
    assert all(_present(repository, body) for body in bodies)
    assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 40
    assert found_in_storage(repository, bodies) == []
