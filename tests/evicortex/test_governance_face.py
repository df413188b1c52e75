"""What the engine adds under the face: audit of every write and purge, whole-namespace
erasure through ``EviCortex.engine``, and supersession that stays inside a namespace."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from evicortex_builders import NS, OTHER, scope

from evicortex import ClaimInput, EviCortex
from evicortex.errors import PurgedError, ValidationError
from trueheart_core import ArtifactClass, EntityType


def test_writes_and_purges_leave_body_free_audit(memory: EviCortex) -> None:
    secret = "the audit must not hold this body"
    record = memory.remember(namespace=NS, content=secret, claims=[ClaimInput("u", "p", "v")])
    assert memory.purge_memory(namespace=NS, memory_id=record.id)
    audit = memory.engine.audit(scope(NS))
    actions = [(a.action, a.entity_type, a.entity_id) for a in audit]
    assert ("delete", EntityType.RAW_EVENT, record.id) in actions
    assert ("ingest", EntityType.RAW_EVENT, record.id) in actions
    assert ("materialize", EntityType.MEMORY, record.id) in actions
    assert all(secret not in repr(a) for a in audit)


def test_a_namespace_is_erased_at_once_through_the_engine(memory: EviCortex) -> None:
    kept = memory.remember(namespace=OTHER, content="another namespace")
    records = [
        memory.remember(namespace=NS, content=f"note {i}", idempotency_key=f"k{i}")
        for i in range(3)
    ]
    receipt = memory.engine.erase_subject(scope(NS), occurred_at=datetime.now(UTC))
    assert receipt.verified
    assert receipt.erased[ArtifactClass.MEMORY] == 3
    for record in records:
        with pytest.raises(KeyError):
            memory.expand(namespace=NS, memory_id=record.id)
    with pytest.raises(PurgedError):
        memory.remember(namespace=NS, content="note 0", idempotency_key="k0")
    assert memory.expand(namespace=OTHER, memory_id=kept.id) == kept
    assert memory.stats(NS).memories == 0


def test_supersession_stays_inside_a_namespace(memory: EviCortex) -> None:
    theirs = memory.remember(namespace=OTHER, content="x", claims=[ClaimInput("u", "p", "a")])
    with pytest.raises(
        ValidationError, match=r"^supersedes: must name a claim of the same namespace$"
    ):
        memory.remember(
            namespace=NS,
            content="y",
            claims=[ClaimInput("u", "p", "b", supersedes=theirs.claims[0].id)],
        )
    with pytest.raises(
        ValidationError, match=r"^supersedes: must name a claim of the same namespace$"
    ):
        memory.remember(
            namespace=NS, content="y", claims=[ClaimInput("u", "p", "b", supersedes="claim-none")]
        )
    assert memory.stats(NS).memories == 0
    assert memory.expand(namespace=OTHER, memory_id=theirs.id).claims[0].status == "current"
