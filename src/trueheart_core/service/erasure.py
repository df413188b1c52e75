"""Erasure of a whole subject: everything held in one exact scope, with tombstones.

Service-layer functions over one unit of work. The plan reads the scope's IDs and
counts; erasing writes one tombstone per event and memory (with the rules of a delete:
memory tombstones carry the stored dependency fingerprint), removes every scoped row
through the port's bulk primitive, and writes one summary audit row. The caller opens
an erasing unit and commits. Tombstones and audit rows already in the scope are kept:
they are body-free evidence, and the tombstones are what stops erased IDs coming back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from trueheart_core.domain import policy
from trueheart_core.domain.model import ArtifactClass, EntityType, Scope
from trueheart_core.domain.operations import ArtifactCounts
from trueheart_core.ports import UnitOfWork
from trueheart_core.service import loading, records, writing
from trueheart_core.service.records import scope_key

ERASE_ACTION = "erase_subject"


@dataclass(frozen=True, slots=True)
class ErasurePlan:
    """What a scope holds: the IDs to tombstone and report, and (for a dry run) the
    counts per class."""

    event_ids: tuple[str, ...]
    memories: tuple[tuple[str, str], ...]
    claim_ids: tuple[str, ...]
    counts: ArtifactCounts

    @property
    def memory_ids(self) -> tuple[str, ...]:
        return tuple(memory_id for memory_id, _ in self.memories)


def artifact_counts(found: Mapping[str, object]) -> ArtifactCounts:
    """The counts per artifact class of a port's count (other artifacts are left out);
    a count that is not a non-negative int fails closed."""
    values: dict[str, int] = {}
    for artifact in ArtifactClass:
        count = found.get(artifact.value, 0)
        if type(count) is not int or count < 0:
            loading.corrupt("invalid row count")
        values[artifact.value] = count
    return ArtifactCounts(**values)


def _ids(values: object, diagnostic: str) -> tuple[str, ...]:
    if not isinstance(values, list) or not all(isinstance(x, str) for x in values):
        loading.corrupt(diagnostic)
    return tuple(sorted(set(values)))


def plan(uow: UnitOfWork, scope: Scope, *, count: bool, thorough: bool = True) -> ErasurePlan:
    """Read what the exact scope holds (its rows counted only when ``count``), from the
    tables themselves when ``thorough``, else through the scope's indexes. Stored IDs
    are used as they are: erasure is not blocked by the corruption of what it erases."""
    key = scope_key(scope)
    ops = uow.operations
    event_ids = _ids(ops.scope_event_ids(key, thorough=thorough), "invalid raw event record")
    memories = ops.scope_memory_fingerprints(key, thorough=thorough)
    memory_ids = _ids([m for m, _ in memories], "invalid memory record")
    # A memory tombstone always carries a fingerprint; a damaged one is kept as text.
    fingerprints = {m: f if isinstance(f, str) else str(f) for m, f in memories}
    claim_ids = _ids(ops.scope_claim_ids(key, thorough=thorough), "invalid claim record")
    return ErasurePlan(
        event_ids,
        tuple((m, fingerprints[m]) for m in memory_ids),
        claim_ids,
        artifact_counts(ops.count_rows(key, from_tables=thorough)) if count else ArtifactCounts(),
    )


def erase(
    uow: UnitOfWork,
    scope: Scope,
    planned: ErasurePlan,
    occurred_at: datetime,
    *,
    rewrite: bool = True,
) -> ArtifactCounts:
    """Tombstone every planned event and memory, remove every row of the scope (see
    ``StoreOperations.erase_scope`` for ``rewrite``), and write the summary audit row;
    returns the rows removed per class."""
    for event_id in planned.event_ids:
        uow.tombstones.insert(
            records.tombstone_row(
                scope, EntityType.RAW_EVENT, event_id, None, occurred_at, policy.GOVERNANCE_REASON
            )
        )
    for memory_id, fingerprint in planned.memories:
        uow.tombstones.insert(
            records.tombstone_row(
                scope,
                EntityType.MEMORY,
                memory_id,
                fingerprint,
                occurred_at,
                policy.GOVERNANCE_REASON,
            )
        )
    removed = artifact_counts(uow.operations.erase_scope(scope_key(scope), rewrite=rewrite))
    writing.audit(uow, scope, ERASE_ACTION, EntityType.SUBJECT, scope.subject_id, occurred_at)
    return removed


def remaining(uow: UnitOfWork, scope: Scope, *, thorough: bool = True) -> ArtifactCounts:
    """What the exact scope still holds, per class: read from the tables themselves when
    ``thorough`` (not from indexes that a damaged store may have lost), else through the
    scope's indexes."""
    key = scope_key(scope)
    return artifact_counts(uow.operations.count_rows(key, from_tables=thorough))
