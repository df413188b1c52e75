"""Two repositories on one store: a tombstone one of them writes binds the other's next
write at once, even in a scope the other has just written to without tombstones."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conformance_builders import NOW, command, event, memory

from trueheart_core import EntityDeleted, EntityType, GovernanceAction, TrueHeart
from trueheart_core.ports import Repository


def test_a_tombstone_written_by_another_repository_binds_the_next_write(
    service: TrueHeart, reopen: Callable[..., Repository]
) -> None:
    service.ingest_events([event("evt-1"), event("evt-2")])
    service.materialize_once(memory("mem-1", ("evt-1",), content="first"))
    service.materialize_once(memory("mem-2", ("evt-2",), content="second"))
    other = TrueHeart(reopen(), clock=lambda: NOW)
    other.govern(command(GovernanceAction.FORGET, "mem-1"))
    other.govern(command(GovernanceAction.DELETE, "evt-2", entity_type=EntityType.RAW_EVENT))
    with pytest.raises(EntityDeleted):
        service.materialize_once(memory("mem-1", ("evt-1",), content="first"))
    with pytest.raises(EntityDeleted):
        service.ingest_event(event("evt-2"))
    # The forgotten memory's fingerprint (its kind and sources) under a new ID too.
    with pytest.raises(EntityDeleted):
        service.materialize_once(memory("mem-1b", ("evt-1",), content="first"))
    assert service.verify_integrity().ok
