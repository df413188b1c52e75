"""Governance walkthrough: seal, restore, forget, delete, expire, verify and audit.

Run it from anywhere: ``python examples/governance.py``. It uses synthetic data, a fixed
clock and a temporary SQLite file that is removed on exit; its output is deterministic.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from trueheart_core import (
    EntityDeleted,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("synthetic-tenant", "synthetic-owner", "synthetic-subject")
RETENTION = RetentionPolicy(
    raw_ttl=timedelta(days=7),
    clear_for=timedelta(days=30),
    recall_for=timedelta(days=90),
)


def _event(event_id: str, content: str) -> RawEventDraft:
    return RawEventDraft(
        event_id=event_id,
        scope=SCOPE,
        source=SourceRef("example-source", "synthetic", NOW, TrustLevel.OBSERVED),
        content=content,
        retention=RETENTION,
    )


def _memory(memory_id: str, content: str, sources: tuple[str, ...], kind: str) -> MemoryDraft:
    return MemoryDraft(
        memory_id=memory_id,
        scope=SCOPE,
        content=content,
        source_event_ids=sources,
        kind=kind,
        trust=TrustLevel.OBSERVED,
        created_at=NOW,
    )


def _command(
    action: GovernanceAction,
    entity_id: str,
    *,
    entity_type: EntityType = EntityType.MEMORY,
    minutes: int = 0,
) -> GovernanceCommand:
    return GovernanceCommand(
        scope=SCOPE,
        action=action,
        entity_type=entity_type,
        entity_id=entity_id,
        occurred_at=NOW + timedelta(minutes=minutes),
        reason="synthetic request",
    )


def _recalled(memory: TrueHeart) -> str:
    items = memory.recall(RecallQuery(scope=SCOPE, as_of=NOW))
    return ", ".join(item.memory.memory_id for item in items) or "(none)"


def main(*, temporary_root: Path | None = None) -> None:
    """Run the walkthrough in a temporary directory (under ``temporary_root`` if given)."""
    with (
        tempfile.TemporaryDirectory(dir=temporary_root) as directory,
        TrueHeart(SQLiteRepository(Path(directory) / "memory.db"), clock=lambda: NOW) as memory,
    ):
        memory.ingest_events(
            [
                _event("event-1", "A synthetic preference was observed."),
                _event("event-2", "A synthetic schedule was observed."),
            ]
        )
        preference = "The synthetic subject prefers concise summaries."
        memory.materialize_once(_memory("memory-1", preference, ("event-1",), "preference"))
        schedule = "The synthetic subject works mornings."
        memory.materialize_once(_memory("memory-2", schedule, ("event-2",), "schedule"))
        summary = "The synthetic subject plans short morning sessions."
        both = ("event-1", "event-2")
        memory.materialize_once(_memory("memory-3", summary, both, "summary"))
        print(f"recalled: {_recalled(memory)}")

        memory.govern(_command(GovernanceAction.SEAL, "memory-2", minutes=1))
        print(f"after seal of memory-2: {_recalled(memory)}")
        memory.govern(_command(GovernanceAction.RESTORE, "memory-2", minutes=2))
        print(f"after restore of memory-2: {_recalled(memory)}")

        memory.govern(_command(GovernanceAction.FORGET, "memory-2", minutes=3))
        print(f"after forget of memory-2: {_recalled(memory)}")
        try:
            memory.materialize_once(_memory("memory-2", schedule, ("event-2",), "schedule"))
        except EntityDeleted as error:
            print(f"re-materialising memory-2: {type(error).__name__}: {error}")

        result = memory.govern(
            _command(
                GovernanceAction.DELETE, "event-1", entity_type=EntityType.RAW_EVENT, minutes=4
            )
        )
        print(f"delete of event-1 affected: {', '.join(result.affected_ids)}")
        print(f"after delete of event-1: {_recalled(memory)}")

        expired = memory.expire_raw_content(as_of=NOW + RETENTION.raw_ttl)
        print(f"raw bodies expired: {expired}")
        replay = memory.ingest_event(_event("event-2", "A synthetic schedule was observed."))
        print(f"event-2 replay content_available: {replay.content_available}")

        print(f"integrity ok: {memory.verify_integrity().ok}")
        print("audit, newest first:")
        for record in memory.audit(SCOPE):
            print(f"  {record.action} {record.entity_type} {record.entity_id}")


if __name__ == "__main__":
    main()
